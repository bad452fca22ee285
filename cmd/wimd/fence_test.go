package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	l2smemu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// requestLog records every request a controller received as it arrives:
// method, path, basic-auth user, User-Agent (which wimd process sent it),
// and when it arrived and was answered; and which are still being served.
type requestLog struct {
	mu   sync.Mutex
	reqs []*loggedRequest
}

type loggedRequest struct {
	method, path, user, agent string
	arrived, ended            time.Time // ended is zero while it is served
}

func (r *loggedRequest) mutating() bool {
	return r.method != http.MethodGet && r.method != http.MethodHead && r.method != http.MethodOptions
}

func (r *loggedRequest) String() string {
	return fmt.Sprintf("%s %s %s by %q (user %s)", r.arrived.Format("15:04:05.000"), r.method, r.path, r.agent, r.user)
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &loggedRequest{method: r.Method, path: r.URL.Path, agent: r.UserAgent(), arrived: time.Now()}
		rec.user, _, _ = r.BasicAuth()
		l.mu.Lock()
		l.reqs = append(l.reqs, rec)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
		l.mu.Lock()
		rec.ended = time.Now()
		l.mu.Unlock()
	})
}

// find returns the requests keep accepts, as they are now.
func (l *requestLog) find(keep func(r loggedRequest) bool) []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loggedRequest
	for _, r := range l.reqs {
		if keep(*r) {
			out = append(out, *r)
		}
	}
	return out
}

// ietfWIM creates, through p, the datacenters dcs (dc<i> leaving by port
// 1 of switch <sw+i>), the ietfl2vpn WIM name at url reaching them (as
// sites dc-a and dc-b), and n tenants <prefix>0.. with both datacenters,
// each attached to the WIM through an account of its own (user
// <prefix><i>).
func ietfWIM(t *testing.T, p *process, dcs [2]string, sw int, name, url, prefix string, n int) []string {
	t.Helper()
	site := []string{"dc-a", "dc-b"}
	var mappings []any
	for i, dc := range dcs {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:%02x", sw+i)
		p.call(t, "POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		mappings = append(mappings, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
			"pop_switch_dpid": dpid, "pop_switch_port": "1", "wan_service_endpoint_id": fmt.Sprintf("%s-ep-%d", name, i),
			"wan_service_mapping_info": map[string]any{"mapping_type": "l2sm-site", "site-id": site[i], "device-id": site[i] + "-pe"}}}})
	}
	p.call(t, "POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": name, "type": "ietfl2vpn", "wim_url": url,
		"config": map[string]any{"wim_port_mapping": mappings}}})
	var tenants []string
	for i := range n {
		tn := fmt.Sprintf("%s%d", prefix, i)
		p.call(t, "POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": tn}})
		for _, dc := range dcs {
			p.call(t, "POST", "/openmano/"+tn+"/datacenters/"+dc, nil)
		}
		p.call(t, "POST", "/openmano/"+tn+"/wims/"+name, map[string]any{"wim_account": map[string]any{"user": tn, "password": "p"}})
		tenants = append(tenants, tn)
	}
	return tenants
}

// ietfInstances creates, in every tenant, an instance of vlds VLDs
// spanning dcs (one WAN link each), each VLD on a VLAN of its own (from
// *vlan up).
func ietfInstances(t *testing.T, p *process, tenants []string, dcs [2]string, vlds int, vlan *int) []instance {
	t.Helper()
	var out []instance
	for _, tn := range tenants {
		var nets []any
		for range vlds {
			vld := uuid.NewString()
			*vlan++
			for _, dc := range dcs {
				nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100 + *vlan})
			}
		}
		inst := p.call(t, "POST", "/openmano/"+tn+"/instances", map[string]any{"instance": map[string]any{"name": "ns-" + uuid.NewString()[:8], "networks": nets}})
		out = append(out, instance{tenant: tn, id: inst["uuid"].(string), actionID: inst["action_id"].(string), links: vlds})
	}
	return out
}

// leaseTrouble are the log lines of a process that lost, or could not
// prove, an account lease or a claim.
var leaseTrouble = regexp.MustCompile(`account lease lost|not renewed within its local bound|claim or account lease lost before the outcome was written|msg="renew (account|claim) leases"`)

// Issue 30, point 2: one slow controller must not take the leases of the
// process. Three accounts on a controller that holds every request 4 s
// keep 24 creates at the controller at once (each under a connector
// lock), more than the default pool of --parallel 8 has connections; a
// fourth account on a healthy controller beside it has its links ACTIVE
// within seconds, no lease or claim is lost anywhere, and every link of
// the slow controller ends ACTIVE too.
func TestSlowControllerTakesNoLease(t *testing.T) {
	t.Parallel()
	sites := l2smemu.Options{Sites: []l2smemu.Site{{ID: "dc-a"}, {ID: "dc-b"}}}
	slow, fast := l2smemu.New(sites), l2smemu.New(sites)
	var slowLog requestLog
	slowSrv := httptest.NewServer(slowLog.wrap(slow))
	t.Cleanup(slowSrv.Close)
	fastSrv := httptest.NewServer(fast)
	t.Cleanup(fastSrv.Close)

	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_LOG_LEVEL=debug"}
	// The default pool (--db-max-conns unset): 8 + 13 connections.
	p := startWimd(t, buildWimd(t), env, "--data-dir", t.TempDir(), "--claim-lease", "3s", "--parallel", "8")
	c := &cluster{t: t, members: map[string]*process{"w1": p}}
	slowDCs, fastDCs := [2]string{"dcA", "dcB"}, [2]string{"dcC", "dcD"}
	slowTenants := ietfWIM(t, p, slowDCs, 1, "slow", slowSrv.URL, "s", 3)
	fastTenants := ietfWIM(t, p, fastDCs, 3, "fast", fastSrv.URL, "f", 1)

	slow.Delay(4 * time.Second)
	vlan := 0
	slowInsts := ietfInstances(t, p, slowTenants, slowDCs, 8, &vlan)
	eventually.Until(t, 30*time.Second, "creates of every slow account at the slow controller", func() (bool, string) {
		users := map[string]int{}
		for _, r := range slowLog.find(func(r loggedRequest) bool { return r.mutating() && r.ended.IsZero() }) {
			users[r.user]++
		}
		return len(users) == len(slowTenants), fmt.Sprint("creates in flight by account: ", users)
	})

	start := time.Now()
	fastInsts := ietfInstances(t, p, fastTenants, fastDCs, 2, &vlan)
	c.active(fastInsts, 8*time.Second)
	t.Logf("links of the healthy account ACTIVE %v after their instance was created, beside %d creates held at the slow controller",
		time.Since(start).Round(time.Millisecond), len(slowLog.find(func(r loggedRequest) bool { return r.mutating() && r.ended.IsZero() })))

	slow.Delay(0)
	c.active(slowInsts, 2*time.Minute)
	if lines := matchingLines(p.log.String(), leaseTrouble); len(lines) > 0 {
		t.Fatalf("leases or claims lost with a slow controller beside a healthy one:\n%s", strings.Join(lines, "\n"))
	}
}

// matchingLines returns the lines of log that re matches.
func matchingLines(log string, re *regexp.Regexp) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if re.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// tookLeases is the keeper's log line when it takes account leases.
var tookLeases = regexp.MustCompile(`time=(\S+) level=INFO msg="took account leases"`)

// Issue 30, point 4: a paused process must not act after its lease is
// gone. Two wimd processes in a Consul cluster; the controller holds each
// request 1 s, so that the owner of some accounts has creates half done at
// the controller (an ietfl2vpn create writes the service, then each
// attachment) when it is SIGSTOPped. It stays stopped longer than the
// session TTL and the lease, until the other process holds every
// account's lease, and is then SIGCONTed. From that moment until it takes
// a lease again, the controller receives no request that changes anything
// (POST, PUT, DELETE) from it (its User-Agent names it), and every link
// ends ACTIVE with exactly one service.
func TestPausedOwnerSendsNothingAfterItsLease(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	var log requestLog
	srv := httptest.NewServer(log.wrap(c.emu))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	for _, id := range []string{"w1", "w2"} {
		c.start(id)
	}
	tenants := c.accounts(c.members["w1"])
	owner, _ := c.settled("30 accounts spread over w1 and w2", time.Minute)
	const victim, survivor = "w1", "w2"
	if counts(owner)[victim] == 0 {
		t.Fatalf("%s owns no account: %v", victim, counts(owner))
	}
	agent := "(" + victim + ")"
	byVictim := func(r loggedRequest) bool { return strings.HasSuffix(r.agent, agent) }

	c.emu.Delay(time.Second)
	insts := c.instances(tenants, 2)
	eventually.Until(t, time.Minute, victim+" with creates half done at the controller", func() (bool, string) {
		// A create's attachment write comes after its service write: the
		// create is half done and has more to send.
		n := len(log.find(func(r loggedRequest) bool {
			return byVictim(r) && r.mutating() && r.ended.IsZero() && strings.Contains(r.path, "site-network-access")
		}))
		return n >= 3, fmt.Sprintf("%d attachment writes in flight", n)
	})
	p := c.members[victim]
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	inFlight := log.find(func(r loggedRequest) bool {
		return byVictim(r) && r.mutating() && r.arrived.Before(paused) && r.ended.IsZero()
	})
	t.Logf("%s SIGSTOPped with %d changes in flight at the controller", victim, len(inFlight))

	// Stopped longer than session TTL + lease, until the survivor holds
	// every account.
	pool := connect(t, c.db)
	eventually.Until(t, time.Minute, survivor+" holding every account's lease", func() (bool, string) {
		var n int
		err := pool.QueryRow(t.Context(), `SELECT count(*) FROM wim_account_leases l JOIN wim_process_leases p ON p.owner = l.owner AND p.epoch = l.proc_epoch
			WHERE split_part(l.owner, '#', 1) = $1 AND p.expires_at > now()`, survivor).Scan(&n)
		if err != nil {
			return false, err.Error()
		}
		return n == clusterAccounts && time.Since(paused) > clusterTTL+3*time.Second, fmt.Sprintf("%d held after %v", n, time.Since(paused).Round(time.Millisecond))
	})
	c.emu.Delay(0)
	mark := len(p.log.String())
	resumed := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s SIGCONTed after %v", victim, resumed.Sub(paused).Round(time.Millisecond))

	c.active(insts, 2*time.Minute)
	// Its actions of before the pause are over: no claim held any more.
	eventually.Until(t, time.Minute, victim+" holding no claim", func() (bool, string) {
		code, body := get(t, "http://"+p.addr+"/metrics")
		v, ok := sample(body, "wimro_claims_held")
		return code == http.StatusOK && ok && v == 0, fmt.Sprintf("%d: %v claims", code, v)
	})
	// Until it takes a lease again, nothing of its own to send.
	until := time.Now()
	if m := tookLeases.FindStringSubmatch(p.log.String()[mark:]); m != nil {
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil && at.Before(until) {
			until = at
		}
	}
	late := log.find(func(r loggedRequest) bool {
		return byVictim(r) && r.mutating() && !r.arrived.Before(resumed) && r.arrived.Before(until)
	})
	if len(late) > 0 {
		lines := make([]string, len(late))
		for i, r := range late {
			lines[i] = r.String()
		}
		t.Errorf("%d changes reached the controller from %s after it was resumed (%s) without a lease:\n%s",
			len(late), victim, resumed.Format("15:04:05.000"), strings.Join(lines, "\n"))
	}
	links := 0
	for _, in := range insts {
		links += in.links
	}
	if ids := c.emu.ServiceIDs(); len(ids) != links {
		t.Errorf("%d services on the controller for %d links", len(ids), links)
	}
}
