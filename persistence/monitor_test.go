package persistence_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// activeLink makes a link of a new account whose CREATE finished DONE
// with service "svc-1" and conn_info, the link ACTIVE: what monitoring
// re-reads. It returns the account, the link, the instance action and the
// lease of owner "P".
func activeLink(t *testing.T, b *bundle) (acct, link string, ia wimro.InstanceAction, la persistence.Lease) {
	t.Helper()
	tn, w, a, inst := b.accountInstance(t)
	link = uuid.NewString()
	if _, err := b.db.CreateWANLinks(b.ctx, []wimro.WANLink{{UUID: link, InstanceID: &inst.UUID, WIMID: &w.UUID, WIMAccountID: a.UUID}}); err != nil {
		t.Fatal(err)
	}
	ia, err := b.db.CreateInstanceAction(b.ctx, wimro.InstanceAction{TenantID: tn.UUID, InstanceID: &inst.UUID, Description: "CREATE", Tasks: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.CreateActions(b.ctx, []wimro.Action{{InstanceActionID: ia.UUID, TaskIndex: 0, WIMAccountID: &a.UUID, Action: wimro.ActionCreate, ItemID: link}}); err != nil {
		t.Fatal(err)
	}
	la = lease(t, b, a.UUID, "P")
	got, err := b.db.ClaimActions(b.ctx, la, "P#1", time.Minute, 10, nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	svc, active := "svc-1", wimro.LinkActive
	if err := b.db.FinishAction(b.ctx, la, got[0], wimro.Outcome{Status: wimro.ActionDone, WIMInternalID: &svc, Done: 1,
		Extra: map[string]any{"conn_info": map[string]any{"vpn": "v1"}},
		Link:  &wimro.LinkUpdate{Status: &active, WIMInternalID: &svc}}); err != nil {
		t.Fatal(err)
	}
	return a.UUID, link, ia, la
}

func TestRecordLinkStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link, ia, la := activeLink(t, b)

	listed, err := b.db.ListMonitoredLinks(b.ctx, []string{acct, uuid.NewString()})
	if err != nil || len(listed) != 1 {
		t.Fatalf("monitored links = %+v, %v", listed, err)
	}
	if m := listed[0]; m.UUID != link || m.AccountID != acct || m.Status != wimro.LinkActive || m.ServiceID != "svc-1" ||
		m.ConnInfo["vpn"] != "v1" || m.InstanceID == nil {
		t.Fatalf("monitored link = %+v", m)
	}
	before, _ := b.db.GetWANLink(b.ctx, link)
	after := readN(t, b, ia.UUID, wimro.EventCursor{}, 2) // the task created, then DONE with the link ACTIVE
	cursor := after.Events[len(after.Events)-1].Cursor

	msg := "the controller no longer has the service"
	seq := listed[0].ActionSeq
	down := persistence.LinkStatus{LinkID: link, From: wimro.LinkActive, ActionSeq: seq, Status: wimro.LinkDown, ErrorMsg: &msg}
	other := persistence.Lease{AccountID: acct, Owner: "Q", Epoch: la.Epoch}
	oldEpoch := la
	oldEpoch.Epoch--
	stale := down
	stale.From = wimro.LinkDown
	older := down
	older.ActionSeq--
	for _, tc := range []struct {
		name  string
		lease persistence.Lease
		st    persistence.LinkStatus
	}{
		{"another owner", other, down},
		{"another epoch", oldEpoch, down},
		{"another account's lease", persistence.Lease{AccountID: uuid.NewString(), Owner: "P", Epoch: la.Epoch}, down},
		{"a stale expected status", la, stale},
		{"an action since the read", la, older},
	} {
		wrote, err := b.db.RecordLinkStatus(b.ctx, tc.lease, tc.st)
		if err != nil || wrote {
			t.Fatalf("%s: wrote = %v, %v; want refused", tc.name, wrote, err)
		}
	}
	if l, _ := b.db.GetWANLink(b.ctx, link); l.Status != wimro.LinkActive || l.ErrorMsg != nil {
		t.Fatalf("a refused write changed the link: %s %v", l.Status, l.ErrorMsg)
	}

	// The write: status, message, since, and one event on the CREATE.
	if wrote, err := b.db.RecordLinkStatus(b.ctx, la, down); err != nil || !wrote {
		t.Fatalf("record DOWN: %v, %v", wrote, err)
	}
	l, _ := b.db.GetWANLink(b.ctx, link)
	if l.Status != wimro.LinkDown || l.ErrorMsg == nil || *l.ErrorMsg != msg || !l.StatusSince.After(before.StatusSince) {
		t.Fatalf("after DOWN: %s %v since %v (was %v)", l.Status, l.ErrorMsg, l.StatusSince, before.StatusSince)
	}
	page := readN(t, b, ia.UUID, cursor, 1)
	if got := lines(page, map[string]string{link: "l"}); strings.Join(got, "|") != "0 CREATE DONE l DOWN" {
		t.Fatalf("events after DOWN: %q", got)
	}
	if e := page.Events[0]; e.ErrorMsg == nil || *e.ErrorMsg != msg {
		t.Fatalf("DOWN event without its message: %+v", e)
	}
	cursor = page.Events[0].Cursor

	// The same status and message: nothing to write.
	if wrote, err := b.db.RecordLinkStatus(b.ctx, la, persistence.LinkStatus{LinkID: link, From: wimro.LinkDown, ActionSeq: seq, Status: wimro.LinkDown, ErrorMsg: &msg}); err != nil || wrote {
		t.Fatalf("record the same DOWN: %v, %v; want nothing written", wrote, err)
	}
	if n, err := b.db.CountWANLinksByStatus(b.ctx); err != nil || n[wimro.LinkDown] != 1 || len(n) != 1 {
		t.Fatalf("links by status: %v, %v", n, err)
	}

	// The same status with a new message: the message changes, since and
	// the events do not.
	msg2 := "still gone"
	if wrote, err := b.db.RecordLinkStatus(b.ctx, la, persistence.LinkStatus{LinkID: link, From: wimro.LinkDown, ActionSeq: seq, Status: wimro.LinkDown, ErrorMsg: &msg2}); err != nil || !wrote {
		t.Fatalf("record DOWN again: %v, %v", wrote, err)
	}
	again, _ := b.db.GetWANLink(b.ctx, link)
	if again.ErrorMsg == nil || *again.ErrorMsg != msg2 || !again.StatusSince.Equal(l.StatusSince) {
		t.Fatalf("same status: message %v, since %v (was %v)", again.ErrorMsg, again.StatusSince, l.StatusSince)
	}

	// Back to ACTIVE: message cleared, since moved, one event.
	if wrote, err := b.db.RecordLinkStatus(b.ctx, la, persistence.LinkStatus{LinkID: link, From: wimro.LinkDown, ActionSeq: seq, Status: wimro.LinkActive}); err != nil || !wrote {
		t.Fatalf("record ACTIVE: %v, %v", wrote, err)
	}
	back, _ := b.db.GetWANLink(b.ctx, link)
	if back.Status != wimro.LinkActive || back.ErrorMsg != nil || !back.StatusSince.After(again.StatusSince) {
		t.Fatalf("back: %s %v since %v", back.Status, back.ErrorMsg, back.StatusSince)
	}
	page = readN(t, b, ia.UUID, cursor, 1)
	if got := lines(page, map[string]string{link: "l"}); strings.Join(got, "|") != "0 CREATE DONE l ACTIVE" {
		t.Fatalf("events after the same status and back to ACTIVE: %q, want only the second", got)
	}

	// An action in flight owns the link: not listed, not written.
	if _, err := b.db.CreateActions(b.ctx, []wimro.Action{{InstanceActionID: ia.UUID, TaskIndex: 1, WIMAccountID: &acct, Action: wimro.ActionDelete, ItemID: link}}); err != nil {
		t.Fatal(err)
	}
	if listed, err := b.db.ListMonitoredLinks(b.ctx, []string{acct}); err != nil || len(listed) != 0 {
		t.Fatalf("monitored with a DELETE queued: %+v, %v", listed, err)
	}
	history, err := b.db.ListActionsOfItem(b.ctx, link)
	if err != nil || len(history) != 2 {
		t.Fatalf("actions of the link: %+v, %v", history, err)
	}
	// Named as read after the DELETE was queued: refused for the action in
	// flight alone.
	down.From, down.ActionSeq = wimro.LinkActive, history[1].Seq
	if wrote, err := b.db.RecordLinkStatus(b.ctx, la, down); err != nil || wrote {
		t.Fatalf("record with a DELETE queued: %v, %v; want refused", wrote, err)
	}
	if l, _ := b.db.GetWANLink(b.ctx, link); l.Status != wimro.LinkActive {
		t.Fatalf("the link changed under an action in flight: %s", l.Status)
	}
}

// Which links monitoring re-reads, by their status and their latest
// action.
func TestListMonitoredLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status string
		latest string // the latest action's status; "" keeps the CREATE DONE
		want   bool
	}{
		{"ACTIVE", wimro.LinkActive, "", true},
		{"DOWN", wimro.LinkDown, "", true},
		{"ERROR reported by the controller", wimro.LinkError, "", true},
		{"INACTIVE", wimro.LinkInactive, "", true},
		{"WIM_ERROR", wimro.LinkWIMError, "", false},
		{"DELETED", wimro.LinkDeleted, "", false},
		{"ERROR of a failed CREATE", wimro.LinkError, wimro.ActionFailed, false},
		{"a CREATE still BUILD", wimro.LinkBuild, wimro.ActionBuild, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			acct, link, _, _ := activeLink(t, b)
			set := `UPDATE instance_wim_nets SET status = $2 WHERE uuid = $1`
			if _, err := b.db.Pool().Exec(b.ctx, set, link, tc.status); err != nil {
				t.Fatal(err)
			}
			if tc.latest != "" {
				if _, err := b.db.Pool().Exec(b.ctx, `UPDATE vim_wim_actions SET status = $2 WHERE item_id = $1`, link, tc.latest); err != nil {
					t.Fatal(err)
				}
			}
			listed, err := b.db.ListMonitoredLinks(b.ctx, []string{acct})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(listed) == 1; got != tc.want {
				t.Fatalf("listed = %v (%s), want %v", got, fmt.Sprint(listed), tc.want)
			}
		})
	}
}
