package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/coordinator"
	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/consultest"
	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	l2smemu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
	tapiemu "github.com/wimro/wimro/internal/testkit/emulators/tapi"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// The shape of the cluster and its load.
const (
	members        = 3
	accounts       = 50
	loadWorkers    = 10
	vlanFirst      = 100
	vlanCount      = 400
	controllerWait = 2 * time.Second // timeout_ms of every WIM: a hang lasts longer
	l2smLatency    = 100 * time.Millisecond
	secretKey      = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	// apiTimeout bounds one API request of the harness (a SIGSTOPped
	// process answers nothing).
	apiTimeout = 15 * time.Second
)

// timing is what the harness needs of wimd's settings, read from wimd.
type timing struct {
	sessionTTL, claimLease, leaderSoak, assignSoak, statusRefresh time.Duration
	lockDelay                                                     time.Duration
}

// stopFor is how long a SIGSTOP lasts: longer than Consul can take to
// drop the session (twice its TTL, plus the lock delay) and than the
// account lease, so that the others take the process's accounts over
// while it sleeps.
func (tm timing) stopFor() time.Duration {
	return 2*tm.sessionTTL + tm.lockDelay + tm.claimLease + tm.leaderSoak + 2*time.Second
}

// readTiming runs `wimd serve -h` with the environment the members get
// and reads the defaults it prints, so the soak follows wimd's settings.
func readTiming(t *testing.T, bin string, env []string) timing {
	t.Helper()
	cmd := exec.Command(bin, "serve", "-h")
	cmd.Env = env
	out, _ := cmd.CombinedOutput() // -h exits non-zero; the text is what counts
	found := map[string]time.Duration{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	flagLine := regexp.MustCompile(`^\s+-(\S+) duration$`)
	def := regexp.MustCompile(`\(default ([^)]+)\)`)
	name := ""
	for sc.Scan() {
		if m := flagLine.FindStringSubmatch(sc.Text()); m != nil {
			name = m[1]
			found[name] = 0 // a zero default is not printed
			continue
		}
		if m := def.FindStringSubmatch(sc.Text()); m != nil && name != "" {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				t.Fatalf("wimd serve -h: --%s default %q: %v", name, m[1], err)
			}
			found[name] = d
			name = ""
		}
	}
	get := func(flag string) time.Duration {
		d, ok := found[flag]
		if !ok || d <= 0 {
			t.Fatalf("wimd serve -h prints no default for --%s:\n%s", flag, out)
		}
		return d
	}
	return timing{
		sessionTTL: get("session-ttl"), claimLease: get("claim-lease"), leaderSoak: get("leader-soak"),
		assignSoak: get("assignment-soak"), statusRefresh: get("status-refresh"),
		lockDelay: coordinator.DefaultLockDelay,
	}
}

// member is one wimd process of the cluster, as the harness knows it.
type member struct {
	id   string
	proc *wimdtest.Process

	mu    sync.Mutex
	state string // "up", "stopped" (SIGSTOP), "down" (killed)
}

const (
	stateUp      = "up"
	stateStopped = "stopped"
	stateDown    = "down"
)

func (m *member) setState(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = s
}

// upAddr is the member's address while the harness has not faulted it.
func (m *member) upAddr() (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != stateUp {
		return "", false
	}
	return m.proc.Addr(), true
}

// controller is one emulated SDN controller with its WIM.
type controller struct {
	wim     string
	typ     string
	latency time.Duration
	faults  emulator.Faults
	srv     *httptest.Server
	// services counts, per WAN link uuid, the services that carry its key.
	services func() map[string]int
	// leftovers lists what the controller holds that belongs to no
	// service (an IETF site-network-access of no vpn-service).
	leftovers func() []string
	// mapping is wan_service_mapping_info for datacenter i (0 or 1).
	mapping func(i int) map[string]any
}

// physnet is the physical network of the networks that leave towards c.
func (c *controller) physnet() string { return "physnet-" + c.typ }

func newL2SM(t *testing.T) *controller {
	sites := []string{"dc-a", "dc-b"}
	emu := l2smemu.New(l2smemu.Options{Sites: []l2smemu.Site{{ID: sites[0]}, {ID: sites[1]}}})
	emu.Delay(l2smLatency)
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	return &controller{
		wim: "wan-l2sm", typ: "ietfl2vpn", latency: l2smLatency, faults: emu, srv: srv,
		services: func() map[string]int {
			out := map[string]int{}
			for _, id := range emu.ServiceIDs() {
				out[strings.TrimPrefix(id, "wimro-")]++
			}
			return out
		},
		leftovers: func() []string {
			have := map[string]bool{}
			for _, id := range emu.ServiceIDs() {
				have[id] = true
			}
			var out []string
			for _, a := range emu.Accesses() {
				if !have[a.VPNID] {
					out = append(out, fmt.Sprintf("site-network-access %s/%s of vpn %q", a.Site, a.ID, a.VPNID))
				}
			}
			return out
		},
		mapping: func(i int) map[string]any {
			return map[string]any{"mapping_type": "l2sm-site", "site-id": sites[i], "device-id": sites[i] + "-pe"}
		},
	}
}

func newTAPI(t *testing.T) *controller {
	ports := []string{"R1-eth0", "R2-eth0"}
	var vlans []int
	for v := vlanFirst; v < vlanFirst+vlanCount; v++ {
		vlans = append(vlans, v)
	}
	var sips []tapiemu.SIP
	for _, p := range ports {
		sips = append(sips, tapiemu.VLANSIPs(p, vlans...)...)
	}
	emu := tapiemu.New(tapiemu.Options{SIPs: sips})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	return &controller{
		wim: "wan-tapi", typ: "tapi", faults: emu, srv: srv,
		services: func() map[string]int {
			out := map[string]int{}
			for _, s := range emu.Services() {
				out[s.UUID]++
			}
			return out
		},
		leftovers: func() []string { return nil },
		mapping: func(i int) map[string]any {
			bySIP := map[string]any{}
			for _, v := range vlans {
				bySIP[strconv.Itoa(v)] = tapiemu.VLANSIPUUID(ports[i], v)
			}
			return map[string]any{"mapping_type": "tapi-sip", "sips": bySIP}
		},
	}
}

// tenant is one NFVO tenant with its one account.
type tenant struct {
	name    string
	user    string // the account's user: the controllers log it
	account string // the account's uuid
	ctrl    *controller
}

// eventLog is the run's log of what the harness did and saw, printed when
// the soak fails so that the run can be understood and replayed.
type eventLog struct {
	begin time.Time
	echo  bool // print each line as it comes (go test -v: make soak)
	mu    sync.Mutex
	lines []string
}

func (l *eventLog) add(format string, args ...any) {
	line := fmt.Sprintf("%8.3fs ", time.Since(l.begin).Seconds()) + fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if l.echo {
		fmt.Println("soak:", line)
	}
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// violations collects what broke an invariant, with when.
type violations struct {
	log *eventLog
	mu  sync.Mutex
	all []string
}

func (v *violations) add(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	v.log.add("VIOLATION %s", msg)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.all = append(v.all, msg)
}

func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.all)
}

// window is a time span, open while end is zero.
type window struct{ from, to time.Time }

// windows are the spans when PostgreSQL was away (5xx 503 allowed).
type windows struct {
	mu   sync.Mutex
	list []window
}

func (w *windows) open(at time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, window{from: at})
	return len(w.list) - 1
}

func (w *windows) close(i int, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list[i].to = at
}

func (w *windows) contains(at time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.list {
		if !at.Before(x.from) && (x.to.IsZero() || !at.After(x.to)) {
			return true
		}
	}
	return false
}

// harness is one soak run.
type harness struct {
	t      *testing.T
	seed   int64
	log    *eventLog
	bad    *violations
	timing timing
	bin    string
	env    []string

	pg      *pglocal.Server
	db      *pgxpool.Pool // the harness's own connections (application_name soakAppName)
	consul  *consultest.Agent
	members []*member
	ctrls   []*controller
	tenants []*tenant
	byUser  map[string]*tenant

	client *http.Client
	pgAway windows
	api    apiStats
	vlans  *vlanPool
	load   loadStats
	leases *leaseWatch
	faults []faultRecord
}

// soakAppName is the application_name of the harness's own database
// connections, which the connection-cut fault spares.
const soakAppName = "wimro soak harness"

// pgGrace is how long after PostgreSQL is back (or its connections were
// cut) a 503 still counts as "while PostgreSQL is away": a pooled
// connection that died with the server fails its next statement once.
const pgGrace = 10 * time.Second

func newHarness(t *testing.T, seed int64) *harness {
	h := &harness{t: t, seed: seed, log: &eventLog{begin: time.Now(), echo: testing.Verbose()}, byUser: map[string]*tenant{},
		client: &http.Client{Timeout: apiTimeout}}
	h.bad = &violations{log: h.log}
	h.vlans = newVLANPool(vlanFirst, vlanCount)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("soak FAILED with seed %d: replay with `make soak SEED=%d DURATION=...`\nevent log:\n%s", seed, seed, h.log.String())
		}
	})
	ctx := t.Context()

	pg, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatalf("soak: PostgreSQL: %v", err)
	}
	t.Cleanup(func() { pg.Stop(context.Background()) })
	h.pg = pg
	cfg, err := pgxpool.ParseConfig(pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = soakAppName
	cfg.MaxConns = 4
	if h.db, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.db.Close)

	h.consul = consultest.Start(t)
	h.bin = wimdtest.Build(t, "wimd")[0]
	h.env = []string{"WIMRO_DATABASE_URL=" + pg.URL("postgres"), "WIMRO_SECRET_KEY=" + secretKey, "WIMRO_LOG_LEVEL=info"}
	h.timing = readTiming(t, h.bin, append(os.Environ(), h.env...))
	h.log.add("seed %d; wimd timings: session TTL %v, lock delay %v, claim lease %v, leader soak %v, assignment soak %v, status refresh %v; SIGSTOP lasts %v",
		seed, h.timing.sessionTTL, h.timing.lockDelay, h.timing.claimLease, h.timing.leaderSoak, h.timing.assignSoak, h.timing.statusRefresh, h.timing.stopFor())

	for i := range members {
		id := fmt.Sprintf("w%d", i+1)
		// The first migrates the schema; the others start on it.
		p := wimdtest.Launch(t, h.bin, h.env, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
			"--instance-id", id, "--coordinator", "consul", "--consul", h.consul.Addr())
		h.members = append(h.members, &member{id: id, proc: p, state: stateUp})
		h.log.add("%s serving on %s (pid %d)", id, p.Addr(), p.Pid())
	}
	h.ctrls = []*controller{newL2SM(t), newTAPI(t)}
	h.setUp(ctx)
	h.leases = watchLeases(ctx, h)
	return h
}

// setUp registers the datacenters, the WIMs and the tenants with their
// accounts through the API, as an operator would.
func (h *harness) setUp(ctx context.Context) {
	h.t.Helper()
	// Each datacenter leaves towards each controller's WAN through a port
	// of its own, chosen by the network's physical network.
	for i, dc := range []string{"dcA", "dcB"} {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		var exits []any
		for k, c := range h.ctrls {
			exits = append(exits, map[string]any{"condition": map[string]any{"provider:physical_network": c.physnet()},
				"vim_external_port": map[string]any{"switch": dpid, "port": strconv.Itoa(k + 1)}})
		}
		h.must(ctx, "POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": exits}}}, nil)
	}
	for k, c := range h.ctrls {
		var mappings []any
		for i, dc := range []string{"dcA", "dcB"} {
			m := map[string]any{"pop_switch_dpid": fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1), "pop_switch_port": strconv.Itoa(k + 1),
				"wan_service_endpoint_id": fmt.Sprintf("ep-%s-%d", c.typ, i), "wan_service_mapping_info": c.mapping(i)}
			mappings = append(mappings, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{m}})
		}
		h.must(ctx, "POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": c.wim, "type": c.typ, "wim_url": c.srv.URL,
			"config": map[string]any{"wim_port_mapping": mappings, "timeout_ms": controllerWait.Milliseconds()}}}, nil)
	}
	for i := range accounts {
		tn := &tenant{name: fmt.Sprintf("t%02d", i), user: fmt.Sprintf("u%02d", i), ctrl: h.ctrls[i%len(h.ctrls)]}
		h.must(ctx, "POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": tn.name}}, nil)
		for _, dc := range []string{"dcA", "dcB"} {
			h.must(ctx, "POST", "/openmano/"+tn.name+"/datacenters/"+dc, nil, nil)
		}
		var acct struct {
			Account struct {
				UUID string `json:"uuid"`
			} `json:"wim_account"`
		}
		h.must(ctx, "POST", "/openmano/"+tn.name+"/wims/"+tn.ctrl.wim, map[string]any{"wim_account": map[string]any{"user": tn.user, "password": "p"}}, &acct)
		if acct.Account.UUID == "" {
			h.t.Fatalf("soak: account of %s: no uuid in the answer", tn.name)
		}
		tn.account = acct.Account.UUID
		h.tenants = append(h.tenants, tn)
		h.byUser[tn.user] = tn
	}
	h.log.add("set up: 2 datacenters, WIMs %s (%s, %v latency) and %s (%s), %d tenants with one account each",
		h.ctrls[0].wim, h.ctrls[0].typ, h.ctrls[0].latency, h.ctrls[1].wim, h.ctrls[1].typ, len(h.tenants))
}

// errNoMember: every member is faulted at the moment.
var errNoMember = errors.New("no member up")

// pick returns a random member the harness has not faulted.
func (h *harness) pick() (*member, string, error) {
	order := rand.Perm(len(h.members))
	for _, i := range order {
		if addr, ok := h.members[i].upAddr(); ok {
			return h.members[i], addr, nil
		}
	}
	return nil, "", errNoMember
}

// do sends one API request to a random member that is up, records its
// status, and decodes a 2xx answer into out. err is a transport error
// (no status); a status >= 300 comes back with the answer's text.
func (h *harness) do(ctx context.Context, method, path string, body, out any) (int, string, error) {
	m, addr, err := h.pick()
	if err != nil {
		return 0, "", err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s on %s: %w", method, path, m.id, err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	h.api.record(h, m.id, method, path, resp.StatusCode, string(text))
	if resp.StatusCode >= 300 {
		return resp.StatusCode, string(text), nil
	}
	if out != nil {
		if err := json.Unmarshal(text, out); err != nil {
			return resp.StatusCode, string(text), fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return resp.StatusCode, string(text), nil
}

// retry sends a request that is safe to repeat until it is answered with
// something else than 503 or a transport error, or ctx ends; it returns
// the last status and text.
func (h *harness) retry(ctx context.Context, method, path string, body, out any) (int, string, error) {
	delay := 200 * time.Millisecond
	for {
		status, text, err := h.do(ctx, method, path, body, out)
		if err == nil && status != http.StatusServiceUnavailable {
			return status, text, nil
		}
		if err == nil {
			err = fmt.Errorf("%s %s: %d %s", method, path, status, text)
		}
		select {
		case <-ctx.Done():
			return status, text, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// must is retry for the set-up: anything but a 2xx fails the test.
func (h *harness) must(ctx context.Context, method, path string, body, out any) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	status, text, err := h.retry(ctx, method, path, body, out)
	if err != nil || status >= 300 {
		h.t.Fatalf("soak: %s %s: %d %s %v", method, path, status, text, err)
	}
}

// apiStats counts the API's answers; a 5xx that is not a 503 while
// PostgreSQL is away is a violation.
type apiStats struct {
	mu        sync.Mutex
	requests  int
	pg503     int
	unallowed int
}

func (a *apiStats) record(h *harness, member, method, path string, status int, text string) {
	a.mu.Lock()
	a.requests++
	a.mu.Unlock()
	if status < 500 {
		return
	}
	if status == http.StatusServiceUnavailable && h.pgAway.contains(time.Now()) {
		a.mu.Lock()
		a.pg503++
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	a.unallowed++
	a.mu.Unlock()
	// Say which rule the answer broke: a 500 breaks it even while
	// PostgreSQL is away (the window opens before the halt is sent).
	why := "PostgreSQL not away"
	if status != http.StatusServiceUnavailable {
		why = "only 503 is allowed"
		if h.pgAway.contains(time.Now()) {
			why += ", PostgreSQL away"
		}
	}
	h.bad.add("API %d from %s on %s %s (%s): %.300s", status, member, method, path, why, text)
}

// vlanPool hands out VLANs so that no two live links share one (a TAPI
// SIP serves one service at a time).
type vlanPool struct {
	mu   sync.Mutex
	free []int
}

func newVLANPool(first, n int) *vlanPool {
	p := &vlanPool{}
	for v := first; v < first+n; v++ {
		p.free = append(p.free, v)
	}
	return p
}

func (p *vlanPool) get() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return 0, false
	}
	i := rand.IntN(len(p.free))
	v := p.free[i]
	p.free = slices.Delete(p.free, i, i+1)
	return v, true
}

func (p *vlanPool) put(vs ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, vs...)
}
