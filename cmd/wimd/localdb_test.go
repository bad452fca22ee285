package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// ownedDataDir returns a --data-dir for wimd's own PostgreSQL that the
// postgres user can reach.
func ownedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	return dir
}

// postgresOf lists the live processes whose command line names the
// folder dir (postgres -D dir, and its children by their titles).
func postgresOf(t *testing.T, dir string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), dir) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if pid != os.Getpid() && pgtest.Alive(pid) {
			found = append(found, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	return found
}

// readyz returns the status and body of wimd's /readyz.
func readyz(addr string) (int, string) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReadyz waits until /readyz answers status with a body holding want.
func waitReadyz(t *testing.T, addr string, status int, want string) {
	t.Helper()
	eventually.Until(t, 90*time.Second, fmt.Sprintf("/readyz %d naming %q", status, want), func() (bool, string) {
		code, body := readyz(addr)
		return code == status && strings.Contains(body, want), fmt.Sprintf("%d %s", code, body)
	})
}

// /readyz names the check that fails: the schema while a migration is
// rolled back under the running wimd, the database while its server is
// halted; and it is ready again once each comes back.
func TestReadyzNamesTheFailingCheck(t *testing.T) {
	t.Parallel()
	srv, err := pglocal.Start(t.Context(), pglocal.Options{}) // a throwaway server the test can halt
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	url := srv.URL("postgres")
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = url
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	addr, stop := b.serve(t, "--data-dir", t.TempDir())
	stop = sync.OnceValue(stop) // deferred, and called to check the exit
	defer stop()
	migrate := func(sub string) {
		m := setup(t)
		if code := m.app(nil).Run(t.Context(), []string{"migrate", sub, "--database-url", url}); code != 0 {
			t.Fatalf("migrate %s: exit %d: %s", sub, code, m.stderr.String())
		}
	}
	steps := []struct {
		name   string
		fault  func()
		status int
		want   string
	}{
		{"serving", func() {}, 200, `"ready"`},
		{"schema rolled back", func() { migrate("down") }, 503, "schema"},
		{"schema current again", func() { migrate("up") }, 200, `"ready"`},
		{"database halted", func() {
			if err := srv.Halt(t.Context()); err != nil {
				t.Fatal(err)
			}
		}, 503, "database"},
		{"database resumed", func() {
			if err := srv.Resume(t.Context()); err != nil {
				t.Fatal(err)
			}
		}, 200, `"ready"`},
	}
	for _, s := range steps {
		s.fault()
		waitReadyz(t, addr, s.status, s.want)
	}
}

// `wimd migrate status` on the data folder of a running `wimd serve` uses
// its PostgreSQL and leaves it running; a second serve on the folder is
// refused with a message that says why.
func TestMigrateStatusWhileServing(t *testing.T) {
	t.Parallel()
	dir := ownedDataDir(t)
	b := setup(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	addr, stop := b.serve(t, "--data-dir", dir)
	stop = sync.OnceValue(stop) // deferred, and called to check the exit
	defer stop()

	m := setup(t)
	if code := m.app(nil).Run(t.Context(), []string{"migrate", "status", "--data-dir", dir}); code != 0 {
		t.Fatalf("migrate status while serving: exit %d: %s", code, m.stderr.String())
	}
	for _, want := range []string{"00001_management.sql", "applied"} {
		if !strings.Contains(m.stdout.String(), want) {
			t.Fatalf("migrate status lacks %q:\n%s", want, m.stdout.String())
		}
	}
	if code, body := readyz(addr); code != 200 {
		t.Fatalf("/readyz after migrate status = %d %s", code, body)
	}

	second := setup(t)
	second.env["WIMRO_SECRET_KEY"] = testSecretKey
	code := second.app(nil).Run(t.Context(), []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir})
	if code != 1 || !strings.Contains(second.stderr.String(), "another wimd (a serve, or a migrate that started the server) uses --data-dir") {
		t.Fatalf("second serve on one data folder: exit %d:\n%s", code, second.stderr.String())
	}
	if code, body := readyz(addr); code != 200 {
		t.Fatalf("/readyz after the second serve = %d %s", code, body)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, b.stderr.String())
	}
}

// A SIGKILLed wimd leaves its PostgreSQL running; the next wimd serve on
// the data folder stops it cleanly, runs its own, finds the data, and
// leaves no postgres of the folder behind when it stops.
func TestOrphanedPostmasterOfKilledWimd(t *testing.T) {
	t.Parallel()
	bin := buildWimd(t)
	dir := ownedDataDir(t)
	t.Cleanup(func() {
		for _, p := range postgresOf(t, dir) {
			pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	env := []string{"WIMRO_DATABASE_URL=", "WIMRO_SECRET_KEY=" + testSecretKey}
	a := startWimd(t, bin, env, "--data-dir", dir)
	a.call(t, "POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "before-kill"}})
	orphan := pgtest.PostmasterPID(t, filepath.Join(dir, "postgres"))
	a.kill9(t)
	if !pgtest.Alive(orphan) {
		t.Fatal("the postmaster died with wimd: the test proves nothing")
	}

	b := startWimd(t, bin, env, "--data-dir", dir)
	if pgtest.Alive(orphan) {
		t.Fatalf("the postmaster %d of the killed wimd still runs", orphan)
	}
	if !strings.Contains(b.log.String(), "stopping a local PostgreSQL left running by a wimd that is gone") {
		t.Errorf("the log does not say the orphan was stopped:\n%s", b.log.String())
	}
	tenants := fmt.Sprint(b.call(t, "GET", "/openmano/tenants", nil))
	if !strings.Contains(tenants, "before-kill") {
		t.Fatalf("the tenant made before the kill is gone: %s", tenants)
	}
	b.stop(t, syscall.SIGTERM)
	if left := postgresOf(t, dir); len(left) > 0 {
		t.Fatalf("postgres processes of the data folder left after SIGTERM:\n%s", strings.Join(left, "\n"))
	}
}

// The postmaster of a running wimd serve is killed: wimd restarts it,
// logs and counts the restart, /readyz comes back, and the workers run an
// instance created afterwards to ACTIVE.
func TestPostmasterKilledWhileServing(t *testing.T) {
	t.Parallel()
	dir := ownedDataDir(t)
	b := setup(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	addr, stop := b.serve(t, "--data-dir", dir, "--status-refresh", "100ms")
	stop = sync.OnceValue(stop) // deferred, and called to check the exit
	defer stop()
	(&process{addr: addr}).fakeWAN(t, []string{"t0"}, nil)
	waitReadyz(t, addr, 200, `"ready"`)

	pid := pgtest.PostmasterPID(t, filepath.Join(dir, "postgres"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually.Until(t, 2*time.Minute, "the restart in the log", func() (bool, string) {
		return strings.Contains(b.stderr.String(), `msg="local PostgreSQL restarted"`), lastLines(b.stderr.String(), 5)
	})
	for _, want := range []string{`level=WARN msg="local PostgreSQL exited unexpectedly; restarting it"`, `exit_status="signal: killed"`} {
		if !strings.Contains(b.stderr.String(), want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	waitReadyz(t, addr, 200, `"ready"`)
	a := api{t: t, addr: addr}
	if _, text := a.send("GET", "/metrics", nil); !strings.Contains(text, "wimro_local_postgres_restarts_total 1\n") {
		t.Errorf("/metrics does not count one restart:\n%s", text)
	}
	a.activeInstance("t0", 2)
	if code := stop(); code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, b.stderr.String())
	}
}
