package wimthread

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/wimro/wimro/persistence"
)

// claims is the process's own record of the claims its workers hold: the
// only claims it renews. See doc.go, "Who holds a claim".
type claims struct {
	// fence is held shared by a claimer from its claim statement until the
	// claims are recorded here, and exclusively by Verify, so Verify never
	// sees a claim that is in the database but not yet recorded.
	fence sync.RWMutex

	mu sync.Mutex
	// running: a worker runs the action or is writing its outcome; renewed.
	running map[persistence.ClaimKey]bool
	// releasing: the outcome could not be written and nobody runs the
	// action any more; released as soon as the database answers, never
	// renewed (so it expires at the latest one lease after it was given up).
	releasing map[persistence.ClaimKey]bool
	seq       atomic.Uint64
	// boot tells this run of the process from earlier ones with the same
	// owner name (a restart with the same instance id).
	boot string
}

func newClaims() *claims {
	return &claims{running: map[persistence.ClaimKey]bool{}, releasing: map[persistence.ClaimKey]bool{}, boot: uuid.NewString()[:8]}
}

// name returns a claimed_by value no earlier claim used, of this process
// or of an earlier run under the same owner.
func (c *claims) name(owner string) string {
	return persistence.ClaimName(owner, fmt.Sprintf("%s.%d", c.boot, c.seq.Add(1)))
}

// claim runs take (one claim statement) and records what it claimed before
// anyone can compare the database with this record.
func (c *claims) claim(take func() ([]persistence.ClaimKey, error)) error {
	c.fence.RLock()
	defer c.fence.RUnlock()
	keys, err := take()
	c.mu.Lock()
	for _, k := range keys {
		c.running[k] = true
	}
	c.mu.Unlock()
	return err
}

// done forgets a claim: its outcome was written (the claim released with
// it), it was lost to another claimer, or it was released.
func (c *claims) done(k persistence.ClaimKey) {
	c.mu.Lock()
	delete(c.running, k)
	delete(c.releasing, k)
	c.mu.Unlock()
}

// giveUp stops renewing a claim whose outcome could not be written; the
// sweep releases it when the database answers.
func (c *claims) giveUp(k persistence.ClaimKey) {
	c.mu.Lock()
	if c.running[k] {
		delete(c.running, k)
		c.releasing[k] = true
	}
	c.mu.Unlock()
}

func (c *claims) list(m map[persistence.ClaimKey]bool) []persistence.ClaimKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]persistence.ClaimKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// held counts the claims being worked on.
func (c *claims) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.running)
}

// Running returns the claims being worked on, to renew.
func (c *claims) Running() []persistence.ClaimKey { return c.list(c.running) }

// Releasing returns the claims given up, to release.
func (c *claims) Releasing() []persistence.ClaimKey { return c.list(c.releasing) }

// reset forgets every claim (the supervisor stopped and released them all).
func (c *claims) reset() {
	c.mu.Lock()
	clear(c.running)
	clear(c.releasing)
	c.mu.Unlock()
}

// released forgets the given-up claims that were just released (or found
// gone).
func (c *claims) released(keys []persistence.ClaimKey) {
	c.mu.Lock()
	for _, k := range keys {
		delete(c.releasing, k)
	}
	c.mu.Unlock()
}

// ErrStrayClaims is the error of VerifyClaims when the ownership invariant
// does not hold.
var ErrStrayClaims = errors.New("claims held in the database that no worker runs")

// VerifyClaims checks the ownership invariant: every unexpired claim the
// database holds under this supervisor's owner is one that a worker runs
// (or one given up and waiting to be released). It blocks new claims while
// it reads. Tests call it; an operator's diagnostics may too.
func (s *Supervisor) VerifyClaims(ctx context.Context) error {
	c := s.claims
	c.fence.Lock()
	defer c.fence.Unlock()
	// The record is read before the database: a claim is forgotten only
	// after the database released it, and none is added while the fence is
	// held, so a claim still in the database now was in the record then.
	c.mu.Lock()
	known := make(map[persistence.ClaimKey]bool, len(c.running)+len(c.releasing))
	for k := range c.running {
		known[k] = true
	}
	for k := range c.releasing {
		known[k] = true
	}
	c.mu.Unlock()
	held, err := s.db.ClaimsHeldBy(ctx, s.opts.Owner)
	if err != nil {
		return err
	}
	var stray []string
	for _, k := range held {
		if !known[k] {
			stray = append(stray, fmt.Sprintf("%s[%d] by %s", k.InstanceActionID, k.TaskIndex, k.ClaimedBy))
		}
	}
	if len(stray) > 0 {
		slices.Sort(stray)
		return fmt.Errorf("wimthread: %w: %d: %s", ErrStrayClaims, len(stray), strings.Join(stray, ", "))
	}
	return nil
}
