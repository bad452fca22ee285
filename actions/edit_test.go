package actions_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/persistence"
)

// settle runs the link's due actions as the workers do (claimed with
// what they need, run, outcome written under the claim and the
// account's lease) until none is due, and returns how many ran.
func (f *fixture) settle(t *testing.T) int {
	t.Helper()
	lease, err := f.db.AcquireLeases(f.ctx, "P", []string{f.target.AccountID}, time.Minute)
	if err != nil || len(lease) != 1 {
		t.Fatalf("lease: %v, %v", lease, err)
	}
	ran := 0
	for i := range 50 {
		res, err := f.db.ClaimDue(f.ctx, persistence.ClaimRequest{Owner: "P", Claim: fmt.Sprintf("P#%d-%d", time.Now().UnixNano(), i), TTL: time.Minute, Parallel: 10, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Claimed) == 0 {
			return ran
		}
		for _, c := range res.Claimed {
			o := f.runner.RunLoaded(f.ctx, f.target, c.Action, &actions.Loaded{Link: c.Link, Nets: c.Nets, Datacenters: c.Datacenters})
			errs, err := f.db.FinishActions(f.ctx, []persistence.Finished{{Action: c.Action, Outcome: o, Lease: lease[0]}})
			if err == nil {
				err = errs[0]
			}
			if err != nil {
				t.Fatalf("write the outcome of %s: %v", c.Action.Action, err)
			}
			ran++
		}
	}
	t.Fatal("the link's actions never settled")
	return ran
}

// active runs the link's CREATE: its service is on the controller
// (VLANs 100 and 101) and the link ACTIVE.
func (f *fixture) active(t *testing.T) {
	t.Helper()
	f.settle(t)
	if l := f.linkNow(t); l.Status != wimro.LinkActive || f.ctrl.Count() != 1 {
		t.Fatalf("after its CREATE the link is %s with %d services, want ACTIVE with one", l.Status, f.ctrl.Count())
	}
}

func (f *fixture) linkNow(t *testing.T) wimro.WANLink {
	t.Helper()
	l, err := f.db.GetWANLink(f.ctx, f.link.UUID)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// actionsNow are the link's actions, oldest first.
func (f *fixture) actionsNow(t *testing.T) []wimro.Action {
	t.Helper()
	acts, err := f.db.ListActionsOfItem(f.ctx, f.link.UUID)
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// setVLAN reports dcB's network on VLAN vlan, as an NFVO does, and
// returns the EDIT instance action it queued ("" for none).
func (f *fixture) setVLAN(t *testing.T, vlan int) string {
	t.Helper()
	_, id, err := f.eng.UpdateNetworkEdit(f.ctx, "t0", f.inst.UUID, "net-dcB", engine.NetworkUpdate{EncapsulationID: &vlan})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// edit makes the link ACTIVE, then moves dcB's network to VLAN 401 and
// returns the EDIT that queued.
func (f *fixture) edit(t *testing.T) wimro.Action {
	t.Helper()
	f.active(t)
	if f.setVLAN(t, 401) == "" {
		t.Fatal("a VLAN change of an ACTIVE link queued no EDIT")
	}
	acts := f.actionsNow(t)
	a := acts[len(acts)-1]
	if a.Action != wimro.ActionEdit || a.Status != wimro.ActionScheduled {
		t.Fatalf("the link's last action is %s %s, want a SCHEDULED EDIT", a.Action, a.Status)
	}
	return a
}

// applied writes what outcome o does to the link and returns action a as
// o leaves it, as the completer would: the next run of a half-done
// replace starts from it.
func (f *fixture) applied(t *testing.T, a wimro.Action, o wimro.Outcome) wimro.Action {
	t.Helper()
	if o.Link != nil {
		if err := f.db.UpdateWANLink(f.ctx, f.link.UUID, *o.Link); err != nil {
			t.Fatal(err)
		}
	}
	a.Status = o.Status
	if o.WIMInternalID != nil {
		a.WIMInternalID = o.WIMInternalID
	}
	a.Extra = maps.Clone(a.Extra)
	if a.Extra == nil {
		a.Extra = map[string]any{}
	}
	maps.Copy(a.Extra, connectortest.RoundTrip(t, o.Extra))
	return a
}

// firstRun runs a's first run (a replace's first half) and returns it as
// its outcome leaves it.
func (f *fixture) firstRun(t *testing.T, a wimro.Action) wimro.Action {
	t.Helper()
	o := f.runner.Run(f.ctx, f.target, a)
	if o.Status != wimro.ActionBuild {
		t.Fatalf("first run of the replace: %s (%v), want BUILD", o.Status, deref(o.ErrorMsg))
	}
	return f.applied(t, a, o)
}

// vlansOf are the VLANs of the controller's one service.
func (f *fixture) vlansOf(t *testing.T) []int {
	t.Helper()
	list := f.ctrl.Services()
	if len(list) != 1 {
		t.Fatalf("the controller holds %d services, want 1", len(list))
	}
	pts, _ := f.ctrl.Points(list[0].ID)
	var out []int
	for _, p := range pts {
		out = append(out, p.VLAN)
	}
	slices.Sort(out)
	return out
}

// TestEditQueue: the EDIT of a link is in the link's queue. Changes
// reported before it runs are one EDIT to the latest state; an EDIT
// queued behind a CREATE that has not run is not queued at all (the
// CREATE reads the change); a DELETE after it supersedes it; a change
// that is only a status queues none; and the controller ends with one
// service on the VLANs reported last, in place or replaced.
func TestEditQueue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name            string
		edit, mbb       bool
		wantServiceCall string // the controller call that changed the service
	}{
		{"in place", true, false, fake.MethodEditService},
		{"replace, make before break", false, true, fake.MethodCreateService},
		{"replace, break before make", false, false, fake.MethodCreateService},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Run("coalesced", func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, fixtureOpts{})
				f.target.Capabilities.Edit, f.target.Capabilities.MakeBeforeBreak = c.edit, c.mbb
				if f.setVLAN(t, 150) != "" {
					t.Fatal("a VLAN change before the CREATE ran queued an EDIT: the CREATE reads it")
				}
				f.active(t)
				if got := f.vlansOf(t); !slices.Equal(got, []int{100, 150}) {
					t.Fatalf("the CREATE made VLANs %v, want [100 150]", got)
				}
				first := f.setVLAN(t, 401)
				if first == "" || f.setVLAN(t, 402) != "" || f.setVLAN(t, 403) != "" {
					t.Fatal("three changes before the EDIT ran: want one EDIT (the first), none for the others")
				}
				if _, id, _ := f.eng.UpdateNetworkEdit(f.ctx, "t0", f.inst.UUID, "net-dcB", engine.NetworkUpdate{Status: ptr(wimro.NetActive)}); id != "" {
					t.Fatal("a status report queued an EDIT")
				}
				calls := f.ctrl.CallCount(c.wantServiceCall)
				f.settle(t)
				acts := f.actionsNow(t)
				if len(acts) != 2 || acts[1].Action != wimro.ActionEdit || acts[1].Status != wimro.ActionDone {
					t.Fatalf("actions %+v, want the CREATE and one EDIT DONE", acts)
				}
				if got := f.vlansOf(t); !slices.Equal(got, []int{100, 403}) {
					t.Fatalf("the controller's service has VLANs %v, want [100 403] (the last report)", got)
				}
				if n := f.ctrl.CallCount(c.wantServiceCall) - calls; n != 1 {
					t.Fatalf("%d %s calls for three changes, want 1", n, c.wantServiceCall)
				}
				l := f.linkNow(t)
				if l.Status != wimro.LinkActive || l.ErrorMsg != nil || *l.WIMInternalID != f.ctrl.Services()[0].ID {
					t.Fatalf("link %s (%v) with service %v, want ACTIVE, no message, the new service's id %s", l.Status, deref(l.ErrorMsg), deref(l.WIMInternalID), f.ctrl.Services()[0].ID)
				}
				if !c.edit && wimro.ServiceKeyOf(l) == l.UUID {
					t.Fatal("a replaced service's key is still the link's")
				}
				// Run again (a crash after the controller changed, before the
				// outcome was written): the same one service.
				again := acts[1]
				again.Status = wimro.ActionScheduled
				if c.edit {
					if o := f.runner.Run(f.ctx, f.target, again); o.Status != wimro.ActionDone || f.ctrl.Count() != 1 {
						t.Fatalf("the EDIT run again: %s (%v), %d services; want DONE with one", o.Status, deref(o.ErrorMsg), f.ctrl.Count())
					}
				}
			})
			t.Run("superseded by a DELETE", func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, fixtureOpts{})
				f.target.Capabilities.Edit, f.target.Capabilities.MakeBeforeBreak = c.edit, c.mbb
				f.active(t)
				f.setVLAN(t, 401)
				if _, _, err := f.eng.DeleteInstance(f.ctx, "t0", f.inst.UUID); err != nil {
					t.Fatal(err)
				}
				f.settle(t)
				acts := f.actionsNow(t)
				if len(acts) != 3 || acts[1].Status != wimro.ActionSuperseded || acts[2].Action != wimro.ActionDelete || acts[2].Status != wimro.ActionDone {
					t.Fatalf("actions %v, want CREATE, EDIT SUPERSEDED, DELETE DONE", statuses(acts))
				}
				if n := f.ctrl.Count(); n != 0 {
					t.Fatalf("%d services left on the controller, want none", n)
				}
			})
		})
	}
}

func statuses(acts []wimro.Action) []string {
	var out []string
	for _, a := range acts {
		out = append(out, a.Action+" "+a.Status)
	}
	return out
}

// TestEditBehindARunningCreate: an EDIT queued while the link's CREATE
// is claimed (running) waits for it, and then brings the service the
// CREATE made to the new state.
func TestEditBehindARunningCreate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	f.target.Capabilities.Edit = true
	lease, err := f.db.AcquireLeases(f.ctx, "P", []string{f.target.AccountID}, time.Minute)
	if err != nil || len(lease) != 1 {
		t.Fatalf("lease: %v, %v", lease, err)
	}
	res, err := f.db.ClaimDue(f.ctx, persistence.ClaimRequest{Owner: "P", Claim: "P#create", TTL: time.Minute, Parallel: 10, Limit: 10})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim the CREATE: %v, %v", res.Claimed, err)
	}
	if f.setVLAN(t, 401) == "" {
		t.Fatal("a change while the CREATE runs (it read the networks before) queued no EDIT")
	}
	again, err := f.db.ClaimDue(f.ctx, persistence.ClaimRequest{Owner: "P", Claim: "P#early", TTL: time.Minute, Parallel: 10, Limit: 10})
	if err != nil || len(again.Claimed) != 0 {
		t.Fatalf("claimed %d actions beside the running CREATE (%v), want none: the EDIT waits", len(again.Claimed), err)
	}
	c := res.Claimed[0]
	o := f.runner.RunLoaded(f.ctx, f.target, c.Action, &actions.Loaded{Link: c.Link, Nets: c.Nets, Datacenters: c.Datacenters})
	if _, err := f.db.FinishActions(f.ctx, []persistence.Finished{{Action: c.Action, Outcome: o, Lease: lease[0]}}); err != nil {
		t.Fatal(err)
	}
	if got := f.vlansOf(t); !slices.Equal(got, []int{100, 101}) {
		t.Fatalf("the CREATE made VLANs %v, want [100 101] (what it read)", got)
	}
	f.settle(t)
	if got := f.vlansOf(t); !slices.Equal(got, []int{100, 401}) {
		t.Fatalf("after the EDIT the service has VLANs %v, want [100 401]", got)
	}
}
