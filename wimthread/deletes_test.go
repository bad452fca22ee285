package wimthread_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/dynpac"
	dynpacemu "github.com/wimro/wimro/internal/emulators/dynpac"
	"github.com/wimro/wimro/internal/logtest"
	"github.com/wimro/wimro/wimthread"
)

// A DELETE never fails for a retryable reason (issue 30, point 6): its
// instance is gone, so given up it would leave the service on the
// controller for good. Against a controller answering 503 to everything
// it passes MaxAttempts and stays SCHEDULED, retrying within the capped
// back-off window; each retry is an event with its attempt, error and
// next try (point 8); past MaxAttempts the retries are counted in
// wimro_delete_retries_past_max_total and logged at WARN once every
// MaxAttempts attempts. Once the controller answers, the service goes.
func TestDeleteNeverGivesUp(t *testing.T) {
	t.Parallel()
	emu := dynpacemu.New(dynpacemu.Options{})
	fh := &faultHandler{next: emu, fault: reply(503, "maintenance window")}
	srv := httptest.NewServer(fh)
	t.Cleanup(srv.Close)
	setFaults := func(n int) {
		fh.mu.Lock()
		fh.faults, fh.seen = n, 0
		fh.mu.Unlock()
	}
	r := connectors.NewRegistry()
	dynpac.Register(r)
	reg := prometheus.NewPedanticRegistry()
	m, err := wimthread.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	logger, log := logtest.Logger(t, "wimthread log")
	b := newBundle(t)
	b.wan(t, "wan1", dynpac.Type, srv.URL, nil, "dcA", "dcB")
	b.startWith(t, r, logger, wimthread.Options{Metrics: m})
	v := b.instance(t, "ns", 1, wimro.NetActive)
	link := b.linksActive(t, v.UUID)[0]
	if n := emu.Count(); n != 1 {
		t.Fatalf("%d services after the create, want 1", n)
	}

	setFaults(every)
	del, _, err := b.eng.DeleteInstance(b.ctx, "t0", v.UUID)
	if err != nil {
		t.Fatal(err)
	}
	want := 3 * fast.MaxAttempts
	waitFor(t, fmt.Sprintf("the DELETE at attempt %d", want), func() (bool, string) {
		acts, err := b.db.ListActionsOfItem(b.ctx, link.UUID)
		if err != nil {
			return false, err.Error()
		}
		d := acts[len(acts)-1]
		if d.Action != wimro.ActionDelete || d.Status != wimro.ActionScheduled {
			t.Fatalf("the DELETE is %s %s after %d attempts: %s", d.Action, d.Status, d.Attempts, deref(d.ErrorMsg))
		}
		return d.Attempts >= want, fmt.Sprintf("%s %s attempts %d", d.Action, d.Status, d.Attempts)
	})

	// Every retry is an event: attempts 1, 2, ... in order, the 503 as
	// the error, and a next try within the attempt's back-off window,
	// never more than RetryMax away.
	page, err := b.db.ReadEvents(b.ctx, del.UUID, wimro.EventCursor{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range page.Events {
		if e.Attempt == nil {
			continue
		}
		n++
		if *e.Attempt != n || e.ErrorMsg == nil || !strings.Contains(*e.ErrorMsg, "HTTP 503") || !strings.Contains(*e.ErrorMsg, "maintenance window") ||
			e.NextTryAt == nil || *e.Status != wimro.ActionScheduled || *e.Action != wimro.ActionDelete {
			t.Fatalf("retry event %d: attempt %s, %s %s, error %q, next %v", n, deref(e.Attempt), deref(e.Action), deref(e.Status), deref(e.ErrorMsg), e.NextTryAt)
		}
		window := fast.Backoff(n)
		if d := e.NextTryAt.Sub(e.At); d > window+100*time.Millisecond || window > fast.RetryMax {
			t.Fatalf("attempt %d retried after %v, beyond its window %v (RetryMax %v)", n, d, window, fast.RetryMax)
		}
	}
	if n < want-1 { // the last retry's event may be written after the read
		t.Fatalf("%d retry events, want at least %d", n, want-1)
	}
	if got := metricValue(t, reg, "wimro_delete_retries_past_max_total", map[string]string{"connector": dynpac.Type}); got < float64(want-fast.MaxAttempts) {
		t.Errorf("wimro_delete_retries_past_max_total %v, want at least %d", got, want-fast.MaxAttempts)
	}
	// A WARN at MaxAttempts and every MaxAttempts after, not one per retry.
	warns := strings.Count(log.String(), `level=WARN msg="DELETE still failing`)
	if warns < 2 || warns > n/fast.MaxAttempts+1 {
		t.Errorf("%d WARN lines over %d retries, want one every %d attempts", warns, n, fast.MaxAttempts)
	}

	// The controller answers again: the service goes.
	setFaults(0)
	ia := b.actionDone(t, v.UUID, del.UUID)
	if ia.Done != 1 || ia.Failed != 0 {
		t.Fatalf("the DELETE ended %d done %d failed", ia.Done, ia.Failed)
	}
	b.noUnfinished(t)
	if n := emu.Count(); n != 0 {
		t.Fatalf("%d services left on the controller", n)
	}
}

func deref[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
