package connectors_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
)

func TestValidatePointsL3(t *testing.T) {
	t.Parallel()
	site := func(prefix, pe, ce string) *connectors.L3Site {
		s := &connectors.L3Site{Prefix: netip.MustParsePrefix(prefix), PEAddress: netip.MustParsePrefix(pe)}
		if ce != "" {
			s.CEAddress = netip.MustParseAddr(ce)
		}
		return s
	}
	point := func(id string, s *connectors.L3Site) connectors.ConnectionPoint {
		return connectors.ConnectionPoint{ServiceEndpointID: id, Encapsulation: connectors.EncapDot1Q, VLAN: 100, L3: s}
	}
	good := site("10.1.0.0/24", "192.0.2.1/30", "192.0.2.2")
	tests := []struct {
		name   string
		t      connectors.ServiceType
		points []connectors.ConnectionPoint
		want   string // "" for valid
	}{
		{"two sites", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", site("10.2.0.0/24", "192.0.2.5/30", "192.0.2.6"))}, ""},
		{"bgp instead of ce", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", &connectors.L3Site{
			Prefix: netip.MustParsePrefix("10.2.0.0/24"), PEAddress: netip.MustParsePrefix("192.0.2.5/30"),
			BGP: &connectors.BGPPeer{PeerAS: 65001, PeerAddress: netip.MustParseAddr("192.0.2.6")}})}, ""},
		{"one site", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good)}, "at least 2"},
		{"no site", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", nil)}, "needs its l3 site"},
		{"host bits", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", site("10.2.0.1/24", "192.0.2.5/30", "192.0.2.6"))}, "host bits"},
		{"pe without length", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", site("10.2.0.0/24", "192.0.2.5/32", "192.0.2.6"))}, "access link's length"},
		{"ce off link", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", site("10.2.0.0/24", "192.0.2.5/30", "192.0.2.9"))}, "ce_address"},
		{"no routing", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", site("10.2.0.0/24", "192.0.2.5/30", ""))}, "must learn"},
		{"family mix", connectors.ServiceL3VPN, []connectors.ConnectionPoint{point("a", good), point("b", site("2001:db8::/64", "192.0.2.5/30", "192.0.2.6"))}, "address family"},
		{"l3 on an eline", connectors.ServiceELINE, []connectors.ConnectionPoint{point("a", good), point("b", nil)}, "l3 site given for a ELINE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := connectors.ValidatePoints(tt.t, tt.points)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ValidatePoints: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ValidatePoints = %v, want an error containing %q", err, tt.want)
			}
			if connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("kind = %v, want Permanent", connectors.KindOf(err))
			}
		})
	}
}

// TestL3Form: a site and the same site as a controller gives it back
// (no prefix leaf, routes in another order, a route's prefix with host
// bits, one customer-address for CE and BGP peer) have one form; a
// change of any field is named by L3Diff.
func TestL3Form(t *testing.T) {
	t.Parallel()
	pfx, addr := netip.MustParsePrefix, netip.MustParseAddr
	route := func(p, via string) connectors.StaticRoute {
		return connectors.StaticRoute{Prefix: pfx(p), NextHop: addr(via)}
	}
	site := connectors.L3Site{Prefix: pfx("10.1.0.0/24"), PEAddress: pfx("192.0.2.1/30"), CEAddress: addr("192.0.2.2")}
	tests := []struct {
		name       string
		want, have connectors.L3Site
		diff       string // "" when the forms are equal
	}{
		{"the prefix via the CE, read back as a route", site,
			connectors.L3Site{PEAddress: pfx("192.0.2.1/30"), CEAddress: addr("192.0.2.2"), StaticRoutes: []connectors.StaticRoute{route("10.1.0.0/24", "192.0.2.2")}}, ""},
		{"routes in another order, host bits, a route twice",
			connectors.L3Site{Prefix: pfx("10.1.0.0/24"), PEAddress: pfx("192.0.2.1/30"), StaticRoutes: []connectors.StaticRoute{route("172.16.0.0/16", "192.0.2.2"), route("10.9.0.0/24", "192.0.2.2")}},
			connectors.L3Site{PEAddress: pfx("192.0.2.1/30"), StaticRoutes: []connectors.StaticRoute{route("10.9.0.1/24", "192.0.2.2"), route("172.16.0.0/16", "192.0.2.2"), route("10.9.0.0/24", "192.0.2.2")}}, ""},
		{"a BGP peer is the customer-address",
			connectors.L3Site{Prefix: pfx("10.1.0.0/24"), PEAddress: pfx("192.0.2.1/30"), BGP: &connectors.BGPPeer{PeerAS: 65001, PeerAddress: addr("192.0.2.2")}},
			connectors.L3Site{PEAddress: pfx("192.0.2.1/30"), CEAddress: addr("192.0.2.2"), BGP: &connectors.BGPPeer{PeerAS: 65001, PeerAddress: addr("192.0.2.2")}}, ""},
		{"ipv6 spellings", connectors.L3Site{Prefix: pfx("2001:db8:1::/64"), PEAddress: pfx("2001:db8:ff::1/126"), CEAddress: addr("2001:db8:ff::2")},
			connectors.L3Site{PEAddress: pfx("2001:0db8:00ff::0001/126"), CEAddress: addr("2001:db8:ff:0::2"), StaticRoutes: []connectors.StaticRoute{route("2001:db8:1:0::/64", "2001:db8:ff::2")}}, ""},
		{"the prefix changed", site,
			connectors.L3Site{PEAddress: pfx("192.0.2.1/30"), CEAddress: addr("192.0.2.2"), StaticRoutes: []connectors.StaticRoute{route("10.7.0.0/24", "192.0.2.2")}},
			"site ep: routes: want [10.1.0.0/24 via 192.0.2.2], the controller has [10.7.0.0/24 via 192.0.2.2]"},
		{"the PE address changed", site,
			connectors.L3Site{Prefix: pfx("10.1.0.0/24"), PEAddress: pfx("192.0.2.1/29"), CEAddress: addr("192.0.2.2")},
			"site ep: pe_address: want 192.0.2.1/30, the controller has 192.0.2.1/29"},
		{"the BGP peer AS changed",
			connectors.L3Site{Prefix: pfx("10.1.0.0/24"), PEAddress: pfx("192.0.2.1/30"), CEAddress: addr("192.0.2.2"), BGP: &connectors.BGPPeer{PeerAS: 65001, PeerAddress: addr("192.0.2.2")}},
			connectors.L3Site{PEAddress: pfx("192.0.2.1/30"), CEAddress: addr("192.0.2.2"), BGP: &connectors.BGPPeer{PeerAS: 65009, PeerAddress: addr("192.0.2.2")}},
			"site ep: bgp: want AS65001 192.0.2.2, the controller has AS65009 192.0.2.2"},
		{"the CE address gone", site, connectors.L3Site{Prefix: pfx("10.1.0.0/24"), PEAddress: pfx("192.0.2.1/30")},
			"site ep: ce_address: want 192.0.2.2, the controller has none; site ep: routes: want [10.1.0.0/24 via 192.0.2.2], the controller has []"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, h := connectors.L3FormOf(&tt.want), connectors.L3FormOf(&tt.have)
			diff := strings.Join(connectors.L3Diff(map[string]connectors.L3Form{"ep": w, "other": w}, map[string]connectors.L3Form{"ep": h}), "; ")
			if diff != tt.diff {
				t.Errorf("L3Diff = %q, want %q\nforms %+v and %+v", diff, tt.diff, w, h)
			}
		})
	}
}
