package coordinator

import (
	"context"
	"log/slog"
	"time"

	"github.com/hashicorp/consul/api"
)

// blockingWait is the server-side wait of every blocking query: short
// enough that a watch notices a session or a term ending on its own even
// if its context were not cancelled, long enough to cost nothing.
const blockingWait = 5 * time.Second

// nextWaitIndex is the index to block on after a blocking query answered
// with index got, the previous one having been prev. Consul's rules: an
// index that went backwards (a snapshot restore, a restarted dev agent,
// the highest key of a listed prefix deleted) restarts from 0, a plain
// read; an index of 0 is never blocked on (it would return at once,
// forever), 1 is used instead.
func nextWaitIndex(prev, got uint64) uint64 {
	switch {
	case got == 0:
		return 1
	case got < prev:
		return 0
	default:
		return got
	}
}

// watch is the state of one blocking-query loop: the index to wait on and
// a token bucket (burst 2) that keeps a key changing all the time, or an
// index Consul keeps answering at once, from turning the loop into a spin.
type watch struct {
	// consistent makes every read go to the Consul leader (the leader
	// key's watch: a stale answer there could keep a deposed leader
	// leading).
	consistent bool
	index      uint64
	every      time.Duration
	tokens     float64
	last       time.Time
	failures   backoff
}

const (
	watchBurst = 2
	watchEvery = 100 * time.Millisecond
)

func newWatch() *watch { return &watch{every: watchEvery, tokens: watchBurst} }

// options returns the query options of the next blocking read, after
// waiting for a token; nil if ctx ended meanwhile.
func (w *watch) options(ctx context.Context) *api.QueryOptions {
	now := time.Now()
	if !w.last.IsZero() {
		w.tokens = min(watchBurst, w.tokens+float64(now.Sub(w.last))/float64(w.every))
	}
	w.last = now
	if w.tokens < 1 {
		d := time.Duration((1 - w.tokens) * float64(w.every))
		if !sleep(ctx, nil, d) {
			return nil
		}
		w.tokens = 1
		w.last = time.Now()
	}
	w.tokens--
	q := &api.QueryOptions{WaitIndex: w.index, WaitTime: blockingWait, RequireConsistent: w.consistent}
	return q.WithContext(ctx)
}

// answered records the index of an answer.
func (w *watch) answered(meta *api.QueryMeta) {
	if meta != nil {
		w.index = nextWaitIndex(w.index, meta.LastIndex)
	}
}

// reset makes the next query a plain read (after an error: the agent may
// have restarted with an index far below ours).
func (w *watch) reset() { w.index = 0 }

// blockingRead runs query as the next blocking read of w until it
// answers: a failure is logged (see logFailure), resets the index and is
// retried with back-off. ok is false once ctx ended.
func blockingRead[T any](ctx context.Context, w *watch, logger *slog.Logger, what string,
	query func(*api.QueryOptions) (T, *api.QueryMeta, error)) (result T, ok bool) {
	for {
		q := w.options(ctx)
		if q == nil {
			return result, false
		}
		result, meta, err := query(q)
		if ctx.Err() != nil {
			return result, false
		}
		if err == nil {
			w.failures.reset()
			w.answered(meta)
			return result, true
		}
		logFailure(logger, &w.failures, what, err)
		w.reset()
		if !w.failures.wait(ctx, nil) {
			return result, false
		}
	}
}
