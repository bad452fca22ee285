package coordinator

import (
	"testing"
	"time"
)

// fakeAfter hands out a channel per wait, announced on started, so that
// the test fires the waits it chooses.
type fakeAfter struct {
	started chan chan time.Time
}

func newFakeAfter() *fakeAfter { return &fakeAfter{started: make(chan chan time.Time, 16)} }

func (f *fakeAfter) after(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	f.started <- c
	return c
}

func TestSettlerRestartsOnEachChange(t *testing.T) {
	t.Parallel()
	f := newFakeAfter()
	s := &settler{d: time.Hour, after: f.after}
	if s.C() != nil || s.pending() {
		t.Fatal("a new settler waits for nothing")
	}
	s.changed()
	first := s.C()
	s.changed()
	second := s.C()
	if len(f.started) != 2 || first == second {
		t.Fatalf("each change must start a new wait: %d waits", len(f.started))
	}
	w0, w1 := <-f.started, <-f.started
	// The first wait ends: it is no longer the one selected on.
	w0 <- time.Now()
	select {
	case <-s.C():
		t.Fatal("the wait of an earlier change fired")
	default:
	}
	w1 <- time.Now()
	select {
	case <-s.C():
	default:
		t.Fatal("the last wait did not fire")
	}
	s.stop()
	if s.C() != nil || s.pending() {
		t.Fatal("stop must forget the wait")
	}
}

// In a loop like the leader's: a burst of changes is applied once, with
// the last value, when the last wait ends.
func TestSettlerLoopAppliesLastValueOnce(t *testing.T) {
	t.Parallel()
	f := newFakeAfter()
	s := &settler{d: time.Hour, after: f.after}
	in := make(chan int)
	applied := make(chan int, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last int
		for {
			select {
			case v, ok := <-in:
				if !ok {
					return
				}
				last = v
				s.changed()
			case <-s.C():
				s.stop()
				applied <- last
			}
		}
	}()
	var waits []chan time.Time
	for v := 1; v <= 4; v++ {
		in <- v
		waits = append(waits, <-f.started)
		if v > 1 {
			// The previous wait ends after this change: ignored.
			waits[v-2] <- time.Now()
		}
	}
	waits[3] <- time.Now()
	if got := <-applied; got != 4 {
		t.Fatalf("applied %d, want the last value 4", got)
	}
	close(in)
	<-done
	if len(applied) != 0 {
		t.Fatalf("applied more than once: %d more", len(applied))
	}
}
