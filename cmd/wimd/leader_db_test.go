package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/tcpproxy"
)

// Issue 30, point 3: the leader loses PostgreSQL (its connections reset,
// new ones refused) while Consul still answers it. It must step down and
// leave the membership, so that the other member leads, owns every account
// and runs new work within a bounded time, while the cut process's
// /readyz says why it is not ready; once PostgreSQL is back it rejoins and
// is ready again, and no account was ever driven by two processes at once.
func TestLeaderWithoutDatabaseStepsDown(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.n = 8
	proxy := tcpproxy.Start(t, tcpproxy.Target(t, c.db))
	cut := c.start("w1", "WIMRO_DATABASE_URL="+proxy.URL(t, c.db))
	eventually.Until(t, time.Minute, "w1 leads", func() (bool, string) {
		st, ok := c.status("w1")
		return ok && st.Leader == "w1", fmt.Sprintf("%+v", st)
	})
	c.start("w2")
	tenants := c.accounts(c.members["w2"])
	owner, _ := c.settled("8 accounts spread over w1 and w2", time.Minute)
	if counts(owner)["w1"] == 0 {
		t.Fatalf("w1 owns no account: the test proves nothing (%v)", counts(owner))
	}
	before := c.instances(tenants, 1)
	c.active(before, 2*time.Minute)

	proxy.Cut()
	start := time.Now()
	delete(c.members, "w1") // the API of a process without its database answers nothing useful
	const claimLease = 3 * time.Second
	bound := claimLease + 2*clusterTTL + clusterLeaderSoak + clusterAssignSoak + 5*time.Second
	eventually.Until(t, bound+30*time.Second, "w2 leads, is ready and owns every account", func() (bool, string) {
		st, ok := c.status("w2")
		if !ok {
			return false, "no status"
		}
		code, body := readyz(c.members["w2"].addr)
		return st.Leader == "w2" && len(st.Owned) == c.n && code == http.StatusOK,
			fmt.Sprintf("leader %q, w2 owns %d of %d, /readyz %d %s", st.Leader, len(st.Owned), c.n, code, body)
	})
	took := time.Since(start)
	t.Logf("w2 led, was ready and owned all %d accounts %v after w1 lost PostgreSQL (bound %v)", c.n, took.Round(time.Millisecond), bound)
	if took > bound {
		t.Errorf("recovery took %v, more than claim lease + 2 x TTL + soaks + 5 s = %v", took, bound)
	}
	eventually.Until(t, 30*time.Second, "w1's /readyz to name its leases", func() (bool, string) {
		code, body := readyz(cut.addr)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "account leases"), fmt.Sprint(code, " ", body)
	})
	// New work, on every account (w1's former ones included), runs.
	after := c.instances(tenants, 1)
	c.active(after, time.Minute)

	proxy.Restore()
	c.members["w1"] = cut
	eventually.Until(t, time.Minute, "w1 ready again", func() (bool, string) {
		code, body := readyz(cut.addr)
		return code == http.StatusOK, fmt.Sprint(code, " ", body)
	})
	c.settled("w1 rejoined: the accounts spread over w1 and w2 again", time.Minute)
	c.active(append(before, after...), time.Minute)
	if n, links := len(c.emu.ServiceIDs()), len(before)+len(after); n != links {
		t.Fatalf("%d services on the controller for %d links", n, links)
	}
	if bad := c.log.overlaps(); len(bad) > 0 {
		t.Fatalf("accounts driven by two processes at once:\n%s", strings.Join(bad, "\n"))
	}
}
