package persistence_test

import (
	"testing"
	"time"

	"github.com/wimro/wimro"
)

// QueueStats counts the actions to run per account and ages the oldest
// due one; actions retried later are counted but not due.
func TestQueueStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if st, err := b.db.QueueStats(b.ctx); err != nil || len(st) != 0 {
		t.Fatalf("empty queue: %v, %v", st, err)
	}
	acct, link1, _, _ := queue(t, b)
	st, err := b.db.QueueStats(b.ctx)
	if err != nil || len(st) != 1 || st[0].AccountID != acct || st[0].Actions != 3 || st[0].OldestDue < 0 || st[0].OldestDue > time.Minute {
		t.Fatalf("3 queued: %+v, %v", st, err)
	}
	la := lease(t, b, acct, "P")
	later := time.Now().Add(time.Hour)
	// link1's CREATE is done, link2's CREATE retried in an hour.
	got, _ := b.db.ClaimActions(b.ctx, la, "P#1", time.Minute, 10, nil)
	if len(got) != 2 {
		t.Fatalf("claimed %d", len(got))
	}
	for _, a := range got {
		o := wimro.Outcome{Status: wimro.ActionScheduled, RunAfter: &later}
		if a.ItemID == link1 {
			o = wimro.Outcome{Status: wimro.ActionDone}
		}
		if err := b.db.FinishAction(b.ctx, la, a, o); err != nil {
			t.Fatal(err)
		}
	}
	// link1's DELETE, due now, is retried in an hour too.
	got, _ = b.db.ClaimActions(b.ctx, la, "P#2", time.Minute, 10, nil)
	if len(got) != 1 || got[0].Action != wimro.ActionDelete {
		t.Fatalf("claimed %+v", got)
	}
	if err := b.db.FinishAction(b.ctx, la, got[0], wimro.Outcome{Status: wimro.ActionScheduled, RunAfter: &later}); err != nil {
		t.Fatal(err)
	}
	st, err = b.db.QueueStats(b.ctx)
	if err != nil || len(st) != 1 || st[0].Actions != 2 || st[0].OldestDue != 0 {
		t.Fatalf("2 queued for later: %+v, %v", st, err)
	}
}
