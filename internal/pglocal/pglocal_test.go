package pglocal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/pglocal"
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
	root := t.TempDir()
	os.Chmod(root, 0o755)
	dir := filepath.Join(root, "pg")
	s := start(t, dir)
	conn, _ := pgx.Connect(t.Context(), s.URL("postgres"))
	conn.Exec(t.Context(), `CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')`)
	conn.Close(context.Background())
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, dir)
	if got := exec(t, s2.URL("postgres"), `SELECT v FROM kept`); got != "still here" {
		t.Fatalf("owned data lost: %q", got)
	}
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
