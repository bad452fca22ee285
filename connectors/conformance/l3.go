package conformance

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/wimro/wimro/connectors"
)

// l3 holds a connector to its L3VPN declaration: one that declares it
// makes a multipoint L3VPN (three sites or more), with static routes and
// with BGP, adopts it on a second create, edits it where Edit is
// declared, lists and deletes it, and refuses, Permanent and with nothing
// made, an L3VPN whose points lack or spoil their L3 site. (One that does
// not declare it must refuse it: services.go's UndeclaredServiceTypes.)
func (s *suite) l3(t *testing.T) {
	if !s.h.Capabilities.Makes(connectors.ServiceL3VPN) {
		return
	}
	if s.h.L3Points == nil {
		t.Fatal("conformance: the connector declares L3VPN: Harness.L3Points is required")
	}
	t.Run("Multipoint", s.l3Multipoint)
	t.Run("Routing", s.l3Routing)
	t.Run("Invalid", s.l3Invalid)
}

// L3Site is a valid L3 site for the j-th datacenter of a test:
// 10.<j>.0.0/24 behind the CE 192.0.2.<4j+2>, the PE 192.0.2.<4j+1>/30.
func L3Site(j int) *connectors.L3Site {
	base := netip.AddrFrom4([4]byte{192, 0, 2, byte(4*j + 1)})
	return &connectors.L3Site{
		Prefix:    netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(j), 0, 0}), 24),
		PEAddress: netip.PrefixFrom(base, 30),
		CEAddress: base.Next(),
	}
}

func (s *suite) l3Multipoint(t *testing.T) {
	c := s.h.New(t)
	points := s.h.L3Points(0)
	if len(points) < 3 {
		t.Fatalf("Harness.L3Points(0) has %d points, want 3 or more", len(points))
	}
	key := newKey()
	req := connectors.Request{Key: key, Type: connectors.ServiceL3VPN, Points: points}
	id, connInfo, err := c.CreateService(t.Context(), req)
	if err != nil {
		t.Fatalf("CreateService(L3VPN, %d sites): %v", len(points), err)
	}
	mustJSON(t, "connInfo", connInfo)
	s.waitActive(t, c, id, connInfo)
	again, _, err := c.CreateService(t.Context(), req)
	if err != nil || (!s.h.ServerChosenIDs && again != id) {
		t.Fatalf("creating the L3VPN again = %s, %v; want %s (adopted)", again, err, id)
	}
	svc, ok := find(s.list(t, c), id)
	if !ok {
		t.Fatalf("ListServices does not list the L3VPN %s", id)
	}
	s.checkEndpoints(t, svc, points)
	s.checkL3(t, svc, points)
	if s.h.Capabilities.Edit {
		fewer := s.h.L3Points(1)[:2]
		newInfo, err := c.EditService(t.Context(), id, connInfo, connectors.Request{Type: connectors.ServiceL3VPN, Points: fewer})
		if err != nil {
			t.Fatalf("EditService(L3VPN to 2 sites): %v", err)
		}
		if newInfo != nil {
			connInfo = newInfo
		}
		s.waitActive(t, c, id, connInfo)
		svc, _ := find(s.list(t, c), id)
		s.checkEndpoints(t, svc, fewer)
		s.checkL3(t, svc, fewer)
	}
	if err := c.DeleteService(t.Context(), id, connInfo); err != nil {
		t.Fatalf("DeleteService(L3VPN): %v", err)
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("after deleting the L3VPN ListServices = %+v, want none", services)
	}
	if _, err := c.GetServiceStatus(t.Context(), id, connInfo); !connectors.IsNotFound(err) {
		t.Fatalf("GetServiceStatus(deleted L3VPN) error = %v (kind %s), want NotFound", err, connectors.KindOf(err))
	}
}

// l3Routing makes L3VPNs whose sites learn their prefixes by static
// routes and by BGP.
func (s *suite) l3Routing(t *testing.T) {
	c := s.h.New(t)
	tests := []struct {
		name string
		edit func(l3 *connectors.L3Site)
	}{
		{"static routes", func(l3 *connectors.L3Site) {
			l3.StaticRoutes = []connectors.StaticRoute{{Prefix: netip.MustParsePrefix("172.16.0.0/16"), NextHop: l3.CEAddress}}
		}},
		{"bgp", func(l3 *connectors.L3Site) {
			l3.BGP = &connectors.BGPPeer{PeerAS: 65001, PeerAddress: l3.CEAddress}
		}},
		{"ipv6", func(l3 *connectors.L3Site) {
			// The same site numbers in 2001:db8::/32 (documentation space).
			v4 := l3.Prefix.Addr().As4()
			l3.Prefix = netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, v4[1]}), 64)
			pe := l3.PEAddress.Addr().As4()
			link := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, pe[3]}
			link[15] = 1
			l3.PEAddress = netip.PrefixFrom(netip.AddrFrom16(link), 126)
			link[15] = 2
			l3.CEAddress = netip.AddrFrom16(link)
		}},
	}
	made := map[string][]connectors.ConnectionPoint{} // by service id
	for i, tt := range tests {
		points := clonePoints(s.h.L3Points(2 + i))
		for j := range points {
			l3 := *points[j].L3
			tt.edit(&l3)
			points[j].L3 = &l3
		}
		id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: connectors.ServiceL3VPN, Points: points})
		if slices.Contains(s.h.L3Unsupported, tt.name) {
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("%s: CreateService(L3VPN) error = %v (kind %s), want Permanent (Harness.L3Unsupported)", tt.name, err, connectors.KindOf(err))
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: CreateService(L3VPN): %v", tt.name, err)
		}
		s.waitActive(t, c, id, connInfo)
		made[id] = points
	}
	services := s.list(t, c)
	if len(services) != len(made) {
		t.Fatalf("ListServices has %d services, want %d: %+v", len(services), len(made), services)
	}
	// Each site comes back as it was sent, whatever its routing.
	for _, svc := range services {
		if points, ok := made[svc.ID]; ok {
			s.checkL3(t, svc, points)
		}
	}
}

func (s *suite) l3Invalid(t *testing.T) {
	c := s.h.New(t)
	with := func(change func(l3 *connectors.L3Site) *connectors.L3Site) []connectors.ConnectionPoint {
		points := clonePoints(s.h.L3Points(0))
		l3 := *points[0].L3
		points[0].L3 = change(&l3)
		return points
	}
	tests := []struct {
		name   string
		points []connectors.ConnectionPoint
	}{
		{"no l3 site", with(func(*connectors.L3Site) *connectors.L3Site { return nil })},
		{"prefix with host bits", with(func(l3 *connectors.L3Site) *connectors.L3Site {
			l3.Prefix = netip.PrefixFrom(l3.Prefix.Addr().Next(), l3.Prefix.Bits())
			return l3
		})},
		{"ce address off the access link", with(func(l3 *connectors.L3Site) *connectors.L3Site {
			l3.CEAddress = netip.MustParseAddr("198.51.100.7")
			return l3
		})},
		{"one site", s.h.L3Points(0)[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: newKey(), Type: connectors.ServiceL3VPN, Points: tt.points})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("CreateService(L3VPN, %s) error = %v (kind %s), want Permanent", tt.name, err, connectors.KindOf(err))
			}
		})
	}
	if services := s.list(t, c); len(services) != 0 {
		t.Fatalf("invalid L3VPNs left services on the controller: %+v", services)
	}
}
