package pglocal_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/tlstest"
)

func start(t *testing.T, dir string) *pglocal.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pglocal.Start(ctx, pglocal.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err) // no binaries is a failure, never a skip
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return s
}

func exec(t *testing.T, url, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var out string
	if err := conn.QueryRow(t.Context(), sql).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// ownedDir returns a data folder for an owned server that the postgres
// user can reach.
func ownedDir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	os.Chmod(root, 0o755)
	return filepath.Join(root, "pg")
}

// keep writes the row 'still here' into table kept, for a test to find
// again after a restart.
func keep(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')`); err != nil {
		t.Fatal(err)
	}
}

// kept fails the test, saying what lost it, unless the row of keep is
// there.
func kept(t *testing.T, url, what string) {
	t.Helper()
	if got := exec(t, url, `SELECT v FROM kept`); got != "still here" {
		t.Fatalf("%s: %q", what, got)
	}
}

func TestThrowaway(t *testing.T) {
	t.Parallel()
	a, b := start(t, ""), start(t, "")
	if a.Port() == b.Port() {
		t.Fatal("two servers on one port")
	}
	if got := exec(t, a.URL("postgres"), `SELECT current_setting('fsync')`); got != "off" {
		t.Fatalf("throwaway fsync = %s", got)
	}
	dir := a.DataDir()
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("throwaway folder left: %v", err)
	}
}

func TestOwnedKeepsData(t *testing.T) {
	t.Parallel()
	dir := ownedDir(t)
	s := start(t, dir)
	keep(t, s.URL("postgres"))
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, dir)
	kept(t, s2.URL("postgres"), "owned data lost")
	if got := exec(t, s2.URL("postgres"), `SELECT current_setting('fsync')`); got != "on" {
		t.Fatalf("owned fsync = %s", got)
	}
}

func TestFindBinDir(t *testing.T) {
	t.Parallel()
	d, err := pglocal.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
		t.Fatal(err)
	}
}

// Halt keeps the data and the port; connections fail until Resume; Stop
// after a halt still removes the throwaway folder.
func TestHaltResume(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := start(t, "")
	url, port, dir := s.URL("postgres"), s.Port(), s.DataDir()
	keep(t, url)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	for range 2 { // the second Halt does nothing
		if err := s.Halt(ctx); err != nil {
			t.Fatalf("halt: %v", err)
		}
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a session survived the halt")
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	if c, err := pgx.Connect(short, url); err == nil {
		c.Close(context.Background())
		t.Fatal("connected to a halted server")
	}
	cancelShort()
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Fatalf("halt removed the data folder: %v", err)
	}

	for range 2 { // the second Resume does nothing
		if err := s.Resume(ctx); err != nil {
			t.Fatalf("resume: %v", err)
		}
	}
	if s.Port() != port || s.URL("postgres") != url {
		t.Fatalf("resumed on port %d, was %d", s.Port(), port)
	}
	kept(t, url, "data after resume")

	// Halt and resume once more: the process handling holds across restarts.
	if err := s.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	kept(t, url, "data after the second resume")

	if err := s.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("stop after halt: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Fatalf("throwaway folder left after halt and stop: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if err := s.Resume(ctx); err == nil {
		t.Fatal("resumed a stopped server")
	}
	if err := s.Halt(ctx); err == nil {
		t.Fatal("halted a stopped server")
	}
}

// An immediate halt ends the server without a checkpoint: the resumed
// server recovers from its write-ahead log (its log says so) and keeps
// what was committed, on the same port.
func TestHaltImmediateResume(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := start(t, "")
	url, port := s.URL("postgres"), s.Port()
	keep(t, url)
	if err := s.HaltImmediate(ctx); err != nil {
		t.Fatalf("halt immediate: %v", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	if c, err := pgx.Connect(short, url); err == nil {
		c.Close(context.Background())
		t.Fatal("connected to a halted server")
	}
	cancelShort()
	if err := s.Resume(ctx); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if s.Port() != port {
		t.Fatalf("resumed on port %d, was %d", s.Port(), port)
	}
	kept(t, url, "data after an immediate halt")
	log, err := os.ReadFile(filepath.Join(s.DataDir(), "wimro-postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "immediate shutdown request") || !strings.Contains(string(log), "automatic recovery in progress") {
		t.Fatalf("the server log shows no immediate shutdown and crash recovery:\n%s", log)
	}
}

// An owned server keeps its settings and data across a halt.
func TestHaltResumeOwned(t *testing.T) {
	t.Parallel()
	dir := ownedDir(t)
	s := start(t, dir)
	keep(t, s.URL("postgres"))
	if err := s.Halt(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	kept(t, s.URL("postgres"), "owned data lost")
	if got := exec(t, s.URL("postgres"), `SELECT current_setting('fsync')`); got != "on" {
		t.Fatalf("owned fsync = %s", got)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Fatalf("stop removed an owned folder: %v", err)
	}
}

// Halt, Resume and Stop leave no goroutine behind (the waiter of each
// postgres process ends with it).
func TestHaltResumeNoLeak(t *testing.T) {
	// Not parallel: it counts the goroutines of the test binary, and runs
	// before the parallel tests resume.
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Halt(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Resume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	eventually.Until(t, 10*time.Second, "no goroutine left", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n <= before, fmt.Sprintf("%d goroutines, %d before", n, before)
	})
}

// TestOwnedNeedsPassword checks that an owned server refuses a TCP
// connection without its password (a fresh folder, and one an older wimd
// made with trust everywhere), keeps the password in a 0600 file, and
// that its URL connects.
func TestOwnedNeedsPassword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		trust bool // the folder was made by an older wimd: pg_hba trusts all, no password file
	}{
		{"fresh", false},
		{"made with trust", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := ownedDir(t)
			s := start(t, dir)
			if tt.trust {
				if err := s.Stop(t.Context()); err != nil {
					t.Fatal(err)
				}
				trust := "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n"
				if err := os.WriteFile(filepath.Join(dir, "pg_hba.conf"), []byte(trust), 0o600); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(dir, pglocal.PasswordFile))
				s = start(t, dir)
			}
			st, err := os.Stat(filepath.Join(dir, pglocal.PasswordFile))
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("password file: %v, %v", st, err)
			}
			noPassword := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port())
			if conn, err := pgx.Connect(t.Context(), noPassword); err == nil {
				conn.Close(context.Background())
				t.Fatal("a connection without the password was accepted")
			}
			wrong := fmt.Sprintf("postgres://postgres:guess@127.0.0.1:%d/postgres?sslmode=disable", s.Port())
			if conn, err := pgx.Connect(t.Context(), wrong); err == nil {
				conn.Close(context.Background())
				t.Fatal("a connection with a wrong password was accepted")
			}
			if got := exec(t, s.URL("postgres"), `SELECT current_user`); got != "postgres" {
				t.Fatalf("current_user = %q", got)
			}
		})
	}
}

// An owned server keeps its port across restarts (a client configured
// with it still finds it), moves only when another process took that port
// meanwhile, and says it is an embedded server in its cluster_name; a
// throwaway server does not.
func TestOwnedKeepsPort(t *testing.T) {
	t.Parallel()
	dir := ownedDir(t)
	s := start(t, dir)
	port := s.Port()
	if got := exec(t, s.URL("postgres"), `SHOW cluster_name`); got != pglocal.EmbeddedClusterName {
		t.Fatalf("owned cluster_name = %q", got)
	}
	for i := range 2 {
		if err := s.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		s = start(t, dir)
		if s.Port() != port {
			t.Fatalf("restart %d: port %d, was %d", i+1, s.Port(), port)
		}
	}
	// The port taken by someone else: the server moves, and keeps the new one.
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	s = start(t, dir)
	l.Close()
	moved := s.Port()
	if moved == port {
		t.Fatal("started on a port another process holds")
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s = start(t, dir); s.Port() != moved {
		t.Fatalf("after the move: port %d, want %d", s.Port(), moved)
	}
	if got := exec(t, start(t, "").URL("postgres"), `SHOW cluster_name`); got == pglocal.EmbeddedClusterName {
		t.Fatal("a throwaway server calls itself embedded")
	}
}

// TLS on: a client verifying the certificate against the CA connects
// (verify-full), and a pg_hba.conf of hostssl lines refuses a connection
// without TLS.
func TestTLS(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	// tlstest's files are the test user's; the server's user must read them.
	for _, f := range []string{pki.Cert, pki.Key} {
		os.Chmod(f, 0o644)
	}
	os.Chmod(filepath.Dir(pki.Cert), 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pglocal.Start(ctx, pglocal.Options{TLSCert: pki.Cert, TLSKey: pki.Key,
		HBA: "local all all trust\nhostssl all all 127.0.0.1/32 trust\n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	verified := fmt.Sprintf("postgres://postgres@localhost:%d/postgres?sslmode=verify-full&sslrootcert=%s", s.Port(), pki.CA)
	if got := exec(t, verified, `SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()`); got != "true" {
		t.Fatalf("ssl = %q", got)
	}
	plain := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.Port())
	if conn, err := pgx.Connect(t.Context(), plain); err == nil {
		conn.Close(context.Background())
		t.Fatal("a connection without TLS was accepted")
	}
	if _, err := pglocal.Start(ctx, pglocal.Options{TLSCert: pki.Cert}); err == nil {
		t.Fatal("a certificate without its key was accepted")
	}
}
