// Package startstop is the one lifecycle of wimro's long-lived background
// parts, in the spirit of River's baseservice/startstop: Start runs a
// function in a goroutine of its own until Stop, which cancels it and
// waits for it to return. A part may be started again after Stop (the
// leader's chores follow leadership, which comes and goes).
package startstop

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrStarted is Start's error on a part already started.
var ErrStarted = errors.New("already started")

// Service is the lifecycle of one part; its zero value is stopped. Name
// names it in errors.
type Service struct {
	Name string

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs run in the background with a context that Stop cancels. ctx
// only bounds the start: its values are kept, its cancellation is not (a
// part stops by Stop, after the parts that depend on it). Starting a
// started Service is an error.
func (s *Service) Start(ctx context.Context, run func(ctx context.Context)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return fmt.Errorf("%s: %w", s.Name, ErrStarted)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	go func() {
		defer close(done)
		run(runCtx)
	}()
	return nil
}

// Started reports whether the Service runs (started and not stopped).
func (s *Service) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done != nil
}

// Stop cancels the run and waits for it to return, or for ctx to end (the
// run then still ends by itself). Stopping a stopped Service does nothing.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", s.Name, ctx.Err())
	}
}
