package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/consultest"
	l2smemu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// The cluster timings of the tests: a short session TTL and soaks, so that
// failures are noticed in seconds.
const (
	clusterTTL        = 2 * time.Second
	clusterLockDelay  = time.Second // coordinator.DefaultLockDelay
	clusterLeaderSoak = 500 * time.Millisecond
	clusterAssignSoak = 200 * time.Millisecond
	clusterAccounts   = 30
)

// callLog records, for every request the controller received, the account
// (basic-auth user), the calling process (User-Agent) and when it was being
// served, to check that no account is ever driven by two processes at once.
type callLog struct {
	mu    sync.Mutex
	calls []call
}

type call struct {
	user, agent string
	start, end  time.Time
}

func (l *callLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := call{agent: r.UserAgent(), start: time.Now()}
		c.user, _, _ = r.BasicAuth()
		// The request ends when it is answered or its client goes away
		// (a stopped worker cancels it): the context says either.
		ended := make(chan time.Time, 1)
		go func() { <-r.Context().Done(); ended <- time.Now() }()
		h.ServeHTTP(w, r)
		c.end = time.Now()
		select {
		case t := <-ended:
			c.end = t
		default:
		}
		l.mu.Lock()
		l.calls = append(l.calls, c)
		l.mu.Unlock()
	})
}

// overlaps returns the accounts two processes drove at the same time.
func (l *callLog) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	byUser := map[string][]call{}
	for _, c := range l.calls {
		byUser[c.user] = append(byUser[c.user], c)
	}
	var bad []string
	for user, calls := range byUser {
		sort.Slice(calls, func(i, j int) bool { return calls[i].start.Before(calls[j].start) })
		var last call
		for _, c := range calls {
			if last.agent != "" && c.agent != last.agent && c.start.Before(last.end) {
				bad = append(bad, fmt.Sprintf("%s: %q until %s and %q from %s", user, last.agent, last.end.Format("15:04:05.000"), c.agent, c.start.Format("15:04:05.000")))
			}
			if c.end.After(last.end) {
				last = c
			}
		}
	}
	return bad
}

// agents returns the User-Agents the controller saw.
func (l *callLog) agents() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for _, c := range l.calls {
		out[c.agent] = true
	}
	return out
}

// cluster is a set of wimd processes sharing one database and one Consul
// agent.
type cluster struct {
	t       testing.TB
	n       int // accounts the cluster must own
	bin     string
	env     []string
	consul  *consultest.Agent
	members map[string]*process
	log     *callLog
	emu     *l2smemu.Emulator
	url     string
	vlan    int // the last VLAN given to a network: each link has its own
	db      string
}

func (c *cluster) dbURL() string { return c.db }

func newCluster(t testing.TB) *cluster {
	c := &cluster{t: t, n: clusterAccounts, bin: buildWimd(t), consul: consultest.Start(t), members: map[string]*process{}, log: &callLog{}}
	c.db = pgtest.URL(t)
	c.env = []string{"WIMRO_DATABASE_URL=" + c.db, "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_LOG_LEVEL=debug"}
	// An IETF L2VPN (RFC 8466) datastore: wimro chooses the service ids, so
	// a create that runs twice adopts its service (DynPaC, which chooses
	// them, cannot promise that: see connectors/dynpac).
	c.emu = l2smemu.New(l2smemu.Options{Sites: []l2smemu.Site{{ID: "dc-a"}, {ID: "dc-b"}}})
	c.emu.Delay(20 * time.Millisecond)
	srv := httptest.NewServer(c.log.wrap(c.emu))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// start starts member id, with env added to the cluster's.
func (c *cluster) start(id string, env ...string) *process {
	c.t.Helper()
	return c.startArgs(id, env)
}

// startArgs starts member id with env added to the cluster's and args
// after the cluster's flags (a flag given twice takes the last value).
func (c *cluster) startArgs(id string, env []string, args ...string) *process {
	c.t.Helper()
	p := c.spawnArgs(id, "consul", env, args...)
	c.members[id] = p
	return p
}

// spawn starts a wimd process named id with the given coordinator, and
// env added to the cluster's, without making it a member of c.
func (c *cluster) spawn(id, coordinator string, env ...string) *process {
	c.t.Helper()
	return c.spawnArgs(id, coordinator, env)
}

func (c *cluster) spawnArgs(id, coordinator string, env []string, args ...string) *process {
	c.t.Helper()
	return startWimd(c.t, c.bin, append(slices.Clone(c.env), env...), append([]string{"--data-dir", c.t.TempDir(), "--instance-id", id,
		"--coordinator", coordinator, "--consul", c.consul.Addr(),
		"--session-ttl", clusterTTL.String(), "--leader-soak", clusterLeaderSoak.String(), "--assignment-soak", clusterAssignSoak.String(),
		"--claim-lease", "3s", "--status-refresh", "200ms", "--parallel", "4"}, args...)...)
}

// any returns a live member.
func (c *cluster) any() *process {
	for _, id := range sortedKeys(c.members) {
		return c.members[id]
	}
	c.t.Fatal("no live member")
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// status asks member id for GET /cluster; ok is false when it cannot say.
func (c *cluster) status(id string) (wimro.ClusterStatus, bool) {
	return clusterOf(c.members[id])
}

// clusterOf asks p for GET /cluster; ok is false when it cannot say.
func clusterOf(p *process) (wimro.ClusterStatus, bool) {
	var st wimro.ClusterStatus
	resp, err := http.Get("http://" + p.addr + "/cluster")
	if err != nil {
		return st, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, false
	}
	return st, json.NewDecoder(resp.Body).Decode(&st) == nil
}

// owners returns who holds each account's lease, as the live members say;
// the leader they agree on ("" if they do not); and what keeps the
// cluster from being settled: an account owned twice, a member that cannot
// answer, an account not assigned to exactly one member, or not owned by
// the member it is assigned to (a move still under way).
func (c *cluster) owners() (map[string]string, string, string) {
	owner := map[string]string{}
	assigned := map[string][]string{}
	leaders := map[string]bool{}
	var problems []string
	for _, id := range sortedKeys(c.members) {
		st, ok := c.status(id)
		if !ok {
			problems = append(problems, id+": no status")
			continue
		}
		leaders[st.Leader] = true
		for _, a := range st.Owned {
			if prev, dup := owner[a]; dup {
				problems = append(problems, fmt.Sprintf("%s owned by %s and %s", a, prev, id))
			}
			owner[a] = id
		}
		if st.Leader == id {
			for m, accts := range st.Assignments {
				for _, a := range accts {
					assigned[a] = append(assigned[a], m)
				}
			}
		}
	}
	leader := ""
	if len(leaders) == 1 {
		for l := range leaders {
			leader = l
		}
	}
	moving := 0
	for a, o := range owner {
		if m := assigned[a]; len(m) != 1 || m[0] != o {
			moving++
		}
	}
	if moving > 0 {
		problems = append(problems, fmt.Sprintf("%d accounts not owned by their one assigned member", moving))
	}
	return owner, leader, strings.Join(problems, "; ")
}

// settled waits until every account is owned by exactly the one live
// member the leader assigned it to, every live member owns some, and they
// agree on a live leader; it returns the owners and the leader.
func (c *cluster) settled(what string, within time.Duration) (map[string]string, string) {
	c.t.Helper()
	return c.settledEvery(what, within, eventually.Tick)
}

// settledEvery is settled, asking every tick: with 100,000 accounts one
// look costs the members a second of CPU, taken from what is measured.
func (c *cluster) settledEvery(what string, within, tick time.Duration) (map[string]string, string) {
	c.t.Helper()
	owner, leader, _ := c.settledAt(what, within, tick)
	return owner, leader
}

// settledAt is settledEvery, also saying when the probe that found the
// cluster settled saw the members' counts add up (or began, with the
// default tick): with 100,000 accounts reading every owner takes
// seconds, which a bench must not count as the rebalance's.
func (c *cluster) settledAt(what string, within, tick time.Duration) (map[string]string, string, time.Time) {
	c.t.Helper()
	var owner map[string]string
	var leader string
	var at time.Time
	eventually.UntilEvery(c.t, within, tick, what, func() (bool, string) {
		at = time.Now()
		if tick != eventually.Tick {
			// Many accounts: look at the counts first (no Consul read),
			// at the owners only once they add up.
			if ok, state := c.ownedAddUp(); !ok {
				return false, state
			}
			at = time.Now()
		}
		var problems string
		owner, leader, problems = c.owners()
		count := counts(owner)
		ok := problems == "" && len(owner) == c.n && c.members[leader] != nil && len(count) == len(c.members)
		return ok, fmt.Sprintf("%d of %d accounts owned %v, leader %q %s", len(owner), c.n, count, leader, problems)
	})
	return owner, leader, at
}

// ownedAddUp reports whether the live members' wimro_accounts_owned add
// up to the cluster's accounts, each member owning some: a look that
// costs Consul nothing.
func (c *cluster) ownedAddUp() (bool, string) {
	total, each := 0, map[string]int{}
	for _, id := range sortedKeys(c.members) {
		v, err := readGauge(c.members[id], "wimro_accounts_owned")
		if err != nil {
			return false, err.Error()
		}
		each[id] = int(v)
		total += int(v)
	}
	for _, n := range each {
		if n == 0 {
			return false, fmt.Sprintf("owned %v", each)
		}
	}
	return total == c.n, fmt.Sprintf("owned %v of %d", each, c.n)
}

// accounts creates one WIM on the emulator and c.n tenants,
// each attached through its own account (user u<i>).
func (c *cluster) accounts(p *process) []string {
	c.t.Helper()
	site := []string{"dc-a", "dc-b"}
	mappings := twoDatacenters(p.caller(c.t), func(i int, _ string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i),
			"wan_service_mapping_info": map[string]any{"mapping_type": "l2sm-site", "site-id": site[i], "device-id": site[i] + "-pe"}}
	})
	p.call(c.t, "POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "ietfl2vpn", "wim_url": c.url,
		"config": map[string]any{"wim_port_mapping": mappings}}})
	var tenants []string
	for i := range c.n {
		tn := fmt.Sprintf("t%02d", i)
		p.call(c.t, "POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": tn}})
		for _, dc := range []string{"dcA", "dcB"} {
			p.call(c.t, "POST", "/openmano/"+tn+"/datacenters/"+dc, nil)
		}
		p.call(c.t, "POST", "/openmano/"+tn+"/wims/wan1", map[string]any{"wim_account": map[string]any{"user": fmt.Sprintf("u%02d", i), "password": "p"}})
		tenants = append(tenants, tn)
	}
	return tenants
}

// instances creates, in every tenant, an instance of vlds two-datacenter
// VLDs (one WAN link each), through the live members in turn.
func (c *cluster) instances(tenants []string, vlds int) []instance {
	c.t.Helper()
	var out []instance
	ids := sortedKeys(c.members)
	for k, tn := range tenants {
		p := c.members[ids[k%len(ids)]]
		var nets []any
		for range vlds {
			vld := uuid.NewString()
			c.vlan++
			for _, dc := range []string{"dcA", "dcB"} {
				nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100 + c.vlan})
			}
		}
		inst := p.call(c.t, "POST", "/openmano/"+tn+"/instances", map[string]any{"instance": map[string]any{"name": "ns-" + uuid.NewString()[:8], "networks": nets}})
		out = append(out, instance{tenant: tn, id: inst["uuid"].(string), actionID: inst["action_id"].(string), links: vlds})
	}
	return out
}

// active waits until every link of insts is ACTIVE.
func (c *cluster) active(insts []instance, within time.Duration) {
	c.t.Helper()
	eventually.Until(c.t, within, "every link ACTIVE", func() (bool, string) {
		p := c.any()
		notYet := 0
		for _, in := range insts {
			resp, err := http.Get("http://" + p.addr + "/openmano/" + in.tenant + "/instances/" + in.id + "/wan_links")
			if err != nil {
				return false, err.Error()
			}
			var body struct {
				Links []wimro.WANLink `json:"wan_links"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			for _, l := range body.Links {
				if l.Status != wimro.LinkActive {
					notYet++
				}
			}
			if len(body.Links) != in.links {
				notYet += in.links - len(body.Links)
			}
		}
		return notYet == 0, fmt.Sprintf("%d links not ACTIVE", notYet)
	})
}

// moved returns the accounts whose owner changed, and checks that each of
// them was owned by one of from.
func moved(t *testing.T, before, after map[string]string, from ...string) int {
	t.Helper()
	n := 0
	for a, was := range before {
		if after[a] == was {
			continue
		}
		n++
		if !slices.Contains(from, was) {
			t.Errorf("account %s moved from %s to %s although %s stayed up", a, was, after[a], was)
		}
	}
	return n
}

// TestClusterOfThree runs wimd processes on one database and one Consul
// agent, with 30 accounts whose links live on a DynPaC emulator with
// latency, through the failures of issue 13: the accounts spread; the
// leader SIGKILLed; a member SIGKILLed; a member SIGTERMed; Consul stopped
// for 20 s mid-run. Throughout, no account is driven by two processes at
// once (the emulator's log, by User-Agent), and at the end every link has
// exactly one service.
func TestClusterOfThree(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	for _, id := range []string{"w1", "w2", "w3"} {
		c.start(id)
	}
	tenants := c.accounts(c.members["w1"])
	owner, leader := c.settled("30 accounts spread over w1, w2, w3", time.Minute)
	t.Logf("spread: leader %s, owners %v", leader, counts(owner))

	var all []instance
	batch := c.instances(tenants, 2)
	all = append(all, batch...)
	c.active(batch, 2*time.Minute)

	// SIGKILL of the leader: a new leader, and every account owned again,
	// within 2 x TTL + lock-delay + leader soak + 5 s.
	batch = c.instances(tenants, 1)
	all = append(all, batch...)
	before := owner
	killed := leader
	c.members[leader].kill9(t)
	delete(c.members, leader)
	start := time.Now()
	bound := 2*clusterTTL + clusterLockDelay + clusterLeaderSoak + 5*time.Second
	owner, leader = c.settled("every account owned after the leader's SIGKILL", bound+30*time.Second)
	failover := time.Since(start)
	t.Logf("leader %s SIGKILLed: new leader %s, every account owned after %v (bound %v)", killed, leader, failover.Round(time.Millisecond), bound)
	if failover > bound {
		t.Errorf("failover took %v, more than 2 x TTL + lock-delay + leader soak + 5 s = %v", failover, bound)
	}
	if n := moved(t, before, owner, killed); n == 0 {
		t.Errorf("no account moved away from the killed leader")
	}
	c.active(batch, 2*time.Minute)

	// SIGKILL of a member (not the leader) moves only its accounts.
	c.start("w4")
	owner, leader = c.settled("w4 joined", time.Minute)
	victim := ""
	for _, id := range sortedKeys(c.members) {
		if id != leader {
			victim = id
			break
		}
	}
	batch = c.instances(tenants, 1)
	all = append(all, batch...)
	before = owner
	c.members[victim].kill9(t)
	delete(c.members, victim)
	owner, _ = c.settled("every account owned after a member's SIGKILL", time.Minute)
	if n := moved(t, before, owner, victim); n == 0 {
		t.Errorf("no account moved away from the killed member %s", victim)
	}
	c.active(batch, 2*time.Minute)

	// SIGTERM of a member moves its accounts within leader soak +
	// assignment soak + 2 s.
	c.start("w5")
	owner, leader = c.settled("w5 joined", time.Minute)
	victim = ""
	for _, id := range sortedKeys(c.members) {
		if id != leader {
			victim = id
			break
		}
	}
	before = owner
	p := c.members[victim]
	start = time.Now()
	p.stop(t, syscall.SIGTERM)
	delete(c.members, victim)
	owner, _ = c.settled("every account owned after a member's SIGTERM", time.Minute)
	handover := time.Since(start)
	termBound := clusterLeaderSoak + clusterAssignSoak + 2*time.Second
	t.Logf("member %s SIGTERMed: its accounts owned again after %v (bound %v, including its own clean stop)", victim, handover.Round(time.Millisecond), termBound)
	if handover > termBound {
		t.Errorf("hand-over after SIGTERM took %v, more than leader soak + assignment soak + 2 s = %v", handover, termBound)
	}
	moved(t, before, owner, victim)

	// Consul stopped for 20 s mid-run: the work goes on under the
	// PostgreSQL leases, nothing is lost, and everything recovers.
	batch = c.instances(tenants, 2)
	all = append(all, batch...)
	before = owner
	c.consul.Stop()
	outage := time.Now()
	c.active(batch, 20*time.Second)
	t.Logf("links of the batch ACTIVE %v into the Consul outage", time.Since(outage).Round(time.Millisecond))
	for _, id := range sortedKeys(c.members) {
		if code, _ := get(t, "http://"+c.members[id].addr+"/healthz"); code != http.StatusOK {
			t.Errorf("%s /healthz = %d while Consul is away", id, code)
		}
	}
	time.Sleep(time.Until(outage.Add(20 * time.Second))) // the outage lasts 20 s; nothing waits on it
	c.consul.Resume()
	owner, _ = c.settled("the cluster back after Consul returned", 2*time.Minute)
	moved(t, before, owner) // nobody left: no account may have moved

	// Exactly one service per link, and none left after the deletes.
	links := 0
	for _, in := range all {
		links += in.links
	}
	if n := len(c.emu.ServiceIDs()); n != links {
		t.Fatalf("%d services on the controller for %d links", n, links)
	}
	for _, in := range all {
		c.any().call(t, "DELETE", "/openmano/"+in.tenant+"/instances/"+in.id, nil)
	}
	eventually.Until(t, 2*time.Minute, "every service deleted", func() (bool, string) {
		n := len(c.emu.ServiceIDs())
		return n == 0, fmt.Sprint(n, " left")
	})
	if bad := c.log.overlaps(); len(bad) > 0 {
		t.Fatalf("accounts driven by two processes at once:\n%s", strings.Join(bad, "\n"))
	}
	if agents := c.log.agents(); len(agents) < 3 {
		t.Fatalf("the controller saw %d calling processes (%v): the work did not spread", len(agents), agents)
	}
}

func counts(owner map[string]string) map[string]int {
	out := map[string]int{}
	for _, id := range owner {
		out[id]++
	}
	return out
}
