package ietfl3vpn

import (
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/internal/vpnrc"
)

// This file reads the default dialect's listing back: where each site's
// access attaches (its port mapping and VLAN) and its L3 site, which
// drift reconcile compares with the link's points.

// place names where an access attaches, in a port mapping's terms: the
// device, the location (by default the device) and the bearer-reference
// as the mapping writes it ({vlan} unresolved).
func place(f map[string]string) string {
	loc := f["location-id"]
	if loc == "" {
		loc = f["device-id"]
	}
	return f["device-id"] + "|" + loc + "|" + f["bearer-reference"]
}

// listedSite is what the reader needs of a site as listed.
type listedSite struct {
	Devices struct {
		Device []struct {
			ID       string `json:"device-id"`
			Location string `json:"location"`
		} `json:"device"`
	} `json:"devices"`
	Accesses struct {
		Access []json.RawMessage `json:"site-network-access"`
	} `json:"site-network-accesses"`
}

type listedAccess struct {
	Device string `json:"device-reference"`
	Bearer struct {
		Reference string `json:"bearer-reference"`
	} `json:"bearer"`
	IP map[string]struct {
		Addresses struct {
			Provider string `json:"provider-address"`
			Customer string `json:"customer-address"`
			Length   int    `json:"prefix-length"`
		} `json:"addresses"`
	} `json:"ip-connection"`
	Protocols struct {
		List []struct {
			Static vpnrc.Static `json:"static"`
			BGP    *struct {
				AS uint32 `json:"autonomous-system"`
			} `json:"bgp"`
		} `json:"routing-protocol"`
	} `json:"routing-protocols"`
}

// attachments reads the sites of a listed service back through the
// WIM's port mappings: an access's device, the device's location and its
// bearer-reference name the mapping whose keys they are (a mapping's
// "{vlan}" matching the VLAN it was made with, which is the point's); one
// no mapping or two name has an empty Place, so the service's endpoints
// stay unknown (vpnrc).
func attachments(mappings []wimro.PortMapping) func(entries []vpnrc.Entry) []vpnrc.Attachment {
	return func(entries []vpnrc.Entry) []vpnrc.Attachment {
		var out []vpnrc.Attachment
		for _, e := range entries {
			if e.Member != "site" {
				continue
			}
			var site listedSite
			b, _ := json.Marshal(e.Body)
			if json.Unmarshal(b, &site) != nil {
				return nil
			}
			for _, raw := range site.Accesses.Access {
				var a listedAccess
				if json.Unmarshal(raw, &a) != nil {
					return nil
				}
				loc := ""
				for _, d := range site.Devices.Device {
					if d.ID == a.Device {
						loc = d.Location
					}
				}
				att := vpnrc.Attachment{L3: l3Of(a)}
				att.Place, att.VLAN = match(mappings, a.Device, loc, a.Bearer.Reference)
				out = append(out, att)
			}
		}
		return out
	}
}

// match finds the one mapping whose device, location and bearer an
// access has; "" when none or several do.
func match(mappings []wimro.PortMapping, device, location, bearer string) (string, int) {
	found, vlan := "", 0
	for _, m := range mappings {
		f := map[string]string{}
		for _, k := range []string{"device-id", "location-id", "bearer-reference"} {
			f[k], _ = m.WANServiceMappingInfo[k].(string)
		}
		p := place(f)
		v, ok := bearerVLAN(f["bearer-reference"], bearer)
		if !ok || p != device+"|"+location+"|"+f["bearer-reference"] {
			continue
		}
		if found != "" && found != p {
			return "", 0
		}
		found, vlan = p, v
	}
	return found, vlan
}

// bearerVLAN reads the VLAN a bearer-reference template made of a
// point's: 0 for a template without {vlan} that is the bearer itself.
func bearerVLAN(template, bearer string) (int, bool) {
	pre, _, templated := strings.Cut(template, VLANPlaceholder)
	if !templated {
		return 0, template == bearer
	}
	rest, ok := strings.CutPrefix(bearer, pre)
	if !ok {
		return 0, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	vlan, err := strconv.Atoi(rest[:n])
	if err != nil || vlan < 1 || vlan > 4094 || strings.ReplaceAll(template, VLANPlaceholder, rest[:n]) != bearer {
		return 0, false
	}
	return vlan, true
}

// l3Of is an access's L3 site as listed: the provider-address with the
// prefix-length, the customer-address (L3SM's CE, and BGP peer), the
// static routes and the BGP AS. Its Prefix stays zero: the routes carry
// it.
func l3Of(a listedAccess) *connectors.L3Site {
	site := &connectors.L3Site{}
	for _, f := range []string{"ipv4", "ipv6"} {
		ip, ok := a.IP[f]
		if !ok {
			continue
		}
		if pe, err := netip.ParseAddr(ip.Addresses.Provider); err == nil {
			site.PEAddress = netip.PrefixFrom(pe, ip.Addresses.Length)
		}
		site.CEAddress, _ = netip.ParseAddr(ip.Addresses.Customer)
	}
	for _, p := range a.Protocols.List {
		site.StaticRoutes = append(site.StaticRoutes, p.Static.Routes()...)
		if p.BGP != nil {
			site.BGP = &connectors.BGPPeer{PeerAS: p.BGP.AS, PeerAddress: site.CEAddress}
		}
	}
	return site
}
