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

// Up applies every pending migration.
func Up(ctx context.Context, db *sql.DB, logger *slog.Logger) error {
	p, err := NewProvider(db, logger)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: up: %w", err)
	}
	return nil
}
