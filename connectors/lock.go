package connectors

import (
	"context"
	"fmt"
	"sync"
)

// Locker serialises read-modify-write changes to one shared controller
// resource (ONOS's VPLS list, say) across processes. wimd gives every
// connector one backed by PostgreSQL advisory locks, so that two wimd
// processes writing to the same controller never interleave; tests use
// MemLocker. Lock blocks until the lock named name is held or ctx is done;
// unlock must be called exactly once.
type Locker interface {
	Lock(ctx context.Context, name string) (unlock func(), err error)
}

// MemLocker is an in-process Locker: a mutex per name that honours ctx.
// The zero value is ready to use.
type MemLocker struct {
	mu    sync.Mutex
	locks map[string]chan struct{}
}

// Lock takes the lock name, giving up with ctx's error when ctx is done
// first.
func (l *MemLocker) Lock(ctx context.Context, name string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.locks == nil {
		l.locks = make(map[string]chan struct{})
	}
	ch := l.locks[name]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.locks[name] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-ch }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// processLocks serialises the mutations of every connector of this process.
var processLocks MemLocker

// MutationLock takes the lock that guards changes to the controller
// resource name (connectors qualify it with the controller URL): first
// this process's lock, so goroutines of one process queue without touching
// the database, then cfg.Locker when set, for the other processes. A
// failure is Retryable: the lock was busy or ctx ended.
func (c Config) MutationLock(ctx context.Context, name string) (unlock func(), err error) {
	local, err := processLocks.Lock(ctx, name)
	if err != nil {
		return nil, Errorf(KindRetryable, "waiting for the lock on %s: %w", name, err)
	}
	if c.Locker == nil {
		return local, nil
	}
	remote, err := c.Locker.Lock(ctx, name)
	if err != nil {
		local()
		return nil, Errorf(KindRetryable, "waiting for the shared lock on %s: %w", name, err)
	}
	if remote == nil {
		local()
		return nil, fmt.Errorf("connectors: Locker returned no unlock function for %s", name)
	}
	return func() { remote(); local() }, nil
}
