package coordinator

import (
	"context"
	"errors"
	"fmt"
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
	// refuse is called once another live process holds this service
	// (Consul.fail): this one must not run.
	refuse func(error)

	mu         sync.Mutex
	registered bool
	// other is the registration of another boot under this service id,
	// seen with a passing check, and since when (predecessorGone).
	other struct {
		boot  string
		since time.Time
	}
	lastPass time.Time // when Consul last accepted a pass
	// passing is on while the last update Consul accepted said passing:
	// a session can be created only then.
	passing *flag
}

// serviceID names this process's service: unique per instance id and
// service name on an agent.
func serviceID(service, instanceID string) string { return service + "-" + instanceID }

func newServiceCheck(client *api.Client, cfg ConsulConfig, healthy *flag, refuse func(error), logger *slog.Logger) *serviceCheck {
	id := serviceID(cfg.Service, cfg.InstanceID)
	reg := &api.AgentServiceRegistration{
		ID:   id,
		Name: cfg.Service,
		Tags: []string{"wimro"},
		Meta: map[string]string{"instance_id": cfg.InstanceID, "boot": cfg.Boot, "version": cfg.Version, "consul_prefix": cfg.Prefix},
		Check: &api.AgentServiceCheck{
			// One check id per boot: registering it replaces (removes) the
			// check of a dead predecessor under the same instance id, and
			// Consul invalidates the session bound to that check at once.
			// Under one id for every boot, a restart took the old check
			// over and its dead session lived on for up to two session TTLs.
			CheckID: id + ":ttl:" + cfg.Boot, Name: "wimro account leases kept",
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
		refuse: refuse, logger: logger, passing: newFlag(false)}
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
			if ctx.Err() != nil || errors.Is(err, errRefused) {
				return
			}
			if errors.Is(err, errPredecessorPassing) {
				// Look again soon: the predecessor's check goes critical
				// one TTL after its last pass at the latest.
				if !sleep(ctx, nil, max(s.ttl/20, 50*time.Millisecond)) {
					return
				}
				continue
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
		// process paused for long) has forgotten it: register again. But
		// never over a live process's registration.
		if err := s.predecessorGone(cctx); err != nil {
			return err
		}
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

var (
	// errPredecessorPassing says the agent holds this service id for
	// another boot whose check still passes: wait and look again.
	errPredecessorPassing = errors.New("the service is registered by another boot whose check passes")
	// errRefused says another live process holds this service id.
	errRefused = errors.New("refused")
)

// predecessorGone tells whether this process may register its service,
// replacing whatever the agent holds under the same id. Another boot's
// registration is either a previous run of this instance id that died
// (killed and restarted at once) or another live process given the same
// id. The former's check stops passing within one TTL of its last pass;
// the latter's keeps passing. So: absent, ours, or critical → go ahead
// (the replacement removes the dead run's check, and Consul invalidates
// its session); passing → errPredecessorPassing, for up to one TTL (and
// the timeout of a pass) since first seen; passing longer → refuse.
// Called with s.mu held.
func (s *serviceCheck) predecessorGone(ctx context.Context) error {
	q := (&api.QueryOptions{}).WithContext(ctx)
	svc, _, err := s.api.Agent().Service(s.reg.ID, q)
	if notFound(err) || (err == nil && (svc == nil || svc.Meta["boot"] == s.reg.Meta["boot"])) {
		s.other.boot = ""
		return nil
	}
	if err != nil {
		return err
	}
	checks, err := s.api.Agent().ChecksWithFilterOpts(fmt.Sprintf("ServiceID == %q", s.reg.ID), q)
	if err != nil {
		return err
	}
	boot := svc.Meta["boot"]
	passing := false
	for _, c := range checks {
		passing = passing || c.Status == api.HealthPassing
	}
	if !passing {
		s.logger.Info("replacing the registration of a previous run of this instance id: its check is not passing",
			slog.String("service_id", s.reg.ID), slog.String("previous_boot", boot))
		s.other.boot = ""
		return nil
	}
	if s.other.boot != boot {
		s.other.boot, s.other.since = boot, time.Now()
		s.logger.Warn("service registered by another boot of this instance id with a passing check; waiting one check TTL for it to lapse",
			slog.String("service_id", s.reg.ID), slog.String("previous_boot", boot), slog.Duration("check_ttl", s.ttl))
	}
	held := time.Since(s.other.since)
	if held < s.ttl+s.timeout() {
		return errPredecessorPassing
	}
	err = fmt.Errorf("instance id %q is in use by another live process (boot %s, API address %s:%d): "+
		"its service %s in Consul's catalog has kept passing its check for %s, longer than a dead process's check can; "+
		"give every wimd its own --instance-id", s.reg.Meta["instance_id"], boot, svc.Address, svc.Port, s.reg.ID, held.Round(time.Millisecond))
	s.logger.Error("refusing to run", slog.Any("error", err))
	s.refuse(err)
	return fmt.Errorf("%w: %w", errRefused, err)
}

// notFound says whether the agent answered 404.
func notFound(err error) bool {
	var se api.StatusError
	return errors.As(err, &se) && se.Code == 404
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

// deregister removes the service from the agent (Stop: a clean leave),
// if this process registered it: a process refused, or stopped while it
// waited for a predecessor's check, must not remove the registration of
// the live process under its id (that would end its session).
func (s *serviceCheck) deregister(ctx context.Context, timeout time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.registered {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.api.Agent().ServiceDeregisterOpts(s.reg.ID, (&api.QueryOptions{}).WithContext(cctx)); err != nil {
		return err
	}
	s.registered = false
	s.passing.set(false, nil)
	return nil
}
