package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/pglocal"
)

// localDatabase is the name of the database wimd keeps on its own server.
const localDatabase = "wimro"

// database returns the URL to use. With no --database-url it starts (or
// reuses) a PostgreSQL server that wimd owns under the data folder, creates
// the wimro database on it, and returns a function that stops the server.
func (a *App) database(ctx context.Context, c *dbConfig, logger *slog.Logger) (string, func(), error) {
	if c.url != "" {
		return c.url, func() {}, nil
	}
	dir, err := filepath.Abs(filepath.Join(c.dataDir, "postgres"))
	if err != nil {
		return "", nil, err
	}
	logger.Info("no database URL: starting a local PostgreSQL", slog.String("data_dir", dir))
	srv, err := pglocal.Start(ctx, pglocal.Options{DataDir: dir, Logger: logger})
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
