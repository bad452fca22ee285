// Command wimd is the wimro daemon: it serves the openmano-compatible REST
// API, runs the actions of the WIM accounts it owns, and manages the database schema.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := &App{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	os.Exit(app.Run(ctx, os.Args[1:]))
}
