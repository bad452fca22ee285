// Package testsignal lets a long-running part announce its progress to
// tests, so that a test waits on the event (a round done, an assignment
// applied, a check recorded) instead of polling state with
// internal/testkit/eventually.
//
// A part keeps a testSignals struct of Signal fields and an Init method
// that inits them all; tests call Init (through the package's
// export_test.go) and wait. In production no one calls Init: Send is then
// a load and a return. Send never blocks: a full buffer drops the value,
// so a test that does not read cannot slow the part down.
package testsignal

import (
	"sync/atomic"
	"time"
)

// buffer is how many values a Signal keeps unread before it drops more.
const buffer = 256

// TB is the part of testing.TB a wait needs (this package is built into
// wimd, which must not import testing).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal carries values of one kind of progress from a part to a test.
// The zero value sends nowhere. Init may be called while the part runs:
// values sent before are not seen.
type Signal[T any] struct {
	ch atomic.Pointer[chan T]
}

// Init makes the signal deliver what is sent from now on.
func (s *Signal[T]) Init() {
	c := make(chan T, buffer)
	s.ch.Store(&c)
}

// Send announces v, without blocking: nothing happens when Init was not
// called, and v is dropped when the buffer is full.
func (s *Signal[T]) Send(v T) {
	p := s.ch.Load()
	if p == nil {
		return
	}
	select {
	case *p <- v:
	default:
	}
}

// Wait returns the next value sent, or fails tb after timeout naming
// what it waited for.
func (s *Signal[T]) Wait(tb TB, timeout time.Duration, what string) T {
	tb.Helper()
	return s.WaitFor(tb, timeout, what, func(T) bool { return true })
}

// WaitFor returns the first value sent for which ok holds (the others are
// read and dropped), or fails tb after timeout naming what it waited for
// and the last value seen.
func (s *Signal[T]) WaitFor(tb TB, timeout time.Duration, what string, ok func(T) bool) T {
	tb.Helper()
	p := s.channel(tb, what)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var last any = "nothing"
	for {
		select {
		case v := <-*p:
			if ok(v) {
				return v
			}
			last = v
		case <-deadline.C:
			tb.Fatalf("timed out after %v waiting for %s; last signal: %v", timeout, what, last)
			var zero T
			return zero
		}
	}
}

// Until returns once cond holds: it checks cond now and again after each
// value sent, so it waits for a state the part announces the changes of
// (a row the part writes, a metric it counts) without polling. The
// values are dropped. It fails tb after timeout naming what it waited
// for and the last state cond described, also when cond holds by then
// but no value announced it (the part changed the state silently).
func (s *Signal[T]) Until(tb TB, timeout time.Duration, what string, cond func() (bool, string)) {
	tb.Helper()
	p := s.channel(tb, what)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if ok, _ := cond(); ok {
			return
		}
		select {
		case <-*p:
		case <-deadline.C:
			ok, state := cond()
			if ok {
				state += " (holds now, but no signal announced it)"
			}
			tb.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, state)
			return
		}
	}
}

// C returns the channel the values are delivered on, for a test that
// waits on several signals at once (a select with a deadline of its own),
// or fails tb when Init was not called.
func (s *Signal[T]) C(tb TB, what string) <-chan T {
	tb.Helper()
	return *s.channel(tb, what)
}

// channel returns the signal's channel, or fails tb when Init was not
// called.
func (s *Signal[T]) channel(tb TB, what string) *chan T {
	tb.Helper()
	p := s.ch.Load()
	if p == nil {
		tb.Fatalf("waiting for %s: the signal was not initialised (call its part's test signals' Init)", what)
	}
	return p
}
