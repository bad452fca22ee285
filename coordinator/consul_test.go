package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
)

// convergeTimeout bounds every wait for the cluster to agree: sessions,
// one election, a leader soak, an assignment soak, on a loaded machine.
const convergeTimeout = 20 * time.Second

func TestNewConsulChecksConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  ConsulConfig
		want string
	}{
		{"no instance id", ConsulConfig{Runner: &recorder{}}, "instance id"},
		{"slash in instance id", ConsulConfig{InstanceID: "a/b", Runner: &recorder{}}, "instance id"},
		{"no database", ConsulConfig{InstanceID: "a", Runner: &recorder{}}, "no database"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewConsul(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one about %q", err, tc.want)
			}
		})
	}
}

// Three coordinators elect one leader, which runs the chores alone and
// splits the accounts; every account runs on exactly one member, and the
// split follows accounts created and deleted. Status tells the same.
func TestConsulSplitsAccounts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	h.createAccounts(30)
	h.startConverged(3)

	more := h.createAccounts(6)
	if err := h.db.DeleteAccount(context.Background(), more[0]); err != nil {
		t.Fatal(err)
	}
	eventually.Until(t, convergeTimeout, "the split to follow new and deleted accounts", h.converged)

	st, err := h.alive()[0].coord.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	leader := h.leaders()[0]
	if st.Coordinator != "consul" || st.InstanceID != "wimd-0" || st.Leader != leader.id {
		t.Fatalf("status %+v, leader %s", st, leader.id)
	}
	if len(st.Members) != 3 || st.Members[0].Address != "127.0.0.1:wimd-0" || st.Members[0].StartedAt.IsZero() {
		t.Fatalf("members %+v", st.Members)
	}
	total := 0
	for _, n := range h.alive() {
		got, _ := n.runner.current()
		if !slices.Equal(st.Assignments[n.id], got) {
			t.Fatalf("status assigns %d accounts to %s, its runner has %d", len(st.Assignments[n.id]), n.id, len(got))
		}
		total += len(got)
	}
	if total != 35 {
		t.Fatalf("%d accounts assigned, want 35", total)
	}
}

// With no account at all, every member still becomes ready: the leader
// confirms each member's (empty) folder.
func TestConsulReadyWithoutAccounts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	a, b := h.start("a", nil), h.start("b", nil)
	eventually.Until(t, convergeTimeout, "both to be ready with nothing to run", h.converged)
	for _, n := range []*node{a, b} {
		if got, ok := n.runner.current(); !ok || len(got) != 0 {
			t.Fatalf("%s was given %v (given: %v), want an empty set", n.id, got, ok)
		}
	}
	st, err := a.coord.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Assignments) != 2 || st.Assignments["a"] == nil || len(st.Assignments["b"]) != 0 {
		t.Fatalf("assignments %#v, want two empty lists", st.Assignments)
	}
}

// The leader stops (SIGTERM): it deletes its keys and destroys its
// session, so another takes over at once and the accounts are split
// again within the soaks, well before the session TTL (10 s here) could
// have expired anything.
func TestConsulLeaderStopHandsOver(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	h := newHarness(t, ttl)
	h.createAccounts(20)
	h.startConverged(3)
	old := h.leaders()[0]
	h.stop(old)
	if old.chore.running.Load() {
		t.Fatal("the stopped leader's chores still run")
	}
	stopped := time.Now()
	margin := 3 * time.Second // a loaded machine under -race
	// Any of the others may win, each with signals of its own: polled.
	eventually.Until(t, testLeaderSoak+margin, "another leader", func() (bool, string) {
		l := h.leaders()
		return len(l) == 1 && l[0] != old, fmt.Sprintf("%d leaders", len(l))
	})
	eventually.Until(t, testLeaderSoak+testAssignmentSoak+margin, "the two left to split every account", h.converged)
	if took := time.Since(stopped); took >= ttl {
		t.Fatalf("hand-over took %v, not less than the TTL", took)
	}
}

// The leader's session is destroyed behind its back: it steps down (its
// keys are gone), makes a new session, joins again, and the cluster
// converges with one leader.
func TestConsulSessionDestroyedBehindLeader(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	h.createAccounts(12)
	h.startConverged(3)
	leader := h.leaders()[0]
	leader.coord.signals.Session.Init() // from now on
	id := leader.coord.sessions.id()
	starts := leader.chore.starts.Load()
	if _, err := h.agent.Client().Session().Destroy(id, nil); err != nil {
		t.Fatal(err)
	}
	leader.coord.signals.Session.WaitFor(t, convergeTimeout, "the leader to drop its destroyed session", func(s string) bool { return s != id })
	eventually.Until(t, convergeTimeout, "the cluster to converge again", h.converged)
	if l := h.leaders()[0]; l == leader && leader.chore.starts.Load() == starts {
		t.Fatal("the leader kept its term through the loss of its session")
	}
	if !strings.Contains(h.logs.String(), "leadership lost") {
		t.Fatal("no leadership loss logged")
	}
}

// The Consul agent restarts empty: every coordinator makes a new
// session, joins, a leader is elected and writes the same split; no
// runner is ever told anything new meanwhile (the runners hold the
// accounts' leases, so the new leader waits for members rejoining rather
// than moving their accounts), and nothing is restarted by hand.
func TestConsulAgentRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	h.createAccounts(15)
	runners := map[string]*leasingRunner{}
	for i := range 3 {
		id := fmt.Sprintf("wimd-%d", i)
		runners[id] = h.leasing(id, false)
		h.start(id, runners[id])
	}
	eventually.Until(t, convergeTimeout, "three coordinators to split 15 accounts", h.converged)
	before := callCounts(runners)
	h.agent.Restart()
	// Members join in Consul's keys, which no part here announces: polled.
	eventually.Until(t, convergeTimeout, "every member to join the new agent", func() (bool, string) {
		st, err := h.alive()[0].coord.Status(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return len(st.Members) == 3 && st.Leader != "", fmt.Sprintf("%d members, leader %q", len(st.Members), st.Leader)
	})
	eventually.Until(t, convergeTimeout, "the cluster to converge again", h.converged)
	noNewSets(t, runners, before)
}

// A moved account is given to its new owner only once its old owner let
// go of its PostgreSQL lease.
func TestConsulMoveWaitsForLeaseRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	accounts := h.createAccounts(24)
	slices.Sort(accounts)
	runners := map[string]*leasingRunner{}
	for _, id := range []string{"a", "b"} {
		runners[id] = h.leasing(id, true)
		h.start(id, runners[id])
	}
	eventually.Until(t, convergeTimeout, "a and b to split 24 accounts", h.converged)
	leader := h.leaders()[0]

	moving := owners([]string{"a", "b", "c"}, accounts)["c"]
	if len(moving) == 0 {
		t.Fatal("no account would move to c")
	}
	c := h.start("c", nil)
	// a and b are told to let go, but hold the leases: c gets nothing yet.
	// (Three coordinators' progress, each with signals of its own: polled.)
	eventually.Until(t, convergeTimeout, "the moving accounts to be revoked from a and b", func() (bool, string) {
		for _, id := range []string{"a", "b"} {
			cur, _ := runners[id].current()
			for _, m := range moving {
				if slices.Contains(cur, m) {
					return false, id + " still runs " + m
				}
			}
		}
		return c.coord.Ready(), "c not ready"
	})
	leader.coord.signals.MovesWaiting.WaitFor(t, convergeTimeout, "the leader to report waiting moves", func(n int) bool { return n > 0 })
	if !strings.Contains(h.logs.String(), "moves waiting for their previous owner") {
		t.Fatal("the leader has moves waiting but did not log them")
	}
	if got, _ := c.runner.current(); len(got) != 0 {
		t.Fatalf("c was given %d accounts while their old owners held the leases", len(got))
	}
	ctx := context.Background()
	for _, r := range runners {
		if err := r.letGo(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually.Until(t, convergeTimeout, "c to get the accounts once released", h.converged)
}

// Consul goes away for longer than a session TTL: the leader steps down
// and stops its chores within TTL minus the margin, no runner is told
// anything (the PostgreSQL leases keep fencing), and when Consul is back
// the cluster converges again without restarting anything.
func TestConsulOutage(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	h := newHarness(t, ttl)
	h.createAccounts(10)
	runners := map[string]*leasingRunner{}
	for _, id := range []string{"a", "b"} {
		runners[id] = h.leasing(id, false)
		h.start(id, runners[id])
	}
	eventually.Until(t, convergeTimeout, "a and b to split 10 accounts", h.converged)
	before := callCounts(runners)
	leader := h.leaders()[0]
	leader.coord.signals.Leading.Init() // from now on
	h.agent.Stop()
	leader.coord.signals.Leading.WaitFor(t, ttl+time.Second, "the leader to step down", func(leading bool) bool { return !leading })
	for _, n := range h.alive() {
		if n.coord.leading.Load() || n.chore.running.Load() {
			t.Fatalf("%s still leads (or runs the chores) after the leader stepped down", n.id)
		}
	}
	h.agent.Restart()
	eventually.Until(t, convergeTimeout, "the cluster to converge again", h.converged)
	noNewSets(t, runners, before)
}

// callCounts counts the sets each runner was given so far.
func callCounts(runners map[string]*leasingRunner) map[string]int {
	out := map[string]int{}
	for id, r := range runners {
		out[id] = len(r.history())
	}
	return out
}

// noNewSets fails t if a runner was given a set since before.
func noNewSets(t *testing.T, runners map[string]*leasingRunner, before map[string]int) {
	t.Helper()
	for id, r := range runners {
		if calls := r.history(); len(calls) != before[id] {
			t.Fatalf("%s was given a new set %d time(s) while the split did not change: %v", id, len(calls)-before[id], calls[before[id]:])
		}
	}
}

// health is a switchable Health check: the Runner's lease health as the
// test decides it.
type health struct{ err atomic.Pointer[error] }

func (h *health) check() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (h *health) set(err error) {
	if err == nil {
		h.err.Store(nil)
		return
	}
	h.err.Store(&err)
}

// Issue 30, point 3: the leader's Runner cannot keep its leases (Health
// fails) while Consul answers it. It ends its term and releases the leader
// key at once (well before its live session could expire it), leaves the
// membership so that its accounts go to the others (their leases, taken
// here for an hour, count once it has been gone a session TTL), is not
// Ready and competes for nothing; healthy again, it rejoins and is Ready.
func TestConsulUnhealthyLeaderStepsDownAndRejoins(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	h := newHarness(t, ttl)
	h.createAccounts(12)
	checks := map[string]*health{}
	for _, id := range []string{"a", "b", "c"} {
		checks[id] = &health{}
		h.startOn(id, h.leasing(id, false), h.db, checks[id].check)
	}
	eventually.Until(t, convergeTimeout, "a, b and c to split 12 accounts", h.converged)
	sick := h.leaders()[0]
	checks[sick.id].set(errors.New("account leases not renewed for 3s: database unavailable"))
	cut := time.Now()
	// Any of the others may win, each with signals of its own: polled.
	eventually.Until(t, convergeTimeout, "another leader", func() (bool, string) {
		l := h.leaders()
		return len(l) == 1 && l[0] != sick && !sick.chore.running.Load(), fmt.Sprintf("%d leaders, chores of %s running %v", len(l), sick.id, sick.chore.running.Load())
	})
	if took := time.Since(cut); took >= ttl {
		t.Errorf("a new leader after %v: the sick leader's key waited for its session", took)
	}
	// The assignments in Consul's keys, which no part here announces: polled.
	eventually.Until(t, convergeTimeout, "the others to own every account", func() (bool, string) {
		st, err := h.leaders()[0].coord.Status(context.Background())
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for m, accts := range st.Assignments {
			if m == sick.id {
				return false, sick.id + " still has a folder"
			}
			n += len(accts)
		}
		for _, m := range st.Members {
			if m.ID == sick.id {
				return false, sick.id + " still a member"
			}
		}
		return n == 12, fmt.Sprintf("%d of 12 assigned", n)
	})
	if sick.coord.Ready() || sick.coord.leading.Load() {
		t.Fatalf("%s: ready %v, leading %v while unhealthy", sick.id, sick.coord.Ready(), sick.coord.leading.Load())
	}
	checks[sick.id].set(nil)
	eventually.Until(t, convergeTimeout, "the cluster to converge again with "+sick.id, h.converged)
}

// The root of a member left unready for minutes (issue 30, point 3): a
// leader that cannot read PostgreSQL (Health not failing, so it keeps its
// term) wrote nothing at all, not even the marker that confirms a new
// member. It now writes the marker and the revocations; only the moves
// wait for the leases.
func TestConsulLeaderWithoutDatabaseConfirmsMembers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	h.createAccounts(12)
	db, proxy := h.cuttable()
	leader := h.startOn("a", nil, db, nil)
	eventually.Until(t, convergeTimeout, "a to lead and own every account", h.converged)
	proxy.Cut()
	b := h.start("b", nil)
	b.coord.signals.Assigned.Until(t, convergeTimeout, "b to be ready", func() (bool, string) {
		return b.coord.Ready(), "b not ready"
	})
	if !leader.coord.leading.Load() {
		t.Fatal("a no longer leads: the test proves nothing")
	}
	if got, _ := b.runner.current(); len(got) != 0 {
		t.Fatalf("b was given %v while the leader could not read the leases", got)
	}
	proxy.Restore()
	eventually.Until(t, convergeTimeout, "a and b to split the accounts", h.converged)
}
