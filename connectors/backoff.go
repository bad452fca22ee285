package connectors

import (
	"math"
	"math/rand/v2"
	"time"
)

// MaxRetryAfter caps a controller's Retry-After hint: a controller asking
// for more (or a garbled header read as years) still gets its call back
// within the hour, when the runner retries.
const MaxRetryAfter = time.Hour

// Backoff returns the delay before retry number attempt (1 for the first
// retry) of a call that failed Retryable: retryAfter, the controller's
// Retry-After hint (RetryAfter(err), 0 for none) capped at MaxRetryAfter,
// plus a "full jitter" delay drawn in [0, window], where the window is
// base·2^(attempt-1) capped at limit. Without a hint the delay is never
// above limit; with one it is in [hint, hint+window].
//
// Full jitter rather than equal jitter ([window/2, window]): when one
// controller outage fails many WAN links at once, their retries spread
// over the whole window instead of half of it, so the controller sees half
// the peak rate when it comes back; a retry that comes early costs one
// call, and the next window is twice as wide.
//
// The hint is a floor, above limit too. The jitter is added to it rather
// than the delay merely raised to it, so that links told the same
// Retry-After by an overloaded controller do not all come back at the
// same instant.
//
// Any attempt is safe: the window doubles up to limit without
// overflowing (attempt 10,000 has the window limit), and attempt below 1
// counts as 1. A negative base counts as 0, and limit below base as base.
// rnd returns a number in [0, 1) (values outside are clamped), as
// math/rand/v2's Float64 does, which is used when rnd is nil; tests inject
// it to be deterministic.
func Backoff(attempt int, base, limit, retryAfter time.Duration, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = rand.Float64
	}
	base = max(base, 0)
	limit = max(limit, base)
	window := base
	if n := attempt - 1; n > 0 && base > 0 {
		if n >= 63 || base > limit>>n {
			window = limit
		} else {
			window = base << n
		}
	}
	d := jitter(window, rnd())
	hint := min(max(retryAfter, 0), MaxRetryAfter)
	if d > math.MaxInt64-hint {
		return math.MaxInt64
	}
	return hint + d
}

// jitter returns r·window, r clamped to [0, 1], without overflowing.
func jitter(window time.Duration, r float64) time.Duration {
	if !(r > 0) { // also NaN
		return 0
	}
	f := r * float64(window)
	if r >= 1 || f >= float64(window) {
		return window
	}
	return time.Duration(f)
}
