// Package l3nm provides WIM type "l3nm": a connector for controllers that
// take the IETF L3VPN network model (RFC 9182, "L3NM", module
// ietf-l3vpn-ntw@2022-02-14 with ietf-vpn-common@2022-02-11, RFC 9181)
// over RESTCONF (RFC 8040), as Cisco NSO / Crosswork Network Controller
// (its IETF L3NM service) and Nokia NSP (its RESTCONF northbound for
// ietf-l3vpn-ntw) take it: the published model's shapes, without the
// vendors' augmentations. Bodies are what a strict (libyang-validated)
// server accepts; the test emulator checks every one with yanglint. The
// shapes follow RFC 9182's model itself (one vpn-service with vpn-nodes
// by ne-id, vpn-network-accesses with ip-connection and
// routing-protocols). Setting dialect "cnc" follows Cisco Crosswork
// Network Controller's "IETF L3VPN Service Config API" (7.1.0): a create
// is a PUT of the entry, the only create it documents, and the body
// leaves out what Cisco's deviations of the model remove (below); both
// forms are RFC 9182-valid. Neither was run against a controller.
//
// # API
//
// One list entry per service, under
// {wim_url}/restconf/data/ietf-l3vpn-ntw:l3vpn-ntw, in
// application/yang-data+json with list keys percent-encoded:
//
//	GET    vpn-services/vpn-service=<vpn-id>   look-up before create; status
//	POST   vpn-services                        create (201; 409 is replaced)
//	PUT    vpn-services/vpn-service=<vpn-id>   replace: an adopted create, an edit;
//	                                           with dialect cnc the create too (201)
//	DELETE vpn-services/vpn-service=<vpn-id>   204; 404 is already gone
//	GET    vpn-services                        listing (reconcile), credentials check
//
// Errors are ietf-restconf:errors bodies, whose tags and messages end up
// in the error text; the HTTP status gives the kind.
//
// # Body
//
// The vpn-service: vpn-id "wimro-" + the service key (the WAN link's
// uuid), customer-name (setting customer_name), vpn-type
// vpn-common:l3vpn, vpn-service-topology any-to-any, admin-status
// admin-up, and one vpn-instance-profile (profile-id the vpn-id, rd-auto,
// the address families of the sites) that every vpn-node activates. Each
// point is a vpn-network-access (id <vpn-id>-<index of the point>) under
// the vpn-node of its PE (vpn-node-id and ne-id from the mapping's
// "ne-id"): interface-id and connection/bearer-reference from the mapping,
// encapsulation dot1q (tag-type c-vlan, the VLAN as cvlan-id) or
// untagged-int; ip-connection/ipv4 (or ipv6) with the PE address as
// local-address, the link's prefix-length, address-allocation-type
// static-address and the CE address as the primary customer-address;
// routing-protocols with a static protocol (the site's static routes, or
// without them and without BGP its prefix via the CE address as
// cascaded-lan-prefixes) and a bgp-routing one when the site peers (peer-as,
// neighbor, the address family); service/mtu (setting default_mtu).
// Setting local_as is each vpn-node's local-as (CNC's L3VPN function pack
// refuses a PE without a BGP process unless it is given, and renders one
// with it).
//
// Dialect cnc sends the same but for what CNC's model lacks: no ne-id
// (its vpn-node-id, a reference to NSO's devices, names the PE: the
// mapping's "ne-id" must be NSO's device name) and an ip-connection of
// local-address and prefix-length only (no address-allocation-type, no
// customer address: the CE reaches the controller as the static routes'
// next-hop).
//
// # Port mappings
//
//	"ne-id"             the PE as the controller names it (required)
//	"interface-id"      the PE's interface of the access (optional)
//	"bearer-reference"  the bearer (optional; feature bearer-reference)
//
// # QoS
//
// A bandwidth is the access's service/pe-to-ce-bandwidth and
// ce-to-pe-bandwidth (bit/s; features inbound-bw, outbound-bw). L3NM
// carries no latency outside provider QoS profiles, which wimro does not
// write: latency is refused, Permanent.
//
// # Status
//
// GET of the vpn-service: its status/oper-status/status (RFC 9181
// operational state) op-up is ACTIVE, op-down DOWN, op-unknown BUILD (the
// controller has not brought it up yet); none is ACTIVE, the service
// existing as configured (CNC answers its config API without operational
// state, which it serves in a separate API); 404 is NotFound.
//
// # Settings (account config, then WIM config)
//
//	timeout_ms, ca_file, insecure_skip_verify, bearer_token, auth   see connectors/rest
//	customer_name   customer-name of the services ("wimro")
//	default_mtu     service/mtu of the accesses (1500)
//	local_as        the PEs' AS number, each vpn-node's local-as (none)
//	dialect         "rfc9182" (default) or "cnc" (above)
//
// Listing reads each service's endpoints back: an access's ne-id,
// interface-id and bearer-reference (its vpn-node-id where it has no
// ne-id) name the port mapping whose keys they are, its cvlan-id the
// VLAN; and each access's L3 site: the PE
// address (local-address, prefix-length), the CE address (the primary
// customer-address), the static routes (cascaded-lan-prefixes) and the
// BGP peer (peer-as, neighbor). Drift reconcile compares both with the
// link's points (connectors.Service.L3).
//
// Create, edit, delete, listing and idempotency follow connectors/internal/vpnrc.
package l3nm

import (
	"encoding/json"
	"math"
	"net/netip"
	"slices"
	"strconv"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/internal/vpnrc"
)

// Type is the WIM type this package registers.
const Type = "l3nm"

const module = "ietf-l3vpn-ntw"

// Capabilities are l3nm's: L3VPNs of two sites or more, a bandwidth,
// edited in place, listed, with ids that follow from the key.
var Capabilities = connectors.Capabilities{
	Services:  []connectors.ServiceType{connectors.ServiceL3VPN},
	QoS:       []connectors.QoSField{connectors.QoSBandwidth},
	Edit:      true,
	List:      true,
	ServiceID: vpnrc.ServiceID,
}

// Register adds the l3nm connector to r under Type.
func Register(r *connectors.Registry) {
	r.Register(Type, Factory, Capabilities)
}

// Dialects (setting dialect).
const (
	// DialectRFC9182 is RFC 9182 as published (default).
	DialectRFC9182 = "rfc9182"
	// DialectCNC is the form Cisco Crosswork Network Controller takes:
	// creation by PUT, and none of the leaves its deviations of the
	// model remove.
	DialectCNC = "cnc"
)

type settings struct {
	vpnrc.Settings
	dialect string
	localAS int64 // 0: none
}

// Factory builds an l3nm connector. It contacts nothing; invalid settings
// are Permanent errors naming the setting.
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	s, err := readSettings(cfg)
	if err != nil {
		return nil, err
	}
	return vpnrc.New(s.model(), cfg)
}

func readSettings(cfg connectors.Config) (settings, error) {
	var s settings
	var err error
	if s.Settings, err = vpnrc.ReadSettings(Type, cfg); err != nil {
		return s, err
	}
	if s.dialect, err = vpnrc.Dialect(Type, cfg, DialectRFC9182, DialectCNC); err != nil {
		return s, err
	}
	as, err := cfg.IntSetting("local_as", 0)
	if err != nil {
		return s, err
	}
	// local-as is an inet:as-number, a uint32; 0 is reserved (RFC 7607).
	if as < 0 || int64(as) > math.MaxUint32 {
		return s, connectors.Errorf(connectors.KindPermanent, "%s: config \"local_as\" must be an AS number in 1..4294967295 (0: none), got %d", Type, as)
	}
	s.localAS = int64(as)
	return s, nil
}

func (s settings) model() vpnrc.Model {
	return vpnrc.Model{
		Type: Type, Module: module, Top: "l3vpn-ntw",
		Caps: Capabilities,
		Keys: []vpnrc.Key{{Name: "ne-id", Required: true}, {Name: "interface-id"}, {Name: "bearer-reference"}},
		Lists: []vpnrc.List{{Path: "/vpn-services", Member: "vpn-service", Owner: func(e map[string]any) string {
			id, _ := e["vpn-id"].(string)
			return id
		}}},
		Check:       check,
		Entries:     s.entries,
		Status:      status,
		Place:       place,
		Attachments: vpnrc.NodeL3Attachments(place, siteOf),
		CreateByPut: s.dialect == DialectCNC,
		NoCEAddress: s.dialect == DialectCNC,
	}
}

// place names where an access attaches: its PE, interface and bearer.
func place(f map[string]string) string {
	return f["ne-id"] + "|" + f["interface-id"] + "|" + f["bearer-reference"]
}

// check refuses latency by name: the model has no leaf for it.
func check(req connectors.Request, _ []vpnrc.Endpoint) error {
	if req.QoS.LatencyMs != 0 {
		return connectors.Errorf(connectors.KindPermanent, "%s: latency cannot be honoured: L3NM keeps latency in provider QoS profiles, which wimro does not write", Type)
	}
	return nil
}

var vc = vpnrc.VC

// entries is the one vpn-service entry of a request.
func (s settings) entries(id string, req connectors.Request, eps []vpnrc.Endpoint) []vpnrc.Entry {
	var families []string
	for _, ep := range eps {
		if f := vpnrc.Family(ep.Point.L3); !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	afs := make([]any, len(families))
	for i, f := range families {
		afs[i] = map[string]any{"address-family": vc(f)}
	}
	vpnNodes := vpnrc.Nodes(eps, func(string) map[string]any {
		n := map[string]any{"active-vpn-instance-profiles": map[string]any{"vpn-instance-profile": []any{map[string]any{"profile-id": id}}}}
		if s.localAS != 0 {
			n["local-as"] = s.localAS
		}
		return n
	}, func(i int, ep vpnrc.Endpoint) map[string]any { return s.access(id, i, ep, req.QoS) })
	if s.dialect == DialectCNC {
		// CNC's vpn-node-id names the PE (a reference to NSO's devices)
		// and its model has no ne-id.
		for _, n := range vpnNodes {
			delete(n.(map[string]any), "ne-id")
		}
	}
	body := map[string]any{
		"vpn-id":               id,
		"customer-name":        s.Customer,
		"vpn-type":             vc("l3vpn"),
		"vpn-service-topology": vc("any-to-any"),
		"status":               vpnrc.AdminUp(),
		"vpn-instance-profiles": map[string]any{"vpn-instance-profile": []any{map[string]any{
			"profile-id":     id,
			"rd-auto":        map[string]any{"auto": []any{nil}}, // type empty is [null] in RFC 7951
			"address-family": afs,
		}}},
		"vpn-nodes": map[string]any{"vpn-node": vpnNodes},
	}
	return []vpnrc.Entry{{List: "/vpn-services", Member: "vpn-service", Key: id, Body: body}}
}

// access is the vpn-network-access of point i.
func (s settings) access(id string, i int, ep vpnrc.Endpoint, q connectors.QoS) map[string]any {
	p, l3 := ep.Point, ep.Point.L3
	encap := map[string]any{"type": vc("untagged-int")}
	if p.Encapsulation == connectors.EncapDot1Q {
		encap = map[string]any{"type": vc("dot1q"), "dot1q": map[string]any{"tag-type": vc("c-vlan"), "cvlan-id": p.VLAN}}
	}
	conn := map[string]any{"encapsulation": encap}
	if b := ep.Fields["bearer-reference"]; b != "" {
		conn["bearer-reference"] = b
	}
	ip := map[string]any{
		"local-address": l3.PEAddress.Addr().String(),
		"prefix-length": l3.PEAddress.Bits(),
	}
	// CNC's model keeps local-address and prefix-length only: the CE
	// address still reaches it as the static routes' next-hop.
	if s.dialect != DialectCNC {
		ip["address-allocation-type"] = module + ":static-address"
	}
	if l3.CEAddress.IsValid() && s.dialect != DialectCNC {
		ip["primary-address"] = "ce"
		ip["address"] = []any{map[string]any{"address-id": "ce", "customer-address": l3.CEAddress.String()}}
	}
	f := vpnrc.Family(l3)
	svc := map[string]any{"mtu": s.MTU}
	if q.BandwidthMbps != 0 {
		bps := strconv.FormatUint(uint64(q.BandwidthMbps)*1_000_000, 10) // uint64: a string in RFC 7951
		svc["pe-to-ce-bandwidth"], svc["ce-to-pe-bandwidth"] = bps, bps
	}
	a := map[string]any{
		"id":                      id + "-" + strconv.Itoa(i),
		"description":             "wimro endpoint " + p.ServiceEndpointID,
		"vpn-network-access-type": vc("point-to-point"),
		"vpn-instance-profile":    id,
		"status":                  vpnrc.AdminUp(),
		"connection":              conn,
		"ip-connection":           map[string]any{f: ip},
		"routing-protocols":       map[string]any{"routing-protocol": routing(l3)},
		"service":                 svc,
	}
	if itf := ep.Fields["interface-id"]; itf != "" {
		a["interface-id"] = itf
	}
	return a
}

// routing is the access's routing-protocols: the static routes (by
// default the prefix via the CE address, when the site neither gives
// routes nor peers), and BGP when the site peers.
func routing(l3 *connectors.L3Site) []any {
	f := vpnrc.Family(l3)
	lans := vpnrc.StaticLANs(l3)
	var out []any
	if len(lans) > 0 {
		out = append(out, map[string]any{"id": "static", "type": vc("static-routing"),
			"static": map[string]any{"cascaded-lan-prefixes": map[string]any{f + "-lan-prefixes": lans}}})
	}
	if l3.BGP != nil {
		out = append(out, map[string]any{"id": "bgp", "type": vc("bgp-routing"), "bgp": map[string]any{
			"peer-as":        l3.BGP.PeerAS,
			"address-family": vc(f),
			"neighbor":       []any{l3.BGP.PeerAddress.String()},
		}})
	}
	return out
}

// status reads RFC 9181's oper-status of the vpn-service.
func status(_ string, svc map[string]any) connectors.ServiceStatus {
	switch s := vpnrc.OperOf(svc); s {
	case "op-up":
		return connectors.ServiceStatus{Status: connectors.StatusActive}
	case "op-down":
		return connectors.ServiceStatus{Status: connectors.StatusDown, Message: "the controller reports the vpn-service's oper-status op-down"}
	case "":
		// No operational state (CNC keeps it in a separate operational
		// API): the service is read by its existence, as configured.
		return connectors.ServiceStatus{Status: connectors.StatusActive, Info: map[string]any{"oper-status": "not reported"}}
	default:
		return connectors.ServiceStatus{Status: connectors.StatusBuild, Message: "the controller reports the vpn-service's oper-status " + s}
	}
}

// siteOf reads an access's L3 site back as listed (what access and
// routing write); its Prefix stays zero: the routes carry it.
func siteOf(access map[string]any) *connectors.L3Site {
	type addresses struct {
		Local   string `json:"local-address"`
		Length  int    `json:"prefix-length"`
		Primary string `json:"primary-address"`
		Address []struct {
			ID       string `json:"address-id"`
			Customer string `json:"customer-address"`
		} `json:"address"`
	}
	var a struct {
		IP        map[string]addresses `json:"ip-connection"`
		Protocols struct {
			List []struct {
				Static vpnrc.Static `json:"static"`
				BGP    *struct {
					PeerAS   uint32   `json:"peer-as"`
					Neighbor []string `json:"neighbor"`
				} `json:"bgp"`
			} `json:"routing-protocol"`
		} `json:"routing-protocols"`
	}
	site := &connectors.L3Site{}
	b, _ := json.Marshal(access)
	if json.Unmarshal(b, &a) != nil {
		return site // what cannot be read differs from what was asked
	}
	for _, f := range []string{"ipv4", "ipv6"} {
		ip, ok := a.IP[f]
		if !ok {
			continue
		}
		if pe, err := netip.ParseAddr(ip.Local); err == nil {
			site.PEAddress = netip.PrefixFrom(pe, ip.Length)
		}
		for _, addr := range ip.Address {
			if ce, err := netip.ParseAddr(addr.Customer); err == nil && (addr.ID == ip.Primary || !site.CEAddress.IsValid()) {
				site.CEAddress = ce
			}
		}
	}
	for _, p := range a.Protocols.List {
		site.StaticRoutes = append(site.StaticRoutes, p.Static.Routes()...)
		if p.BGP != nil {
			site.BGP = &connectors.BGPPeer{PeerAS: p.BGP.PeerAS}
			if len(p.BGP.Neighbor) > 0 {
				site.BGP.PeerAddress, _ = netip.ParseAddr(p.BGP.Neighbor[0])
			}
		}
	}
	return site
}
