package persistence_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/eventually"
	"github.com/wimro/wimro/persistence"
)

// Attempts count the runs that reached the controller (issue 30, point
// 6): a claim counts nothing, nor does an outcome of a run stopped before
// the controller, a claim that expired, or an outcome refused because
// its claim was lost; the outcome of a run that called the controller
// adds one. A retry's outcome writes a retry event with its attempt,
// error and next try (point 8).
func TestAttemptsCountRunsThatReachedTheController(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, link2, ia := queue(t, b)
	la := lease(t, b, acct, "P")
	n := 0
	// claim takes link1's CREATE (link2 is kept busy) under a claim of its own.
	claim := func(t *testing.T, ttl time.Duration) wimro.Action {
		t.Helper()
		n++
		res, err := b.db.ClaimDue(b.ctx, persistence.ClaimRequest{Owner: "P", Claim: persistence.ClaimName("P", fmt.Sprint(n)), TTL: ttl, Parallel: 8, Limit: 1, BusyLinks: []string{link2}})
		if err != nil || len(res.Claimed) != 1 || res.Claimed[0].Action.ItemID != link1 {
			t.Fatalf("claim %d = %+v, %v", n, res.Claimed, err)
		}
		return res.Claimed[0].Action
	}
	stored := func() int {
		t.Helper()
		acts, err := b.db.ListActionsOfItem(b.ctx, link1)
		if err != nil {
			t.Fatal(err)
		}
		return acts[0].Attempts
	}
	// Retries due at once (in the past), each at a time of its own.
	now := time.Now().Add(-time.Minute)
	msg := "dynpac create: HTTP 503: maintenance window"
	retry := func(reached bool) persistence.Outcome {
		return persistence.Outcome{Status: wimro.ActionScheduled, ErrorMsg: &msg, RunAfter: &now, Reached: reached, Retry: true}
	}
	var retryAt []time.Time
	for _, step := range []struct {
		name string
		run  func(t *testing.T) error
		want int // attempts stored afterwards
	}{
		{"claimed", func(t *testing.T) error {
			if a := claim(t, time.Minute); a.Attempts != 0 {
				return fmt.Errorf("the claim says attempts %d", a.Attempts)
			}
			_, err := b.db.ReleaseClaims(b.ctx, "P")
			return err
		}, 0},
		{"interrupted before the controller", func(t *testing.T) error {
			interrupted := "interrupted: context canceled"
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), persistence.Outcome{Status: wimro.ActionScheduled, ErrorMsg: &interrupted, RunAfter: &now})
		}, 0},
		{"claim expired and swept, its outcome refused", func(t *testing.T) error {
			dead := claim(t, time.Millisecond)
			eventually.Until(t, 10*time.Second, "the claim swept", func() (bool, string) {
				k, err := b.db.SweepExpiredClaims(b.ctx)
				return err == nil && k == 1, fmt.Sprintf("swept %d, %v", k, err)
			})
			live := claim(t, time.Minute)
			if err := b.db.FinishAction(b.ctx, la, dead, retry(true)); !errors.Is(err, persistence.ErrClaimLost) {
				return fmt.Errorf("the dead claim's outcome: %v, want ErrClaimLost", err)
			}
			_, err := b.db.ReleaseClaimsOf(b.ctx, []persistence.ClaimKey{persistence.KeyOf(live)})
			return err
		}, 0},
		{"a retry that reached the controller", func(t *testing.T) error {
			retryAt = append(retryAt, now)
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), retry(true))
		}, 1},
		{"a second one", func(t *testing.T) error {
			now = now.Add(time.Second)
			retryAt = append(retryAt, now)
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), retry(true))
		}, 2},
		{"a retry that did not reach it (the database away)", func(t *testing.T) error {
			retryAt = append(retryAt, now)
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), retry(false))
		}, 2},
	} {
		if err := step.run(t); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := stored(); got != step.want {
			t.Fatalf("%s: attempts %d, want %d", step.name, got, step.want)
		}
	}

	// One retry event per retry written, none for the interrupted run nor
	// the refused outcome.
	page := readN(t, b, ia.UUID, wimro.EventCursor{}, 3+len(retryAt))
	var got []string
	for _, e := range page.Events {
		if e.Attempt == nil {
			continue
		}
		if e.NextTryAt == nil || e.ErrorMsg == nil || *e.ErrorMsg != msg || *e.WANLinkID != link1 || *e.Status != wimro.ActionScheduled {
			t.Fatalf("retry event %+v", e)
		}
		got = append(got, fmt.Sprintf("attempt %d next %s", *e.Attempt, e.NextTryAt.UTC().Format(time.RFC3339Nano)))
	}
	want := []string{
		fmt.Sprintf("attempt 1 next %s", retryAt[0].UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)),
		fmt.Sprintf("attempt 2 next %s", retryAt[1].UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)),
		fmt.Sprintf("attempt 2 next %s", retryAt[2].UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("retry events:\n%q\nwant\n%q", got, want)
	}
}
