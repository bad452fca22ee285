package persistence_test

import (
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// Two outcome batches with actions of the same instance action do not wait
// for each other (issue 16: no hot row): the counters are appended, not
// updated in place. The first batch stays uncommitted while the second is
// written; with a counter row updated in place the second waited for the
// first's commit. The API's counters then count both.
func TestOutcomeBatchesDoNotQueueOnTheCounters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, ia := queue(t, b)
	la := lease(t, b, acct, "P")
	got, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	built := func(a wimro.Action) []persistence.Finished {
		return []persistence.Finished{{Action: a, Lease: la, Outcome: wimro.Outcome{Status: wimro.ActionBuild, Done: 1}}}
	}
	second := make(chan error, 1)
	err = b.db.Tx(b.ctx, func(s *persistence.Store) error {
		if errs, err := s.FinishActions(b.ctx, built(got[0])); err != nil || errs[0] != nil {
			t.Fatalf("first batch: %v, %v", err, errs)
		}
		// The first batch holds its locks until this function returns; a
		// second batch that waits for them is reported, then released by
		// the commit.
		go func() {
			errs, err := b.db.FinishActions(b.ctx, built(got[1]))
			if err == nil {
				err = errs[0]
			}
			second <- err
		}()
		select {
		case err := <-second:
			if err != nil {
				t.Errorf("second batch, while the first is uncommitted: %v", err)
			}
			second <- nil
		case <-time.After(10 * time.Second):
			t.Errorf("the second batch waited 10 s for the first one's commit")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second batch: %v", err)
	}
	read, err := b.db.GetInstanceAction(b.ctx, *ia.InstanceID, ia.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if read.Done != 2 || read.Failed != 0 || !read.ModifiedAt.After(ia.ModifiedAt) {
		t.Fatalf("instance action after both batches: done %d failed %d modified %v (created %v)", read.Done, read.Failed, read.ModifiedAt, ia.ModifiedAt)
	}
	list, err := b.db.ListInstanceActions(b.ctx, *ia.InstanceID)
	if err != nil || len(list) != 1 || list[0].Done != 2 {
		t.Fatalf("list = %+v, %v", list, err)
	}
}
