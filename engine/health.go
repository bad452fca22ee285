package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/wimro/wimro"
)

// Default bounds of the credentials check of a written account.
const (
	// DefaultCheckWait is how long a create or edit waits for the check
	// before answering with the status as recorded (UNKNOWN for a new
	// account); the check goes on and records its result.
	DefaultCheckWait = 5 * time.Second
	// DefaultCheckTimeout bounds the check itself.
	DefaultCheckTimeout = 30 * time.Second
)

// StopChecks cancels the credentials checks still running in the
// background (their result is not recorded: the next check will be) and
// waits for them until ctx ends. Call it when the process stops serving.
func (e *Engine) StopChecks(ctx context.Context) error {
	if e.stopChecks == nil {
		return nil
	}
	e.stopChecks()
	done := make(chan struct{})
	go func() { e.checks.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkAccounts checks the credentials of the accounts ids, each in its
// own goroutine, waits for them at most checkWait (or until ctx ends: the
// client left), and returns their status as recorded then. A check that
// has not finished keeps running, detached from the request, and records
// its result.
func (e *Engine) checkAccounts(ctx context.Context, ids ...string) map[string]AccountStatus {
	out := make(map[string]AccountStatus, len(ids))
	if e.checkCredentials {
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Add(1)
			e.checks.Add(1)
			go func() {
				defer e.checks.Done()
				defer wg.Done()
				// Not the request's context: the check outlives the
				// answer; StopChecks ends it.
				e.checkAccount(e.checkCtx, id)
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		t := time.NewTimer(e.checkWait)
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	for _, id := range ids {
		// Read outside the request's context: a client gone does not
		// make the answer an error (it is not read anyway).
		a, err := e.db.GetAccount(context.WithoutCancel(ctx), id)
		if err != nil {
			out[id] = AccountStatus{Status: wimro.AccountUnknown}
			continue
		}
		out[id] = statusOf(a)
	}
	return out
}

// checkAccount runs the credentials check of one account and records it.
func (e *Engine) checkAccount(ctx context.Context, id string) {
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, e.checkTimeout)
	defer cancel()
	c, err := e.conns.Account(ctx, id)
	if err != nil {
		// Deleted meanwhile: nothing to record; the database away: the
		// periodic check records later.
		return
	}
	log := e.logger.With(slog.String("account_id", id), slog.String("connector", c.WIM.Type))
	err = c.Err
	if err == nil {
		err = c.Connector.CheckCredentials(ctx)
	}
	if e.checkCtx.Err() != nil {
		return // stopped, not a result
	}
	e.db.RecordAccountCheck(ctx, log, id, started, c.Account.ModifiedAt, err)
}
