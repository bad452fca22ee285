package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

// overrideBundle is a tenant t0 with its account on a fake WIM of its
// own (a controller no other test lists), for the operator overrides.
type overrideBundle struct {
	*bundle
	url     string
	account engine.AccountFull
}

const overridePassword = "pw-0verride"

// wantNoSecret fails when v, as JSON, holds the WIM's password, clear or
// sealed.
func wantNoSecret(t *testing.T, what string, v any) {
	t.Helper()
	raw, _ := json.Marshal(v)
	if strings.Contains(string(raw), overridePassword) || strings.Contains(string(raw), secret.SealedPrefix) {
		t.Errorf("%s holds the WIM's password: %s", what, raw)
	}
}

func setupOverride(t *testing.T) *overrideBundle {
	t.Helper()
	b := setup(t)
	b.Tenant(t, "t0")
	// The URL carries a password: override records must not.
	url := "http://admin:" + overridePassword + "@fake-" + uuid.NewString()
	t.Cleanup(fake.ControllerFor(url).Reset)
	name := "wan1"
	acct := b.WAN(t, testfactory.WAN{WIM: engine.WIMInput{Name: &name, URL: &url}, Tenant: "t0",
		Account: engine.AccountInput{Name: ptr("acct1")}, Datacenters: []string{"dcA", "dcB"}})
	return &overrideBundle{bundle: b, url: url, account: acct}
}

// instance creates an instance of one WAN link and returns it, its
// CREATE action and the link.
func (o *overrideBundle) instance(t *testing.T) (string, string, string) {
	t.Helper()
	v := o.Instance(t, "t0", "ns-"+uuid.NewString()[:8], testfactory.Nets("ACTIVE", testfactory.VLDs(1), "dcA", "dcB"))
	links, err := o.db.ListWANLinks(o.ctx, v.UUID)
	if err != nil || len(links) != 1 {
		t.Fatalf("links of %s: %v, %v", v.UUID, links, err)
	}
	return v.UUID, v.ActionID, links[0].UUID
}

func (o *overrideBundle) task(t *testing.T, action string) wimro.Action {
	t.Helper()
	tasks, err := o.db.ListActionsOfInstanceAction(o.ctx, action)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks of %s: %v, %v", action, tasks, err)
	}
	return tasks[0]
}

// wantEvent waits until an event of the instance action reads want
// ("<status>: <message>"): events are read only once every older
// transaction of the cluster has ended (persistence.ReadEvents), so one
// may be held back for a moment while other tests write.
func (o *overrideBundle) wantEvent(t *testing.T, action, want string) {
	t.Helper()
	eventually.Until(t, 30*time.Second, "an event "+want, func() (bool, string) {
		page, err := o.db.ReadEvents(o.ctx, action, wimro.EventCursor{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range page.Events {
			line := ""
			if e.Status != nil {
				line += *e.Status
			}
			if e.ErrorMsg != nil {
				line += ": " + *e.ErrorMsg
			}
			lines = append(lines, line)
		}
		all := strings.Join(lines, "\n")
		return strings.Contains(all, want), all
	})
}

// made plays the process that made a link's service on the controller:
// the service exists there under the link's key, the CREATE is DONE and
// the link ACTIVE with the service's id.
func (o *overrideBundle) made(t *testing.T, link string) string {
	t.Helper()
	c, err := fake.Factory(connectors.Config{Type: "fake", URL: o.url})
	if err != nil {
		t.Fatal(err)
	}
	var points []connectors.ConnectionPoint
	for _, dc := range []string{"dcA", "dcB"} {
		points = append(points, connectors.ConnectionPoint{ServiceEndpointID: "ep-" + dc, Encapsulation: connectors.EncapDot1Q, VLAN: 301,
			MappingInfo: map[string]any{"mapping_type": "dpid-port"}})
	}
	id, _, err := c.CreateService(o.ctx, connectors.Request{Key: link, Type: connectors.ServiceELINE, Points: points})
	if err != nil {
		t.Fatal(err)
	}
	o.exec(t, `UPDATE vim_wim_actions SET status = 'DONE', wim_internal_id = $2 WHERE item_id = $1`, link, id)
	o.exec(t, `UPDATE instance_wim_nets SET status = 'ACTIVE', created = true, wim_internal_id = $2 WHERE uuid = $1`, link, id)
	return id
}

// Issue 30, point 7: cancel ends tasks that never reached the controller,
// audited and in the events; it refuses, naming why and changing nothing,
// a task that is running, reached the controller or whose link's service
// may be there.
func TestCancelActions(t *testing.T) {
	t.Parallel()
	o := setupOverride(t)

	inst, action, link := o.instance(t)
	if _, err := o.eng.CancelActions(o.ctx, "t0", inst, action, "", engine.OverrideInput{Reason: "  "}); wimro.ErrorField(err) != "cancel.reason" {
		t.Errorf("cancel without a reason: %v, want a 400 naming cancel.reason", err)
	}
	res, err := o.eng.CancelActions(o.ctx, "t0", inst, action, "token:0123456789ab", engine.OverrideInput{Reason: "the NFVO gave up"})
	if err != nil {
		t.Fatalf("cancel a CREATE that never ran: %v", err)
	}
	if len(res.Overrides) != 1 || res.Overrides[0].Actor != "token:0123456789ab" || res.Overrides[0].Reason != "the NFVO gave up" ||
		res.Overrides[0].WANLinkID != link || res.Overrides[0].Kind != wimro.OverrideCancel || !strings.Contains(res.Result, "never reached the controller") {
		t.Errorf("cancel answered %+v", res)
	}
	wantNoSecret(t, "the cancel's answer", res)
	if a := o.task(t, action); a.Status != wimro.ActionCancelled || !strings.Contains(*a.ErrorMsg, "cancelled by token:0123456789ab: the NFVO gave up") {
		t.Errorf("the cancelled task: %s %v", a.Status, *a.ErrorMsg)
	}
	if l, err := o.db.GetWANLink(o.ctx, link); err != nil || l.Status != wimro.LinkError || !strings.Contains(*l.ErrorMsg, "its CREATE was cancelled by token:0123456789ab") {
		t.Errorf("the cancelled CREATE's link: %+v, %v", l, err)
	}
	o.wantEvent(t, action, "CANCELLED: cancelled by token:0123456789ab: the NFVO gave up")
	if ia, err := o.db.GetInstanceAction(o.ctx, inst, action); err != nil || ia.Failed != 1 {
		t.Errorf("instance action after the cancel: %+v, %v; want one failed task", ia, err)
	}

	cases := []struct {
		name  string
		state func(t *testing.T, inst, action, link string) (string, string) // the action to cancel
		why   string
	}{
		{"running", func(t *testing.T, inst, action, link string) (string, string) {
			o.exec(t, `UPDATE vim_wim_actions SET claimed_by = 'wimd-1#7', claim_expires_at = now() + interval '1 minute' WHERE instance_action_id = $1`, action)
			return inst, action
		}, "is running right now"},
		{"service made, status polled", func(t *testing.T, inst, action, link string) (string, string) {
			o.exec(t, `UPDATE vim_wim_actions SET status = 'BUILD', wim_internal_id = 'svc-1' WHERE instance_action_id = $1`, action)
			return inst, action
		}, "reached the controller: it made service svc-1"},
		{"a run reached the controller", func(t *testing.T, inst, action, link string) (string, string) {
			o.exec(t, `UPDATE vim_wim_actions SET attempts = 1 WHERE instance_action_id = $1`, action)
			return inst, action
		}, "may have reached the controller: 1 run(s)"},
		{"a run ended without an outcome", func(t *testing.T, inst, action, link string) (string, string) {
			// Claimed, then swept: the process died mid-run, so its run
			// may have reached the controller though attempts is 0.
			lease, err := o.db.AcquireLeases(o.ctx, "wimd-1", []string{*o.task(t, action).WIMAccountID}, time.Minute)
			if err != nil || len(lease) != 1 {
				t.Fatalf("lease: %v, %v", lease, err)
			}
			res, err := o.db.ClaimDue(o.ctx, persistence.ClaimRequest{Owner: "wimd-1", Claim: "wimd-1#1", TTL: time.Minute, Parallel: 10, Limit: 10})
			if err != nil || len(res.Claimed) == 0 {
				t.Fatalf("claim: %v, %v", res.Claimed, err)
			}
			if _, err := o.db.ReleaseClaims(o.ctx, "wimd-1"); err != nil {
				t.Fatal(err)
			}
			if err := o.db.ReleaseLeases(o.ctx, lease); err != nil {
				t.Fatal(err)
			}
			return inst, action
		}, "1 run(s) ended without an outcome"},
		{"DELETE of a made link", func(t *testing.T, inst, action, link string) (string, string) {
			o.made(t, link)
			ia, _, err := o.eng.DeleteInstance(o.ctx, "t0", inst)
			if err != nil {
				t.Fatal(err)
			}
			return inst, ia.UUID
		}, "abandon it with force instead"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst, action, link := o.instance(t)
			inst, action = c.state(t, inst, action, link)
			before := o.task(t, action)
			_, err := o.eng.CancelActions(o.ctx, "t0", inst, action, "", engine.OverrideInput{Reason: "try"})
			if wimro.ErrorCode(err) != wimro.ECONFLICT || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("cancel: %v, want a conflict saying %q", err, c.why)
			}
			if after := o.task(t, action); after.Status != before.Status || o.countWhere(t, "action_overrides", "instance_action_id = $1", action) != 0 {
				t.Errorf("a refused cancel changed the task (%s -> %s) or recorded it", before.Status, after.Status)
			}
		})
	}
}

// Issue 30, point 7: abandon, with force only, ends a DELETE whose
// controller is gone: the service is recorded as abandoned, reconcile
// lists it as a known leftover that --fix leaves (and --delete-abandoned
// deletes), the events say who and why, and the WIM can then be deleted.
func TestAbandonDelete(t *testing.T) {
	t.Parallel()
	o := setupOverride(t)
	inst, create, link := o.instance(t)
	svc := o.made(t, link)
	ia, _, err := o.eng.DeleteInstance(o.ctx, "t0", inst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.eng.DeleteWIM(o.ctx, "wan1"); wimro.ErrorCode(err) != wimro.ECONFLICT {
		t.Fatalf("delete the WIM with a DELETE unfinished: %v, want a conflict", err)
	}
	if _, err := o.eng.AbandonActions(o.ctx, "t0", inst, ia.UUID, "", engine.OverrideInput{Reason: "controller gone"}); wimro.ErrorField(err) != "abandon.force" {
		t.Errorf("abandon without force: %v, want a 400 naming abandon.force", err)
	}
	if _, err := o.eng.AbandonActions(o.ctx, "t0", inst, create, "", engine.OverrideInput{Reason: "x", Force: true, TaskIndex: ptr(0)}); wimro.ErrorCode(err) != wimro.ECONFLICT {
		t.Errorf("abandon a finished CREATE: %v, want a conflict", err)
	}
	res, err := o.eng.AbandonActions(o.ctx, "t0", inst, ia.UUID, "", engine.OverrideInput{Reason: "controller decommissioned", Force: true})
	if err != nil {
		t.Fatalf("abandon --force: %v", err)
	}
	rec := res.Overrides[0]
	if len(res.Overrides) != 1 || rec.Actor != engine.ActorOperator || rec.Kind != wimro.OverrideAbandon || rec.WANLinkID != link ||
		rec.ServiceID == nil || *rec.ServiceID != svc || *rec.WIMURL != strings.Replace(o.url, overridePassword, secret.Masked, 1) || *rec.WIMName != "wan1" || *rec.WIMAccountName != "acct1" {
		t.Errorf("abandon answered %+v", res)
	}
	if a := o.task(t, ia.UUID); a.Status != wimro.ActionAbandoned {
		t.Errorf("the abandoned task is %s", a.Status)
	}
	o.wantEvent(t, ia.UUID, "ABANDONED: abandoned by operator: controller decommissioned")

	for _, opts := range []engine.ReconcileOptions{{Account: "acct1"}, {Account: "acct1", Fix: true}} {
		rep, err := o.eng.Reconcile(o.ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		d := rep.Accounts[0].Drift
		if len(d) != 1 || d[0].Kind != engine.DriftAbandoned || d[0].Fixed || d[0].WANLinkID != link || d[0].Abandoned == nil || d[0].Abandoned.Reason != "controller decommissioned" {
			t.Errorf("reconcile %+v: drift %+v, want the abandoned service, left alone", opts, d)
		}
		wantNoSecret(t, "the reconcile report", rep)
	}
	if fake.ControllerFor(o.url).Count() != 1 {
		t.Errorf("reconcile --fix deleted the abandoned service")
	}
	rep, err := o.eng.Reconcile(o.ctx, engine.ReconcileOptions{Account: "acct1", Fix: true, DeleteAbandoned: true})
	if err != nil || len(rep.Accounts[0].Drift) != 1 || !rep.Accounts[0].Drift[0].Fixed || fake.ControllerFor(o.url).Count() != 0 {
		t.Errorf("reconcile --fix --delete-abandoned: %+v, %v; the controller holds %d service(s)", rep, err, fake.ControllerFor(o.url).Count())
	}
	if _, err := o.eng.DeleteWIM(o.ctx, "wan1"); err != nil {
		t.Errorf("delete the WIM once its DELETE is abandoned: %v", err)
	}
	if n := o.countWhere(t, "action_overrides", "kind = 'abandon' AND wan_link_id = $1", link); n != 1 {
		t.Errorf("%d abandon records after the WIM is deleted, want 1", n)
	}
}
