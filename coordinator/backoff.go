package coordinator

import (
	"context"
	"time"
)

// backoffSteps are the delays between attempts of one failing Consul
// operation; the last one repeats.
var backoffSteps = [...]time.Duration{
	50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
}

// backoff counts the consecutive failures of one operation. Every loop
// has its own: one failing operation never slows down another.
type backoff struct {
	failures int
}

// next records a failure and returns the delay before the next attempt.
func (b *backoff) next() time.Duration {
	d := backoffSteps[min(b.failures, len(backoffSteps)-1)]
	b.failures++
	return d
}

// reset records a success.
func (b *backoff) reset() { b.failures = 0 }

// wait records a failure and waits the delay it calls for. It returns
// false when ctx ended or stop was closed first.
func (b *backoff) wait(ctx context.Context, stop <-chan struct{}) bool {
	return sleep(ctx, stop, b.next())
}

// sleep waits for d, ctx or stop; it reports whether d passed.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// withStop returns a context that also ends when stop is closed (a
// session given up, a term of leadership over).
func withStop(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
