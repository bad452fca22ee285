package connectors

import (
	"fmt"
	"net/netip"
)

// ServiceL3VPN is a layer-3 VPN: every point is a site with its own
// prefix, routed to the others (any-to-any) by the controller. Two points
// or more; a connector that declares it makes L3VPNs of any size.
const ServiceL3VPN ServiceType = "L3VPN"

// L3Site is what a layer-3 VPN needs at one point (a datacenter's access):
// the site's prefix, the addresses of the access link, and how the PE
// learns the prefix (static routes, BGP, or by default a static route to
// the CE address).
type L3Site struct {
	// Prefix is the datacenter's subnet, reached through the VPN.
	Prefix netip.Prefix `json:"prefix"`
	// PEAddress is the provider edge's address on the access link, with
	// the link's length (192.0.2.1/30).
	PEAddress netip.Prefix `json:"pe_address"`
	// CEAddress is the datacenter side's address on the access link, the
	// next hop of the default static route; zero when not given.
	CEAddress netip.Addr `json:"ce_address,omitzero"`
	// StaticRoutes are routes the PE installs towards the site.
	StaticRoutes []StaticRoute `json:"static_routes,omitempty"`
	// BGP, when set, peers the PE with the site instead of static routes.
	BGP *BGPPeer `json:"bgp,omitempty"`
}

// StaticRoute is one static route of an L3Site.
type StaticRoute struct {
	Prefix  netip.Prefix `json:"prefix"`
	NextHop netip.Addr   `json:"next_hop"`
}

// BGPPeer is the datacenter side of a BGP session with the PE.
type BGPPeer struct {
	PeerAS      uint32     `json:"peer_as"`
	PeerAddress netip.Addr `json:"peer_address"`
}

// validateL3 checks one point's L3Site: a prefix and a PE address of the
// same family, next hops and the BGP peer on the access link.
func validateL3(s *L3Site) error {
	if s == nil {
		return fmt.Errorf("an L3VPN point needs its l3 site (prefix, pe_address)")
	}
	if !s.Prefix.IsValid() {
		return fmt.Errorf("l3 prefix is missing or invalid")
	}
	if s.Prefix.Masked() != s.Prefix {
		return fmt.Errorf("l3 prefix %s has host bits set (%s)", s.Prefix, s.Prefix.Masked())
	}
	if !s.PEAddress.IsValid() {
		return fmt.Errorf("l3 pe_address is missing or invalid")
	}
	if s.PEAddress.Addr().Is4() != s.Prefix.Addr().Is4() {
		return fmt.Errorf("l3 pe_address %s and prefix %s are not of one address family", s.PEAddress, s.Prefix)
	}
	if s.PEAddress.Bits() == s.PEAddress.Addr().BitLen() {
		return fmt.Errorf("l3 pe_address %s needs the access link's length (e.g. /30)", s.PEAddress)
	}
	onLink := func(a netip.Addr) bool { return s.PEAddress.Masked().Contains(a) }
	if s.CEAddress.IsValid() {
		if !onLink(s.CEAddress) || s.CEAddress == s.PEAddress.Addr() {
			return fmt.Errorf("l3 ce_address %s is not another address of the access link %s", s.CEAddress, s.PEAddress.Masked())
		}
	}
	for i, r := range s.StaticRoutes {
		if !r.Prefix.IsValid() || !r.NextHop.IsValid() {
			return fmt.Errorf("l3 static route %d needs a prefix and a next_hop", i)
		}
		if !onLink(r.NextHop) {
			return fmt.Errorf("l3 static route %d: next_hop %s is not on the access link %s", i, r.NextHop, s.PEAddress.Masked())
		}
	}
	if s.BGP != nil {
		if s.BGP.PeerAS == 0 {
			return fmt.Errorf("l3 bgp peer_as is missing")
		}
		if !s.BGP.PeerAddress.IsValid() || !onLink(s.BGP.PeerAddress) {
			return fmt.Errorf("l3 bgp peer_address %v is not on the access link %s", s.BGP.PeerAddress, s.PEAddress.Masked())
		}
	}
	if s.BGP == nil && len(s.StaticRoutes) == 0 && !s.CEAddress.IsValid() {
		return fmt.Errorf("l3 site needs ce_address, static_routes or bgp: the PE must learn how to reach prefix %s", s.Prefix)
	}
	return nil
}
