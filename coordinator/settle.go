package coordinator

import "time"

// settler lets a run of changes settle: every change restarts the wait,
// and C fires once no change came for d. The leader uses it before
// computing owners (LeaderSoak), every member before applying its
// assignment (AssignmentSoak), so a burst of changes costs one pass.
type settler struct {
	d     time.Duration
	after func(time.Duration) <-chan time.Time
	c     <-chan time.Time
}

func newSettler(d time.Duration) *settler {
	return &settler{d: d, after: time.After}
}

// changed (re)starts the wait.
func (s *settler) changed() { s.c = s.after(s.d) }

// stop forgets a wait in progress.
func (s *settler) stop() { s.c = nil }

// C fires once the changes settled; nil (never fires) while nothing waits.
// After it fired, call stop (or changed).
func (s *settler) C() <-chan time.Time { return s.c }

// pending reports whether a wait is in progress.
func (s *settler) pending() bool { return s.c != nil }
