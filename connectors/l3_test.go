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
