package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// syncBuffer is a bytes.Buffer safe for the daemon's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type bundle struct {
	stdout, stderr *syncBuffer
	env            map[string]string
	// lookup, when set, resolves the controllers' host names (App.lookup).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

func setup(t testing.TB) *bundle {
	t.Helper()
	return &bundle{stdout: &syncBuffer{}, stderr: &syncBuffer{}, env: map[string]string{}}
}

func (b *bundle) app(ready func(string)) *App {
	return &App{Stdout: b.stdout, Stderr: b.stderr, Getenv: func(k string) string { return b.env[k] }, Ready: ready, lookup: b.lookup}
}

// serve starts wimd serve and returns its address once it accepts requests,
// and a function that stops it and returns its exit status.
func (b *bundle) serve(t testing.TB, args ...string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- b.app(func(a string) { addrc <- a }).Run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...))
	}()
	select {
	case addr := <-addrc:
		return addr, func() int { cancel(); return <-done }
	case code := <-done:
		cancel()
		t.Fatalf("wimd serve exited with %d:\n%s", code, b.stderr.String())
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatalf("wimd serve did not become ready:\n%s", b.stderr.String())
	}
	return "", nil
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The `make run` path: no database URL, so wimd starts its own PostgreSQL
// under the data folder, migrates it, serves /healthz, and stops it all on
// shutdown; `migrate status` then lists the versions of the same database.
func TestServeOnOwnPostgreSQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // the postgres user must reach its data folder
	addr, stop := b.serve(t, "--data-dir", dir)
	code, body := get(t, "http://"+addr+"/healthz")
	if code != http.StatusOK || !strings.Contains(body, "ok") {
		t.Fatalf("healthz = %d %s", code, body)
	}
	code, body = get(t, "http://"+addr+"/openmano/tenants")
	if code != http.StatusOK || !strings.Contains(body, `"tenants"`) {
		t.Fatalf("tenants = %d %s", code, body)
	}
	if c := stop(); c != 0 {
		t.Fatalf("serve exit %d:\n%s", c, b.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.key")); err != nil {
		t.Fatalf("secret key not generated: %v", err)
	}

	b2 := setup(t)
	if c := b2.app(nil).Run(t.Context(), []string{"migrate", "status", "--data-dir", dir}); c != 0 {
		t.Fatalf("migrate status exit %d: %s", c, b2.stderr.String())
	}
	out := b2.stdout.String()
	for _, want := range []string{"00001_management.sql", "00002_instances.sql", "applied"} {
		if !strings.Contains(out, want) {
			t.Fatalf("migrate status output lacks %q:\n%s", want, out)
		}
	}
}

func TestMigrateCommands(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	run := func(args ...string) (int, string) {
		b := setup(t)
		code := b.app(nil).Run(t.Context(), append(args, "--database-url", url))
		return code, b.stdout.String() + b.stderr.String()
	}
	files, err := fs.Glob(migrations.FS(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v, %v", files, err)
	}
	newest := files[len(files)-1]
	version := strings.TrimLeft(strings.SplitN(newest, "_", 2)[0], "0")
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "version"}, "0\n"},
		{[]string{"migrate", "up"}, "applied " + newest},
		{[]string{"migrate", "version"}, version + "\n"},
		{[]string{"migrate", "up"}, "no pending migrations"},
		{[]string{"migrate", "down"}, "rolled back " + newest},
		{[]string{"migrate", "status"}, "pending"},
		{[]string{"migrate", "up"}, "applied " + newest},
	}
	for _, s := range steps {
		code, out := run(s.args...)
		if code != 0 || !strings.Contains(out, s.want) {
			t.Fatalf("%v: exit %d, output:\n%s\nwant %q", s.args, code, out, s.want)
		}
	}
}

func TestServeWithDatabaseURLAndToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.EmptyURL(t)
	b.env["WIMRO_API_TOKEN"] = "tok"
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // base64 of 32 bytes
	addr, stop := b.serve(t, "--data-dir", t.TempDir())
	defer stop()
	if code, _ := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Fatalf("healthz = %d", code)
	}
	if code, _ := get(t, "http://"+addr+"/openmano/tenants"); code != http.StatusUnauthorized {
		t.Fatalf("tenants without token = %d", code)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/openmano/tenants", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tenants with token = %d", resp.StatusCode)
	}
	if strings.Contains(b.stderr.String(), "tok\"") || strings.Contains(b.stderr.String(), "MDEyMzQ1") {
		t.Fatal("a secret reached the log")
	}
}

func TestUsageAndHelp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage:"},
		{[]string{"--help"}, 0, "wimd serve"},
		{[]string{"serve", "--help"}, 0, "-database-url"},
		{[]string{"serve", "--help"}, 0, "-action-retention duration"},
		{[]string{"serve", "--help"}, 0, "(env WIMRO_ACTION_RETENTION) (default 720h0m0s)"},
		{[]string{"serve", "--action-retention", "-1h"}, 1, "--action-retention must not be negative"},
		{[]string{"serve", "--help"}, 0, "-db-max-conns int"},
		{[]string{"serve", "--db-max-conns", "-1"}, 1, "--db-max-conns must not be negative"},
		{[]string{"migrate", "--help"}, 0, "status"},
		{[]string{"migrate"}, 2, "up|down|status|version"},
		{[]string{"migrate", "sideways"}, 2, "unknown subcommand"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"version"}, 0, "wimd "},
		{[]string{"version", "--help"}, 0, "Usage: wimd version"},
		{[]string{"serve", "extra"}, 2, "unexpected argument"},
	}
	for _, c := range cases {
		b := setup(t)
		code := b.app(nil).Run(t.Context(), c.args)
		out := b.stdout.String() + b.stderr.String()
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d (want %d), output lacks %q:\n%s", c.args, code, c.code, c.want, out)
		}
	}
}

// Help asked for is printed on stdout (so that it pages and greps); the
// usage after a bad flag goes to stderr with the error, stdout empty.
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args   []string
		code   int
		stdout string // a line the help has
		stderr string
	}{
		{[]string{"serve", "-h"}, 0, "-database-url", ""},
		{[]string{"serve", "--help"}, 0, "-listen", ""},
		{[]string{"migrate", "-h"}, 0, "Flags:", ""},
		{[]string{"reconcile", "--help"}, 0, "-account", ""},
		{[]string{"serve", "--no-such-flag"}, 1, "", "flag provided but not defined: -no-such-flag"},
		{[]string{"migrate"}, 2, "", "a subcommand is required"},
		{[]string{"migrate", "sideways"}, 2, "", "unknown subcommand"},
	}
	for _, c := range cases {
		b := setup(t)
		code := b.app(nil).Run(t.Context(), c.args)
		stdout, stderr := b.stdout.String(), b.stderr.String()
		switch {
		case code != c.code:
			t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
		case c.stdout != "" && (!strings.Contains(stdout, c.stdout) || stderr != ""):
			t.Errorf("%v: stdout lacks %q or stderr not empty\nstdout: %s\nstderr: %s", c.args, c.stdout, stdout, stderr)
		case c.stderr != "" && (!strings.Contains(stderr, c.stderr) || !strings.Contains(stderr, "Flags:") || stdout != ""):
			t.Errorf("%v: stderr lacks %q and the usage, or stdout not empty\nstdout: %s\nstderr: %s", c.args, c.stderr, stdout, stderr)
		}
	}
}

// A malformed environment value stops wimd with a message naming it.
func TestBadEnvironmentValue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_PARALLEL"] = "eight"
	if code := b.app(nil).Run(t.Context(), []string{"serve"}); code != 1 || !strings.Contains(b.stderr.String(), "WIMRO_PARALLEL") {
		t.Fatalf("exit %d: %s", code, b.stderr.String())
	}
}

// WIMRO_ACTION_RETENTION sets the default of --action-retention, and a
// value that does not parse stops wimd.
func TestActionRetentionFromEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_ACTION_RETENTION"] = "48h"
	if code := b.app(nil).Run(t.Context(), []string{"serve", "--help"}); code != 0 || !strings.Contains(b.stdout.String(), "(env WIMRO_ACTION_RETENTION) (default 48h0m0s)") {
		t.Fatalf("exit %d: %s", code, b.stdout.String())
	}
	b = setup(t)
	b.env["WIMRO_ACTION_RETENTION"] = "a month"
	if code := b.app(nil).Run(t.Context(), []string{"serve"}); code != 1 || !strings.Contains(b.stderr.String(), "WIMRO_ACTION_RETENTION") {
		t.Fatalf("exit %d: %s", code, b.stderr.String())
	}
}

// The schema guard: wimd refuses to serve a database that a newer wimd
// migrated (an applied version it does not know), and one behind its
// schema when it may not migrate; it exits non-zero with what to do.
func TestServeRefusesAnUnknownSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t) // migrated to this binary's schema
	pool := connect(t, url)
	if _, err := pool.Exec(t.Context(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (999, true)`); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, url, want string
		args            []string
	}{
		{"a newer wimd's schema", url, "schema version(s) 999", nil},
		{"an empty database without --auto-migrate", pgtest.EmptyURL(t), "wimd migrate up", []string{"--auto-migrate=false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t)
			b.env["WIMRO_DATABASE_URL"] = c.url
			b.env["WIMRO_SECRET_KEY"] = testSecretKey
			code := b.app(nil).Run(t.Context(), append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, c.args...))
			if code == 0 || !strings.Contains(b.stderr.String(), c.want) {
				t.Fatalf("serve exit %d, want non-zero with %q:\n%s", code, c.want, b.stderr.String())
			}
		})
	}
}
