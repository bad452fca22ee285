// Package eventually lets tests wait for state that has no event to wait
// on (a database row, a process's HTTP answer): it re-checks a condition
// on a short tick until it holds or a deadline passes, and then fails the
// test with the last state seen.
package eventually

import (
	"testing"
	"time"
)

// Tick is how often the condition is checked.
const Tick = 20 * time.Millisecond

// Until calls cond every Tick until it returns true, or fails t after
// timeout naming what it waited for and the last state cond described.
func Until(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	UntilEvery(t, timeout, Tick, what, cond)
}

// UntilEvery is Until checking every tick, for a condition that costs
// what it waits for (a look at 100,000 accounts).
func UntilEvery(t testing.TB, timeout, every time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, last)
		}
		<-tick.C
	}
}
