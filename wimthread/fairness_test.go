package wimthread_test

import (
	"fmt"
	"testing"

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
		if a.Attempts > 0 {
			running++
		}
	}
	if running != parallel {
		t.Fatalf("the slow account has %d actions claimed, want its %d slots full (%s)", running, parallel, fmt.Sprint(s.WIMActions))
	}
}
