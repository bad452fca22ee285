package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
)

// Issue 30, point 5: two processes started with one instance id never
// both drive an account. Their lease owners differ by a nonce of each
// start, so PostgreSQL gives every account to one of them; with Consul the
// second live process is refused with a message naming the cause.
func TestSameInstanceIDTwice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		coordinator string
		refused     bool
	}{
		{"consul: the second live process is refused", "consul", true},
		{"none: each account leased to one of the two", "none", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t)
			c.n = 6
			first := c.spawn("w1", tc.coordinator)
			c.members["w1"] = first
			tenants := c.accounts(first)
			eventually.Until(t, time.Minute, "w1 owns every account", func() (bool, string) {
				st, ok := clusterOf(first)
				return ok && len(st.Owned) == c.n, fmt.Sprintf("%d of %d", len(st.Owned), c.n)
			})

			var firstSession string
			if tc.refused {
				var err error
				if firstSession, err = c.sessionOf("w1"); err != nil || firstSession == "" {
					t.Fatalf("session of the first w1: %q, %v", firstSession, err)
				}
			}
			twin := c.spawn("w1", tc.coordinator)
			var shared []string // accounts both held at one time
			look := func() {
				a, okA := clusterOf(first)
				b, okB := clusterOf(twin)
				if !okA || !okB || shared != nil {
					return
				}
				for _, acct := range a.Owned {
					if slices.Contains(b.Owned, acct) {
						shared = append(shared, acct)
					}
				}
			}
			start := time.Now()
			if tc.refused {
				eventually.Until(t, time.Minute, "the second w1 to be refused", func() (bool, string) {
					look()
					select {
					case <-twin.done:
						return true, ""
					default:
						return false, "still running"
					}
				})
				t.Logf("second w1 refused after %v", time.Since(start).Round(time.Millisecond))
				const want = `instance id \"w1\" is in use by another live process`
				if twin.err == nil || !strings.Contains(twin.log.String(), want) {
					t.Fatalf("second w1 exited with %v, log without %q:\n%s", twin.err, want, lastLines(twin.log.String(), 20))
				}
				// Waiting to be refused, the second never registered over
				// the first: the first kept its session throughout.
				if now, err := c.sessionOf("w1"); err != nil || now != firstSession {
					t.Fatalf("the first w1's session is %q (%v), was %q: the second replaced it", now, err, firstSession)
				}
			} else {
				// Both run: watch them over a few claim leases.
				eventually.Until(t, time.Minute, "three claim leases with both running", func() (bool, string) {
					look()
					return time.Since(start) > 9*time.Second, ""
				})
			}
			if shared != nil {
				t.Fatalf("accounts held by both processes named w1: %v", shared)
			}
			// The work runs once: every link ACTIVE, one service each.
			insts := c.instances(tenants, 1)
			c.active(insts, time.Minute)
			if n := len(c.emu.ServiceIDs()); n != len(insts) {
				t.Fatalf("%d services on the controller for %d links", n, len(insts))
			}
		})
	}
}
