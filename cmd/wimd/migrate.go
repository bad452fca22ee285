package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/wimro/wimro/migrations"
)

// migrate runs wimd migrate up|down|status|version.
func (a *App) migrate(ctx context.Context, args []string) error {
	fs := a.newFlagSet("migrate", "Usage: wimd migrate up|down|status|version [flags]\n\n"+
		"  up       apply every pending migration\n"+
		"  down     roll back the newest migration\n"+
		"  status   list every migration and whether it is applied\n"+
		"  version  print the current schema version")
	c := a.dbFlags(fs)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := fs.Parse(args); err != nil {
			return err
		}
		// Through the flag set's error output: the usage follows on stderr.
		fmt.Fprintln(fs.Output(), "wimd migrate: a subcommand is required")
		fs.Usage()
		return errUsage
	}
	sub := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := a.envError(); err != nil {
		return err
	}
	switch sub {
	case "up", "down", "status", "version":
	default:
		fmt.Fprintf(fs.Output(), "wimd migrate: unknown subcommand %q\n", sub)
		fs.Usage()
		return errUsage
	}
	logger, err := a.logger(c)
	if err != nil {
		return err
	}
	url, stop, err := a.database(ctx, c, logger, localDB{})
	if err != nil {
		return err
	}
	defer stop()
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	// goose logs each migration it applies (up, down) with the logger.
	p, err := migrations.NewProvider(db, logger)
	if err != nil {
		return err
	}
	switch sub {
	case "up":
		res, err := migrations.Apply(ctx, p, logger)
		for _, r := range res {
			fmt.Fprintf(a.Stdout, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(time.Millisecond))
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		if len(res) == 0 {
			fmt.Fprintln(a.Stdout, "no pending migrations")
		}
	case "down":
		r, err := p.Down(ctx)
		if err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		fmt.Fprintf(a.Stdout, "rolled back %s (%s)\n", r.Source.Path, r.Duration.Round(time.Millisecond))
	case "status":
		list, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("migrate status: %w", err)
		}
		fmt.Fprintf(a.Stdout, "%-8s %-8s %-25s %s\n", "VERSION", "STATE", "APPLIED AT", "MIGRATION")
		for _, s := range list {
			at := "-"
			if !s.AppliedAt.IsZero() {
				at = s.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(a.Stdout, "%-8d %-8s %-25s %s\n", s.Source.Version, s.State, at, filepath.Base(s.Source.Path))
		}
	case "version":
		v, err := p.GetDBVersion(ctx)
		if err != nil {
			return fmt.Errorf("migrate version: %w", err)
		}
		fmt.Fprintf(a.Stdout, "%d\n", v)
	}
	return nil
}
