package main

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	consulapi "github.com/hashicorp/consul/api"

	"github.com/wimro/wimro/coordinator"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/tcpproxy"
)

// catalog reads the wimd services in the agent's catalog with their
// health (/v1/health/service/wimro), by instance id.
func (c *cluster) catalog() (map[string]*consulapi.ServiceEntry, error) {
	entries, _, err := c.consul.Client().Health().Service(coordinator.DefaultService, "", false, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]*consulapi.ServiceEntry{}
	for _, e := range entries {
		out[e.Service.Meta["instance_id"]] = e
	}
	return out, nil
}

// sessionOf returns the id of the live Consul session of member id, "" if
// it has none.
func (c *cluster) sessionOf(id string) (string, error) {
	list, _, err := c.consul.Client().Session().List(nil)
	if err != nil {
		return "", err
	}
	for _, s := range list {
		if strings.HasPrefix(s.Name, "wimro "+id+" boot ") {
			return s.ID, nil
		}
	}
	return "", nil
}

// logged reports whether p logged a line with msg and every attribute.
func logged(p *process, msg string, attrs ...string) bool {
	for _, line := range strings.Split(p.log.String(), "\n") {
		if !strings.Contains(line, `msg="`+msg+`"`) {
			continue
		}
		all := true
		for _, a := range attrs {
			all = all && strings.Contains(line, a)
		}
		if all {
			return true
		}
	}
	return false
}

// metric reads one unlabelled gauge of p's /metrics.
func metric(t *testing.T, p *process, name string) float64 {
	t.Helper()
	v, err := readGauge(p, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// readGauge reads one unlabelled gauge of p's /metrics.
func readGauge(p *process, name string) (float64, error) {
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("%s: no %s in /metrics", p.addr, name)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// nonLeaders returns the live members but the leader, sorted.
func (c *cluster) nonLeaders(leader string) []string {
	var out []string
	for _, id := range sortedKeys(c.members) {
		if id != leader {
			out = append(out, id)
		}
	}
	return out
}

// threeMembers starts w1, w2 and w3 with args over the cluster's idle
// accounts (w1 first, alone, then the two others) and returns the leader
// once they are spread.
func (c *cluster) threeMembers(args ...string) string {
	c.t.Helper()
	c.startArgs("w1", nil, args...)
	c.idleAccounts(clusterAccounts)
	c.settled("w1 alone", time.Minute)
	for _, id := range []string{"w2", "w3"} {
		c.startArgs(id, nil, args...)
	}
	_, leader := c.settled("30 accounts spread over w1, w2, w3", time.Minute)
	return leader
}

// Issue 31, failover in seconds, with real wimd processes on a real
// Consul: every wimd is in the catalog with a passing check and its
// session is bound to it. A SIGSTOPped member (alive, but passing
// nothing) loses its session within the check TTL although its session
// TTL (30 s) is far longer, and the leader logs it lost; SIGCONTed, it
// rejoins. A SIGTERMed member leaves the catalog at once and the leader
// logs a clean leave. The cluster metrics say who leads and how many are
// members. (Before, a member was in no catalog, and a paused one kept its
// session for one to two session TTLs.)
func TestClusterHealthCheckFailover(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	leader := c.threeMembers("--session-ttl", "30s", "--check-ttl", "1s")
	eventually.Until(t, time.Minute, "w1, w2 and w3 passing in the catalog", func() (bool, string) {
		entries, err := c.catalog()
		if err != nil {
			return false, err.Error()
		}
		var states []string
		ok := true
		for _, id := range []string{"w1", "w2", "w3"} {
			e := entries[id]
			if e == nil {
				return false, id + " not in the catalog"
			}
			st := e.Checks.AggregatedStatus()
			ok = ok && st == consulapi.HealthPassing && e.Service.ID == "wimro-"+id && e.Service.Meta["boot"] != "" && e.Service.Port > 0
			states = append(states, id+":"+st)
		}
		return ok, strings.Join(states, " ")
	})
	if v := metric(t, c.members[leader], "wimro_cluster_leader"); v != 1 {
		t.Errorf("leader %s: wimro_cluster_leader %v", leader, v)
	}
	others := c.nonLeaders(leader)
	for _, id := range others {
		if v := metric(t, c.members[id], "wimro_cluster_leader"); v != 0 {
			t.Errorf("member %s: wimro_cluster_leader %v", id, v)
		}
	}
	eventually.Until(t, time.Minute, "every member to count three members and show its assignment's generation", func() (bool, string) {
		var got []string
		ok := true
		for _, id := range sortedKeys(c.members) {
			n := metric(t, c.members[id], "wimro_cluster_members")
			g := metric(t, c.members[id], "wimro_cluster_assignment_generation")
			ok = ok && n == 3 && g > 0
			got = append(got, fmt.Sprintf("%s: %v members, generation %v", id, n, g))
		}
		return ok, strings.Join(got, "; ")
	})

	// SIGSTOP: the check lapses, and with it the session.
	paused, left := others[0], others[1]
	sess, err := c.sessionOf(paused)
	if err != nil || sess == "" {
		t.Fatalf("session of %s: %q, %v", paused, sess, err)
	}
	p := c.members[paused]
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Signal(syscall.SIGCONT) })
	delete(c.members, paused)
	// The deadline is below the session TTL: only the check can do it.
	eventually.Until(t, 20*time.Second, paused+"'s session invalidated and its check critical", func() (bool, string) {
		now, err := c.sessionOf(paused)
		if err != nil {
			return false, err.Error()
		}
		entries, err := c.catalog()
		if err != nil {
			return false, err.Error()
		}
		st := "absent"
		if e := entries[paused]; e != nil {
			st = e.Checks.AggregatedStatus()
		}
		return now == "" && st == consulapi.HealthCritical, fmt.Sprintf("session %q, check %s", now, st)
	})
	eventually.Until(t, time.Minute, "the leader to log "+paused+" lost", func() (bool, string) {
		return logged(c.members[leader], "member lost: its session ended without it leaving", "member="+paused, `departure="session invalidated"`), "not logged"
	})
	c.settled("the others to own every account while "+paused+" is stopped", time.Minute)
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	c.members[paused] = p
	c.settled(paused+" back", time.Minute)

	// SIGTERM: a clean leave, out of the catalog at once.
	c.members[left].stop(t, syscall.SIGTERM)
	delete(c.members, left)
	entries, err := c.catalog()
	if err != nil {
		t.Fatal(err)
	}
	if e := entries[left]; e != nil {
		t.Fatalf("%s stopped cleanly but still in the catalog: %s", left, e.Checks.AggregatedStatus())
	}
	eventually.Until(t, time.Minute, "the leader to log "+left+" leaving", func() (bool, string) {
		return logged(c.members[leader], "member left the cluster", "member="+left, `departure="clean leave"`), "not logged"
	})
	if logged(c.members[leader], "member lost: its session ended without it leaving", "member="+left) {
		t.Fatalf("the leader logged %s, which left cleanly, as lost", left)
	}
	c.settled("the two left to own every account", time.Minute)
}

// The lease still fences (issue 31): a member cut off from Consul but not
// from PostgreSQL loses its session (its check lapses) and the leader,
// once it has been gone a session TTL, assigns its accounts to the
// others; but it keeps renewing their leases, so it keeps them, under the
// same epochs, and the others wait. Consul back, it rejoins and nothing
// moves.
func TestClusterMemberCutFromConsulKeepsItsAccounts(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.start("w1")
	c.idleAccounts(clusterAccounts)
	c.settled("w1 alone", time.Minute)
	c.start("w2")
	proxy := tcpproxy.Start(t, c.consul.Addr())
	cut := c.startArgs("w3", nil, "--consul", proxy.Addr())
	before, leader := c.settled("30 accounts spread over w1, w2, w3", time.Minute)
	if leader == "w3" {
		t.Fatal("w3 leads: the test proves nothing")
	}
	var mine []string
	for a, o := range before {
		if o == "w3" {
			mine = append(mine, a)
		}
	}
	slices.Sort(mine)
	if len(mine) == 0 {
		t.Fatalf("w3 owns nothing: %v", counts(before))
	}
	pool := connect(t, c.db)
	epochs := func() map[string]int64 {
		rows, err := pool.Query(t.Context(), `SELECT l.account_id::text, l.epoch FROM wim_account_leases l JOIN wim_process_leases p ON p.owner = l.owner AND p.epoch = l.proc_epoch
			WHERE split_part(l.owner, '#', 1) = 'w3' AND p.expires_at > now()`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var a string
			var e int64
			if err := rows.Scan(&a, &e); err != nil {
				t.Fatal(err)
			}
			out[a] = e
		}
		return out
	}
	held := epochs()

	proxy.Cut()
	var cutAt time.Time
	if err := pool.QueryRow(t.Context(), `SELECT now()`).Scan(&cutAt); err != nil {
		t.Fatal(err)
	}
	eventually.Until(t, time.Minute, "the leader to assign w3's accounts to w1 and w2", func() (bool, string) {
		st, ok := c.status(leader)
		if !ok {
			return false, "no status"
		}
		if _, still := st.Assignments["w3"]; still {
			return false, "w3 still has a folder"
		}
		n := 0
		for _, m := range []string{"w1", "w2"} {
			for _, a := range st.Assignments[m] {
				if _, ok := slices.BinarySearch(mine, a); ok {
					n++
				}
			}
		}
		return n == len(mine), fmt.Sprintf("%d of w3's %d accounts assigned to w1 and w2", n, len(mine))
	})
	eventually.Until(t, time.Minute, "w1 or w2 to find w3's leases held, and w3 to renew them since the cut", func() (bool, string) {
		waiting := 0
		for _, id := range []string{"w1", "w2"} {
			if logged(c.members[id], "account leases held elsewhere; waiting for their release") {
				waiting++
			}
		}
		var renewed int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM wim_account_leases l JOIN wim_process_leases p ON p.owner = l.owner AND p.epoch = l.proc_epoch
			WHERE split_part(l.owner, '#', 1) = 'w3' AND p.expires_at - interval '3 seconds' > $1`, cutAt).Scan(&renewed); err != nil {
			return false, err.Error()
		}
		return waiting > 0 && renewed == len(mine), fmt.Sprintf("%d waiting, %d of %d leases renewed since the cut", waiting, renewed, len(mine))
	})
	// /cluster needs Consul; /metrics and the lease rows do not.
	if n := metric(t, cut, "wimro_accounts_owned"); int(n) != len(mine) {
		t.Fatalf("w3, cut from Consul, owns %v accounts, owned %d before", n, len(mine))
	}
	if now := epochs(); !maps.Equal(now, held) {
		t.Fatalf("w3's lease epochs changed while it kept renewing: %v, were %v", now, held)
	}
	for _, id := range []string{"w1", "w2"} {
		st, _ := c.status(id)
		for _, a := range st.Owned {
			if _, ok := slices.BinarySearch(mine, a); ok {
				t.Fatalf("%s owns %s, whose lease w3 renews", id, a)
			}
		}
	}

	proxy.Restore()
	after, _ := c.settled("w3 back in the cluster", 2*time.Minute)
	moved(t, before, after) // nobody left: no account may have moved
}

// Issue 31: a member SIGKILLed and restarted at once under the same
// instance id (systemd's Restart=always, the soak's kill) holds its
// membership key and owns accounts again within about one check TTL (its
// dead run's check lapses) plus the claim lease and the soaks, with the
// default session and check TTLs. Its registration replaces the dead
// run's, whose check id names the other boot: Consul drops that check and
// invalidates the dead session at once. (Before, the restart took the
// dead run's check over and kept its session alive: the new process
// waited up to two session TTLs, 20 s, for its key.)
func TestClusterMemberRestartedAtOnce(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	defaults := []string{"--session-ttl", coordinator.DefaultSessionTTL.String(), "--check-ttl", coordinator.DefaultCheckTTL.String()}
	leader := c.threeMembers(defaults...)
	victim := c.nonLeaders(leader)[0]
	old, err := c.sessionOf(victim)
	if err != nil || old == "" {
		t.Fatalf("session of %s: %q, %v", victim, old, err)
	}
	key := coordinator.DefaultConsulPrefix + "/members/" + victim
	c.members[victim].kill9(t)
	killed := time.Now()
	p := c.startArgs(victim, nil, defaults...)
	// Well under the session TTL, which the dead session used to outlive.
	const within = 9 * time.Second
	eventually.Until(t, within-time.Since(killed), victim+" restarted to hold its membership key under a new session and own accounts", func() (bool, string) {
		pair, _, err := c.consul.Client().KV().Get(key, nil)
		if err != nil {
			return false, err.Error()
		}
		holder := "nobody"
		if pair != nil && pair.Session != "" {
			holder = pair.Session
		}
		st, ok := clusterOf(p)
		owned := 0
		if ok {
			owned = len(st.Owned)
		}
		return holder != "nobody" && holder != old && owned > 0, fmt.Sprintf("key held by %s (the dead run's: %s), %d accounts owned", holder, old, owned)
	})
	t.Logf("%s restarted at once: membership key and accounts back %v after the SIGKILL", victim, time.Since(killed).Round(time.Millisecond))
	if !logged(p, "replacing the registration of a previous run of this instance id: its check is not passing", "service_id=wimro-"+victim) {
		t.Errorf("%s did not log replacing its dead run's registration", victim)
	}
	c.settled("every account owned by w1, w2, w3 again", time.Minute)
}
