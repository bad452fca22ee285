package wimthread_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wimro/wimro/wimthread"
)

// TestSlowAccountDoesNotHoldBackAnother: one claimer and one completer
// serve every account, so an account whose controller answers slowly (its
// every slot taken by a call that lasts minutes) must not delay another
// account's actions.
func TestSlowAccountDoesNotHoldBackAnother(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", map[string]any{"latency_ms": 600_000})
	b.wan(t, "wan2", "fake", b.url, nil, "dcC", "dcD")
	const parallel = 4
	b.start(t, registry(), wimthread.Options{Parallel: parallel})
	// More slow links than slots: the slow account stays full.
	slow := b.instance(t, "slow", 2*parallel, "ACTIVE")
	fast := b.instance(t, "fast", 3*parallel, "ACTIVE", "dcC", "dcD")
	v := b.actionDone(t, fast.UUID, fast.ActionID)
	if v.Failed != 0 {
		t.Fatalf("the fast account's actions: %d failed", v.Failed)
	}
	s, err := b.eng.GetInstanceAction(b.ctx, "t0", slow.UUID, slow.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Done+s.Failed != 0 {
		t.Fatalf("the slow account finished %d actions; its controller should still be answering", s.Done+s.Failed)
	}
	running := 0
	for _, a := range s.WIMActions {
		if a.ClaimedBy != nil {
			running++
		}
	}
	if running != parallel {
		t.Fatalf("the slow account has %d actions claimed, want its %d slots full (%s)", running, parallel, fmt.Sprint(s.WIMActions))
	}
}

// TestOutcomeAwaitingWriteFreesItsSlot: --parallel bounds the links at the
// controller, not the outcomes waiting to be written. With one slot and the
// first outcome's write held up (its instance action row locked, which
// the progress increment's key check waits for), the second link still
// reaches the controller; once the write goes through both are ACTIVE.
func TestOutcomeAwaitingWriteFreesItsSlot(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	v := b.instance(t, "ns", 2, "ACTIVE")
	tx, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(b.ctx, `SELECT 1 FROM instance_actions WHERE uuid = $1 FOR UPDATE`, v.ActionID); err != nil {
		t.Fatal(err)
	}
	s := b.start(t, registry(), wimthread.Options{Parallel: 1})
	ran := 0
	s.TestSignals().ActionRan.WaitFor(t, patience, "both links run while the first outcome is not yet written", func(string) bool {
		ran++
		return ran == 2
	})
	if n := b.ctrl.Count(); n != 2 {
		t.Fatalf("%d services after both links ran, want 2", n)
	}
	ia, err := b.eng.GetInstanceAction(b.ctx, "t0", v.UUID, v.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	if ia.Done != 0 {
		t.Fatalf("%d outcomes written while their instance action was locked", ia.Done)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if d := b.actionDone(t, v.UUID, v.ActionID); d.Done != 2 || d.Failed != 0 {
		t.Fatalf("create: %d done %d failed", d.Done, d.Failed)
	}
	b.linksActive(t, v.UUID)
}

// TestSlowControllerDoesNotHoldBackAnothersChecks: monitoring is walled
// off per account too. One account's controller holds every call (each
// credentials check waits its whole 30 s timeout); the other account's
// credentials are checked every round meanwhile, not once per slow check.
func TestSlowControllerDoesNotHoldBackAnothersChecks(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", map[string]any{"latency_ms": 600_000})
	b.wan(t, "wan2", "fake", b.url, nil, "dcC", "dcD")
	s := b.start(t, registry(), wimthread.Options{MonitorInterval: 100 * time.Millisecond})
	checks := map[string]int{} // account -> checks recorded
	id := s.TestSignals().CredentialsChecked.WaitFor(t, 10*time.Second, "an account checked three times while the other's controller holds its check", func(id string) bool {
		checks[id]++
		return checks[id] >= 3
	})
	if a, err := b.db.GetAccount(b.ctx, id); err != nil || a.CheckedAt == nil {
		t.Fatalf("account %s checked three times, but no check recorded: %v", id, err)
	}
}
