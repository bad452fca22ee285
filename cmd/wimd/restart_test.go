package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/eventually"
)

// testSecretKey is a WIMRO_SECRET_KEY: base64 of 32 bytes.
const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// The load of the restart tests (issue 12): 1,000 CREATE actions over 10
// accounts, on a controller with latency.
const (
	loadAccounts = 10
	loadVLDs     = 100 // per account: one instance of 100 two-datacenter VLDs
	loadLinks    = loadAccounts * loadVLDs
	// loadLatencyMS bounds wimd's pace (10 accounts x 8 links per
	// latency): wimd must still be behind the load when it is all created,
	// or no fault hits the middle of the run. At 20 ms one claimer per
	// process made 918 of the 1,000 services while the load was created.
	loadLatencyMS = 500
	// loadMidRun is how many services the controller must hold before the
	// fault is injected, and how many actions must still be pending then.
	loadMidRun = 200
)

// fakeWAN registers datacenters dcA and dcB, a fake WIM at a fresh URL
// reaching both, and the tenants, each with both datacenters attached and
// its own account on the WIM with accountConfig.
func (p *process) fakeWAN(t *testing.T, tenants []string, accountConfig map[string]any) {
	t.Helper()
	mappings := twoDatacenters(p.caller(t), func(_ int, dc string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": "ep-" + dc}
	})
	p.call(t, "POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "fake", "wim_url": "http://fake-" + uuid.NewString(),
		"config": map[string]any{"wim_port_mapping": mappings}}})
	for _, tenant := range tenants {
		p.call(t, "POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": tenant}})
		for _, dc := range []string{"dcA", "dcB"} {
			p.call(t, "POST", "/openmano/"+tenant+"/datacenters/"+dc, nil)
		}
		p.call(t, "POST", "/openmano/"+tenant+"/wims/wan1", map[string]any{"wim_account": map[string]any{"config": accountConfig}})
	}
}

// instance is an instance created by createInstance.
type instance struct {
	tenant, id, actionID string
	links                int
}

// createInstance creates in tenant an instance of vlds VLDs, each spanning
// dcA and dcB: one WAN link, and one CREATE action, per VLD.
func (p *process) createInstance(t *testing.T, tenant string, vlds int) instance {
	t.Helper()
	var nets []any
	for i := range vlds {
		vld := uuid.NewString()
		for _, dc := range []string{"dcA", "dcB"} {
			nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100 + i})
		}
	}
	inst := p.call(t, "POST", "/openmano/"+tenant+"/instances", map[string]any{"instance": map[string]any{"name": "ns", "networks": nets}})
	return instance{tenant: tenant, id: inst["uuid"].(string), actionID: inst["action_id"].(string), links: vlds}
}

// connect opens a pool on wimd's database for the test to watch the queue.
func connect(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// queue counts the actions still to run and the claims held.
func queue(pool *pgxpool.Pool) (pending, claimed, total int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status NOT IN ('DONE', 'FAILED')),
		count(*) FILTER (WHERE claimed_by IS NOT NULL), count(*) FROM vim_wim_actions`).Scan(&pending, &claimed, &total)
	return pending, claimed, total, err
}

// services returns the services on the fake controller (its state file).
func services(state string) int {
	s, _ := fake.ReadStateFile(state)
	return len(s)
}

// waitMidRun waits until the controller holds loadMidRun services (the
// load is all created by then), and fails the test if too little work is
// left for a fault to hit: fewer than loadMidRun actions pending, or every
// service made.
func waitMidRun(t *testing.T, pool *pgxpool.Pool, state string) {
	t.Helper()
	poll(t, fmt.Sprintf("%d services on the controller", loadMidRun), func() (bool, string) {
		n := services(state)
		return n >= loadMidRun, fmt.Sprint(n)
	})
	pending, claimed, _, err := queue(pool)
	if err != nil {
		t.Fatal(err)
	}
	n := services(state)
	if pending < loadMidRun || n >= loadLinks {
		t.Fatalf("%d actions pending and %d of %d services made when the fault comes: too late, the test proves nothing", pending, n, loadLinks)
	}
	t.Logf("fault with %d of %d services made, %d actions pending, %d claimed", n, loadLinks, pending, claimed)
}

// waitFinished waits until every action of the queue is DONE or FAILED.
func waitFinished(t *testing.T, pool *pgxpool.Pool, timeout time.Duration) {
	t.Helper()
	eventually.Until(t, timeout, "every action DONE or FAILED", func() (bool, string) {
		pending, claimed, total, err := queue(pool)
		if err != nil {
			return false, err.Error()
		}
		return total > 0 && pending == 0, fmt.Sprintf("%d of %d actions pending, %d claimed", pending, total, claimed)
	})
}

// checkOutcome checks the end state once every action has finished: no
// claim left, every action DONE, each instance action's counters equal to
// its task count, exactly one controller service per WAN link (one per
// distinct key) named by the link's wim_internal_id, and every link
// ACTIVE.
func checkOutcome(t *testing.T, p *process, pool *pgxpool.Pool, state string, insts []instance) {
	t.Helper()
	_, claimed, _, err := queue(pool)
	if err != nil {
		t.Fatal(err)
	}
	if claimed != 0 {
		var left any
		rows, err := pool.Query(context.Background(), `SELECT instance_action_id::text, task_index, status, claimed_by, claim_expires_at::text
			FROM vim_wim_actions WHERE claimed_by IS NOT NULL LIMIT 10`)
		if left = err; err == nil {
			left, _ = pgx.CollectRows(rows, pgx.RowToMap)
		}
		t.Fatalf("%d claims left after every action finished: %v", claimed, left)
	}
	svcs, err := fake.ReadStateFile(state)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]string{}
	for _, s := range svcs {
		byKey[s.Key] = s.ID
	}
	links := 0
	for _, in := range insts {
		links += in.links
		act := p.call(t, "GET", fmt.Sprintf("/openmano/%s/instances/%s/action/%s", in.tenant, in.id, in.actionID), nil)["actions"].([]any)[0].(map[string]any)
		if act["number_tasks"] != float64(in.links) || act["number_done"] != float64(in.links) || act["number_failed"] != 0.0 {
			t.Fatalf("instance action %s: %v tasks, %v done, %v failed; want %d, %d, 0", in.actionID, act["number_tasks"], act["number_done"], act["number_failed"], in.links, in.links)
		}
		tasks, _ := act["vim_wim_actions"].([]any)
		if len(tasks) != in.links {
			t.Fatalf("instance action %s lists %d tasks, want %d", in.actionID, len(tasks), in.links)
		}
		for _, x := range tasks {
			if task := x.(map[string]any); task["status"] != "DONE" {
				t.Fatalf("task %v", task)
			}
		}
		wanLinks := p.call(t, "GET", fmt.Sprintf("/openmano/%s/instances/%s/wan_links", in.tenant, in.id), nil)["wan_links"].([]any)
		if len(wanLinks) != in.links {
			t.Fatalf("instance %s has %d WAN links, want %d", in.id, len(wanLinks), in.links)
		}
		for _, l := range wanLinks {
			m := l.(map[string]any)
			id, ok := byKey[m["uuid"].(string)]
			if m["status"] != "ACTIVE" || !ok || m["wim_internal_id"] != id {
				t.Fatalf("link %v: want ACTIVE, naming service %q of its key", m, id)
			}
		}
	}
	if len(svcs) != links || len(byKey) != links {
		t.Fatalf("%d services for %d keys on the controller, want exactly one per link (%d)", len(svcs), len(byKey), links)
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *process) kill9(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// stop sends sig and expects a clean exit (status 0).
func (p *process) stop(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("wimd exit after %v: %v", sig, p.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("wimd did not stop on %v", sig)
	}
}

// loadRun is wimd on a PostgreSQL of the test's own, with the load of
// issue 12 created and running.
type loadRun struct {
	db    *pglocal.Server
	pool  *pgxpool.Pool
	bin   string
	env   []string
	args  []string
	state string
	insts []instance
	wimd  *process
}

// startLoad starts a throwaway PostgreSQL (so that the test may stop it),
// a wimd on it (which migrates it), and creates the load: 10 tenants with
// an account each on one fake WIM whose controller keeps its services in a
// state file under wimd's data folder, and one instance of 100 WAN links
// per tenant.
func startLoad(t *testing.T) *loadRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.Stop(ctx); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	})
	conn, err := pgx.Connect(ctx, db.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `CREATE DATABASE wimro`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	r := &loadRun{
		db:    db,
		bin:   buildWimd(t),
		env:   []string{"WIMRO_DATABASE_URL=" + db.URL("wimro"), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DEV_CONNECTORS=true"},
		args:  []string{"--data-dir", dataDir, "--claim-lease", "3s", "--parallel", "8", "--status-refresh", "200ms"},
		state: filepath.Join(dataDir, "controller.json"),
	}
	r.wimd = startWimd(t, r.bin, r.env, r.args...)
	r.pool = connect(t, db.URL("wimro"))
	tenants := make([]string, loadAccounts)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("t%d", i)
	}
	r.wimd.fakeWAN(t, tenants, map[string]any{"latency_ms": loadLatencyMS, "state_file": r.state})
	for _, tenant := range tenants {
		r.insts = append(r.insts, r.wimd.createInstance(t, tenant, loadVLDs))
	}
	return r
}

// finish waits for every action to end, checks the outcome, and stops
// wimd with SIGTERM.
func (r *loadRun) finish(t *testing.T) {
	t.Helper()
	waitFinished(t, r.pool, 2*time.Minute)
	checkOutcome(t, r.wimd, r.pool, r.state, r.insts)
	r.wimd.stop(t, syscall.SIGTERM)
}

// healthz returns the status code of wimd's /healthz, or 0 when it does
// not answer.
func (p *process) healthz() int {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + p.addr + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The database stops for 10 s in the middle of 1,000 CREATEs and starts
// again on the same port. /healthz says 503 while it is away and 200 once
// it is back; every action then ends DONE with exactly one service per
// link, and no claim is left behind: outcomes that could not be written
// during the outage are retried or their claims given up, never renewed
// forever.
func TestDatabaseOutageMidRun(t *testing.T) {
	t.Parallel()
	r := startLoad(t)
	waitMidRun(t, r.pool, r.state)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.db.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	poll(t, "/healthz 503 while the database is down", func() (bool, string) {
		code := r.wimd.healthz()
		return code == http.StatusServiceUnavailable, fmt.Sprint(code)
	})
	time.Sleep(10*time.Second - time.Since(down)) // hold the outage: a fault's duration, not synchronisation
	if code := r.wimd.healthz(); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz = %d at the end of the outage, want 503", code)
	}
	if err := r.db.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "/healthz 200 once the database is back", func() (bool, string) {
		code := r.wimd.healthz()
		return code == http.StatusOK, fmt.Sprint(code)
	})
	r.finish(t)
}

// wimd is killed (SIGKILL) in the middle of 1,000 CREATEs and started
// again with the same data folder and environment. Every action ends DONE
// with exactly one service per link: the actions a dead process held run
// again once their lease expires, and finding their service on the
// controller does not create a second one.
func TestKillMidRunAndRestart(t *testing.T) {
	t.Parallel()
	r := startLoad(t)
	waitMidRun(t, r.pool, r.state)
	r.wimd.kill9(t)
	r.wimd = startWimd(t, r.bin, r.env, r.args...)
	r.finish(t)
}
