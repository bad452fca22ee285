package wimthread_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/coordinator/chores"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// purgeLog is a slog handler that passes on the counts of each "purged"
// line: the signal that a purge ran.
type purgeLog chan [2]int64

func (h purgeLog) Enabled(context.Context, slog.Level) bool { return true }

func (h purgeLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "purged finished actions" {
		return nil
	}
	var n [2]int64
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "actions":
			n[0] = a.Value.Int64()
		case "instance_actions":
			n[1] = a.Value.Int64()
		}
		return true
	})
	select {
	case h <- n:
	default: // never block the purge; a lost count fails the test
	}
	return nil
}

func (h purgeLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h purgeLog) WithGroup(string) slog.Handler      { return h }

// stopRetention stops r and fails the test unless it stops in time.
func stopRetention(t *testing.T, r *chores.Retention) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// Once started, the purge removes the history of an instance deleted
// later, by itself, after its DELETE has run; the history of a live
// instance stays.
func TestRetentionPurgesDeletedInstances(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	b.start(t, registry(), wimthread.Options{})
	purged := make(purgeLog, 16)
	r := chores.NewRetention(b.db, slog.New(purged), chores.RetentionOptions{Retention: time.Millisecond, Interval: 20 * time.Millisecond})
	if err := r.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopRetention(t, r) })

	keep := b.instance(t, "keep", 1, wimro.NetActive)
	gone := b.instance(t, "gone", 2, wimro.NetActive)
	b.actionDone(t, keep.UUID, keep.ActionID)
	b.actionDone(t, gone.UUID, gone.ActionID)
	b.linksActive(t, gone.UUID)
	if _, _, err := b.eng.DeleteInstance(b.ctx, "t0", gone.UUID); err != nil {
		t.Fatal(err)
	}

	// The deleted instance's two CREATE and two DELETE actions, and its
	// two instance actions, and nothing else.
	var total [2]int64
	deadline := time.After(30 * time.Second)
	for total != [2]int64{4, 2} {
		select {
		case n := <-purged:
			total[0] += n[0]
			total[1] += n[1]
			if total[0] > 4 || total[1] > 2 {
				t.Fatalf("purged %d actions and %d instance actions, want 4 and 2", total[0], total[1])
			}
		case <-deadline:
			t.Fatalf("purged %d actions and %d instance actions after 30 s, want 4 and 2", total[0], total[1])
		}
	}
	if n := b.ctrl.Count(); n != 1 {
		t.Fatalf("%d services on the controller, want the live instance's 1: a DELETE lost its history before it ran", n)
	}
	// A deleted instance whose history is purged is not found.
	if list, err := b.eng.ListInstanceActions(b.ctx, "t0", gone.UUID); wimro.ErrorCode(err) != wimro.ENOTFOUND || len(list) != 0 {
		t.Fatalf("history of the deleted instance: %+v, %v", list, err)
	}
	v, err := b.eng.GetInstanceAction(b.ctx, "t0", keep.UUID, keep.ActionID)
	if err != nil || len(v.WIMActions) != 1 {
		t.Fatalf("history of the live instance: %+v, %v", v, err)
	}
	stopRetention(t, r)
	stopRetention(t, r) // a second Stop is a no-op
}

// Stop ends a purge that waits for its next turn; a stopped purge starts
// again (it follows leadership); a zero retention purges nothing.
func TestRetentionStartStop(t *testing.T) {
	t.Parallel()
	db := persistence.NewDB(pgtest.NewPool(t), nil)
	stopRetention(t, chores.NewRetention(db, nil, chores.RetentionOptions{Retention: time.Hour})) // never started

	for _, retention := range []time.Duration{0, time.Hour} {
		r := chores.NewRetention(db, nil, chores.RetentionOptions{Retention: retention})
		if err := r.Start(t.Context()); err != nil {
			t.Fatalf("retention %v: start: %v", retention, err)
		}
		if err := r.Start(t.Context()); retention > 0 && err == nil {
			t.Fatalf("retention %v: a second Start succeeded", retention)
		}
		stopRetention(t, r)
		if err := r.Start(t.Context()); err != nil {
			t.Fatalf("retention %v: start after stop: %v", retention, err)
		}
		stopRetention(t, r)
	}
}
