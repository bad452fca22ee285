package onos_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	emu "github.com/wimro/wimro/internal/testkit/emulators/onos"
)

// The tests here play two wimd processes writing to one ONOS. Each
// "process" reaches the shared emulator through a server of its own, so
// the two connectors have different URLs and this process's own mutation
// lock (keyed by URL) does not serialise them, exactly as two processes
// are not serialised by each other's in-memory locks. What must serialise
// them is the shared Locker, wimd's PostgreSQL advisory locks in
// production.

// sharedLocker stands in for the PostgreSQL Locker the two processes
// share. Two real processes on one WIM compute the same lock name from the
// same URL; here the URLs differ only because both "processes" live in
// one test binary, so every name is folded onto one database lock. Each
// Lock call is reported on attempts (without blocking) with the name the
// connector asked for.
type sharedLocker struct {
	db       connectors.MemLocker
	attempts chan string
}

func newSharedLocker() *sharedLocker { return &sharedLocker{attempts: make(chan string, 256)} }

func (l *sharedLocker) Lock(ctx context.Context, name string) (func(), error) {
	select {
	case l.attempts <- name:
	default:
	}
	return l.db.Lock(ctx, "onos-vpls:the-controller")
}

// process is one simulated wimd process: its own server in front of the
// shared emulator and a connector on it.
type process struct {
	c   connectors.Connector
	srv *httptest.Server
}

// twoProcesses starts an emulator (seeded with a tenant's configuration)
// and two processes on it sharing locker (nil: no shared lock).
func twoProcesses(t *testing.T, opts emu.Options, locker connectors.Locker) (*emu.Emulator, process, process) {
	t.Helper()
	e := emu.New(opts)
	seed(t, e)
	start := func() process {
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		return process{c: build(t, connectors.Config{URL: srv.URL, Locker: locker}), srv: srv}
	}
	return e, start(), start()
}

// host is the Host header a process's requests carry.
func (p process) host() string { return strings.TrimPrefix(p.srv.URL, "http://") }

// await waits for ch with a deadline (a hang detector, not a timing
// assertion).
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// pauser makes BeforeWrite stop the first VPLS POST from one host until
// released.
type pauser struct {
	host    string
	once    sync.Once
	paused  chan struct{}
	release chan struct{}
	free    sync.Once
}

func newPauser() *pauser {
	return &pauser{paused: make(chan struct{}), release: make(chan struct{})}
}

// pausing sets the host to pause and releases the pause at cleanup. Call
// it after the servers are started: cleanups run last-in first-out, and a
// server's Close waits for the paused request.
func (p *pauser) pausing(t *testing.T, host string) {
	p.host = host
	t.Cleanup(p.unpause)
}

func (p *pauser) unpause() { p.free.Do(func() { close(p.release) }) }

func (p *pauser) beforeWrite(w emu.Write) {
	if w.Method != http.MethodPost || w.Path != vplsPath || w.Host != p.host {
		return
	}
	hit := false
	p.once.Do(func() { hit = true })
	if hit {
		close(p.paused)
		<-p.release
	}
}

// TestTwoProcessesSharedLocker runs 2×10 concurrent creates from two
// processes and checks that no VPLS or interface was lost.
func TestTwoProcessesSharedLocker(t *testing.T) {
	t.Parallel()
	const perProcess = 10
	e, a, b := twoProcesses(t, emu.Options{}, newSharedLocker())
	type result struct {
		key string
		err error
	}
	results := make(chan result, 2*perProcess)
	for i := range perProcess {
		for j, p := range []process{a, b} {
			go func() {
				key := uuid.NewString()
				_, _, err := p.c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(j*perProcess + i)})
				results <- result{key, err}
			}()
		}
	}
	var keys []string
	for range 2 * perProcess {
		r := await(t, results, "a create")
		if r.err != nil {
			t.Fatalf("CreateService: %v", r.err)
		}
		keys = append(keys, r.key)
	}
	app := e.AppVPLSs()
	cfg, _ := e.ConfiguredVPLSs()
	configured := make(map[string]emu.VPLS)
	for _, v := range cfg.VPLSs {
		configured[v.Name] = v
	}
	for _, key := range keys {
		name := "wimro-" + key
		if v := app[name]; len(v.Interfaces) != 2 {
			t.Errorf("the app runs %s with %v, want its 2 interfaces", name, v.Interfaces)
		}
		if v := configured[name]; len(v.Interfaces) != 2 {
			t.Errorf("the config has %s with %v, want its 2 interfaces", name, v.Interfaces)
		}
		if got := ours(e, key); len(got) != 2 {
			t.Errorf("ports hold %+v for %s, want 2 interfaces", got, key)
		}
	}
	checkTenant(t, e, "concurrent creates")
	for _, p := range []process{a, b} {
		list, err := p.c.ListServices(t.Context())
		if err != nil || len(list) != 2*perProcess {
			t.Fatalf("ListServices = %d services, %v; want %d", len(list), err, 2*perProcess)
		}
	}
	if err := b.c.ClearAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkTenant(t, e, "ClearAll")
	for name := range e.AppVPLSs() {
		if strings.HasPrefix(name, "wimro-") && name != "wimro-not a key" {
			t.Errorf("ClearAll left %s", name)
		}
	}
}

// TestTwoProcessesLostUpdateWithoutLocker is the negative control: with no
// shared lock, process A is paused between its read of the VPLS list and
// its write while B creates a service; A's write then carries the list it
// read, without B's VPLS, and the VPLS app removes B's VPLS. A's
// verify-after-write does not notice (it checks A's own VPLS, which is
// there), and B's check ran before A's write: this is the lost update the
// shared lock exists for.
func TestTwoProcessesLostUpdateWithoutLocker(t *testing.T) {
	t.Parallel()
	p := newPauser()
	e, a, b := twoProcesses(t, emu.Options{BeforeWrite: p.beforeWrite}, nil)
	p.pausing(t, a.host())
	keyA, keyB := uuid.NewString(), uuid.NewString()

	doneA := make(chan error, 1)
	go func() {
		_, _, err := a.c.CreateService(t.Context(), connectors.Request{Key: keyA, Type: connectors.ServiceELINE, Points: points(1)})
		doneA <- err
	}()
	await(t, p.paused, "A to reach its VPLS write")
	infoB := create(t, b.c, keyB, connectors.ServiceELINE, points(2))
	if _, ok := e.AppVPLSs()["wimro-"+keyB]; !ok {
		t.Fatal("B's VPLS is not running after B's create")
	}
	p.unpause()
	if err := await(t, doneA, "A's create"); err != nil {
		t.Fatalf("A's create: %v", err)
	}

	app := e.AppVPLSs()
	if _, ok := app["wimro-"+keyA]; !ok {
		t.Fatal("A's VPLS is not running")
	}
	if _, ok := app["wimro-"+keyB]; ok {
		t.Fatal("B's VPLS survived: the test no longer reproduces the lost update it is the control for")
	}
	if _, err := b.c.GetServiceStatus(t.Context(), keyB, infoB); !connectors.IsNotFound(err) {
		t.Fatalf("status of B's lost service: %v, want NotFound", err)
	}
	if got := ours(e, keyB); len(got) != 2 {
		t.Fatalf("B's interfaces %+v: the ports key was not part of the race", got)
	}
	checkTenant(t, e, "the race")
}

// TestTwoProcessesPausedWriterHoldsSharedLock replays the race above with
// the shared lock: B asks for the lock while A is paused inside its
// read-modify-write, so B waits for A, reads after A's write, and both
// VPLSs survive.
func TestTwoProcessesPausedWriterHoldsSharedLock(t *testing.T) {
	t.Parallel()
	p := newPauser()
	locker := newSharedLocker()
	e, a, b := twoProcesses(t, emu.Options{BeforeWrite: p.beforeWrite}, locker)
	p.pausing(t, a.host())
	keyA, keyB := uuid.NewString(), uuid.NewString()

	done := make(chan error, 2)
	go func() {
		_, _, err := a.c.CreateService(t.Context(), connectors.Request{Key: keyA, Type: connectors.ServiceELINE, Points: points(1)})
		done <- err
	}()
	await(t, p.paused, "A to reach its VPLS write")
	go func() {
		_, _, err := b.c.CreateService(t.Context(), connectors.Request{Key: keyB, Type: connectors.ServiceELINE, Points: points(2)})
		done <- err
	}()
	for name := ""; !strings.Contains(name, b.srv.URL); {
		name = await(t, locker.attempts, "B to ask for the shared lock")
	}
	if _, ok := e.AppVPLSs()["wimro-"+keyB]; ok {
		t.Fatal("B wrote while A held the shared lock")
	}
	p.unpause()
	for range 2 {
		if err := await(t, done, "the creates"); err != nil {
			t.Fatalf("CreateService: %v", err)
		}
	}
	app := e.AppVPLSs()
	for _, key := range []string{keyA, keyB} {
		if v := app["wimro-"+key]; len(v.Interfaces) != 2 {
			t.Errorf("VPLS of %s runs with %v, want 2 interfaces", key, v.Interfaces)
		}
	}
	checkTenant(t, e, "the serialised race")
}

// TestLockWaitHonoursContext checks that a mutation queued behind the lock
// gives up with the caller's context.
func TestLockWaitHonoursContext(t *testing.T) {
	t.Parallel()
	p := newPauser()
	en := setup(t, emu.Options{BeforeWrite: p.beforeWrite}, nil)
	p.pausing(t, strings.TrimPrefix(en.srv.URL, "http://"))
	go func() {
		_, _, _ = en.c.CreateService(context.Background(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(1)})
	}()
	await(t, p.paused, "the first create to hold the lock")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	calls := []func() error{
		func() error {
			_, _, err := en.c.CreateService(ctx, connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(2)})
			return err
		},
		func() error { return en.c.DeleteService(ctx, uuid.NewString(), nil) },
		func() error { return en.c.ClearAll(ctx) },
		func() error {
			_, err := en.c.EditService(ctx, uuid.NewString(), nil, connectors.Request{Points: points(3)})
			return err
		},
	}
	go func() {
		var errs []error
		for _, call := range calls {
			errs = append(errs, call())
		}
		for i, err := range errs {
			if !connectors.Retryable(err) || !strings.Contains(fmt.Sprint(err), "context canceled") {
				done <- fmt.Errorf("call %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	cancel()
	if err := await(t, done, "the queued calls to give up"); err != nil {
		t.Fatalf("a call queued behind the lock: %v, want Retryable context canceled", err)
	}
}
