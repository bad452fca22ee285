package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver for goose
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// revision is the commit built, set with -ldflags "-X main.revision=..."
// (make build); empty, wimro_build_info takes the one Go stamped.
var revision string

// App is the wimd command line: a testable type with injected output and
// environment; main only wires it to the process.
type App struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Ready, if set, is called by serve with the address it listens on once
	// it accepts requests.
	Ready func(addr string)

	// lookup, when a test sets it, resolves the controllers' host names
	// instead of DNS (connectors.AddressPolicy.WithLookup).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	envErr error
}

const usage = `wimd - the wimro WAN Infrastructure Manager daemon

Usage:
  wimd serve   [flags]                       serve the REST API and run the workers
  wimd migrate up|down|status|version [flags] manage the database schema (goose)
  wimd reconcile [--account X] [--fix] [-o json] compare the controllers with the database
  wimd rekey status|add-key|promote ID|run|retire rotate the secret key (see wimd rekey --help)
  wimd health                                exit 0 when the local serve is healthy (container health check)
  wimd version                               print the version

Run "wimd <command> --help" for the flags of a command. Every flag has an
environment variable default, shown in its help.
`

// Run runs the command in args and returns the process exit status.
func (a *App) Run(ctx context.Context, args []string) int {
	if a.Getenv == nil {
		a.Getenv = os.Getenv
	}
	if len(args) == 0 {
		fmt.Fprint(a.Stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = a.serve(ctx, args[1:])
	case "migrate":
		err = a.migrate(ctx, args[1:])
	case "reconcile":
		err = a.reconcile(ctx, args[1:])
	case "rekey":
		err = a.rekey(ctx, args[1:])
	case "health":
		err = a.health(ctx, args[1:])
	case "version", "--version":
		if len(args) > 1 && (args[1] == "-h" || args[1] == "--help" || args[1] == "-help") {
			fmt.Fprint(a.Stdout, "Usage: wimd version\n\nPrints the version of this wimd build.\n")
			break
		}
		fmt.Fprintf(a.Stdout, "wimd %s\n", version)
	case "help", "-h", "--help":
		fmt.Fprint(a.Stdout, usage)
	default:
		fmt.Fprintf(a.Stderr, "wimd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errDrift):
		return exitDrift
	}
	fmt.Fprintf(a.Stderr, "wimd: %v\n", err)
	return 1
}

var errUsage = errors.New("usage")
