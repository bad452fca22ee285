package engine_test

import (
	"slices"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/engine"
)

// TestCompareDrift is the comparison alone: which links are checked, and
// what is an orphan, missing or a mismatch.
func TestCompareDrift(t *testing.T) {
	t.Parallel()
	sid := func(s string) *string { return &s }
	link := func(id, status string, service *string, eps ...string) engine.DriftLink {
		return engine.DriftLink{Link: wimro.WANLink{UUID: id, Status: status, WIMInternalID: service, Created: service != nil}, Endpoints: eps}
	}
	svc := func(id, key string, eps ...string) connectors.Service {
		return connectors.Service{ID: id, Key: key, Endpoints: eps}
	}
	type want struct{ kind, link string }
	tests := []struct {
		name     string
		links    []engine.DriftLink
		busy     []string
		services []connectors.Service
		want     []want
		checked  int
	}{
		{name: "in line", links: []engine.DriftLink{link("l1", wimro.LinkActive, sid("s1"), "a", "b/vlan=100")},
			services: []connectors.Service{svc("s1", "l1", "b/vlan=100", "a")}, checked: 1},
		{name: "orphan", services: []connectors.Service{svc("s9", "k9")}, want: []want{{engine.DriftOrphan, "k9"}}},
		{name: "service without a key is never an orphan", services: []connectors.Service{svc("s9", "")}},
		{name: "a key of a busy link whose row is gone is not an orphan", busy: []string{"k9"}, services: []connectors.Service{svc("s9", "k9")}},
		{name: "a key of a DELETED link is an orphan", links: []engine.DriftLink{link("l1", wimro.LinkDeleted, sid("s1"))},
			services: []connectors.Service{svc("s1", "l1")}, want: []want{{engine.DriftOrphan, "l1"}}},
		{name: "missing, for every made status", links: []engine.DriftLink{
			link("l1", wimro.LinkActive, sid("s1")), link("l2", wimro.LinkDown, sid("s2")),
			link("l3", wimro.LinkError, sid("s3")), link("l4", wimro.LinkInactive, sid("s4"))},
			want:    []want{{engine.DriftMissing, "l1"}, {engine.DriftMissing, "l2"}, {engine.DriftMissing, "l3"}, {engine.DriftMissing, "l4"}},
			checked: 4},
		{name: "not checked: building, no service, busy, deleted", busy: []string{"l3"}, links: []engine.DriftLink{
			link("l1", wimro.LinkBuild, sid("s1")), link("l2", wimro.LinkError, nil), link("l3", wimro.LinkActive, sid("s3")),
			link("l4", wimro.LinkDeleted, sid("s4")), link("l5", wimro.LinkWIMError, sid("s5"))}},
		{name: "found by the recorded id when the controller keeps no key", links: []engine.DriftLink{link("l1", wimro.LinkActive, sid("s1"))},
			services: []connectors.Service{svc("s1", "")}, checked: 1},
		{name: "mismatch", links: []engine.DriftLink{link("l1", wimro.LinkActive, sid("s1"), "a", "b")},
			services: []connectors.Service{svc("s1", "l1", "a", "c")}, want: []want{{engine.DriftMismatch, "l1"}}, checked: 1},
		{name: "endpoints unknown on either side are not compared", links: []engine.DriftLink{
			link("l1", wimro.LinkActive, sid("s1")), link("l2", wimro.LinkActive, sid("s2"), "a", "b")},
			services: []connectors.Service{svc("s1", "l1", "a", "c"), svc("s2", "l2")}, checked: 2},
		{name: "L3 sites a connector does not read back are not compared", links: []engine.DriftLink{
			{Link: wimro.WANLink{UUID: "l1", Status: wimro.LinkActive, WIMInternalID: sid("s1"), Created: true}, Endpoints: []string{"a", "b"},
				L3: map[string]connectors.L3Form{"a": {PEAddress: "192.0.2.1/30"}, "b": {PEAddress: "192.0.2.5/30"}}}},
			services: []connectors.Service{svc("s1", "l1", "a", "b")}, checked: 1},
		{name: "an L3 site that differs is a mismatch", links: []engine.DriftLink{
			{Link: wimro.WANLink{UUID: "l1", Status: wimro.LinkActive, WIMInternalID: sid("s1"), Created: true}, Endpoints: []string{"a", "b"},
				L3: map[string]connectors.L3Form{"a": {PEAddress: "192.0.2.1/30"}, "b": {PEAddress: "192.0.2.5/30"}}}},
			services: []connectors.Service{{ID: "s1", Key: "l1", Endpoints: []string{"a", "b"},
				L3: map[string]connectors.L3Form{"a": {PEAddress: "192.0.2.1/30"}, "b": {PEAddress: "192.0.2.5/29"}}}},
			want: []want{{engine.DriftMismatch, "l1"}}, checked: 1},
		{name: "orphans first, then missing, then mismatched", links: []engine.DriftLink{
			link("l1", wimro.LinkActive, sid("s1"), "a", "b"), link("l2", wimro.LinkActive, sid("s2"))},
			services: []connectors.Service{svc("s1", "l1", "x", "y"), svc("s9", "k9")},
			want:     []want{{engine.DriftOrphan, "k9"}, {engine.DriftMissing, "l2"}, {engine.DriftMismatch, "l1"}}, checked: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			busy := map[string]bool{}
			for _, b := range tt.busy {
				busy[b] = true
			}
			drift, checked := engine.CompareDrift(tt.links, busy, tt.services)
			var got []want
			for _, d := range drift {
				got = append(got, want{d.Kind, d.WANLinkID})
				if d.Detail == "" {
					t.Errorf("%s %s has no detail", d.Kind, d.WANLinkID)
				}
			}
			if !slices.Equal(got, tt.want) || checked != tt.checked {
				t.Errorf("CompareDrift = %v (checked %d), want %v (checked %d)", got, checked, tt.want, tt.checked)
			}
		})
	}
}

// TestReconcileAccountNotFound: a named account that does not exist is a
// not-found error naming the field.
func TestReconcileAccountNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.eng.Reconcile(t.Context(), engine.ReconcileOptions{Account: "nobody"})
	if wimro.ErrorCode(err) != wimro.ENOTFOUND || wimro.ErrorField(err) != "account" {
		t.Errorf("Reconcile(nobody) = %v, want not_found on account", err)
	}
	rep, err := b.eng.Reconcile(t.Context(), engine.ReconcileOptions{})
	if err != nil || len(rep.Accounts) != 0 || rep.Total() != 0 {
		t.Errorf("Reconcile of no account = %+v, %v; want an empty report", rep, err)
	}
}
