package wimthread

import (
	"context"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/persistence"
)

// TestLinkReport is the mapping of a controller's answer to what
// monitoring records on a link (doc.go, "Who writes a WAN link's status").
func TestLinkReport(t *testing.T) {
	t.Parallel()
	l := persistence.MonitoredLink{UUID: "l1", ServiceID: "svc-9", Status: "ACTIVE"}
	for _, tc := range []struct {
		name   string
		st     connectors.ServiceStatus
		err    error
		status string // "" : nothing recorded
		msg    string // a part of the message; "" : none
	}{
		{"ACTIVE", connectors.ServiceStatus{Status: connectors.StatusActive, Message: "ignored"}, nil, "ACTIVE", ""},
		{"DOWN with a message", connectors.ServiceStatus{Status: connectors.StatusDown, Message: "port 3 down"}, nil, "DOWN", "port 3 down"},
		{"ERROR without a message", connectors.ServiceStatus{Status: connectors.StatusError}, nil, "ERROR", "reports service svc-9 ERROR"},
		{"BUILD", connectors.ServiceStatus{Status: connectors.StatusBuild, Message: "re-provisioning"}, nil, "INACTIVE", "reports service svc-9 BUILD: re-provisioning"},
		{"INACTIVE", connectors.ServiceStatus{Status: connectors.StatusInactive}, nil, "INACTIVE", "reports service svc-9 INACTIVE"},
		{"not found", connectors.ServiceStatus{}, connectors.HTTPError(404, "no such vpn"), "DOWN", "no longer has service svc-9 of this WAN link (no such vpn); `wimd reconcile --fix` creates it again"},
		{"timeout", connectors.ServiceStatus{}, connectors.Errorf(connectors.KindRetryable, "status: %w", context.DeadlineExceeded), "", ""},
		{"5xx", connectors.ServiceStatus{}, connectors.HTTPError(503, "busy"), "", ""},
		{"unauthorized", connectors.ServiceStatus{}, connectors.HTTPError(401, "who are you"), "", ""},
		{"an unknown status", connectors.ServiceStatus{Status: "MAINTENANCE"}, nil, "", ""},
	} {
		status, msg, ok := linkReport(l, tc.st, tc.err)
		if ok != (tc.status != "") || status != tc.status {
			t.Errorf("%s: status %q (recorded %v), want %q", tc.name, status, ok, tc.status)
			continue
		}
		switch {
		case tc.msg == "" && msg != nil:
			t.Errorf("%s: message %q, want none", tc.name, *msg)
		case tc.msg != "" && (msg == nil || !strings.Contains(*msg, tc.msg)):
			t.Errorf("%s: message %q, want one with %q", tc.name, deref(msg), tc.msg)
		}
	}
}
