package coordinator

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// session is one Consul session of this process. done is closed once the
// process gave it up: Consul said it is gone, or it could not be renewed
// for TTL minus a margin (Consul may invalidate it from TTL on). Whatever
// is bound to a session (the membership key, the leader key, a term of
// leadership) ends with done.
type session struct {
	id   string
	done chan struct{}
}

// sessions keeps this process's session: it creates one, renews it every
// TTL/3, and creates another when Consul says it is gone or when it could
// not be renewed in time. Sessions given up while Consul did not answer
// may still be alive; they are destroyed as soon as Consul answers, so
// the keys they hold go at once rather than at their expiry.
type sessions struct {
	api       *api.Client
	name      string
	ttl       time.Duration
	lockDelay time.Duration
	timeout   time.Duration // per call
	logger    *slog.Logger
	// check, when not nil, is the service check the sessions are bound
	// to besides serfHealth: a session is created only while it passes,
	// and given up when it could not be passed in time.
	check *serviceCheck

	mu      sync.Mutex
	cur     *session
	changed chan struct{} // closed and replaced whenever cur changes
	stale   []string      // given up, maybe alive: destroyed when Consul answers

	signals *testSignals // the coordinator's
}

func newSessions(client *api.Client, name string, ttl, lockDelay time.Duration, check *serviceCheck, logger *slog.Logger) *sessions {
	return &sessions{
		api: client, name: name, ttl: ttl, lockDelay: lockDelay,
		timeout: max(ttl/3, time.Second), logger: logger, check: check,
		changed: make(chan struct{}),
	}
}

// margin is how long before the TTL a session not renewed is given up:
// Consul invalidates it no earlier than TTL after its last renewal, so a
// leader that steps down at TTL minus margin leaves before anyone else
// can take the leader key (TTL plus the lock-delay).
func (s *sessions) margin() time.Duration { return s.ttl / 4 }

// current waits until a session is live and returns it; nil when ctx
// ended first.
func (s *sessions) current(ctx context.Context) *session {
	for {
		s.mu.Lock()
		cur, changed := s.cur, s.changed
		s.mu.Unlock()
		if cur != nil {
			return cur
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// id returns the live session's id, or "".
func (s *sessions) id() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return ""
	}
	return s.cur.id
}

func (s *sessions) set(cur *session) {
	s.mu.Lock()
	s.cur = cur
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if cur == nil {
		s.signals.Session.Send("")
	} else {
		s.signals.Session.Send(cur.id)
	}
}

// giveUp ends sess; alive says Consul may still hold it (not renewed in
// time, but not known to be gone), so it is destroyed when Consul answers.
func (s *sessions) giveUp(sess *session, alive bool) {
	s.mu.Lock()
	if alive {
		s.stale = append(s.stale, sess.id)
	}
	s.mu.Unlock()
	close(sess.done)
	s.set(nil)
}

// run keeps a session until ctx ends. The last session stays: Stop
// destroys it after releasing the keys it holds.
func (s *sessions) run(ctx context.Context) {
	for {
		sess, created := s.create(ctx)
		if sess == nil {
			return
		}
		if !s.keep(ctx, sess, created) {
			return
		}
	}
}

// create makes a new session, retrying with back-off until Consul
// answers; it returns the session and when it was asked for (the start of
// its TTL at the latest), or nil once ctx ended.
func (s *sessions) create(ctx context.Context) (*session, time.Time) {
	var b backoff
	for {
		s.destroyStale(ctx)
		entry := &api.SessionEntry{
			Name:      s.name,
			TTL:       s.ttl.String(),
			Behavior:  api.SessionBehaviorDelete,
			LockDelay: s.lockDelay,
		}
		if s.check != nil {
			// Consul refuses a session bound to a critical check: wait
			// for a pass (this process is healthy again).
			if !s.check.passing.wait(ctx) {
				return nil, time.Time{}
			}
			entry.NodeChecks = []string{"serfHealth"}
			entry.ServiceChecks = []api.ServiceCheck{{ID: s.check.checkID}}
		}
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		sent := time.Now()
		id, _, err := s.api.Session().Create(entry, (&api.WriteOptions{}).WithContext(cctx))
		cancel()
		if err == nil {
			sess := &session{id: id, done: make(chan struct{})}
			s.set(sess)
			s.logger.Info("consul session created", slog.String("session_id", id), slog.Duration("ttl", s.ttl))
			return sess, sent
		}
		if ctx.Err() != nil {
			return nil, time.Time{}
		}
		s.logFailure(&b, "create consul session", err)
		if !b.wait(ctx, nil) {
			return nil, time.Time{}
		}
	}
}

// keep renews sess every TTL/3 until Consul says it is gone or it could
// not be renewed for TTL minus the margin, or its check not passed for the
// check's TTL minus its margin; it then gives it up and returns true (make
// another). It returns false once ctx ended.
func (s *sessions) keep(ctx context.Context, sess *session, lastOK time.Time) bool {
	ttl := s.ttl
	var b backoff
	due := time.Now().Add(ttl / 3)
	for {
		deadline := s.deadline(lastOK, ttl)
		wake := due
		if deadline.Before(wake) {
			wake = deadline
		}
		if !sleep(ctx, nil, max(time.Until(wake), 0)) {
			return false
		}
		// A pass meanwhile may have moved the deadline.
		if deadline = s.deadline(lastOK, ttl); !time.Now().Before(deadline) {
			s.logger.Warn("consul session could not be renewed, or its check passed, in time; giving it up",
				slog.String("session_id", sess.id), slog.Duration("since_renewal", time.Since(lastOK)))
			s.giveUp(sess, true)
			return true
		}
		if time.Now().Before(due) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, min(s.timeout, time.Until(deadline)))
		sent := time.Now()
		entry, _, err := s.api.Session().Renew(sess.id, (&api.WriteOptions{}).WithContext(cctx))
		cancel()
		switch {
		case ctx.Err() != nil:
			return false
		case err != nil:
			s.logFailure(&b, "renew consul session", err)
			due = time.Now().Add(b.next())
		case entry == nil:
			s.logger.Warn("consul session is gone; creating another", slog.String("session_id", sess.id))
			s.giveUp(sess, false)
			return true
		default:
			if b.failures > 0 {
				s.logger.Info("consul session renewed again", slog.String("session_id", sess.id))
			}
			b.reset()
			lastOK = sent
			// Consul may ask for a longer TTL when its servers are busy.
			if d, perr := time.ParseDuration(entry.TTL); perr == nil && d > ttl {
				ttl = d
			}
			due = time.Now().Add(ttl / 3)
		}
	}
}

// deadline is when a session last renewed at lastOK must be given up: TTL
// minus the margin after lastOK, or earlier when its check was not passed
// for the check's TTL minus its margin (Consul invalidates it then).
func (s *sessions) deadline(lastOK time.Time, ttl time.Duration) time.Time {
	d := lastOK.Add(ttl - s.margin())
	if s.check != nil {
		if lapse := s.check.lapse(); !lapse.IsZero() && lapse.Before(d) {
			d = lapse
		}
	}
	return d
}

// destroyStale destroys the sessions given up while Consul did not
// answer; those it cannot destroy now stay for the next time.
func (s *sessions) destroyStale(ctx context.Context) {
	s.mu.Lock()
	stale := s.stale
	s.stale = nil
	s.mu.Unlock()
	var keep []string
	for _, id := range stale {
		if err := s.destroy(ctx, id); err != nil {
			keep = append(keep, id)
			continue
		}
		s.logger.Info("destroyed a consul session given up earlier", slog.String("session_id", id))
	}
	if len(keep) > 0 {
		s.mu.Lock()
		s.stale = append(s.stale, keep...)
		s.mu.Unlock()
	}
}

func (s *sessions) destroy(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.api.Session().Destroy(id, (&api.WriteOptions{}).WithContext(cctx))
	return err
}

// close destroys the live session and any given up earlier (Stop, after
// the keys were released). The keys they still hold are deleted by Consul.
func (s *sessions) close(ctx context.Context) error {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	s.destroyStale(ctx)
	if cur == nil {
		return nil
	}
	if err := s.destroy(ctx, cur.id); err != nil {
		return err
	}
	s.giveUp(cur, false)
	s.logger.Info("consul session destroyed", slog.String("session_id", cur.id))
	return nil
}

// logFailure logs a failed Consul call: a warning when a run of failures
// starts, debug afterwards (the back-off goes on, up to 5 s apart).
func (s *sessions) logFailure(b *backoff, what string, err error) {
	logFailure(s.logger, b, what, err)
}

func logFailure(logger *slog.Logger, b *backoff, what string, err error) {
	if b.failures == 0 {
		logger.Warn(what+" failed; retrying", slog.Any("error", err))
		return
	}
	logger.Debug(what+" failed again", slog.Int("attempt", b.failures+1), slog.Any("error", err))
}
