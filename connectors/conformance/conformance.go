// Package conformance is the shared test suite every connector must pass:
// the contract of connectors.Connector written as tests. A connector's own
// test calls Run with a Harness that builds the connector against its
// controller emulator (or, for fake, against a private in-memory
// controller).
//
// The suite checks what the actions rely on: a retried create adopts
// instead of duplicating, delete is idempotent, unknown services are
// NotFound, bad input is Permanent and never reaches the controller, a
// cancelled call returns at once. It also checks the connector's declared
// Capabilities against what it does: a declared service type is made and
// any other refused, a declared QoS field reaches the controller and any
// other is refused, edit works where declared and is Permanent where not,
// and a declared List sees every service made on the controller, by any
// connector of it. services.go holds the cases of service types and
// multipoint: an undeclared type is refused, an ELAN keeps all its points
// and its bandwidth, an ELINE stays point-to-point.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
)

// Harness plugs one connector into the suite.
type Harness struct {
	// New returns a connector on a fresh, empty controller of its own (a new
	// emulator, or a fake on a URL of its own), registering its cleanup with
	// t.Cleanup. Subtests run in parallel, so controllers must not be
	// shared unless Serial is set. Required.
	New func(t *testing.T) connectors.Connector

	// Type is the service type of the services Points make: ELINE when
	// empty; L3VPN for a connector that makes only layer-3 VPNs (its
	// Points then carry L3 sites).
	Type connectors.ServiceType

	// L3Points returns valid L3VPN connection points (three or more, each
	// with its L3 site) for the controller New builds; i as for Points.
	// Required when Capabilities declares L3VPN; otherwise, when set, the
	// suite checks that an L3VPN of them is refused (see l3.go).
	L3Points func(i int) []connectors.ConnectionPoint

	// L3Unsupported names the routing cases of the L3VPN suite ("bgp",
	// "ipv6") that the connector's controller cannot carry: each must be
	// refused, Permanent, with nothing made (TeraFlowSDN reads static
	// IPv4 routing only).
	L3Unsupported []string

	// Points returns valid connection points of two ends (of Type) for
	// the controller that New builds. Different i in [0, 16) must give different services
	// (e.g. other VLANs), so that they can coexist. Required.
	Points func(i int) []connectors.ConnectionPoint

	// ELANPoints returns valid ELAN connection points (three or more) for
	// the controller New builds. Required when Capabilities declares ELAN;
	// otherwise, when set, the suite checks that an ELAN of them is
	// refused, and without it an ELAN of Points(i) plus a copy of its first
	// point on another VLAN.
	ELANPoints func(i int) []connectors.ConnectionPoint

	// Capabilities is what the connector New builds declares, taken from
	// its registration (connectortest.Capabilities): the suite holds the
	// connector to it. Services must not be empty.
	Capabilities connectors.Capabilities

	// ClearAllUnsupported says ClearAll always fails with a Permanent error.
	ClearAllUnsupported bool

	// ServerChosenIDs says the controller picks the service ids and keeps
	// no client key (DynPaC): create cannot adopt, so the same-key case is
	// skipped (documented non-idempotence) and listed services are not
	// expected to carry the key.
	ServerChosenIDs bool

	// MaxStatusPolls bounds the status calls made while waiting for a new
	// service to turn ACTIVE (default 20). The suite never sleeps: the
	// emulator must move a service on per status call, not per second.
	MaxStatusPolls int

	// Unreachable, if set, returns a connector whose controller cannot be
	// reached (stopped emulator, closed port): every call must fail
	// Retryable.
	Unreachable func(t *testing.T) connectors.Connector

	// BadCredentials, if set, returns a connector whose credentials the
	// controller refuses: CheckCredentials must fail Unauthorized.
	BadCredentials func(t *testing.T) connectors.Connector

	// Pair returns two connectors built as New builds one, on one fresh
	// controller (as one before and one after a wimd restart). Required
	// when Capabilities declares List.
	Pair func(t *testing.T) (connectors.Connector, connectors.Connector)

	// Serial runs the subtests one after the other, for controllers that New
	// cannot isolate.
	Serial bool

	// QoS builds a connector as New does, with a reader of the QoS its
	// controller holds for a service id (what the controller received,
	// in connectors.QoS terms). Required when Capabilities declares a
	// QoS field; every field not declared must be refused, Permanent,
	// with nothing made on the controller.
	QoS func(t *testing.T) (connectors.Connector, func(id string) connectors.QoS)

	// ListsEndpoints says ListServices fills Service.Endpoints: the suite
	// then requires them, after a create and after an edit, to name the
	// points the service was given (drift reconcile relies on it). Without
	// it, listed Endpoints must be nil or right.
	ListsEndpoints bool

	// ListsL3 says ListServices fills Service.L3 for an L3VPN: the suite
	// then requires the sites, after a create and after an edit, in
	// static routes, BGP and IPv6, to be the ones the points gave
	// (connectors.L3FormsOf; drift reconcile compares them). Without it,
	// listed L3 must be nil or right: a connector that cannot read the
	// sites back must not make drift up.
	ListsL3 bool

	// Inventory, if set, is what the controller that c reaches holds
	// (ID and Key of each of wimro's services), read from its emulator:
	// the suite checks it where it would check ListServices, for
	// connectors whose server cannot list (connectors.PartialLister, e.g.
	// TeraFlowSDN). ListServices must still succeed.
	Inventory func(t *testing.T, c connectors.Connector) []connectors.Service
}

// Run runs the suite as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Points == nil {
		t.Fatal("conformance: Harness.New and Harness.Points are required")
	}
	if len(h.Capabilities.Services) == 0 {
		t.Fatal("conformance: Harness.Capabilities is required (connectortest.Capabilities)")
	}
	if h.Capabilities.Makes(connectors.ServiceELAN) && h.ELANPoints == nil {
		t.Fatal("conformance: the connector declares ELAN: Harness.ELANPoints is required")
	}
	if h.MaxStatusPolls <= 0 {
		h.MaxStatusPolls = 20
	}
	s := &suite{h: h}
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"CheckCredentials", s.checkCredentials},
		{"CreateThenActive", s.createThenActive},
		{"CreateSameKeyAdopts", s.createSameKey},
		{"CreateDifferentKeys", s.createDifferentKeys},
		{"ConcurrentCreates", s.concurrentCreates},
		{"StatusUnknown", s.statusUnknown},
		{"Delete", s.delete},
		{"DeleteTwice", s.deleteTwice},
		{"DeleteUnknown", s.deleteUnknown},
		{"Edit", s.edit},
		{"ELAN", s.elan},
		{"ClearAll", s.clearAll},
		{"InvalidInput", s.invalidInput},
		{"CancelledContext", s.cancelledContext},
		{"Unreachable", s.unreachable},
		{"BadCredentials", s.badCredentials},
		{"QoS", s.qos},
		{"ListSeesOtherConnectors", s.listSeesOthers},
		{"L3VPN", s.l3},
	}
	cases = append(cases, s.serviceCases()...) // services.go
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !h.Serial {
				t.Parallel()
			}
			c.run(t)
		})
	}
}

type suite struct{ h Harness }

// typ is the service type of Points.
func (s *suite) typ() connectors.ServiceType {
	if s.h.Type == "" {
		return connectors.ServiceELINE
	}
	return s.h.Type
}

// newKey returns a service key the way the actions derive one: the WAN
// link's uuid.
func newKey() string { return uuid.NewString() }

func (s *suite) checkCredentials(t *testing.T) {
	c := s.h.New(t)
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatalf("CheckCredentials: %v", err)
	}
}

// create makes a service and checks what every successful create returns.
func (s *suite) create(t *testing.T, c connectors.Connector, key string, i int) (string, map[string]any) {
	t.Helper()
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: s.typ(), Points: s.h.Points(i)})
	if err != nil {
		t.Fatalf("CreateService(key %s, points %d): %v", key, i, err)
	}
	if id == "" {
		t.Fatalf("CreateService(key %s): empty service id", key)
	}
	mustJSON(t, "connInfo", connInfo)
	return id, connInfo
}

// waitActive polls the status a bounded number of times until ACTIVE.
func (s *suite) waitActive(t *testing.T, c connectors.Connector, id string, connInfo map[string]any) {
	t.Helper()
	var last connectors.ServiceStatus
	for range s.h.MaxStatusPolls {
		st, err := c.GetServiceStatus(t.Context(), id, connInfo)
		if err != nil {
			t.Fatalf("GetServiceStatus(%s): %v", id, err)
		}
		mustJSON(t, "status info", st.Info)
		switch st.Status {
		case connectors.StatusActive:
			return
		case connectors.StatusBuild, connectors.StatusInactive:
			last = st
		default:
			t.Fatalf("GetServiceStatus(%s) = %s (%s), want BUILD/INACTIVE then ACTIVE", id, st.Status, st.Message)
		}
	}
	t.Fatalf("service %s still %s (%s) after %d status calls", id, last.Status, last.Message, s.h.MaxStatusPolls)
}

func (s *suite) list(t *testing.T, c connectors.Connector) []connectors.Service {
	t.Helper()
	services, err := c.ListServices(t.Context())
	if err != nil {
		t.Fatalf("ListServices: %v", err)
	}
	for _, svc := range services {
		mustJSON(t, "service info", svc.Info)
	}
	if s.h.Inventory != nil {
		return s.h.Inventory(t, c)
	}
	return services
}

func find(services []connectors.Service, id string) (connectors.Service, bool) {
	for _, svc := range services {
		if svc.ID == id {
			return svc, true
		}
	}
	return connectors.Service{}, false
}

func (s *suite) createThenActive(t *testing.T) {
	c := s.h.New(t)
	key := newKey()
	id, connInfo := s.create(t, c, key, 0)
	s.waitActive(t, c, id, connInfo)
	svc, ok := find(s.list(t, c), id)
	if !ok {
		t.Fatalf("ListServices does not list the new service %s", id)
	}
	if !s.h.ServerChosenIDs && svc.Key != key {
		t.Errorf("listed service %s has key %q, want %q", id, svc.Key, key)
	}
	s.checkEndpoints(t, svc, s.h.Points(0))
}

// checkEndpoints checks the listed endpoints of svc against the points it
// was made of.
func (s *suite) checkEndpoints(t *testing.T, svc connectors.Service, points []connectors.ConnectionPoint) {
	t.Helper()
	if svc.Endpoints == nil && !s.h.ListsEndpoints {
		return
	}
	if want := connectors.EndpointsOf(points); !slices.Equal(svc.Endpoints, want) {
		t.Errorf("listed service %s has endpoints %q, want %q", svc.ID, svc.Endpoints, want)
	}
}

// checkL3 holds a listed service's L3 sites to the points it was given
// (ListsL3).
func (s *suite) checkL3(t *testing.T, svc connectors.Service, points []connectors.ConnectionPoint) {
	t.Helper()
	if svc.L3 == nil && !s.h.ListsL3 {
		return
	}
	if want := connectors.L3FormsOf(points); !reflect.DeepEqual(svc.L3, want) {
		t.Errorf("listed service %s has the L3 sites %+v, want %+v (%q)", svc.ID, svc.L3, want, connectors.L3Diff(want, svc.L3))
	}
}

func (s *suite) createSameKey(t *testing.T) {
	if s.h.ServerChosenIDs {
		t.Skip("the controller chooses service ids: create with the same key cannot adopt (documented)")
	}
	c := s.h.New(t)
	key := newKey()
	id1, _ := s.create(t, c, key, 0)
	id2, _ := s.create(t, c, key, 0)
	if id1 != id2 {
		t.Fatalf("creating key %s twice gave ids %s and %s, want the same service", key, id1, id2)
	}
	if services := s.list(t, c); len(services) != 1 {
		t.Fatalf("after creating one key twice ListServices has %d services, want 1: %+v", len(services), services)
	}
}

func (s *suite) createDifferentKeys(t *testing.T) {
	c := s.h.New(t)
	id1, _ := s.create(t, c, newKey(), 0)
	id2, _ := s.create(t, c, newKey(), 1)
	if id1 == id2 {
		t.Fatalf("two keys gave the same service id %s", id1)
	}
	services := s.list(t, c)
	if len(services) != 2 {
		t.Fatalf("ListServices has %d services, want 2: %+v", len(services), services)
	}
	for _, id := range []string{id1, id2} {
		if _, ok := find(services, id); !ok {
			t.Errorf("ListServices misses %s", id)
		}
	}
}

// concurrentCreates catches read-modify-write races on the controller (two
// links of one account created in parallel must both survive).
func (s *suite) concurrentCreates(t *testing.T) {
	const n = 8
	c := s.h.New(t)
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ids[i], _, errs[i] = c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: s.typ(), Points: s.h.Points(i)})
		})
	}
	wg.Wait()
	seen := make(map[string]bool, n)
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent CreateService %d: %v", i, errs[i])
		}
		if seen[ids[i]] {
			t.Fatalf("concurrent creates returned id %s twice", ids[i])
		}
		seen[ids[i]] = true
	}
	services := s.list(t, c)
	if len(services) != n {
		t.Fatalf("after %d concurrent creates ListServices has %d services", n, len(services))
	}
	for id := range seen {
		if _, ok := find(services, id); !ok {
			t.Errorf("ListServices misses %s: a concurrent create was lost", id)
		}
	}
}

func (s *suite) statusUnknown(t *testing.T) {
	c := s.h.New(t)
	_, err := c.GetServiceStatus(t.Context(), uuid.NewString(), nil)
	if !connectors.IsNotFound(err) {
		t.Fatalf("GetServiceStatus(unknown) error = %v (kind %s), want NotFound", err, connectors.KindOf(err))
	}
}

func (s *suite) delete(t *testing.T) {
	c := s.h.New(t)
	keep, _ := s.create(t, c, newKey(), 1)
	id, connInfo := s.create(t, c, newKey(), 0)
	if err := c.DeleteService(t.Context(), id, connInfo); err != nil {
		t.Fatalf("DeleteService(%s): %v", id, err)
	}
	services := s.list(t, c)
	if _, ok := find(services, id); ok {
		t.Errorf("ListServices still lists deleted service %s", id)
	}
	if _, ok := find(services, keep); !ok {
		t.Errorf("deleting %s also removed %s", id, keep)
	}
	_, err := c.GetServiceStatus(t.Context(), id, connInfo)
	if !connectors.IsNotFound(err) {
		t.Fatalf("GetServiceStatus(deleted) error = %v (kind %s), want NotFound", err, connectors.KindOf(err))
	}
}

func (s *suite) deleteTwice(t *testing.T) {
	c := s.h.New(t)
	id, connInfo := s.create(t, c, newKey(), 0)
	for i := range 2 {
		if err := c.DeleteService(t.Context(), id, connInfo); err != nil {
			t.Fatalf("DeleteService #%d: %v, want success (idempotent delete)", i+1, err)
		}
	}
}

func (s *suite) deleteUnknown(t *testing.T) {
	c := s.h.New(t)
	if err := c.DeleteService(t.Context(), uuid.NewString(), nil); err != nil {
		t.Fatalf("DeleteService(unknown): %v, want success", err)
	}
}

// edit checks what an EDIT action does with the connector: a connector
// that declares Edit edits in place (twice: a re-run edit is safe); any
// other refuses EditService, Permanent, and is replaced: a second service
// made with a new key, then the first deleted (make-before-break, which
// needs the controller to hold both at once on the unchanged end), or the
// first deleted before the second is made (break-before-make), as the
// connector declares.
func (s *suite) edit(t *testing.T) {
	c := s.h.New(t)
	key := newKey()
	id, connInfo := s.create(t, c, key, 0)
	req := connectors.Request{Key: key, Type: s.typ(), Points: s.h.Points(1)}
	newInfo, err := c.EditService(t.Context(), id, connInfo, req)
	if !s.h.Capabilities.Edit {
		if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
			t.Fatalf("EditService error = %v (kind %s), want a Permanent error (Edit not declared)", err, connectors.KindOf(err))
		}
		s.replace(t, c, id, connInfo)
		return
	}
	if err != nil {
		t.Fatalf("EditService(%s): %v", id, err)
	}
	mustJSON(t, "edited connInfo", newInfo)
	if newInfo != nil {
		connInfo = newInfo
	}
	if newInfo, err = c.EditService(t.Context(), id, connInfo, req); err != nil {
		t.Fatalf("EditService(%s) again, to the state it has: %v, want success (a re-run EDIT)", id, err)
	}
	mustJSON(t, "edited connInfo", newInfo)
	if newInfo != nil {
		connInfo = newInfo
	}
	s.waitActive(t, c, id, connInfo)
	services := s.list(t, c)
	svc, ok := find(services, id)
	if !ok || len(services) != 1 {
		t.Fatalf("after an edit ListServices = %+v, want only %s", services, id)
	}
	s.checkEndpoints(t, svc, s.h.Points(1))

	_, err = c.EditService(t.Context(), uuid.NewString(), nil, connectors.Request{Key: newKey(), Type: s.typ(), Points: s.h.Points(2)})
	if !connectors.IsNotFound(err) {
		t.Fatalf("EditService(unknown) error = %v (kind %s), want NotFound", err, connectors.KindOf(err))
	}
}

// replace replaces service old (made of Points(0)) by one whose first end
// moved to Points(1)'s and whose second end is unchanged, in the order the
// connector declares, and checks that the controller then holds the new
// service only.
func (s *suite) replace(t *testing.T, c connectors.Connector, old string, oldInfo map[string]any) {
	moved := []connectors.ConnectionPoint{s.h.Points(1)[0], s.h.Points(0)[1]}
	req := connectors.Request{Key: newKey(), Type: s.typ(), Points: moved}
	if !s.h.Capabilities.MakeBeforeBreak {
		if err := c.DeleteService(t.Context(), old, oldInfo); err != nil {
			t.Fatalf("break-before-make: DeleteService(%s): %v", old, err)
		}
	}
	id, connInfo, err := c.CreateService(t.Context(), req)
	if err != nil {
		t.Fatalf("replace (make-before-break %v): CreateService of the new service: %v", s.h.Capabilities.MakeBeforeBreak, err)
	}
	if s.h.Capabilities.MakeBeforeBreak {
		if _, ok := find(s.list(t, c), old); !ok && s.h.Inventory == nil {
			t.Fatalf("make-before-break: the old service %s is gone once the new one is made", old)
		}
		if err := c.DeleteService(t.Context(), old, oldInfo); err != nil {
			t.Fatalf("make-before-break: DeleteService(%s): %v", old, err)
		}
	}
	s.waitActive(t, c, id, connInfo)
	services := s.list(t, c)
	svc, ok := find(services, id)
	if !ok || len(services) != 1 {
		t.Fatalf("after a replace ListServices = %+v, want only %s", services, id)
	}
	s.checkEndpoints(t, svc, moved)
}

// elanRefused checks that a connector that does not declare ELAN refuses
// one, Permanent, with nothing made on the controller.
func (s *suite) elanRefused(t *testing.T) {
	var points []connectors.ConnectionPoint
	if s.h.ELANPoints != nil {
		points = s.h.ELANPoints(0)
	} else {
		points = s.h.Points(0)
		third := points[0]
		if third.Encapsulation == connectors.EncapDot1Q {
			third.VLAN = third.VLAN%4094 + 1
		}
		points = append(points, third)
	}
	c := s.h.New(t)
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: connectors.ServiceELAN, Points: points})
	if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
		t.Fatalf("CreateService(ELAN) = %q, %v (kind %s); the connector does not declare ELAN: want a Permanent error", id, err, connectors.KindOf(err))
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("a refused ELAN left %d services: %+v", len(services), services)
	}
}

// listSeesOthers checks List: a service made by one connector of a
// controller is listed by another connector of it (a wimd process that
// restarted, another process of the cluster), which is what drift
// reconcile trusts. A connector that does not declare List may see only
// what it made itself: nothing to check.
func (s *suite) listSeesOthers(t *testing.T) {
	if !s.h.Capabilities.List {
		return
	}
	if s.h.Pair == nil {
		t.Fatal("conformance: the connector declares List: Harness.Pair is required")
	}
	c, other := s.h.Pair(t)
	id, _ := s.create(t, c, newKey(), 0)
	if _, seen := find(s.list(t, other), id); !seen {
		t.Fatalf("the connector declares List, but another connector of the controller does not list service %s", id)
	}
}

// elan runs a multipoint service through create, status, list and delete.
func (s *suite) elan(t *testing.T) {
	if !s.h.Capabilities.Makes(connectors.ServiceELAN) {
		s.elanRefused(t)
		return
	}
	c := s.h.New(t)
	points := s.h.ELANPoints(0)
	if len(points) < 3 {
		t.Fatalf("Harness.ELANPoints(0) has %d points, want 3 or more", len(points))
	}
	key := newKey()
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELAN, Points: points})
	if err != nil {
		t.Fatalf("CreateService(ELAN, %d points): %v", len(points), err)
	}
	mustJSON(t, "connInfo", connInfo)
	s.waitActive(t, c, id, connInfo)
	again, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELAN, Points: points})
	if err != nil || (!s.h.ServerChosenIDs && again != id) {
		t.Fatalf("creating the ELAN again = %s, %v; want %s (adopted)", again, err, id)
	}
	if _, ok := find(s.list(t, c), id); !ok {
		t.Fatalf("ListServices does not list the ELAN %s", id)
	}
	if err := c.DeleteService(t.Context(), id, connInfo); err != nil {
		t.Fatalf("DeleteService(ELAN): %v", err)
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("after deleting the ELAN ListServices = %+v, want none", services)
	}
}

func (s *suite) clearAll(t *testing.T) {
	c := s.h.New(t)
	s.create(t, c, newKey(), 0)
	s.create(t, c, newKey(), 1)
	err := c.ClearAll(t.Context())
	if s.h.ClearAllUnsupported {
		if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
			t.Fatalf("ClearAll error = %v (kind %s), want a Permanent error (ClearAllUnsupported)", err, connectors.KindOf(err))
		}
		return
	}
	if err != nil {
		t.Fatalf("ClearAll: %v", err)
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("after ClearAll ListServices = %+v, want none", services)
	}
}

func (s *suite) invalidInput(t *testing.T) {
	c := s.h.New(t)
	with := func(change func(p []connectors.ConnectionPoint) []connectors.ConnectionPoint) []connectors.ConnectionPoint {
		return change(clonePoints(s.h.Points(0)))
	}
	tests := []struct {
		name    string
		typ     connectors.ServiceType
		points  []connectors.ConnectionPoint
		message string // the error must contain it, when set
	}{
		{
			name:    "three points for ELINE",
			typ:     connectors.ServiceELINE,
			points:  append(clonePoints(s.h.Points(0)), s.h.Points(1)[0]),
			message: connectors.MultipointNotSupported,
		},
		{
			name:   "one point",
			typ:    s.typ(),
			points: s.h.Points(0)[:1],
		},
		{
			name: "dot1q without vlan",
			typ:  s.typ(),
			points: with(func(p []connectors.ConnectionPoint) []connectors.ConnectionPoint {
				p[0].Encapsulation, p[0].VLAN = connectors.EncapDot1Q, 0
				return p
			}),
		},
		{
			name: "dot1q vlan 4095",
			typ:  s.typ(),
			points: with(func(p []connectors.ConnectionPoint) []connectors.ConnectionPoint {
				p[1].Encapsulation, p[1].VLAN = connectors.EncapDot1Q, 4095
				return p
			}),
		},
		{
			name: "unknown encapsulation",
			typ:  s.typ(),
			points: with(func(p []connectors.ConnectionPoint) []connectors.ConnectionPoint {
				p[0].Encapsulation = "vxlan"
				return p
			}),
		},
		{
			name: "empty endpoint id",
			typ:  s.typ(),
			points: with(func(p []connectors.ConnectionPoint) []connectors.ConnectionPoint {
				p[0].ServiceEndpointID = ""
				return p
			}),
		},
		{
			name:   "unknown service type",
			typ:    "ETREE",
			points: s.h.Points(0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, _, err := c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: tt.typ, Points: tt.points})
			if err == nil {
				t.Fatalf("CreateService accepted invalid input (id %s)", id)
			}
			if k := connectors.KindOf(err); k != connectors.KindPermanent || connectors.Retryable(err) {
				t.Fatalf("CreateService error %q has kind %s, want permanent", err, k)
			}
			if tt.message != "" && !strings.Contains(err.Error(), tt.message) {
				t.Errorf("CreateService error %q does not say %q", err, tt.message)
			}
		})
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("invalid creates left services on the controller: %+v", services)
	}
}

// cancelledContext checks that every method gives up at once, with an error
// wrapping context.Canceled, when its context is already cancelled.
func (s *suite) cancelledContext(t *testing.T) {
	c := s.h.New(t)
	id, connInfo := s.create(t, c, newKey(), 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"CheckCredentials", func() error { return c.CheckCredentials(ctx) }},
		{"CreateService", func() error {
			_, _, err := c.CreateService(ctx, connectors.Request{Key: newKey(), Type: s.typ(), Points: s.h.Points(1)})
			return err
		}},
		{"GetServiceStatus", func() error { _, err := c.GetServiceStatus(ctx, id, connInfo); return err }},
		{"EditService", func() error {
			_, err := c.EditService(ctx, id, connInfo, connectors.Request{Key: newKey(), Type: s.typ(), Points: s.h.Points(2)})
			return err
		}},
		{"DeleteService", func() error { return c.DeleteService(ctx, id, connInfo) }},
		{"ListServices", func() error { _, err := c.ListServices(ctx); return err }},
		{"ClearAll", func() error { return c.ClearAll(ctx) }},
	}
	for _, tc := range calls {
		err := returnsPromptly(t, tc.name, tc.call)
		if err == nil {
			t.Errorf("%s with a cancelled context succeeded, want an error", tc.name)
		} else if !isCanceled(err) {
			t.Errorf("%s with a cancelled context: error %q does not wrap context.Canceled", tc.name, err)
		}
	}
	// Nothing the cancelled calls might have done is visible.
	services := s.list(t, c)
	if len(services) != 1 {
		t.Fatalf("after cancelled calls ListServices = %+v, want only %s", services, id)
	}
	if _, ok := find(services, id); !ok {
		t.Fatalf("a cancelled call changed the controller: %+v, want only %s", services, id)
	}
}

func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }

// promptBound detects a call that ignores its context. It is a hang
// detector with a generous bound, not a timing assertion.
const promptBound = 30 * time.Second

func returnsPromptly(t *testing.T, name string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	timer := time.NewTimer(promptBound)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatalf("%s did not return within %s of its context being cancelled", name, promptBound)
		return nil
	}
}

func (s *suite) unreachable(t *testing.T) {
	if s.h.Unreachable == nil {
		t.Skip("the harness has no unreachable controller")
	}
	c := s.h.Unreachable(t)
	ctx := t.Context()
	calls := []struct {
		name string
		call func() error
	}{
		{"CheckCredentials", func() error { return c.CheckCredentials(ctx) }},
		{"CreateService", func() error {
			_, _, err := c.CreateService(ctx, connectors.Request{Key: newKey(), Type: s.typ(), Points: s.h.Points(0)})
			return err
		}},
		{"GetServiceStatus", func() error { _, err := c.GetServiceStatus(ctx, uuid.NewString(), nil); return err }},
		{"DeleteService", func() error { return c.DeleteService(ctx, uuid.NewString(), nil) }},
		{"ListServices", func() error { _, err := c.ListServices(ctx); return err }},
	}
	for _, tc := range calls {
		err := returnsPromptly(t, tc.name, tc.call)
		if !connectors.Retryable(err) {
			t.Errorf("%s on an unreachable controller: error %v (kind %s), want Retryable", tc.name, err, connectors.KindOf(err))
		}
	}
}

func (s *suite) badCredentials(t *testing.T) {
	if s.h.BadCredentials == nil {
		t.Skip("the harness has no bad-credentials connector")
	}
	c := s.h.BadCredentials(t)
	err := c.CheckCredentials(t.Context())
	if !connectors.IsUnauthorized(err) {
		t.Fatalf("CheckCredentials with bad credentials: error %v (kind %s), want Unauthorized", err, connectors.KindOf(err))
	}
	if connectors.Retryable(err) {
		t.Fatalf("CheckCredentials with bad credentials: error %v is Retryable", err)
	}
}

// mustJSON checks v can be stored (connInfo and info land in JSONB columns).
// qos creates with each QoS field the connector does not honour (refused,
// Permanent, nothing made), then with every field it honours (the
// controller holds them), then again with the same key and other values:
// the service is brought in line or the create is Permanent, and no second
// service is made.
func (s *suite) qos(t *testing.T) {
	var (
		c      connectors.Connector
		stored func(string) connectors.QoS
	)
	if s.h.QoS != nil {
		c, stored = s.h.QoS(t)
	} else {
		if len(s.h.Capabilities.QoS) > 0 {
			t.Fatal("conformance: Harness.QoS is required when Capabilities declares QoS")
		}
		c = s.h.New(t)
	}
	ctx := t.Context()
	var all connectors.QoS
	for _, f := range []connectors.QoSField{connectors.QoSBandwidth, connectors.QoSLatency} {
		one := connectors.QoS{BandwidthMbps: 150, LatencyMs: 15}
		if f == connectors.QoSBandwidth {
			one.LatencyMs = 0
		} else {
			one.BandwidthMbps = 0
		}
		if s.h.Capabilities.Honours(f) {
			all.BandwidthMbps += one.BandwidthMbps
			all.LatencyMs += one.LatencyMs
			continue
		}
		_, _, err := c.CreateService(ctx, connectors.Request{Key: newKey(), Type: s.typ(), Points: s.h.Points(1), QoS: one})
		if connectors.KindOf(err) != connectors.KindPermanent {
			t.Fatalf("create asking %s, which the connector does not honour: %v, want a Permanent error", f, err)
		}
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("creates refused for their QoS left %d services: %+v", len(services), services)
	}
	if all.IsZero() {
		return
	}
	key := newKey()
	id, _, err := c.CreateService(ctx, connectors.Request{Key: key, Type: s.typ(), Points: s.h.Points(0), QoS: all})
	if err != nil {
		t.Fatalf("create asking %+v: %v", all, err)
	}
	if got := stored(id); got != all {
		t.Fatalf("the controller holds QoS %+v for service %s, want %+v", got, id, all)
	}
	other := connectors.QoS{BandwidthMbps: all.BandwidthMbps * 2, LatencyMs: all.LatencyMs * 2}
	id2, _, err := c.CreateService(ctx, connectors.Request{Key: key, Type: s.typ(), Points: s.h.Points(0), QoS: other})
	switch {
	case err == nil:
		if id2 != id || stored(id) != other {
			t.Fatalf("same key with QoS %+v gave service %s holding %+v, want %s brought in line", other, id2, stored(id2), id)
		}
	case connectors.KindOf(err) == connectors.KindPermanent:
		if got := stored(id); got != all {
			t.Fatalf("a refused create changed service %s's QoS to %+v", id, got)
		}
	default:
		t.Fatalf("same key with other QoS: %v, want it brought in line or a Permanent error", err)
	}
	if services := s.list(t, c); len(services) != 1 {
		t.Fatalf("one key created twice with different QoS left %d services, want 1: %+v", len(services), services)
	}
}

func mustJSON(t *testing.T, what string, v any) {
	t.Helper()
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("%s is not JSON-serialisable: %v (%#v)", what, err, v)
	}
}

func clonePoints(p []connectors.ConnectionPoint) []connectors.ConnectionPoint {
	return append([]connectors.ConnectionPoint(nil), p...)
}
