package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/wimro/wimro"
)

// CredentialsCheck runs the connector's CheckCredentials for account a of
// WIM w, their secrets opened (password in clear), with the WIM's port
// mappings (some connectors check that the sites they name exist). wimd builds it from its
// connector registry. It contacts the controller, so the engine calls it
// only after the write transaction committed.
type CredentialsCheck func(ctx context.Context, w wimro.WIM, a wimro.WIMAccount, password string, mappings []wimro.PortMapping) error

// Default bounds of the credentials check of a written account.
const (
	// DefaultCheckWait is how long a create or edit waits for the check
	// before answering with the status as recorded (UNKNOWN for a new
	// account); the check goes on and records its result.
	DefaultCheckWait = 5 * time.Second
	// DefaultCheckTimeout bounds the check itself.
	DefaultCheckTimeout = 30 * time.Second
)

// SetCredentialsCheck installs c, run after an account is created or
// edited; nil (the default) checks nothing and the status stays as
// stored. wait and timeout <= 0 take DefaultCheckWait and
// DefaultCheckTimeout. Call it before serving requests.
func (e *Engine) SetCredentialsCheck(c CredentialsCheck, wait, timeout time.Duration) {
	if wait <= 0 {
		wait = DefaultCheckWait
	}
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	e.credCheck, e.checkWait, e.checkTimeout = c, wait, timeout
	e.checkCtx, e.stopChecks = context.WithCancel(context.Background())
}

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
	if e.credCheck != nil {
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
	a, err := e.db.GetAccount(ctx, id)
	if err != nil {
		return // deleted meanwhile: nothing to record
	}
	w, err := e.db.GetWIM(ctx, a.WIMID)
	if err != nil {
		return
	}
	log := e.logger.With(slog.String("account_id", id), slog.String("connector", w.Type))
	in, err := e.openConnectorInputs(ctx, w, a)
	if err != nil && ctx.Err() == nil && wimro.ErrorCode(err) == wimro.EUNAVAILABLE {
		return // the database is away: the periodic check records later
	}
	if err == nil {
		err = e.credCheck(ctx, in.wim, in.account, in.password, in.mappings)
	}
	if e.checkCtx.Err() != nil {
		return // stopped, not a result
	}
	e.db.RecordAccountCheck(ctx, log, id, started, a.ModifiedAt, err)
}
