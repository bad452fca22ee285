package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro/internal/pglocal"
)

// localDatabase is the name of the database wimd keeps on its own server.
const localDatabase = "wimro"

// localDir is the local PostgreSQL's data folder inside --data-dir.
const localDir = "postgres"

// localDB says how a command uses the local PostgreSQL.
type localDB struct {
	// serve owns the server: a second serve on the folder is refused, and
	// the server is restarted when it dies, each restart counted on
	// restarts.
	serve    bool
	restarts prometheus.Counter
}

// newRestartsCounter is the counter of the local PostgreSQL's restarts,
// registered by serve on its registry.
func newRestartsCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "wimro_local_postgres_restarts_total",
		Help: "Times the local PostgreSQL that wimd owns exited by itself and was started again."})
}

// database returns the URL to use. With no --database-url it starts a
// PostgreSQL server that wimd owns under the data folder, creates the
// wimro database on it, and returns a function that stops the server.
// When another wimd owns that server, serve fails (the two would share
// one database and, by default, one API port) and the other commands use
// it, leaving it running.
func (a *App) database(ctx context.Context, c *dbConfig, logger *slog.Logger, how localDB) (string, func(), error) {
	if c.url != "" {
		return c.url, func() {}, nil
	}
	dir, err := filepath.Abs(filepath.Join(c.dataDir, localDir))
	if err != nil {
		return "", nil, err
	}
	logger.Info("no database URL: using a local PostgreSQL", slog.String("data_dir", dir))
	opts := pglocal.Options{DataDir: dir, Logger: logger, Attach: !how.serve, Supervise: how.serve}
	if how.restarts != nil {
		opts.Restarted = how.restarts.Inc
	}
	srv, err := pglocal.Start(ctx, opts)
	if errors.Is(err, pglocal.ErrInUse) {
		return "", nil, fmt.Errorf("local PostgreSQL: %w: another wimd (a serve, or a migrate that started the server) uses --data-dir %s; stop it first, or give this one a data folder of its own (--data-dir, WIMRO_DATA_DIR)", err, c.dataDir)
	}
	if err != nil {
		return "", nil, fmt.Errorf("local PostgreSQL: %w", err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			logger.Error("stopping local PostgreSQL", slog.Any("error", err))
		}
	}
	if err := ensureDatabase(ctx, srv.URL("postgres"), localDatabase); err != nil {
		stop()
		return "", nil, err
	}
	return srv.URL(localDatabase), stop, nil
}

func ensureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to local PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}
