package persistence_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// queue builds one account with actions on two links: link1 CREATE then
// DELETE, link2 CREATE.
func queue(t *testing.T, b *bundle) (acct string, link1, link2 string, ia wimro.InstanceAction) {
	t.Helper()
	tn := b.tenant(t, "t0")
	w := b.wim(t, "wim0")
	a := b.attach(t, w, tn)
	inst, err := b.db.CreateInstance(b.ctx, wimro.Instance{Name: "ns", TenantID: tn.UUID})
	if err != nil {
		t.Fatal(err)
	}
	link1, link2 = uuid.NewString(), uuid.NewString()
	if _, err := b.db.CreateWANLinks(b.ctx, []wimro.WANLink{
		{UUID: link1, InstanceID: &inst.UUID, WIMID: &w.UUID, WIMAccountID: a.UUID},
		{UUID: link2, InstanceID: &inst.UUID, WIMID: &w.UUID, WIMAccountID: a.UUID},
	}); err != nil {
		t.Fatal(err)
	}
	ia, err = b.db.CreateInstanceAction(b.ctx, wimro.InstanceAction{TenantID: tn.UUID, InstanceID: &inst.UUID, Description: "CREATE", Tasks: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.db.CreateActions(b.ctx, []wimro.Action{
		{InstanceActionID: ia.UUID, TaskIndex: 0, WIMAccountID: &a.UUID, Action: wimro.ActionCreate, ItemID: link1},
		{InstanceActionID: ia.UUID, TaskIndex: 1, WIMAccountID: &a.UUID, Action: wimro.ActionDelete, ItemID: link1},
		{InstanceActionID: ia.UUID, TaskIndex: 2, WIMAccountID: &a.UUID, Action: wimro.ActionCreate, ItemID: link2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.UUID, link1, link2, ia
}

func TestClaimOrderAndFencing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, link2, ia := queue(t, b)

	// One claim per link, the first of each: link1's DELETE waits.
	got, err := b.db.ClaimActions(b.ctx, acct, "A", time.Minute, 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	for _, a := range got {
		if a.Action != wimro.ActionCreate || *a.ClaimedBy != "A" || a.Attempts != 1 {
			t.Fatalf("claimed %+v", a)
		}
	}
	// Nothing more while they are claimed.
	if more, _ := b.db.ClaimActions(b.ctx, acct, "B", time.Minute, 10, nil); len(more) != 0 {
		t.Fatalf("claimed %d actions of busy links", len(more))
	}

	create1 := got[0]
	if create1.ItemID != link1 {
		create1 = got[1]
	}
	// Fencing: B cannot finish A's claim.
	_, err = b.db.FinishAction(b.ctx, create1, "B", persistence.Outcome{Status: wimro.ActionDone, Done: 1})
	if !errors.Is(err, persistence.ErrClaimLost) {
		t.Fatalf("foreign finish = %v", err)
	}
	st := wimro.LinkBuild
	id := "svc-1"
	done, err := b.db.FinishAction(b.ctx, create1, "A", persistence.Outcome{Status: wimro.ActionDone, WIMInternalID: &id, Done: 1,
		Extra: map[string]any{"conn_info": map[string]any{"k": "v"}}, Link: &persistence.LinkUpdate{Status: &st, WIMInternalID: &id, WIMInfo: map[string]any{"x": 1}}})
	if err != nil || done.Status != wimro.ActionDone || done.ClaimedBy != nil || *done.WIMInternalID != id {
		t.Fatalf("finish = %+v, %v", done, err)
	}
	l, _ := b.db.GetWANLink(b.ctx, link1)
	if *l.WIMInternalID != id || l.WIMInfo["x"] != 1.0 {
		t.Fatalf("link = %+v", l)
	}
	// Finishing twice is refused: the claim is gone.
	if _, err := b.db.FinishAction(b.ctx, create1, "A", persistence.Outcome{Status: wimro.ActionDone, Done: 1}); !errors.Is(err, persistence.ErrClaimLost) {
		t.Fatalf("second finish = %v", err)
	}
	// Now link1's DELETE is next.
	got, _ = b.db.ClaimActions(b.ctx, acct, "A", time.Minute, 10, []string{link2})
	if len(got) != 1 || got[0].Action != wimro.ActionDelete || got[0].ItemID != link1 {
		t.Fatalf("after the CREATE: %+v", got)
	}
	counters, _ := b.db.GetInstanceAction(b.ctx, *ia.InstanceID, ia.UUID)
	if counters.Done != 1 {
		t.Fatalf("done = %d", counters.Done)
	}
}

func TestSweepAndRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	got, _ := b.db.ClaimActions(b.ctx, acct, "dead", time.Millisecond, 10, nil)
	if len(got) != 2 {
		t.Fatalf("claimed %d", len(got))
	}
	deadline := time.Now().Add(10 * time.Second)
	var n int64
	for n < 2 && time.Now().Before(deadline) {
		m, err := b.db.SweepExpiredClaims(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	if n != 2 {
		t.Fatalf("swept %d, want 2", n)
	}
	got, _ = b.db.ClaimActions(b.ctx, acct, "B", time.Minute, 1, nil)
	if len(got) != 1 || got[0].Attempts != 2 {
		t.Fatalf("reclaimed %+v", got)
	}
	if n, _ := b.db.ReleaseClaims(b.ctx, "B"); n != 1 {
		t.Fatalf("released %d", n)
	}
	if next, err := b.db.NextRunAfter(b.ctx, acct); err != nil || next == nil {
		t.Fatalf("NextRunAfter = %v, %v", next, err)
	}
	// A retry later is not due now.
	got, _ = b.db.ClaimActions(b.ctx, acct, "B", time.Minute, 10, nil)
	later := time.Now().Add(time.Hour)
	for _, a := range got {
		if _, err := b.db.FinishAction(b.ctx, a, "B", persistence.Outcome{Status: wimro.ActionScheduled, RunAfter: &later}); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := b.db.ClaimActions(b.ctx, acct, "B", time.Minute, 10, nil); len(again) != 0 {
		t.Fatalf("claimed %d actions before their run_after", len(again))
	}
}

// A live owner renews its leases, so the sweep leaves its claims alone.
func TestExtendClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	got, _ := b.db.ClaimActions(b.ctx, acct, "alive", time.Millisecond, 10, nil)
	if len(got) != 2 {
		t.Fatalf("claimed %d", len(got))
	}
	if n, err := b.db.ExtendClaims(b.ctx, "alive", time.Minute); err != nil || n != 2 {
		t.Fatalf("extended %d, %v", n, err)
	}
	if n, err := b.db.SweepExpiredClaims(b.ctx); err != nil || n != 0 {
		t.Fatalf("swept %d renewed claims, %v", n, err)
	}
}
