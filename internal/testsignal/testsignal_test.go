package testsignal

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fatal records a wait's failure instead of ending the test.
type fatal struct{ msg string }

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// failure runs wait and returns the message it failed with ("" for none).
func failure(wait func(tb TB)) (msg string) {
	f := &fatal{}
	defer func() {
		if r := recover(); r != nil {
			if r != f {
				panic(r)
			}
			msg = f.msg
		}
	}()
	wait(f)
	return ""
}

func TestSignal(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Send(1) // before Init: nowhere, and no block
	if msg := failure(func(tb TB) { s.Wait(tb, time.Millisecond, "one") }); msg == "" {
		t.Fatal("a wait on a signal never initialised returned")
	}
	s.Init()
	for i := range 2 * buffer { // past the buffer: dropped, never blocks
		s.Send(i)
	}
	if got := s.Wait(t, time.Second, "the first value"); got != 0 {
		t.Fatalf("first value %d, want 0 (the one sent before Init is not delivered)", got)
	}
	if got := s.WaitFor(t, time.Second, "an even value above 10", func(v int) bool { return v > 10 && v%2 == 0 }); got != 12 {
		t.Fatalf("WaitFor = %d, want 12", got)
	}
	msg := failure(func(tb TB) {
		s.WaitFor(tb, 20*time.Millisecond, "a value past the buffer", func(v int) bool { return v >= buffer })
	})
	if msg == "" {
		t.Fatal("a value dropped for a full buffer was delivered")
	}
	t.Log(msg)
}

func TestUntil(t *testing.T) {
	t.Parallel()
	var s Signal[struct{}]
	var n atomic.Int64
	cond := func() (bool, string) { return n.Load() >= 2, fmt.Sprintf("n=%d", n.Load()) }
	if msg := failure(func(tb TB) { s.Until(tb, time.Millisecond, "n at 2", cond) }); msg == "" {
		t.Fatal("Until on a signal never initialised returned")
	}
	s.Init()
	n.Store(2)
	s.Until(t, time.Second, "n at 2, holding already", cond) // no value needed

	n.Store(0)
	go func() {
		n.Store(1)
		s.Send(struct{}{})
	}()
	msg := failure(func(tb TB) { s.Until(tb, 50*time.Millisecond, "n at 2", cond) })
	if !strings.Contains(msg, "last state: n=1") {
		t.Fatalf("Until with the state short of it: %q, want the last state n=1", msg)
	}

	var checks atomic.Int64
	msg = failure(func(tb TB) {
		s.Until(tb, 20*time.Millisecond, "the second check", func() (bool, string) {
			return checks.Add(1) >= 2, "checked once" // holds at the deadline's check only
		})
	})
	if !strings.Contains(msg, "no signal announced it") {
		t.Fatalf("Until with a state changed silently: %q, want it named", msg)
	}

	n.Store(0)
	go func() {
		n.Store(2)
		s.Send(struct{}{})
	}()
	s.Until(t, 10*time.Second, "n at 2, announced", cond)
}
