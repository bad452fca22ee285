package connectors_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/wimro/wimro/connectors"
)

func TestMemLockerExcludes(t *testing.T) {
	t.Parallel()
	var l connectors.MemLocker
	const n = 50
	inside, maxInside := 0, 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			unlock, err := l.Lock(t.Context(), "a")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			maxInside = max(maxInside, inside)
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
			unlock() // a second call is harmless
		})
	}
	wg.Wait()
	if maxInside != 1 {
		t.Fatalf("%d holders at once, want 1", maxInside)
	}
}

func TestMemLockerNamesAreIndependentAndCtxEndsTheWait(t *testing.T) {
	t.Parallel()
	var l connectors.MemLocker
	unlockA, err := l.Lock(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.Lock(t.Context(), "b")
	if err != nil {
		t.Fatalf("lock b while a is held: %v", err)
	}
	unlockB()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := l.Lock(ctx, "a")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting on a held lock with a cancelled ctx: %v", err)
	}
	unlockA()
	unlock, err := l.Lock(t.Context(), "a")
	if err != nil {
		t.Fatalf("lock a after release: %v", err)
	}
	unlock()
}

// recordingLocker is a Locker that records its calls, to check that
// MutationLock takes the shared lock and releases it.
type recordingLocker struct {
	mu     sync.Mutex
	events []string
	fail   error
}

func (r *recordingLocker) Lock(ctx context.Context, name string) (func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return nil, r.fail
	}
	r.events = append(r.events, "lock "+name)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, "unlock "+name)
	}, nil
}

func TestMutationLock(t *testing.T) {
	t.Parallel()
	rec := &recordingLocker{}
	cfg := connectors.Config{Locker: rec}
	unlock, err := cfg.MutationLock(t.Context(), "onos:http://c1")
	if err != nil {
		t.Fatal(err)
	}
	// The process lock is held: a second taker waits until ctx ends.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (connectors.Config{}).MutationLock(ctx, "onos:http://c1"); !connectors.Retryable(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("second MutationLock = %v, want a Retryable cancelled wait", err)
	}
	unlock()
	if got := rec.events; len(got) != 2 || got[0] != "lock onos:http://c1" || got[1] != "unlock onos:http://c1" {
		t.Fatalf("shared locker events = %v", got)
	}

	// A failing shared lock releases the process lock.
	bad := connectors.Config{Locker: &recordingLocker{fail: errors.New("database down")}}
	if _, err := bad.MutationLock(t.Context(), "onos:http://c2"); !connectors.Retryable(err) {
		t.Fatalf("MutationLock with a failing Locker = %v, want Retryable", err)
	}
	again, err := (connectors.Config{}).MutationLock(t.Context(), "onos:http://c2")
	if err != nil {
		t.Fatalf("the process lock was not released after a shared-lock failure: %v", err)
	}
	again()
}
