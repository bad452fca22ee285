package wimthread_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/logtest"
	"github.com/wimro/wimro/wimthread"
)

// monitored starts a supervisor monitoring every interval (metrics on
// the returned registry, the log in the returned buffer), makes an
// instance of n links, and waits until they are ACTIVE and their actions
// finished (so that monitoring may read them).
func (b *bundle) monitored(t *testing.T, interval time.Duration, n int) (*prometheus.Registry, *logtest.Buffer, []wimro.WANLink, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := wimthread.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(wimthread.NewLinkStatusCollector(b.db))
	logger, log := logtest.Logger(t, "wimthread log")
	b.startWith(t, registry(), logger, wimthread.Options{MonitorInterval: interval, Metrics: m})
	v := b.instance(t, "ns", n, wimro.NetActive)
	b.actionDone(t, v.UUID, v.ActionID)
	links := b.linksActive(t, v.UUID)
	b.noUnfinished(t)
	return reg, log, links, v.ActionID
}

// link waits until link id has status and its message satisfies msgOK,
// as the links monitor of the supervisor started last records it.
func (b *bundle) link(t *testing.T, id, status string, msgOK func(string) bool) wimro.WANLink {
	t.Helper()
	var l wimro.WANLink
	b.sup.TestSignals().LinkRead.Until(t, patience, "link "+id+" "+status, func() (bool, string) {
		var err error
		if l, err = b.db.GetWANLink(b.ctx, id); err != nil {
			return false, err.Error()
		}
		msg := ""
		if l.ErrorMsg != nil {
			msg = *l.ErrorMsg
		}
		return l.Status == status && msgOK(msg), l.Status + " " + msg
	})
	return l
}

// linkEvents are the link statuses of the events of one link, in order.
func (b *bundle) linkEvents(t *testing.T, instanceActionID, linkID string) []string {
	t.Helper()
	page, err := b.db.ReadEvents(b.ctx, instanceActionID, wimro.EventCursor{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range page.Events {
		if e.WANLinkID != nil && *e.WANLinkID == linkID && e.LinkStatus != nil {
			s := *e.LinkStatus
			if e.ErrorMsg != nil {
				s += ": " + *e.ErrorMsg
			}
			out = append(out, s)
		}
	}
	return out
}

// TestMonitorFindsLinksDownAndBack: a service the controller reports DOWN
// puts its link DOWN with the controller's message and back to ACTIVE when
// the fault clears; a service the controller lost puts its link DOWN
// saying how to re-create it. Each change moves status_since, is an event
// of the link's instance action, a log line and a counted transition.
func TestMonitorFindsLinksDownAndBack(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	reg, log, links, ia := b.monitored(t, 100*time.Millisecond, 2)
	faulted, lost := links[0], links[1]

	if !b.ctrl.SetStatus(*faulted.WIMInternalID, connectors.StatusDown, "port ep-dcA is down") || !b.ctrl.Remove(*lost.WIMInternalID) {
		t.Fatal("the services are not on the controller")
	}
	down := b.link(t, faulted.UUID, wimro.LinkDown, func(m string) bool { return m == "port ep-dcA is down" })
	gone := b.link(t, lost.UUID, wimro.LinkDown, func(m string) bool {
		return strings.Contains(m, "no longer has service "+*lost.WIMInternalID) && strings.Contains(m, "wimd reconcile --fix")
	})
	for _, l := range []struct{ before, after wimro.WANLink }{{faulted, down}, {lost, gone}} {
		if !l.after.StatusSince.After(l.before.StatusSince) {
			t.Fatalf("link %s: status_since %v did not move from %v", l.after.UUID, l.after.StatusSince, l.before.StatusSince)
		}
	}

	b.ctrl.SetStatus(*faulted.WIMInternalID, connectors.StatusActive, "")
	back := b.link(t, faulted.UUID, wimro.LinkActive, func(m string) bool { return m == "" })
	if !back.StatusSince.After(down.StatusSince) {
		t.Fatalf("status_since %v did not move from %v", back.StatusSince, down.StatusSince)
	}
	// Events show once every older transaction has ended, which nothing
	// announces.
	waitFor(t, "the events", func() (bool, string) {
		got := strings.Join(b.linkEvents(t, ia, faulted.UUID), "|")
		return strings.HasSuffix(got, "ACTIVE|DOWN: port ep-dcA is down|ACTIVE"), got
	})
	if got := b.linkEvents(t, ia, lost.UUID); !strings.HasPrefix(got[len(got)-1], "DOWN: the controller no longer has service") {
		t.Fatalf("events of the lost link: %q", got)
	}
	// The links are ELINEs (two datacenters): counted as such.
	if n := metricValue(t, reg, "wimro_wan_link_transitions_total", map[string]string{"from": "ACTIVE", "to": "DOWN", "service_type": "ELINE"}); n != 2 {
		t.Fatalf("ACTIVE -> DOWN counted %v times, want 2", n)
	}
	if n := metricValue(t, reg, "wimro_wan_link_transitions_total", map[string]string{"from": "DOWN", "to": "ACTIVE", "service_type": "ELINE"}); n != 1 {
		t.Fatalf("DOWN -> ACTIVE counted %v times, want 1", n)
	}
	for status, want := range map[string]float64{"ACTIVE": 1, "DOWN": 1, "BUILD": 0} {
		if n := metricValue(t, reg, "wimro_wan_links_by_status", map[string]string{"status": status, "service_type": "ELINE"}); n != want {
			t.Fatalf("wimro_wan_links_by_status{status=%q,service_type=\"ELINE\"} = %v, want %v", status, n, want)
		}
	}
	text := log.String()
	for _, want := range []string{
		"level=WARN msg=\"WAN link is no longer ACTIVE\" account_id=" + faulted.WIMAccountID + " wan_link_id=" + faulted.UUID + " connector=fake instance_id=" + *faulted.InstanceID,
		"level=INFO msg=\"WAN link is ACTIVE again\" account_id=" + faulted.WIMAccountID + " wan_link_id=" + faulted.UUID,
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("the log lacks %q", want)
		}
	}
	// The lost service stays DOWN: nothing but reconcile re-creates it.
	if l, _ := b.db.GetWANLink(b.ctx, lost.UUID); l.Status != wimro.LinkDown || b.ctrl.Count() != 1 {
		t.Fatalf("the lost link is %s with %d services on the controller", l.Status, b.ctrl.Count())
	}
}

// TestMonitorLeavesLinksAloneWhenTheControllerDoesNotAnswer: calls that
// time out change nothing (not even for a service the controller lost
// meanwhile: it does not say so), and are logged at INFO.
func TestMonitorLeavesLinksAloneWhenTheControllerDoesNotAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	reg, log, links, _ := b.monitored(t, 100*time.Millisecond, 1)
	l := links[0]
	b.ctrl.Remove(*l.WIMInternalID)
	b.ctrl.SetHang(true)
	since := len(b.ctrl.Calls())
	// Three reads from now: at most the one in flight when the controller
	// began to hang was answered, so two timed out.
	reads := &b.sup.TestSignals().LinkRead
	reads.Init()
	n := 0
	reads.WaitFor(t, 30*time.Second, "three reads of the link", func(id string) bool {
		if id == l.UUID {
			n++
		}
		return n >= 3
	})
	timedOut := 0
	for _, c := range b.ctrl.Calls()[since:] {
		if c.Method == fake.MethodGetServiceStatus && c.ID == *l.WIMInternalID && c.Err != nil {
			timedOut++
		}
	}
	if timedOut < 2 {
		t.Fatalf("%d status calls timed out, want at least 2", timedOut)
	}
	got, err := b.db.GetWANLink(b.ctx, l.UUID)
	if err != nil || got.Status != wimro.LinkActive || got.ErrorMsg != nil || !got.StatusSince.Equal(l.StatusSince) {
		t.Fatalf("after calls that timed out: %s %v since %v (was %v), %v", got.Status, got.ErrorMsg, got.StatusSince, l.StatusSince, err)
	}
	if n := metricValue(t, reg, "wimro_wan_link_transitions_total", nil); n != 0 {
		t.Fatalf("%v transitions counted", n)
	}
	if want := "level=INFO msg=\"WAN link status check failed; the link is left as it was\" account_id=" + l.WIMAccountID + " wan_link_id=" + l.UUID; !strings.Contains(log.String(), want) {
		t.Fatalf("the log lacks %q", want)
	}
	// Once it answers again, it says the service is gone.
	b.ctrl.SetHang(false)
	b.link(t, l.UUID, wimro.LinkDown, func(m string) bool { return strings.Contains(m, "no longer has service") })
}

// TestMonitorIntervalZeroMakesNoCall: with MonitorInterval 0 no link is
// read. A supervisor monitoring every 50 ms on another database is the
// clock: once it has read its own link several times, the other has had
// as long to make a call.
func TestMonitorIntervalZeroMakesNoCall(t *testing.T) {
	t.Parallel()
	off := setup(t, "fake", nil)
	_, _, offLinks, _ := off.monitored(t, 0, 1)
	on := setup(t, "fake", nil)
	_, _, onLinks, _ := on.monitored(t, 50*time.Millisecond, 1)

	offBefore := len(off.ctrl.Calls())
	reads := &on.sup.TestSignals().LinkRead
	reads.Init() // from now on
	n := 0
	reads.WaitFor(t, 30*time.Second, "five reads by the monitoring supervisor", func(id string) bool {
		if id == onLinks[0].UUID {
			n++
		}
		return n >= 5
	})
	if calls := off.ctrl.Calls()[offBefore:]; len(calls) != 0 {
		t.Fatalf("calls with MonitorInterval 0: %v (link %s)", calls, offLinks[0].UUID)
	}
}
