// Command openmano is the command line client of wimd's openmano-compatible
// REST API: tenants, datacenters, WIMs, WIM accounts, port mappings,
// instances and their actions. Run "openmano help" for the commands, the
// environment variables and the exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &CLI{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin, Getenv: os.Getenv, Name: filepath.Base(os.Args[0])}
	os.Exit(c.Run(ctx, os.Args[1:]))
}
