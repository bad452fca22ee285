package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// deregisterCriticalAfter is how long Consul's agent keeps the service of
// a process whose check stays critical (a crash, a long pause) before it
// removes it from the catalog: long enough for an operator to see what
// died, short enough that instance ids that never come back (a pod's)
// do not pile up. A process paused longer registers again on resuming.
const deregisterCriticalAfter = 10 * time.Minute

// serviceCheck is this process's service in Consul's catalog and its TTL
// check. The check passes every TTL/3 while Health is nil and is marked
// critical at once when Health fails; the session is bound to it (and to
// the node's serfHealth), so Consul invalidates the session — deleting
// the membership and leader keys — within one check TTL of a process that
// died, hangs, is paused, or cannot keep its account leases. A session
// TTL cannot do that: Consul invalidates a session only between one and
// two TTLs after its last renewal, and refuses TTLs under 10 s.
type serviceCheck struct {
	api     *api.Client
	reg     *api.AgentServiceRegistration
	checkID string
	ttl     time.Duration
	healthy *flag
	logger  *slog.Logger

	mu         sync.Mutex
	registered bool
	lastPass   time.Time // when Consul last accepted a pass
	// passing is on while the last update Consul accepted said passing:
	// a session can be created only then.
	passing *flag
}

// serviceID names this process's service: unique per instance id and
// service name on an agent.
func serviceID(service, instanceID string) string { return service + "-" + instanceID }

func newServiceCheck(client *api.Client, cfg ConsulConfig, healthy *flag, logger *slog.Logger) *serviceCheck {
	id := serviceID(cfg.Service, cfg.InstanceID)
	reg := &api.AgentServiceRegistration{
		ID:   id,
		Name: cfg.Service,
		Tags: []string{"wimro"},
		Meta: map[string]string{"instance_id": cfg.InstanceID, "boot": cfg.Boot, "version": cfg.Version, "consul_prefix": cfg.Prefix},
		Check: &api.AgentServiceCheck{
			CheckID: id + ":ttl", Name: "wimro account leases kept",
			TTL: cfg.CheckTTL.String(), Status: api.HealthCritical,
			DeregisterCriticalServiceAfter: deregisterCriticalAfter.String(),
		},
	}
	if host, port, err := net.SplitHostPort(cfg.APIAddress); err == nil {
		// An unspecified address (0.0.0.0, ::) says nothing: Consul then
		// shows the node's.
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			reg.Address = host
		}
		reg.Port, _ = strconv.Atoi(port)
	}
	return &serviceCheck{api: client, reg: reg, checkID: reg.Check.CheckID, ttl: cfg.CheckTTL, healthy: healthy,
		logger: logger, passing: newFlag(false)}
}

// timeout bounds one call to the agent: a pass that takes longer than a
// third of the TTL is as good as lost.
func (s *serviceCheck) timeout() time.Duration { return max(s.ttl/3, 500*time.Millisecond) }

// run keeps the service registered and its check up to date: every TTL/3
// and at once whenever Health changes, until ctx ends.
func (s *serviceCheck) run(ctx context.Context) {
	var b backoff
	for {
		_, changed := s.healthy.get()
		next := s.ttl / 3
		if err := s.update(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			logFailure(s.logger, &b, "update the consul health check", err)
			next = min(next, b.next())
		} else if b.failures > 0 {
			s.logger.Info("consul health check updated again")
			b.reset()
		}
		if !sleep(ctx, changed, next) && ctx.Err() != nil {
			return
		}
	}
}

// update registers the service if needed and sends the check's status as
// Health says now. Calls are serialised, so the last one sent always
// follows the latest Health: a pass never lands after the fail that
// followed it.
func (s *serviceCheck) update(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	healthy, _ := s.healthy.get()
	status, output := api.HealthPassing, "account leases kept"
	if !healthy {
		status, output = api.HealthCritical, "account leases cannot be kept: "+errString(s.healthy.reason())
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	if !s.registered {
		// An agent restarted empty (or one that reaped the service of a
		// process paused for long) has forgotten it: register again.
		if err := s.api.Agent().ServiceRegisterOpts(s.reg, api.ServiceRegisterOpts{ReplaceExistingChecks: true}.WithContext(cctx)); err != nil {
			return err
		}
		s.registered = true
		s.logger.Info("registered in consul's catalog", slog.String("service", s.reg.Name), slog.String("service_id", s.reg.ID),
			slog.String("check_id", s.checkID), slog.String("check_ttl", s.reg.Check.TTL))
	}
	sent := time.Now()
	err := s.api.Agent().UpdateTTLOpts(s.checkID, output, status, (&api.QueryOptions{}).WithContext(cctx))
	if err != nil {
		if unknownCheck(err) {
			s.registered = false
		}
		s.passing.set(false, err)
		return err
	}
	if healthy {
		s.lastPass = sent
	}
	s.passing.set(healthy, nil)
	return nil
}

// unknownCheck says whether the agent answered that it has no such check
// (404 in recent versions, a 500 naming it in older ones).
func unknownCheck(err error) bool {
	var se api.StatusError
	if !errors.As(err, &se) {
		return false
	}
	return se.Code == 404 || strings.Contains(se.Body, "Unknown check") || strings.Contains(se.Body, "does not have associated TTL")
}

// lapse is when Consul may invalidate the session for want of a pass:
// one TTL after the last pass it accepted, minus a margin (a quarter) so
// that this process gives the session up — a leader ends its term —
// before Consul does. Zero before the first pass.
func (s *serviceCheck) lapse() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastPass.IsZero() {
		return time.Time{}
	}
	return s.lastPass.Add(s.ttl - s.ttl/4)
}

// deregister removes the service from the agent (Stop: a clean leave).
func (s *serviceCheck) deregister(ctx context.Context, timeout time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.api.Agent().ServiceDeregisterOpts(s.reg.ID, (&api.QueryOptions{}).WithContext(cctx)); err != nil {
		return err
	}
	s.registered = false
	s.passing.set(false, nil)
	return nil
}
