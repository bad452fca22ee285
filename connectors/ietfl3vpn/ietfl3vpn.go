// Package ietfl3vpn provides WIM type "ietfl3vpn": a connector for
// controllers that take the IETF L3VPN service model (RFC 8299, "L3SM",
// module ietf-l3vpn-svc@2018-01-19) over RESTCONF (RFC 8040), the model
// ETSI TeraFlowSDN's L3VPN northbound takes. The default dialect,
// "rfc8299", sends what a strict RFC 8040 server accepts; the dialect
// "tfs" speaks TeraFlowSDN's own NBI (see "The tfs dialect"); every other
// section describes the default. The test emulators check every body with
// yanglint; neither was checked against a running controller.
//
// # API
//
// Under {wim_url}/restconf/data/ietf-l3vpn-svc:l3vpn-svc, in
// application/yang-data+json with list keys percent-encoded:
//
//	GET    vpn-services/vpn-service=<vpn-id>   look-up before create; status
//	POST   vpn-services, sites                 create (201; 409 is replaced)
//	PUT    vpn-services/vpn-service=<vpn-id>, sites/site=<site-id>   replace
//	DELETE sites/site=<site-id>, then vpn-services/vpn-service=<vpn-id>
//	GET    vpn-services, sites                 listing (reconcile), credentials check
//
// Errors are ietf-restconf:errors bodies, whose tags and messages end up
// in the error text; the HTTP status gives the kind.
//
// # Bodies
//
// The vpn-service: vpn-id "wimro-" + the service key (the WAN link's
// uuid), customer-name (setting customer_name), vpn-service-topology
// any-to-any. Each point is a site of its own, site-id <vpn-id>-<index of
// the point>, provider-managed, with the location and the device of its
// port mapping, and one site-network-access (the same id) on that device:
// bearer-reference from the mapping, ip-connection ipv4 (or ipv6) with
// address-allocation-type static-address and addresses (the PE address
// as provider-address, the CE address as customer-address, the link's
// prefix-length), routing-protocols static (the site's static routes, or
// without them and without BGP its prefix via the CE address) and bgp
// (the peer's autonomous-system and address family; L3SM peers with the
// access's customer-address, so a BGP peer address other than the CE
// address is refused), the mandatory service leaves svc-input-bandwidth,
// svc-output-bandwidth and svc-mtu, and vpn-attachment (the vpn-id,
// any-to-any-role). The sites reference the vpn-service, so it is
// created first and deleted last.
//
// # Port mappings
//
//	"device-id"         the device the access is on, as the controller names it (required)
//	"location-id"       its location (optional; default the device id)
//	"bearer-reference"  the bearer (feature bearer-reference); optional for an
//	                    untagged point; "{vlan}" in it stands for the VLAN
//
// L3SM has no VLAN leaf: a tagged (dot1q) access is a bearer of its own,
// so a dot1q point needs a bearer-reference with "{vlan}"
// ("pe1:ge-0/0/1.{vlan}" gives pe1:ge-0/0/1.100 on VLAN 100), and is
// refused, Permanent and naming the key, without one: the tag would be
// silently dropped.
//
// # QoS
//
// A bandwidth is both svc-input-bandwidth and svc-output-bandwidth (bit/s;
// without one, default_bandwidth_mbps: the model makes them mandatory). A
// latency is a custom QoS class "wimro" (features qos, qos-custom) for
// both directions with latency-boundary in ms and the whole
// bandwidth guaranteed (guaranteed-bw-percent 100).
//
// # Status
//
// L3SM has no operational state: the vpn-service existing (GET 200) is
// ACTIVE, DOWN when a site the create made is missing; 404 is NotFound.
//
// # Settings (account config, then WIM config)
//
//	timeout_ms, ca_file, insecure_skip_verify, bearer_token   see connectors/rest
//	customer_name           customer-name of the services ("wimro")
//	default_mtu             svc-mtu of the accesses (1500)
//	default_bandwidth_mbps  svc-input/output-bandwidth without a QoS bandwidth (1000)
//	dialect                 "rfc8299" (default) or "tfs" (below)
//	build_timeout_s         tfs: how long a service may answer 504 before it is ERROR (900)
//
// Listing reads each service's endpoints back: a site's access names its
// device, the device its location, and its bearer-reference is the one
// its mapping's template made of the point's VLAN ("{vlan}" read back as
// digits), which together name the one port mapping and the VLAN; and
// each access's L3 site (provider-address and prefix-length, the
// customer-address as CE and BGP peer, static routes, BGP AS). Drift
// reconcile compares both with the link's points.
//
// Create, edit, delete, listing and idempotency follow connectors/internal/vpnrc.
//
// # The tfs dialect
//
// TeraFlowSDN's L3VPN NBI (its NBI plugin ietf_l3vpn: L3VPN_Services.py,
// L3VPN_Service.py and Handlers.py) is no datastore. It takes the whole
// l3vpn-svc tree, vpn-service and sites, in one POST of vpn-services
// (201, or 500 with a list of {"error": …}; Flask's 500 when its handler
// raises on the body: Permanent); it answers GET vpn-services with {},
// GET vpn-services/vpn-service=<id>/ with 200 when the service is ACTIVE,
// 504 before (BUILD, ERROR after build_timeout_s) and 500 "VPN(<id>) not
// found in database" when unknown (NotFound), and DELETE with 204, known or
// not. It has no replace: the PUT of a vpn-service that later releases
// add (src/nbi/service/ietf_l3vpn, where the plugin moved from
// src/nbi/service/rest_server/nbi_plugins/ietf_l3vpn; the rest answers
// as before) takes the sites' bandwidths and nothing else, so it cannot
// move a point. So the dialect declares no edit and no listing
// (Capabilities.Narrow; the id follows from the key, ServiceID; its GET
// of a service gives the service-id only, so the sites cannot be read
// back and drift reconcile never compares them), and a
// create looks the vpn-id up and POSTs the tree; on a service that
// exists TeraFlowSDN refuses the vpn-service (ALREADY_EXISTS) and still
// updates the endpoints and QoS of the sites, which is how a repeated
// create brings it in line (endpoints it no longer needs are not removed).
//
// The body is what Handlers.py reads: per point a provider-managed site
// with site-level static routes (the point's, or its prefix via the CE),
// each with lan-tag "vlan<VLAN>" (TeraFlowSDN takes the access's VLAN from
// the route whose next-hop is on the access link), and one multipoint
// access: site-network-access-id is the endpoint's name on its device
// (mapping keys "device-id" and "endpoint-id", "location-id" optional),
// ipv4 static addresses, svc-mtu and both bandwidths, and the one QoS
// class it takes, "qos-realtime" in both directions with latency-boundary
// (65535 ms when no latency is asked: the class is mandatory there) and
// guaranteed-bw-percent 100. Roles are hub-role (first site) and
// spoke-role, the only ones it takes. It reads IPv4 and static routing
// only and needs a VLAN: BGP, IPv6 and untagged points are refused,
// Permanent, before anything is sent.
package ietfl3vpn

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/internal/vpnrc"
	"github.com/wimro/wimro/connectors/rest"
)

// Type is the WIM type this package registers.
const Type = "ietfl3vpn"

const module = "ietf-l3vpn-svc"

// Capabilities are ietfl3vpn's: L3VPNs of two sites or more, bandwidth
// and latency, edited in place, listed, with ids that follow from the key.
var Capabilities = connectors.Capabilities{
	Services:  []connectors.ServiceType{connectors.ServiceL3VPN},
	QoS:       []connectors.QoSField{connectors.QoSBandwidth, connectors.QoSLatency},
	Edit:      true,
	List:      true,
	ServiceID: vpnrc.ServiceID,
	// The tfs dialect edits nothing and lists nothing: TeraFlowSDN's NBI
	// has no replace (its later PUT changes bandwidths only), and answers
	// GET vpn-services with {}.
	Narrow: func(cfg connectors.Config) connectors.Capabilities {
		c := connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceL3VPN},
			QoS: []connectors.QoSField{connectors.QoSBandwidth, connectors.QoSLatency}}
		if d, err := cfg.StringSetting("dialect", DialectRFC8299); err != nil || d != DialectTFS {
			c.Edit, c.List = true, true
		}
		return c
	},
}

// Register adds the ietfl3vpn connector to r under Type.
func Register(r *connectors.Registry) {
	r.Register(Type, Factory, Capabilities)
}

type settings struct {
	vpnrc.Settings
	bandwidthMbps int
}

// Factory builds an ietfl3vpn connector. It contacts nothing; invalid
// settings are Permanent errors naming the setting.
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	common, err := vpnrc.ReadSettings(Type, cfg)
	if err != nil {
		return nil, err
	}
	s := settings{Settings: common}
	if s.bandwidthMbps, err = cfg.IntSetting("default_bandwidth_mbps", 1000); err != nil {
		return nil, err
	}
	if s.bandwidthMbps < 1 {
		return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"default_bandwidth_mbps\" must be positive, got %d", Type, s.bandwidthMbps)
	}
	dialect, err := cfg.StringSetting("dialect", DialectRFC8299)
	if err != nil {
		return nil, err
	}
	switch dialect {
	case DialectTFS:
		return newTFS(s, cfg)
	case DialectRFC8299:
		m := s.model()
		m.Place, m.Attachments = place, attachments(cfg.PortMappings)
		vc, err := vpnrc.New(m, cfg)
		if err != nil {
			return nil, err
		}
		rc, err := rest.New(Type, cfg)
		if err != nil {
			return nil, err
		}
		return &rfc8299{Connector: vc, rc: rc}, nil
	}
	return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"dialect\" must be %q or %q, got %q", Type, DialectRFC8299, DialectTFS, dialect)
}

// rfc8299 is the default dialect's connector: vpnrc's, with a
// credentials check that recognises TeraFlowSDN.
type rfc8299 struct {
	*vpnrc.Connector
	rc *rest.Client
}

// CheckCredentials is vpnrc's, then refuses a server that answers GET
// vpn-services with a bare {} (no module-qualified member, which RFC 8040
// requires), as TeraFlowSDN's NBI does: every create would fail there on
// the sites resource it lacks, so the error says to set the dialect.
func (c *rfc8299) CheckCredentials(ctx context.Context) error {
	if err := c.Connector.CheckCredentials(ctx); err != nil {
		return err
	}
	const op = "check credentials"
	path := "/restconf/data/" + module + ":l3vpn-svc/vpn-services"
	r, err := c.rc.Do(ctx, op, rest.Request{Method: http.MethodGet, Path: path, Accept: rest.MediaYANGJSON})
	if err != nil {
		return err
	}
	if r.OK() && strings.TrimSpace(string(r.Body)) == "{}" {
		e := connectors.Errorf(connectors.KindPermanent, "%s %s: GET %s answers {}, as TeraFlowSDN's L3VPN NBI does, not a RESTCONF datastore: set the WIM's or account's config \"dialect\" to %q", Type, op, path, DialectTFS)
		e.Status = r.Status
		return e
	}
	return nil
}

func (s settings) model() vpnrc.Model {
	return vpnrc.Model{
		Type: Type, Module: module, Top: "l3vpn-svc",
		Caps: Capabilities,
		Keys: []vpnrc.Key{{Name: "device-id", Required: true}, {Name: "location-id"}, {Name: "bearer-reference"}},
		Lists: []vpnrc.List{
			{Path: "/vpn-services", Member: "vpn-service", Owner: func(e map[string]any) string {
				id, _ := e["vpn-id"].(string)
				return id
			}},
			{Path: "/sites", Member: "site", Owner: siteOwner},
		},
		Check:   check,
		Entries: s.entries,
		Status: func(string, map[string]any) connectors.ServiceStatus {
			return connectors.ServiceStatus{Status: connectors.StatusActive}
		},
	}
}

// siteOwner is the vpn-id the first access of a site is attached to.
func siteOwner(site map[string]any) string {
	accesses, _ := site["site-network-accesses"].(map[string]any)
	list, _ := accesses["site-network-access"].([]any)
	if len(list) == 0 {
		return ""
	}
	a, _ := list[0].(map[string]any)
	att, _ := a["vpn-attachment"].(map[string]any)
	id, _ := att["vpn-id"].(string)
	return id
}

// check refuses a BGP peer other than the CE address (L3SM peers with
// the access's customer-address and has no leaf for another), and a VLAN
// the bearer-reference cannot name (L3SM has no VLAN leaf).
func check(_ connectors.Request, eps []vpnrc.Endpoint) error {
	for i, ep := range eps {
		if err := checkVLAN(ep); err != nil {
			return connectors.Errorf(connectors.KindPermanent, "%s: connection point %d (%s): %v", Type, i, ep.Point.ServiceEndpointID, err)
		}
		l3 := ep.Point.L3
		if l3.BGP == nil {
			continue
		}
		if l3.CEAddress.IsValid() && l3.CEAddress != l3.BGP.PeerAddress {
			return connectors.Errorf(connectors.KindPermanent, "%s: connection point %d (%s): l3 bgp peer_address %s is not the ce_address %s: L3SM peers with the access's customer-address only", Type, i, ep.Point.ServiceEndpointID, l3.BGP.PeerAddress, l3.CEAddress)
		}
	}
	return nil
}

// VLANPlaceholder in a mapping's bearer-reference stands for the point's
// VLAN: L3SM has no VLAN leaf, so a tagged access is a bearer of its own
// (a sub-interface, "pe1:ge-0/0/1.{vlan}").
const VLANPlaceholder = "{vlan}"

// checkVLAN: a dot1q point needs a bearer-reference naming its VLAN, an
// untagged one a bearer-reference without the placeholder; otherwise the
// tag would be silently dropped, or made up.
func checkVLAN(ep vpnrc.Endpoint) error {
	bearer := ep.Fields["bearer-reference"]
	templated := strings.Contains(bearer, VLANPlaceholder)
	switch {
	case ep.Point.Encapsulation == connectors.EncapDot1Q && !templated:
		return fmt.Errorf("vlan %d cannot be carried: L3SM has no VLAN leaf, so the port mapping's \"bearer-reference\" must name it with %s (e.g. \"pe1:ge-0/0/1.%s\")", ep.Point.VLAN, VLANPlaceholder, VLANPlaceholder)
	case ep.Point.Encapsulation != connectors.EncapDot1Q && templated:
		return fmt.Errorf("the port mapping's \"bearer-reference\" %q names a VLAN (%s), but the point is untagged", bearer, VLANPlaceholder)
	}
	return nil
}

func q(identity string) string { return module + ":" + identity }

// entries are the vpn-service and one site per point.
func (s settings) entries(id string, req connectors.Request, eps []vpnrc.Endpoint) []vpnrc.Entry {
	out := []vpnrc.Entry{{List: "/vpn-services", Member: "vpn-service", Key: id, Body: map[string]any{
		"vpn-id":               id,
		"customer-name":        s.Customer,
		"vpn-service-topology": q("any-to-any"),
	}}}
	for i, ep := range eps {
		siteID := id + "-" + strconv.Itoa(i)
		out = append(out, vpnrc.Entry{List: "/sites", Member: "site", Key: siteID, Body: s.site(id, siteID, ep, req.QoS)})
	}
	return out
}

// site is the site of one point, with its one access.
func (s settings) site(vpnID, siteID string, ep vpnrc.Endpoint, qos connectors.QoS) map[string]any {
	l3 := ep.Point.L3
	device := ep.Fields["device-id"]
	location := ep.Fields["location-id"]
	if location == "" {
		location = device
	}
	addresses := map[string]any{"provider-address": l3.PEAddress.Addr().String(), "prefix-length": l3.PEAddress.Bits()}
	switch {
	case l3.CEAddress.IsValid():
		addresses["customer-address"] = l3.CEAddress.String()
	case l3.BGP != nil:
		addresses["customer-address"] = l3.BGP.PeerAddress.String()
	}
	f := vpnrc.Family(l3)
	mbps := qos.BandwidthMbps
	if mbps == 0 {
		mbps = s.bandwidthMbps
	}
	bps := strconv.FormatUint(uint64(mbps)*1_000_000, 10) // uint64: a string in RFC 7951
	svc := map[string]any{"svc-input-bandwidth": bps, "svc-output-bandwidth": bps, "svc-mtu": s.MTU}
	if qos.LatencyMs != 0 {
		svc["qos"] = map[string]any{"qos-profile": map[string]any{"classes": map[string]any{"class": []any{map[string]any{
			"class-id":  "wimro",
			"direction": q("both"),
			"latency":   map[string]any{"latency-boundary": qos.LatencyMs},
			"bandwidth": map[string]any{"guaranteed-bw-percent": "100"},
		}}}}}
	}
	access := map[string]any{
		"site-network-access-id":   siteID,
		"site-network-access-type": q("point-to-point"),
		"device-reference":         device,
		"ip-connection":            map[string]any{f: map[string]any{"address-allocation-type": q("static-address"), "addresses": addresses}},
		"service":                  svc,
		"routing-protocols":        map[string]any{"routing-protocol": routing(l3)},
		"vpn-attachment":           map[string]any{"vpn-id": vpnID, "site-role": q("any-to-any-role")},
	}
	if b := ep.Fields["bearer-reference"]; b != "" {
		access["bearer"] = map[string]any{"bearer-reference": strings.ReplaceAll(b, VLANPlaceholder, strconv.Itoa(ep.Point.VLAN))}
	}
	return map[string]any{
		"site-id":               siteID,
		"management":            map[string]any{"type": q("provider-managed")},
		"locations":             map[string]any{"location": []any{map[string]any{"location-id": location}}},
		"devices":               map[string]any{"device": []any{map[string]any{"device-id": device, "location": location}}},
		"site-network-accesses": map[string]any{"site-network-access": []any{access}},
	}
}

// routing is the access's routing-protocols (keyed by type: one static,
// one bgp).
func routing(l3 *connectors.L3Site) []any {
	f := vpnrc.Family(l3)
	lans := vpnrc.StaticLANs(l3)
	var out []any
	if len(lans) > 0 {
		out = append(out, map[string]any{"type": q("static"),
			"static": map[string]any{"cascaded-lan-prefixes": map[string]any{f + "-lan-prefixes": lans}}})
	}
	if l3.BGP != nil {
		out = append(out, map[string]any{"type": q("bgp"), "bgp": map[string]any{
			"autonomous-system": l3.BGP.PeerAS,
			"address-family":    []any{f},
		}})
	}
	return out
}
