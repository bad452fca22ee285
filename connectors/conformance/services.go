package conformance

import (
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
)

// serviceCases are the cases of service types and multipoint, each
// applied by what the connector declares:
//
//   - a service type it does not declare (of ELINE and L3VPN; ELAN has
//     its own case) is refused, Permanent, naming the type, with nothing
//     made: a connector that made an L2 service of an L3VPN request would
//     connect the sites with none of their routing;
//   - a declared ELAN is listed with every one of its points, stays an
//     ELAN through an edit (where Edit is declared) and carries a declared
//     bandwidth to the controller;
//   - an ELINE stays point-to-point: an edit to three points is refused,
//     Permanent, and leaves the service as it was.
func (s *suite) serviceCases() []struct {
	name string
	run  func(t *testing.T)
} {
	return []struct {
		name string
		run  func(t *testing.T)
	}{
		{"UndeclaredServiceTypes", s.undeclaredTypes},
		{"MultipointEndpoints", s.multipointEndpoints},
		{"MultipointQoS", s.multipointQoS},
		{"ELINEStaysPointToPoint", s.elineStaysP2P},
	}
}

// withL3 returns points with an L3 site each (10.<i>.0.0/24, the access
// link 192.0.2.<4i>/30), as an L3VPN request carries them.
func withL3(points []connectors.ConnectionPoint) []connectors.ConnectionPoint {
	out := clonePoints(points)
	for i := range out {
		out[i].L3 = L3Site(i)
	}
	return out
}

// withoutL3 returns points without their L3 sites.
func withoutL3(points []connectors.ConnectionPoint) []connectors.ConnectionPoint {
	out := clonePoints(points)
	for i := range out {
		out[i].L3 = nil
	}
	return out
}

func (s *suite) undeclaredTypes(t *testing.T) {
	c := s.h.New(t)
	for _, typ := range []connectors.ServiceType{connectors.ServiceELINE, connectors.ServiceL3VPN} {
		if s.h.Capabilities.Makes(typ) {
			continue
		}
		points := withoutL3(s.h.Points(0))
		if typ == connectors.ServiceL3VPN {
			points = withL3(points) // valid: only the type can be refused
		}
		id, _, err := c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: typ, Points: points})
		if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), string(typ)) {
			t.Errorf("CreateService(%s), a type the connector does not declare = %q, %v (kind %s); want a Permanent error naming %s", typ, id, err, connectors.KindOf(err), typ)
		}
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("creates of undeclared service types left %d services: %+v", len(services), services)
	}
}

// multipointEndpoints: an ELAN is listed with all its points, before and
// after an edit, which keeps it an ELAN.
func (s *suite) multipointEndpoints(t *testing.T) {
	if !s.h.Capabilities.Makes(connectors.ServiceELAN) {
		return // refused: the ELAN case checks it
	}
	c := s.h.New(t)
	points := s.h.ELANPoints(1)
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: connectors.ServiceELAN, Points: points})
	if err != nil {
		t.Fatalf("CreateService(ELAN, %d points): %v", len(points), err)
	}
	s.waitActive(t, c, id, connInfo)
	svc, ok := find(s.list(t, c), id)
	if !ok {
		t.Fatalf("ListServices does not list the ELAN %s", id)
	}
	s.checkEndpoints(t, svc, points)
	if !s.h.Capabilities.Edit {
		return
	}
	moved := s.h.ELANPoints(2)
	newInfo, err := c.EditService(t.Context(), id, connInfo, connectors.Request{Type: connectors.ServiceELAN, Points: moved})
	if err != nil {
		t.Fatalf("EditService(ELAN %s to %d points): %v", id, len(moved), err)
	}
	if newInfo != nil {
		connInfo = newInfo
	}
	s.waitActive(t, c, id, connInfo)
	services := s.list(t, c)
	svc, ok = find(services, id)
	if !ok || len(services) != 1 {
		t.Fatalf("after an ELAN edit ListServices = %+v, want only %s", services, id)
	}
	s.checkEndpoints(t, svc, moved)
}

// multipointQoS: a declared bandwidth reaches the controller for an ELAN
// as for an ELINE.
func (s *suite) multipointQoS(t *testing.T) {
	if !s.h.Capabilities.Makes(connectors.ServiceELAN) || !s.h.Capabilities.Honours(connectors.QoSBandwidth) {
		return
	}
	c, stored := s.h.QoS(t)
	q := connectors.QoS{BandwidthMbps: 250}
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: connectors.ServiceELAN, Points: s.h.ELANPoints(0), QoS: q})
	if err != nil {
		t.Fatalf("CreateService(ELAN asking %+v): %v", q, err)
	}
	if got := stored(id); got != q {
		t.Fatalf("the controller holds QoS %+v for the ELAN %s, want %+v", got, id, q)
	}
}

// elineStaysP2P: an ELINE edited to three points is refused, Permanent,
// and keeps its two.
func (s *suite) elineStaysP2P(t *testing.T) {
	if !s.h.Capabilities.Edit || !s.h.Capabilities.Makes(connectors.ServiceELINE) || len(s.h.Points(0)) != 2 {
		return // the Edit case checks the refusal of every edit
	}
	c := s.h.New(t)
	id, connInfo := s.create(t, c, newKey(), 0)
	three := append(clonePoints(s.h.Points(0)), s.h.Points(1)[0])
	if _, err := c.EditService(t.Context(), id, connInfo, connectors.Request{Type: connectors.ServiceELINE, Points: three}); err == nil || connectors.KindOf(err) != connectors.KindPermanent {
		t.Fatalf("EditService(ELINE %s to three points) = %v (kind %s), want a Permanent error", id, err, connectors.KindOf(err))
	}
	svc, ok := find(s.list(t, c), id)
	if !ok {
		t.Fatalf("a refused edit removed the ELINE %s", id)
	}
	s.checkEndpoints(t, svc, s.h.Points(0))
}
