package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/wimro/wimro"
)

// Runner runs the accounts it is given: wimthread's Supervisor.
type Runner interface {
	SetAccounts(ids []string)
}

// Chore is a cluster-wide duty that one process runs at a time.
type Chore interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Member is one wimd process of the cluster.
type Member = wimro.ClusterMember

// Status is what the coordinator knows of the cluster (GET /cluster); the
// caller fills Owned, which only the Runner knows.
type Status = wimro.ClusterStatus

// Coordinator is a running ownership policy.
type Coordinator interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	// Ready reports whether the first assignment has been applied.
	Ready() bool
	Status(ctx context.Context) (Status, error)
	// Failed delivers the error that forbids this process to run on
	// (another live process has its instance id); it never fires for a
	// policy without such a case.
	Failed() <-chan error
	// Gauges are the cluster's metrics as this process sees them.
	Gauges() Gauges
}

// Gauges are the values of the cluster metrics: wimro_cluster_leader,
// wimro_cluster_members and wimro_cluster_assignment_generation.
type Gauges struct {
	Leader  bool // this process leads (runs the chores)
	Members int  // live members
	// Generation identifies the assignment this process applied last:
	// Consul's index of it, which only grows while the cluster lives (a
	// Consul restarted empty starts again from low values). Members that
	// applied the same assignment report the same generation.
	Generation uint64
}

// chores starts and stops a set of chores together.
type chores struct {
	list    []Chore
	logger  *slog.Logger
	running bool
}

func (c *chores) start(ctx context.Context) error {
	if c.running {
		return nil
	}
	for i, ch := range c.list {
		if err := ch.Start(ctx); err != nil {
			for _, started := range c.list[:i] {
				if serr := started.Stop(ctx); serr != nil {
					c.logger.Error("stop chore", slog.Any("error", serr))
				}
			}
			return fmt.Errorf("coordinator: start chore: %w", err)
		}
	}
	c.running = true
	return nil
}

func (c *chores) stop(ctx context.Context) error {
	if !c.running {
		return nil
	}
	c.running = false
	var errs []error
	for i := len(c.list) - 1; i >= 0; i-- {
		if err := c.list[i].Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
