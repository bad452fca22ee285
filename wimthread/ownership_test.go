package wimthread_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/logtest"
	"github.com/wimro/wimro/wimthread"
)

// logBuffer collects a supervisor's log so a test can wait for what it
// announces.
type logBuffer struct{ logtest.Buffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// outage takes the test's database away from every client: new
// connections are refused and the open ones are ended. end brings it
// back; it runs at cleanup too, before the database is dropped.
func (b *bundle) outage(t testing.TB) (end func()) {
	t.Helper()
	cfg := b.db.Pool().Config().ConnConfig.Copy()
	name := cfg.Database
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(context.Background(), "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			if _, err := admin.Exec(context.Background(), "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS true"); err != nil {
				t.Errorf("end the outage: %v", err)
			}
			admin.Close(context.Background())
		})
	}
	t.Cleanup(end)
	return end
}

// wrapFake is a registry whose "fake" connectors are wrapped by wrap.
func wrapFake(wrap func(connectors.Connector) connectors.Connector) *connectors.Registry {
	r := connectors.NewRegistry()
	r.Register("fake", func(cfg connectors.Config) (connectors.Connector, error) {
		c, err := fake.Factory(cfg)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}, fake.Capabilities)
	return r
}

// afterCreate runs hook once, right after the first service reached the
// controller and before the worker can write that outcome.
func afterCreate(hook func()) *connectors.Registry {
	var once sync.Once
	return wrapFake(func(c connectors.Connector) connectors.Connector {
		return &hookedCreate{Connector: c, hook: func() { once.Do(hook) }}
	})
}

type hookedCreate struct {
	connectors.Connector
	hook func()
}

func (h *hookedCreate) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	id, info, err := h.Connector.CreateService(ctx, req)
	if err == nil {
		h.hook()
	}
	return id, info, err
}

// The database goes away between the controller's answer and the outcome
// write, for longer than a lease. The claim must not stay held (issue 12,
// point 1: it was renewed "for the process" and the link wedged until
// SIGTERM): the worker gives it up, the claim is released as soon as the
// database is back, and the action runs again, adopting its service.
func TestOutcomeUnwrittenForALeaseIsReleased(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	logs := &logBuffer{}
	outage := make(chan struct{})
	var end func()
	r := afterCreate(func() {
		end = b.outage(t)
		close(outage)
	})
	s := b.startWith(t, r, logs.logger(), wimthread.Options{Lease: time.Second, SweepEvery: 100 * time.Millisecond})
	v := b.instance(t, "ns", 1, wimro.NetActive)
	<-outage
	s.TestSignals().ClaimsGivenUp.Wait(t, patience, "the claim given up")
	if !strings.Contains(logs.String(), "the claim is given up") {
		t.Fatalf("the claim was given up without saying so:\n%s", logs.String())
	}
	end()
	b.actionDone(t, v.UUID, v.ActionID)
	links := b.linksActive(t, v.UUID)
	b.noUnfinished(t)
	if n := b.ctrl.Count(); n != 1 || *links[0].WIMInternalID != b.ctrl.Services()[0].ID {
		t.Fatalf("%d services on the controller for one link (%v)", n, b.ctrl.Services())
	}
	if n := b.ctrl.CallCount(fake.MethodCreateService); n != 2 {
		t.Fatalf("%d creates, want 2 (the lost outcome's action ran again)", n)
	}
	if !strings.Contains(logs.String(), "released claims whose outcome could not be written") {
		t.Fatalf("the given-up claim was not released by this process:\n%s", logs.String())
	}
}

// A short outage during the outcome write: the write is retried and lands;
// the action does not run twice.
func TestOutcomeWriteRetriedAfterShortOutage(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	logs := &logBuffer{}
	outage := make(chan struct{})
	var end func()
	r := afterCreate(func() {
		end = b.outage(t)
		close(outage)
	})
	s := b.startWith(t, r, logs.logger(), wimthread.Options{Lease: 20 * time.Second, SweepEvery: 100 * time.Millisecond})
	v := b.instance(t, "ns", 1, wimro.NetActive)
	<-outage
	s.TestSignals().WriteRetried.Wait(t, patience, "the outcome write retried")
	if !strings.Contains(logs.String(), "writing action outcomes failed; retrying") {
		t.Fatalf("the write was retried without saying so:\n%s", logs.String())
	}
	end()
	ia := b.actionDone(t, v.UUID, v.ActionID)
	b.linksActive(t, v.UUID)
	b.noUnfinished(t)
	if n := b.ctrl.CallCount(fake.MethodCreateService); n != 1 || ia.Done != 1 || ia.Failed != 0 {
		t.Fatalf("%d creates, counters %d done %d failed; want the one create recorded once", n, ia.Done, ia.Failed)
	}
}

// A connector that panics fails its action with the panic's message; the
// worker (and the process) goes on with the next one (issue 12, point 6).
func TestConnectorPanicFailsTheActionOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	var calls atomic.Int32
	r := wrapFake(func(c connectors.Connector) connectors.Connector { return &panicky{Connector: c, calls: &calls} })
	logs := &logBuffer{}
	b.startWith(t, r, logs.logger(), wimthread.Options{})
	v := b.instance(t, "ns", 1, wimro.NetActive)
	ia := b.actionDone(t, v.UUID, v.ActionID)
	if ia.Failed != 1 || ia.WIMActions[0].Status != wimro.ActionFailed || !strings.Contains(*ia.WIMActions[0].ErrorMsg, "the connector panicked: boom") {
		t.Fatalf("after a panic: %d failed, action %+v", ia.Failed, ia.WIMActions[0])
	}
	links, _ := b.eng.ListWANLinks(b.ctx, "t0", v.UUID)
	if links[0].Status != wimro.LinkError {
		t.Fatalf("link %s after a panic, want ERROR", links[0].Status)
	}
	if !strings.Contains(logs.String(), "level=ERROR msg=\"action panicked\"") || !strings.Contains(logs.String(), "runtime/debug.Stack") {
		t.Fatalf("no stack at ERROR:\n%s", logs.String())
	}
	// The same worker goes on.
	v2 := b.instance(t, "ns2", 1, wimro.NetActive)
	b.actionDone(t, v2.UUID, v2.ActionID)
	b.linksActive(t, v2.UUID)
}

type panicky struct {
	connectors.Connector
	calls *atomic.Int32
}

func (p *panicky) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if p.calls.Add(1) == 1 {
		panic("boom")
	}
	return p.Connector.CreateService(ctx, req)
}

// Status polling outlives any run of errors, whatever their kind: the link
// shows WIM_ERROR while the controller fails and the status it reports
// once it answers again (issue 12, point 5: polling stopped for good after
// MaxAttempts retryable errors or one 401).
func TestRefreshOutlivesControllerErrors(t *testing.T) {
	t.Parallel()
	for _, kind := range []connectors.Kind{connectors.KindRetryable, connectors.KindUnauthorized, connectors.KindNotFound} {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			t.Parallel()
			b := setup(t, "fake", nil)
			// Twice the attempts after which the old code gave up.
			failures := make(chan struct{}, 2*fast.MaxAttempts)
			var healthy atomic.Bool
			r := wrapFake(func(c connectors.Connector) connectors.Connector {
				return &failingStatus{Connector: c, kind: kind, failures: failures, healthy: &healthy}
			})
			b.start(t, r, wimthread.Options{})
			v := b.instance(t, "ns", 1, wimro.NetActive)
			for range cap(failures) {
				select {
				case <-failures:
				case <-time.After(30 * time.Second):
					t.Fatal("status polling stopped")
				}
			}
			links, _ := b.eng.ListWANLinks(b.ctx, "t0", v.UUID)
			if links[0].Status != wimro.LinkWIMError || links[0].ErrorMsg == nil || !strings.Contains(*links[0].ErrorMsg, "status refused") {
				t.Fatalf("link during the errors: %s %v", links[0].Status, links[0].ErrorMsg)
			}
			healthy.Store(true)
			links = b.linksActive(t, v.UUID)
			if links[0].ErrorMsg != nil {
				t.Fatalf("error kept after a good answer: %q", *links[0].ErrorMsg)
			}
			b.noUnfinished(t)
		})
	}
}

type failingStatus struct {
	connectors.Connector
	kind     connectors.Kind
	failures chan struct{}
	healthy  *atomic.Bool
}

func (f *failingStatus) GetServiceStatus(ctx context.Context, id string, info map[string]any) (connectors.ServiceStatus, error) {
	if f.healthy.Load() {
		return f.Connector.GetServiceStatus(ctx, id, info)
	}
	select {
	case f.failures <- struct{}{}:
	default:
	}
	return connectors.ServiceStatus{}, connectors.Errorf(f.kind, "status refused (%v)", f.kind)
}
