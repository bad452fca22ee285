// Package pgtest gives tests a real, migrated PostgreSQL database of their
// own. It finds a server in this order: WIMRO_TEST_DATABASE_URL; a
// throwaway server started from the machine's PostgreSQL binaries
// (internal/pglocal); testcontainers-go where a Docker engine answers. It
// migrates one template database per server and clones it for every test
// (CREATE DATABASE ... TEMPLATE), which takes milliseconds. When no server
// can be had the test fails with the reasons; it never skips.
//
// A package that uses it runs its tests through Main so the throwaway
// server stops when the tests end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for goose

	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/pgwire"
	"github.com/wimro/wimro/migrations"
)

// EnvURL names the variable that points the tests at an existing server.
// The URL's user must be allowed to create databases.
const EnvURL = "WIMRO_TEST_DATABASE_URL"

type server struct {
	adminURL string // a URL of the server; its database part is replaced
	template string
	stop     func(context.Context) error
}

var (
	once      sync.Once
	shared    *server
	sharedErr error
)

// Main runs the package's tests and then stops the throwaway server, if
// one was started.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil && shared.stop != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := shared.stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping PostgreSQL: %v\n", err)
		}
		cancel()
	}
	os.Exit(code)
}

// URL creates a fresh database cloned from the migrated template and
// returns its URL. The database is dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	srv := get(t)
	name := "wimro_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adminExec(ctx, srv.adminURL, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, srv.template)); err != nil {
		t.Fatalf("pgtest: create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, srv.adminURL, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Errorf("pgtest: drop test database: %v", err)
		}
	})
	return withDatabase(srv.adminURL, name)
}

// NewPool returns a pool on a fresh migrated database; both are closed and
// dropped when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatalf("pgtest: parse the server URL: %v", err)
	}
	pgwire.Configure(cfg) // as wimd's pool
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(pool.Close) // registered after the drop, so it runs before it
	return pool
}

// EmptyURL creates an empty database (no migrations) for migration tests.
func EmptyURL(t testing.TB) string {
	t.Helper()
	srv := get(t)
	name := "wimro_empty_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adminExec(ctx, srv.adminURL, `CREATE DATABASE `+name+` TEMPLATE template0`); err != nil {
		t.Fatalf("pgtest: create empty database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, srv.adminURL, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database: %v", err)
		}
	})
	return withDatabase(srv.adminURL, name)
}

func get(t testing.TB) *server {
	t.Helper()
	once.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		t.Fatalf("pgtest: no PostgreSQL for the tests: %v", sharedErr)
	}
	return shared
}

// start finds a server and prepares the template database.
func start() (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var reasons []string
	if u := os.Getenv(EnvURL); u != "" {
		srv := &server{adminURL: u}
		if err := srv.prepareTemplate(ctx); err != nil {
			return nil, fmt.Errorf("%s is set but unusable: %w", EnvURL, err)
		}
		return srv, nil
	}
	reasons = append(reasons, EnvURL+" is not set")

	local, err := pglocal.Start(ctx, pglocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		srv := &server{adminURL: local.URL("postgres"), stop: local.Stop}
		if err := srv.prepareTemplate(ctx); err != nil {
			_ = local.Stop(ctx)
			return nil, fmt.Errorf("throwaway PostgreSQL: %w", err)
		}
		return srv, nil
	}
	reasons = append(reasons, "throwaway PostgreSQL from local binaries: "+err.Error()+" (run `make deps` or scripts/ensure-postgres.sh)")

	srv, err := startContainer(ctx)
	if err == nil {
		if err := srv.prepareTemplate(ctx); err != nil {
			_ = srv.stop(ctx)
			return nil, fmt.Errorf("testcontainers PostgreSQL: %w", err)
		}
		return srv, nil
	}
	reasons = append(reasons, "testcontainers: "+err.Error())
	return nil, errors.New(strings.Join(reasons, "; "))
}

// prepareTemplate creates and migrates the template database once per
// migration set; several test binaries sharing one server agree on it
// through an advisory lock.
func (s *server) prepareTemplate(ctx context.Context) error {
	sum, err := migrationsHash()
	if err != nil {
		return err
	}
	s.template = "wimro_template_" + sum[:16]
	conn, err := pgx.Connect(ctx, s.adminURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(424242)`); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(424242)`) //nolint:errcheck // released on close anyway
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, s.template).Scan(&exists); err != nil {
		return fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return nil
	}
	building := s.template + "_build"
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+building+` WITH (FORCE)`); err != nil {
		return fmt.Errorf("drop stale template: %w", err)
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+building+` TEMPLATE template0`); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	db, err := sql.Open("pgx", withDatabase(s.adminURL, building))
	if err != nil {
		return err
	}
	err = migrations.Up(ctx, db, nil)
	db.Close()
	if err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	// Renaming only once migrated means a crash never leaves a half-built
	// template under the real name.
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+building+` RENAME TO `+s.template); err != nil {
		return fmt.Errorf("publish template: %w", err)
	}
	return nil
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func adminExec(ctx context.Context, adminURL, stmt string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

// withDatabase returns u with its database replaced by name.
func withDatabase(u, name string) string {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme == "" {
		// keyword/value form
		return u + " dbname=" + name
	}
	parsed.Path = "/" + name
	return parsed.String()
}
