// Package migrations holds wimro's PostgreSQL schema as goose SQL migrations,
// embedded in the binary so `wimd migrate` and the test harness need no files
// on disk.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed sql/*.sql
var files embed.FS

// FS returns the migration files.
func FS() fs.FS {
	sub, err := fs.Sub(files, "sql")
	if err != nil {
		panic(err) // the folder is embedded at build time; it cannot be missing
	}
	return sub
}

// NewProvider returns a goose provider over db with the embedded migrations.
// A provider holds no global state, so tests can migrate many databases at
// once. A PostgreSQL session lock serialises migrations when several wimd
// processes start together against one database.
func NewProvider(db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migrations: session locker: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS(), opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: new goose provider: %w", err)
	}
	return p, nil
}

// Up applies every pending migration, and logs what it did (Apply).
func Up(ctx context.Context, db *sql.DB, logger *slog.Logger) error {
	p, err := NewProvider(db, logger)
	if err != nil {
		return err
	}
	if _, err := Apply(ctx, p, logger); err != nil {
		return fmt.Errorf("migrations: up: %w", err)
	}
	return nil
}

// Apply applies every pending migration of p and says what it did in one
// INFO line, "schema 3 → 9, 6 migrations, 812 ms" (attributes from, to,
// migrations, duration_ms): an upgrade that migrated the database says so
// beside goose's line per migration. Nothing is logged when nothing was
// pending, nor on a failure: the error names the migration that failed,
// and goose logged those applied before it.
func Apply(ctx context.Context, p *goose.Provider, logger *slog.Logger) ([]*goose.MigrationResult, error) {
	start := time.Now()
	res, err := p.Up(ctx)
	if err != nil || len(res) == 0 || logger == nil {
		return res, err
	}
	took := time.Since(start)
	// The schema before is the version preceding the first migration run:
	// goose applies the pending ones in order, under its lock, so a
	// version read before the lock could be another process's doing.
	from, to := previous(p.ListSources(), res[0].Source.Version), res[len(res)-1].Source.Version
	logger.Info(fmt.Sprintf("schema %d → %d, %d migrations, %d ms", from, to, len(res), took.Milliseconds()),
		slog.Int64("from", from), slog.Int64("to", to), slog.Int("migrations", len(res)), slog.Int64("duration_ms", took.Milliseconds()))
	return res, nil
}

// previous is the version of the source before version, 0 for the first.
func previous(sources []*goose.Source, version int64) int64 {
	var prev int64
	for _, s := range sources {
		if s.Version >= version {
			break
		}
		prev = s.Version
	}
	return prev
}

// Check verifies that the database's schema is one this binary knows: it
// refuses a database that holds an applied migration this binary does not
// have (a newer wimd migrated it; running an older one on it would write
// rows the schema no longer means) and one with migrations still pending.
func Check(ctx context.Context, db *sql.DB) error {
	p, err := NewProvider(db, nil)
	if err != nil {
		return err
	}
	known := map[int64]bool{}
	var latest int64
	for _, s := range p.ListSources() {
		known[s.Version] = true
		latest = max(latest, s.Version)
	}
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("migrations: read the applied versions: %w", err)
	}
	if !exists {
		return fmt.Errorf("migrations: the database has no wimro schema: run wimd migrate up (or serve with --auto-migrate)")
	}
	rows, err := db.QueryContext(ctx, `SELECT version_id FROM goose_db_version WHERE is_applied AND version_id > 0 ORDER BY version_id`)
	if err != nil {
		return fmt.Errorf("migrations: read the applied versions: %w", err)
	}
	defer rows.Close()
	var unknown []string
	applied := map[int64]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return fmt.Errorf("migrations: read the applied versions: %w", err)
		}
		applied[v] = true
		if !known[v] {
			unknown = append(unknown, fmt.Sprint(v))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrations: read the applied versions: %w", err)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("migrations: the database holds schema version(s) %s that this wimd (schema %d) does not know: it was migrated by a newer wimd; run that version, or roll the schema back with it (wimd migrate down)",
			strings.Join(unknown, ", "), latest)
	}
	for v := range known {
		if !applied[v] {
			return fmt.Errorf("migrations: schema version %d is not applied: run wimd migrate up (or serve with --auto-migrate)", v)
		}
	}
	return nil
}
