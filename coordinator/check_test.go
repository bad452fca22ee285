package coordinator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/wimro/wimro/internal/testkit/eventually"
)

// catalog reads the wimro services of the harness's cluster from the
// agent's health endpoint (/v1/health/service/wimro), by instance id.
func (h *harness) catalog() (map[string]*api.ServiceEntry, error) {
	entries, _, err := h.agent.Client().Health().Service(DefaultService, "", false, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]*api.ServiceEntry{}
	for _, e := range entries {
		if e.Service.Meta["consul_prefix"] == h.prefix {
			out[e.Service.Meta["instance_id"]] = e
		}
	}
	return out, nil
}

// serviceStatus is the status of instance id's service check in the
// catalog, and its output ("" and "absent" when it is not registered).
func (h *harness) serviceStatus(id string) (status, output string, err error) {
	entries, err := h.catalog()
	if err != nil {
		return "", "", err
	}
	e := entries[id]
	if e == nil {
		return "absent", "", nil
	}
	for _, c := range e.Checks {
		if c.ServiceID == e.Service.ID {
			return c.Status, c.Output, nil
		}
	}
	return "no check", "", nil
}

// leaderLogged reports whether the leader logged msg about member with
// the given departure.
func (h *harness) leaderLogged(leader, msg, member, departure string) bool {
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(line, "msg=\""+msg+"\"") && strings.Contains(line, "instance_id="+leader+" ") &&
			strings.Contains(line, "member="+member+" ") && strings.Contains(line, "departure=\""+departure+"\"") {
			return true
		}
	}
	return false
}

// Issue 31: every member is a service of Consul's catalog with a TTL
// check it passes while healthy, and its session is bound to that check
// and to serfHealth. A member whose Runner cannot keep its leases fails
// its check at once: the catalog shows it critical with the reason, and
// Consul invalidates its session (before, the session stayed for as long
// as the process lived). Healthy again, it passes, gets a new session and
// rejoins. Stopped, it leaves the catalog at once. The leader logs the
// unhealthy member as lost and the stopped one as a clean leave.
func TestConsulServiceCheckInCatalog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10*time.Second)
	h.createAccounts(9)
	checks := map[string]*health{}
	for _, id := range []string{"a", "b", "c"} {
		checks[id] = &health{}
		h.startOn(id, h.leasing(id, false), h.db, checks[id].check)
	}
	eventually.Until(t, convergeTimeout, "a, b and c to split 9 accounts", h.converged)
	// The catalog's health is Consul's state, which no part here announces: polled.
	eventually.Until(t, convergeTimeout, "a, b and c passing in the catalog", func() (bool, string) {
		entries, err := h.catalog()
		if err != nil {
			return false, err.Error()
		}
		var states []string
		for _, id := range []string{"a", "b", "c"} {
			e := entries[id]
			if e == nil {
				return false, id + " not in the catalog"
			}
			states = append(states, id+":"+e.Checks.AggregatedStatus())
		}
		return !slices.ContainsFunc(states, func(s string) bool { return !strings.HasSuffix(s, api.HealthPassing) }), strings.Join(states, " ")
	})
	leader := h.leaders()[0]
	var victim *node
	for _, n := range h.alive() {
		if n != leader {
			victim = n
			break
		}
	}
	entries, err := h.catalog()
	if err != nil {
		t.Fatal(err)
	}
	e := entries[victim.id]
	if e.Service.ID != DefaultService+"-"+victim.id || e.Service.Meta["boot"] != victim.coord.cfg.Boot || e.Service.Meta["version"] != "test" {
		t.Fatalf("service %+v", e.Service)
	}
	sess := victim.coord.sessions.id()
	info, _, err := h.agent.Client().Session().Info(sess, nil)
	if err != nil || info == nil {
		t.Fatalf("session %s: %+v, %v", sess, info, err)
	}
	wantCheck := api.ServiceCheck{ID: DefaultService + "-" + victim.id + ":ttl:" + victim.coord.cfg.Boot}
	if !slices.Contains(info.NodeChecks, "serfHealth") || !slices.Contains(info.ServiceChecks, wantCheck) {
		t.Fatalf("session bound to node checks %v and service checks %v, want serfHealth and %v", info.NodeChecks, info.ServiceChecks, wantCheck)
	}
	st, err := leader.coord.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if m.Health != api.HealthPassing || m.LastSeen.IsZero() {
			t.Fatalf("status member %+v: want health passing and a last seen", m)
		}
	}

	checks[victim.id].set(errors.New("account leases not renewed for 5s: database unavailable"))
	// The catalog's health is Consul's state, which no part here announces: polled.
	eventually.Until(t, convergeTimeout, victim.id+" critical in the catalog and its session invalidated", func() (bool, string) {
		status, output, err := h.serviceStatus(victim.id)
		if err != nil {
			return false, err.Error()
		}
		info, _, err := h.agent.Client().Session().Info(sess, nil)
		if err != nil {
			return false, err.Error()
		}
		return status == api.HealthCritical && strings.Contains(output, "database unavailable") && info == nil,
			fmt.Sprintf("check %s (%q), session alive %v", status, output, info != nil)
	})
	leader.coord.signals.MemberGone.WaitFor(t, convergeTimeout, "the leader to see "+victim.id+" lost", func(d departure) bool { return d == departure{victim.id, false} })
	if !h.leaderLogged(leader.id, "member lost: its session ended without it leaving", victim.id, "session invalidated") {
		t.Fatalf("the leader saw %s lost without logging it", victim.id)
	}
	checks[victim.id].set(nil)
	eventually.Until(t, convergeTimeout, "the cluster to converge again with "+victim.id, h.converged)
	if status, _, err := h.serviceStatus(victim.id); err != nil || status != api.HealthPassing {
		t.Fatalf("%s: check %s, %v after rejoining", victim.id, status, err)
	}

	h.stop(victim)
	if status, _, err := h.serviceStatus(victim.id); err != nil || status != "absent" {
		t.Fatalf("%s stopped: its service is %s (%v), want it deregistered", victim.id, status, err)
	}
	leader.coord.signals.MemberGone.WaitFor(t, convergeTimeout, "the leader to see "+victim.id+" leave", func(d departure) bool { return d == departure{victim.id, true} })
	if !h.leaderLogged(leader.id, "member left the cluster", victim.id, "clean leave") {
		t.Fatalf("the leader saw %s leave without logging it", victim.id)
	}
	eventually.Until(t, convergeTimeout, "the two left to split the accounts", h.converged)
}
