package pgtest

import (
	"context"
	"fmt"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// startContainer runs PostgreSQL in Docker, for machines that have a Docker
// engine but no PostgreSQL binaries.
func startContainer(ctx context.Context) (srv *server, err error) {
	defer func() {
		// testcontainers panics on some hosts without a Docker socket.
		if p := recover(); p != nil {
			srv, err = nil, fmt.Errorf("docker unavailable: %v", p)
		}
	}()
	c, err := tcpostgres.Run(ctx, "postgres:15-alpine",
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return nil, err
	}
	u, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, err
	}
	return &server{adminURL: u, stop: func(context.Context) error { return testcontainers.TerminateContainer(c) }}, nil
}
