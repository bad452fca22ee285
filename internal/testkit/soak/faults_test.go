package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wimro/wimro"
)

// The kinds of fault, each injected in turn from a seeded shuffle (every
// kind once before any twice).
const (
	faultKill          = "kill"         // SIGKILL of a wimd, restarted at once
	faultStop          = "stop"         // SIGSTOP of a wimd longer than TTL + lease, then SIGCONT
	faultPGFast        = "pg-fast"      // PostgreSQL restarted, fast shutdown
	faultPGImmediate   = "pg-immediate" // PostgreSQL restarted, immediate shutdown (crash recovery)
	faultPGCut         = "pg-cut"       // wimd's database connections terminated
	faultConsul        = "consul"       // the Consul agent restarted (empty)
	faultCtrlHang      = "ctrl-hang"    // a controller answers later than the request timeout
	faultCtrl5xx       = "ctrl-5xx"     // a burst of 5xx
	faultCtrl429       = "ctrl-429"     // a burst of 429 with Retry-After
	faultCtrlDropReply = "ctrl-drop"    // mutations done, replies dropped
)

var faultKinds = []string{faultKill, faultStop, faultPGFast, faultPGImmediate, faultPGCut, faultConsul,
	faultCtrlHang, faultCtrl5xx, faultCtrl429, faultCtrlDropReply}

// faultPlan is one fault as the seed decides it; what the system does
// with it decides only how long it takes.
type faultPlan struct {
	kind   string
	member int           // the wimd (kill, stop)
	ctrl   int           // the controller (controller faults)
	x      float64       // the fault's size in [0, 1)
	gap    time.Duration // quiet time before it
	// with is a controller fault that comes at the same time as a wimd,
	// database or Consul fault ("" for none): faults come together.
	with string
}

// ctrlKinds are the faults of a controller.
var ctrlKinds = []string{faultCtrlHang, faultCtrl5xx, faultCtrl429, faultCtrlDropReply}

// schedule draws the faults from the seed alone: the same seed gives the
// same sequence, whatever the run's timing.
// Only the kinds in allowed are injected (a plan of another kind is a
// quiet gap), so a narrowed run keeps the seed's sequence.
type schedule struct {
	rng     *rand.Rand
	round   []string
	allowed map[string]bool
}

// newSchedule makes the schedule of seed; kinds is "" (all), "none", or
// a comma-separated list of kinds.
func newSchedule(seed int64, kinds string) (*schedule, error) {
	s := &schedule{rng: rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x5eed)), allowed: map[string]bool{}}
	switch kinds {
	case "":
		for _, k := range faultKinds {
			s.allowed[k] = true
		}
	case "none":
	default:
		for _, k := range strings.Split(kinds, ",") {
			if !slices.Contains(faultKinds, k) {
				return nil, fmt.Errorf("unknown fault kind %q (kinds: %s)", k, strings.Join(faultKinds, ","))
			}
			s.allowed[k] = true
		}
	}
	return s, nil
}

func (s *schedule) next() faultPlan {
	if len(s.round) == 0 {
		for _, i := range s.rng.Perm(len(faultKinds)) {
			s.round = append(s.round, faultKinds[i])
		}
	}
	p := faultPlan{kind: s.round[0], member: s.rng.IntN(members), ctrl: s.rng.IntN(2), x: s.rng.Float64(),
		gap: 3*time.Second + time.Duration(s.rng.IntN(7000))*time.Millisecond}
	together, with := s.rng.IntN(3) == 0, ctrlKinds[s.rng.IntN(len(ctrlKinds))]
	s.round = s.round[1:]
	if together && !slices.Contains(ctrlKinds, p.kind) && s.allowed[with] {
		p.with = with
	}
	if !s.allowed[p.kind] {
		p.kind, p.with = "", ""
	}
	return p
}

// faultRecord is one fault as it happened.
type faultRecord struct {
	plan      faultPlan
	what      string
	injected  time.Time
	healed    time.Time
	recovered time.Duration // from healed until the cluster is whole and the work pending at heal finished
	ok        bool
}

// wait waits d, or until ctx ends: a fault's planned length, not a
// synchronisation.
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// poll calls done every interval until it reports true (poll then
// reports true) or ctx ends (false). What it waits for happens in other
// processes, which send no signal to wait on.
func poll(ctx context.Context, every time.Duration, done func() bool) bool {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// inject applies the fault and heals it; it returns when it healed.
func (h *harness) inject(ctx context.Context, p faultPlan) faultRecord {
	rec := faultRecord{plan: p, injected: time.Now()}
	var with sync.WaitGroup
	withWhat := ""
	if p.with != "" {
		with.Go(func() { withWhat = h.injectOne(ctx, p.with, p) })
	}
	rec.what = h.injectOne(ctx, p.kind, p)
	with.Wait()
	if p.with != "" {
		rec.what += fmt.Sprintf(", together with %s %s", p.with, withWhat)
	}
	rec.healed = time.Now()
	h.log.add("fault %s: %s; healed after %v", p.kind, rec.what, rec.healed.Sub(rec.injected).Round(time.Millisecond))
	return rec
}

// injectOne applies one fault of kind and heals it; it says what it did.
func (h *harness) injectOne(ctx context.Context, kind string, p faultPlan) string {
	what := ""
	m := h.members[p.member]
	c := h.ctrls[p.ctrl]
	switch kind {
	case faultKill:
		what = fmt.Sprintf("%s (%s)", m.id, h.role(ctx, m))
		m.setState(stateDown)
		m.proc.Kill()
		h.log.add("%s killed", m.id)
		h.restart(ctx, m)
	case faultStop:
		what = fmt.Sprintf("%s (%s) for %v", m.id, h.role(ctx, m), h.timing.stopFor())
		m.setState(stateStopped)
		if err := m.proc.Signal(syscall.SIGSTOP); err != nil {
			h.bad.add("SIGSTOP %s: %v", m.id, err)
		}
		h.log.add("%s stopped", m.id)
		wait(ctx, h.timing.stopFor())
		if err := m.proc.Signal(syscall.SIGCONT); err != nil {
			h.bad.add("SIGCONT %s: %v", m.id, err)
		}
		m.setState(stateUp)
		h.log.add("%s continued", m.id)
	case faultPGFast, faultPGImmediate:
		away := 1*time.Second + time.Duration(p.x*5*float64(time.Second))
		what = fmt.Sprintf("away %v", away.Round(time.Millisecond))
		w := h.pgAway.open(time.Now())
		halt := h.pg.Halt
		if kind == faultPGImmediate {
			halt = h.pg.HaltImmediate
		}
		if err := halt(ctx); err != nil {
			h.bad.add("%s: halt: %v", kind, err)
		}
		h.log.add("PostgreSQL halted")
		wait(ctx, away)
		if err := h.pg.Resume(ctx); err != nil {
			h.t.Fatalf("soak: PostgreSQL did not come back: %v", err)
		}
		h.log.add("PostgreSQL resumed")
		h.pgAway.close(w, time.Now().Add(pgGrace))
	case faultPGCut:
		w := h.pgAway.open(time.Now())
		var n int
		err := h.db.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> $1 AND backend_type = 'client backend') k`, soakAppName).Scan(&n)
		if err != nil {
			h.bad.add("%s: %v", kind, err)
		}
		what = fmt.Sprintf("%d connections", n)
		h.pgAway.close(w, time.Now().Add(pgGrace))
	case faultConsul:
		what = "new empty agent on the same ports"
		h.consul.Restart()
	case faultCtrlHang:
		hang := 5*time.Second + time.Duration(p.x*10*float64(time.Second))
		what = fmt.Sprintf("%s for %v (requests wait %v, timeout %v)", c.wim, hang.Round(time.Millisecond), controllerWait+time.Second, controllerWait)
		c.faults.Delay(controllerWait + time.Second)
		wait(ctx, hang)
		c.faults.Delay(c.latency)
	case faultCtrl5xx:
		statuses := []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
		n, status := 5+int(p.x*25), statuses[int(p.x*1000)%len(statuses)]
		what = fmt.Sprintf("%s: %d x %d", c.wim, n, status)
		c.faults.FailNext(n, status)
		h.drained(ctx, c)
	case faultCtrl429:
		n, after := 5+int(p.x*20), time.Second+time.Duration(p.x*4*float64(time.Second))
		what = fmt.Sprintf("%s: %d x 429, Retry-After %v", c.wim, n, after.Round(time.Second))
		c.faults.FailNextRetryAfter(n, http.StatusTooManyRequests, after)
		h.drained(ctx, c)
	case faultCtrlDropReply:
		n := 1 + int(p.x*4)
		what = fmt.Sprintf("%s: %d replies dropped", c.wim, n)
		c.faults.DropNext(n)
		h.drained(ctx, c)
	}
	return what
}

// drained waits until the controller's queued faults were all served
// (the load keeps sending it requests), at most 3 minutes.
func (h *harness) drained(ctx context.Context, c *controller) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if !poll(ctx, 100*time.Millisecond, func() bool { return c.faults.Queued() == 0 }) {
		h.log.add("%s: %d injected faults still queued after 3m", c.wim, c.faults.Queued())
	}
}

// restart starts a killed member again; a start refused (it exited) is
// tried again, three times at most.
func (h *harness) restart(ctx context.Context, m *member) {
	for try := 1; ; try++ {
		err := m.proc.Restart()
		if err == nil {
			break
		}
		h.log.add("%s restart %d failed: %v", m.id, try, err)
		if try == 3 || ctx.Err() != nil {
			h.t.Fatalf("soak: %s does not restart: %v", m.id, err)
		}
	}
	m.setState(stateUp)
	h.log.add("%s restarted on %s (pid %d)", m.id, m.proc.Addr(), m.proc.Pid())
}

// clusterOf asks one member for GET /cluster; the error says how it did
// not answer (no answer in time, or which status and body).
func (h *harness) clusterOf(ctx context.Context, addr string) (wimro.ClusterStatus, error) {
	var st wimro.ClusterStatus
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/cluster", nil)
	resp, err := h.client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("%d %s", resp.StatusCode, strings.Join(strings.Fields(string(body)), " "))
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// role says whether m leads, as m itself says.
func (h *harness) role(ctx context.Context, m *member) string {
	addr, ok := m.upAddr()
	if !ok {
		return "faulted"
	}
	st, err := h.clusterOf(ctx, addr)
	switch {
	case err != nil:
		return "role unknown"
	case st.Leader == m.id:
		return "leader"
	}
	return "member"
}

// whole reports whether every member is ready, sees every member in
// Consul and the same leader, and the members' leases cover every
// account, with what is missing.
func (h *harness) whole(ctx context.Context) (bool, string) {
	owned := map[string]bool{}
	leaders := map[string]bool{}
	for _, m := range h.members {
		addr, ok := m.upAddr()
		if !ok {
			return false, m.id + " faulted"
		}
		if err := h.ready(ctx, addr); err != nil {
			return false, fmt.Sprintf("%s %v", m.id, err)
		}
		st, err := h.clusterOf(ctx, addr)
		if err != nil {
			return false, fmt.Sprintf("%s /cluster unanswered: %v", m.id, err)
		}
		if len(st.Members) != len(h.members) {
			return false, fmt.Sprintf("%s sees %d members", m.id, len(st.Members))
		}
		leaders[st.Leader] = true
		for _, a := range st.Owned {
			owned[a] = true
		}
	}
	if len(leaders) != 1 || leaders[""] {
		return false, fmt.Sprintf("leaders seen: %v", slices.Sorted(maps.Keys(leaders)))
	}
	for _, tn := range h.tenants {
		if !owned[tn.account] {
			return false, fmt.Sprintf("%d of %d accounts owned", len(owned), len(h.tenants))
		}
	}
	return true, ""
}

// recoverWithin bounds the recovery from one fault.
const recoverWithin = 6 * time.Minute

// dumpUnanswering prints the goroutine dump of every member that does not
// answer /readyz or /cluster (what it is stuck on is the diagnosis), then
// starts it again so the soak goes on.
func (h *harness) dumpUnanswering(ctx context.Context) {
	for _, m := range h.members {
		addr, ok := m.upAddr()
		if !ok {
			continue
		}
		if _, err := h.clusterOf(ctx, addr); err == nil && h.ready(ctx, addr) == nil {
			continue
		}
		dump := m.proc.DumpGoroutines(10 * time.Second)
		h.log.add("%s does not answer: goroutine dump (pid %d) follows", m.id, m.proc.Pid())
		fmt.Printf("soak: goroutines of %s:\n%s\nsoak: end of the goroutines of %s\n", m.id, dump, m.id)
		m.setState(stateDown)
		h.restart(ctx, m)
	}
}

// ready asks one member for GET /readyz.
func (h *harness) ready(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/readyz", nil)
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("/readyz: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz %d", resp.StatusCode)
	}
	return nil
}

// recover waits until the cluster is whole again and every instance
// action pending when the fault healed has finished; it returns how long
// that took from the heal.
func (h *harness) recover(ctx context.Context, rec *faultRecord) {
	pending := h.load.pendingNow()
	ctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	why := ""
	recovered := poll(ctx, 250*time.Millisecond, func() bool {
		ok, what := h.whole(ctx)
		left := 0
		for _, a := range pending {
			if _, done := h.load.finishedAt(a); !done {
				left++
			}
		}
		why = what
		if left > 0 {
			why = fmt.Sprintf("%s; %d of %d pending actions not finished", what, left, len(pending))
		}
		return ok && left == 0
	})
	if !recovered {
		h.bad.add("not recovered from %s (%s) within %v: %s", rec.plan.kind, rec.what, recoverWithin, why)
		h.dumpUnanswering(ctx)
		return
	}
	rec.recovered, rec.ok = time.Since(rec.healed), true
	h.log.add("recovered from %s in %v (%d actions were pending)", rec.plan.kind, rec.recovered.Round(time.Millisecond), len(pending))
}
