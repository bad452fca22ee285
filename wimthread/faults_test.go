package wimthread_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/dynpac"
	dynpacemu "github.com/wimro/wimro/internal/testkit/emulators/dynpac"
	"github.com/wimro/wimro/internal/testkit/logtest"
	"github.com/wimro/wimro/wimthread"
)

// every makes a fault last for every request.
const every = 1 << 30

// faultCase is one row of the controller fault matrix: what the faulty
// controller (or the connector) does, and how the CREATE must end.
type faultCase struct {
	name string
	// fault answers a request in place of the controller (nil: none).
	fault http.HandlerFunc
	// faults is how many requests (or, with refused and panics, CREATE
	// calls) meet the fault: every, or the first few.
	faults int
	// refused: nothing listens at the WIM's URL while the faults last;
	// then the emulator starts listening there.
	refused bool
	// panics: the connector panics in CreateService.
	panics bool
	// delay: the emulator answers every request after this long.
	delay time.Duration
	// timeoutMS is the account's timeout_ms (5000 when 0).
	timeoutMS int

	// calls is how many CREATE attempts the action makes.
	calls int
	// active: the link ends ACTIVE with one service on the controller;
	// else the action ends FAILED and the link ERROR, with a message
	// naming every string of cause.
	active bool
	cause  []string
	// retryAfter: no retry comes sooner than this after a faulty reply.
	retryAfter time.Duration
}

// hold answers nothing: it keeps the request until the client gives up.
// It reads the body first: the server notices a client gone only once it
// has.
func hold(_ http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// reply answers status with body, after the header lines "Name: value".
func reply(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for _, h := range header {
			k, v, _ := strings.Cut(h, ": ")
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// TestControllerFaultMatrix drives one account's CREATE through a dynpac
// controller that fails in every way a controller fails (issue 12) and
// checks that each fault is retried or not as its kind says and ends in a
// clean, storable message, or, when it passes, in an ACTIVE link with one
// service. Meanwhile a second account on a healthy controller, run by the
// same supervisor, brings its links ACTIVE while the faulty account's
// worker is stuck in its last CREATE attempt: one account's faults never
// stall another.
func TestControllerFaultMatrix(t *testing.T) {
	t.Parallel()
	attempts := fast.MaxAttempts
	gaveUp := fmt.Sprintf("gave up after %d attempts", attempts)
	binary := "\x00\xff\xfe<html>\x00controller \xc3crashed</html>"
	bigPage := "<html><body>" + strings.Repeat("Bad Gateway \xff\x00 ", 6000) + "</body></html>"
	cases := []faultCase{
		{name: "timeout/persistent", fault: hold, faults: every, timeoutMS: 200, calls: attempts,
			cause: []string{"dynpac create", "deadline exceeded", gaveUp}},
		{name: "timeout/transient", fault: hold, faults: attempts - 1, timeoutMS: 200, calls: attempts, active: true},
		{name: "refused/persistent", refused: true, faults: every, calls: attempts,
			cause: []string{"dynpac create", "connection refused", gaveUp}},
		{name: "refused/transient", refused: true, faults: attempts - 1, calls: attempts, active: true},
		{name: "500/persistent", fault: reply(500, "database on fire"), faults: every, calls: attempts,
			cause: []string{"HTTP 500", "database on fire", gaveUp}},
		{name: "500/transient", fault: reply(500, "database on fire"), faults: attempts - 1, calls: attempts, active: true},
		{name: "502 long page/persistent", fault: reply(502, bigPage, "Content-Type: text/html"), faults: every, calls: attempts,
			cause: []string{"HTTP 502", "<html><body>Bad Gateway", "…", gaveUp}},
		{name: "502 long page/transient", fault: reply(502, bigPage, "Content-Type: text/html"), faults: 1, calls: 2, active: true},
		{name: "503/persistent", fault: reply(503, "maintenance window"), faults: every, calls: attempts,
			cause: []string{"HTTP 503", "maintenance window", gaveUp}},
		{name: "503/transient", fault: reply(503, "maintenance window"), faults: 1, calls: 2, active: true},
		{name: "429 Retry-After/persistent", fault: reply(429, "slow down", "Retry-After: 1"), faults: every, calls: attempts,
			cause: []string{"HTTP 429", "slow down", gaveUp}, retryAfter: time.Second},
		{name: "429 Retry-After/transient", fault: reply(429, "slow down", "Retry-After: 1"), faults: 1, calls: 2, active: true,
			retryAfter: time.Second},
		{name: "garbage body", fault: reply(200, "<html><body>Welcome to the portal</body></html>", "Content-Type: text/html"),
			faults: every, calls: 1, cause: []string{"dynpac create", "no usable service id", "Welcome to the portal"}},
		{name: "binary garbage body", fault: reply(200, "\x00\xff\xfe\x01garbage"),
			faults: every, calls: 1, cause: []string{"dynpac create", "no usable service id"}},
		{name: "invalid UTF-8 and NUL in 500/persistent", fault: reply(500, binary), faults: every, calls: attempts,
			cause: []string{"HTTP 500", "controller", "crashed", gaveUp}},
		{name: "invalid UTF-8 and NUL in 500/transient", fault: reply(500, binary), faults: attempts - 1, calls: attempts, active: true},
		{name: "invalid UTF-8 and NUL in a DynPaC error", fault: reply(500, `{"code": "E\u0000BAD", "description": "state `+"\xff\xfe"+` lost"}`),
			faults: every, calls: attempts, cause: []string{"HTTP 500", "Reason: EBAD", "state", "lost", gaveUp}},
		{name: "invalid UTF-8 and NUL in 400", fault: reply(400, binary), faults: every, calls: 1,
			cause: []string{"HTTP 400", "controller", "crashed"}},
		{name: "slow answers", delay: 150 * time.Millisecond, timeoutMS: 2000, calls: 1, active: true},
		{name: "panicking connector", panics: true, faults: every, calls: 1, cause: []string{"the connector panicked", "boom"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runFaultCase(t, c)
		})
	}
}

func runFaultCase(t *testing.T, c faultCase) {
	// The healthy account's controller, and the faulty one behind the
	// fault handler.
	healthy := dynpacemu.New(dynpacemu.Options{})
	healthySrv := httptest.NewServer(healthy)
	t.Cleanup(healthySrv.Close)
	emu := dynpacemu.New(dynpacemu.Options{})
	emu.Delay(c.delay)
	fh := &faultHandler{next: emu, fault: c.fault, faults: c.faults}
	if c.fault == nil {
		fh.faults = 0
	}
	srv := httptest.NewUnstartedServer(fh)
	var started atomic.Bool
	t.Cleanup(func() {
		if started.Load() {
			srv.Close()
		} else {
			srv.Listener.Close()
		}
	})
	startAt := func(addr string) {
		if addr != "" {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen on %s after the refused connections: %v", addr, err)
				return
			}
			srv.Listener.Close()
			srv.Listener = ln
		}
		srv.Start()
		started.Store(true)
	}

	p := &probe{panics: c.panics, last: c.calls, gate: make(chan struct{}), held: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(p.gate) }) }
	t.Cleanup(release)
	url := ""
	switch {
	case c.refused:
		addr := freeAddr(t)
		url = "http://" + addr
		if c.faults < c.calls {
			p.after = func(n int) {
				if n == c.faults {
					startAt(addr)
				}
			}
		}
	default:
		startAt("")
		url = srv.URL
	}

	r := connectors.NewRegistry()
	r.Register(dynpac.Type, func(cfg connectors.Config) (connectors.Connector, error) {
		conn, err := dynpac.Factory(cfg)
		if err != nil || cfg.WIMName != "wan1" {
			return conn, err
		}
		return &probed{Connector: conn, p: p}, nil
	}, dynpac.Capabilities)
	timeoutMS := c.timeoutMS
	if timeoutMS == 0 {
		timeoutMS = 5000
	}
	b := newBundle(t)
	// The factory maps each datacenter dpid-port to WAN switch port i+1,
	// as dynpac needs.
	b.wan(t, "wan1", dynpac.Type, url, map[string]any{"timeout_ms": timeoutMS}, "dcA", "dcB")
	b.wan(t, "wan2", dynpac.Type, healthySrv.URL, nil, "dcC", "dcD")
	b.start(t, r, wimthread.Options{})

	bad := b.instance(t, "faulty", 1, wimro.NetActive)
	good := b.instance(t, "healthy", 2, wimro.NetActive, "dcC", "dcD")
	select {
	case <-p.held:
	case <-time.After(30 * time.Second):
		t.Fatalf("the faulty CREATE never made its attempt %d (%d so far)", c.calls, p.calls.Load())
	}
	// The faulty account's action is stuck in its last attempt: the
	// other account's links go ACTIVE all the same, those of an instance
	// created now included.
	during := b.instance(t, "healthy-during", 2, wimro.NetActive, "dcC", "dcD")
	b.linksActive(t, good.UUID)
	b.linksActive(t, during.UUID)
	if ia, err := b.eng.GetInstanceAction(b.ctx, "t0", bad.UUID, bad.ActionID); err != nil || ia.Done+ia.Failed != 0 || ia.WIMActions[0].Status != wimro.ActionScheduled {
		t.Fatalf("the faulty action finished while held: %+v %v", ia, err)
	}
	release()
	ia := b.actionDone(t, bad.UUID, bad.ActionID)
	b.noUnfinished(t)
	if n := healthy.Count(); n != 4 {
		t.Errorf("%d services on the healthy controller, want 4", n)
	}

	if n := int(p.calls.Load()); n != c.calls {
		t.Errorf("%d CREATE attempts, want %d", n, c.calls)
	}
	creates := fh.creates()
	faulted, passed := 0, 0
	for _, h := range creates {
		if h.faulted {
			faulted++
		} else {
			passed++
		}
	}
	wantFaulted := 0
	if c.fault != nil {
		wantFaulted = min(c.calls, c.faults)
	}
	wantPassed := 0
	if c.active {
		wantPassed = 1
	}
	if faulted != wantFaulted || passed != wantPassed {
		t.Errorf("the controller saw %d faulty and %d good creates, want %d and %d", faulted, passed, wantFaulted, wantPassed)
	}
	if c.retryAfter > 0 {
		checkRetryAfter(t, creates, c.retryAfter)
	}

	links, err := b.eng.ListWANLinks(b.ctx, "t0", bad.UUID)
	if err != nil || len(links) != 1 {
		t.Fatalf("links of the faulty instance: %v %v", links, err)
	}
	link, task := links[0], ia.WIMActions[0]
	if c.active {
		links = b.linksActive(t, bad.UUID)
		svcs := emu.Services()
		if ia.Done != 1 || len(svcs) != 1 || links[0].WIMInternalID == nil || *links[0].WIMInternalID != svcs[0].ID {
			t.Fatalf("after the faults: %d done, services %+v, link %+v", ia.Done, svcs, links[0])
		}
		if links[0].ErrorMsg != nil {
			t.Errorf("the ACTIVE link kept the error %q", *links[0].ErrorMsg)
		}
		return
	}
	if ia.Failed != 1 || task.Status != wimro.ActionFailed || link.Status != wimro.LinkError {
		t.Fatalf("after a lasting fault: %d failed, action %s, link %s", ia.Failed, task.Status, link.Status)
	}
	checkMessage(t, "action", task.ErrorMsg, c.cause)
	checkMessage(t, "link", link.ErrorMsg, c.cause)
	if n := emu.Count(); n != 0 {
		t.Errorf("%d services on the faulty controller", n)
	}
}

// checkMessage checks a stored error_msg: valid UTF-8 without NUL, at
// most 1024 bytes, naming the cause.
func checkMessage(t *testing.T, what string, msg *string, cause []string) {
	t.Helper()
	if msg == nil {
		t.Errorf("%s: no error_msg", what)
		return
	}
	m := *msg
	t.Logf("%s error_msg: %q", what, m)
	if !utf8.ValidString(m) || strings.IndexByte(m, 0) >= 0 || len(m) > 1024 {
		t.Errorf("%s: error_msg not clean (valid UTF-8 %v, %d bytes): %q", what, utf8.ValidString(m), len(m), m)
	}
	for _, s := range cause {
		if !strings.Contains(m, s) {
			t.Errorf("%s: error_msg does not name %q: %q", what, s, m)
		}
	}
}

// checkRetryAfter checks that no create came sooner than retryAfter after
// a faulty reply (a small tolerance covers the clocks of the process and
// of PostgreSQL, which decides when a retry is due).
func checkRetryAfter(t *testing.T, creates []hit, retryAfter time.Duration) {
	t.Helper()
	const tolerance = 50 * time.Millisecond
	pairs := 0
	for i := 1; i < len(creates); i++ {
		if !creates[i-1].faulted {
			continue
		}
		pairs++
		if gap := creates[i].at.Sub(creates[i-1].answered); gap < retryAfter-tolerance {
			t.Errorf("create %d came %v after the Retry-After reply, want at least %v", i+1, gap, retryAfter)
		}
	}
	if pairs == 0 {
		t.Errorf("no retry after a Retry-After reply")
	}
}

// freeAddr returns a loopback address where nothing listens.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// faultHandler stands in front of an emulator: it answers the first
// faults requests with fault and passes the others to next, and logs
// them all.
type faultHandler struct {
	next   http.Handler
	fault  http.HandlerFunc
	faults int

	mu   sync.Mutex
	seen int
	log  []hit
}

// hit is one request the fault handler received.
type hit struct {
	method, path string
	faulted      bool
	at, answered time.Time
}

func (h *faultHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := hit{method: r.Method, path: r.URL.Path, at: time.Now()}
	h.mu.Lock()
	e.faulted = h.seen < h.faults
	h.seen++
	h.mu.Unlock()
	if e.faulted {
		h.fault(w, r)
	} else {
		h.next.ServeHTTP(w, r)
	}
	e.answered = time.Now()
	h.mu.Lock()
	h.log = append(h.log, e)
	h.mu.Unlock()
}

// creates returns the service creates received, in the order they came.
func (h *faultHandler) creates() []hit {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hit
	for _, e := range h.log {
		if e.method == http.MethodPost && e.path == "/service/create" {
			out = append(out, e)
		}
	}
	return out
}

// probe watches the CREATE calls of the faulty account's connector (the
// supervisor may rebuild the connector; the probe outlives it).
type probe struct {
	panics bool
	// after, when set, runs after each call with its number.
	after func(n int)
	// last is the number of the call that ends the action: when it
	// returns, held is closed and the call waits for gate.
	last  int
	gate  chan struct{}
	held  chan struct{}
	calls atomic.Int32
}

type probed struct {
	connectors.Connector
	p *probe
}

func (c *probed) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	n := int(c.p.calls.Add(1))
	defer func() { // a panic goes through here too
		if c.p.after != nil {
			c.p.after(n)
		}
		if n == c.p.last {
			close(c.p.held)
			select {
			case <-c.p.gate:
			case <-ctx.Done():
			}
		}
	}()
	if c.p.panics {
		panic("boom")
	}
	return c.Connector.CreateService(ctx, req)
}

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
	b.written(t, fmt.Sprintf("the DELETE at attempt %d", want), func() (bool, string) {
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
	// (Events show once every older transaction has ended, which nothing
	// announces: read until they are there.)
	var retries []wimro.Event
	waitFor(t, fmt.Sprintf("%d retry events", want), func() (bool, string) {
		page, err := b.db.ReadEvents(b.ctx, del.UUID, wimro.EventCursor{}, 0)
		if err != nil {
			return false, err.Error()
		}
		retries = retries[:0]
		for _, e := range page.Events {
			if e.Attempt != nil {
				retries = append(retries, e)
			}
		}
		return len(retries) >= want, fmt.Sprintf("%d retry events", len(retries))
	})
	for i, e := range retries {
		n := i + 1
		if *e.Attempt != n || e.ErrorMsg == nil || !strings.Contains(*e.ErrorMsg, "HTTP 503") || !strings.Contains(*e.ErrorMsg, "maintenance window") ||
			e.NextTryAt == nil || *e.Status != wimro.ActionScheduled || *e.Action != wimro.ActionDelete {
			t.Fatalf("retry event %d: attempt %s, %s %s, error %q, next %v", n, deref(e.Attempt), deref(e.Action), deref(e.Status), deref(e.ErrorMsg), e.NextTryAt)
		}
		window := fast.Backoff(n)
		if d := e.NextTryAt.Sub(e.At); d > window+100*time.Millisecond || window > fast.RetryMax {
			t.Fatalf("attempt %d retried after %v, beyond its window %v (RetryMax %v)", n, d, window, fast.RetryMax)
		}
	}
	if got := metricValue(t, reg, "wimro_delete_retries_past_max_total", map[string]string{"connector": dynpac.Type}); got < float64(want-fast.MaxAttempts) {
		t.Errorf("wimro_delete_retries_past_max_total %v, want at least %d", got, want-fast.MaxAttempts)
	}
	// A WARN at MaxAttempts and every MaxAttempts after, not one per
	// retry (the log is read before the count it is compared with).
	warns := strings.Count(log.String(), `level=WARN msg="DELETE still failing`)
	acts, err := b.db.ListActionsOfItem(b.ctx, link.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if n := acts[len(acts)-1].Attempts; warns < 2 || warns > n/fast.MaxAttempts {
		t.Errorf("%d WARN lines over %d attempts, want one every %d attempts", warns, n, fast.MaxAttempts)
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
