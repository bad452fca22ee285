// Package l2nm provides WIM type "l2nm": a connector for controllers that
// take the L2VPN Network Model (RFC 9291, module ietf-l2vpn-ntw@2022-09-20,
// with the identities of ietf-vpn-common@2022-02-11, RFC 9181) over
// RESTCONF (RFC 8040), as Cisco NSO's and Crosswork Network Controller's
// IETF L2NM service packages and Nokia NSP's IETF L2NM northbound do.
//
// # API
//
// Everything lives under the RESTCONF root (RFC 8040 §3.1: the WIM URL
// itself when its path ends in /restconf, else the root its host-meta
// names, else /restconf) + /data/ietf-l2vpn-ntw:l2vpn-ntw, in
// application/yang-data+json, module-qualified, list keys
// percent-encoded:
//
//	GET    vpn-services/vpn-service=<vpn-id>   look-up before a create, status, edit
//	POST   vpn-services                        create ({"ietf-l2vpn-ntw:vpn-service": [entry]}); 201
//	                                           (dialect cnc: PUT of the entry, 201, as
//	                                           CNC's L2VPN API documents no POST)
//	PUT    vpn-services/vpn-service=<vpn-id>   replace: an edit, or a create that finds another service; 201 or 204
//	DELETE vpn-services/vpn-service=<vpn-id>   204; 404 (or 409 data-missing) is gone already
//	GET    vpn-services                        list (reconcile); 204, or 404 data-missing, is empty
//
// Errors are ietf-restconf:errors bodies: their tags and messages are in
// the error text; the HTTP status gives the kind
// (connectors.KindForStatus).
//
// # Body
//
// One vpn-service per WAN link: vpn-id "wimro-" + the service key (the
// WAN link's uuid), customer-name, vpn-description naming the link,
// vpn-type (eline_vpn_type for an ELINE, elan_vpn_type for an ELAN),
// vpn-service-topology any-to-any, admin-status admin-up. The points
// become vpn-nodes, one per PE (ne-id), each holding the
// vpn-network-accesses of its points: id <vpn-id>-<index of the point>,
// interface-id, admin-up, connection/encapsulation (dot1q: encap-type
// dot1q, tag-type c-vlan and the VLAN as cvlan-id; none: untagged-int),
// connection/bearer-reference when the mapping gives one (feature
// bearer-reference), and service/mtu (default_mtu). Identities are
// qualified with their module (ietf-vpn-common:…).
//
// # QoS
//
// A bandwidth (Mbit/s) is each access's service/svc-pe-to-ce-bandwidth
// and svc-ce-to-pe-bandwidth (features inbound-bw and outbound-bw): one
// entry of bw-type bw-per-port with cir in bit/s (a uint64, so a string
// in RFC 7951 JSON). L2NM has no latency leaf (latency lives in the QoS
// profiles of vpn-profiles, which the operator defines): a latency is
// refused by name (Capabilities.QoS).
//
// # Port mappings
//
// A point's wan_service_mapping_info names its attachment on the
// controller (CheckMapping refuses a mapping without them when it is
// written):
//
//	"ne-id"             the PE's network element (required): the vpn-node's ne-id and vpn-node-id
//	"interface-id"      the PE's interface towards the datacenter (required)
//	"bearer-reference"  the bearer (optional)
//
// # Settings (account config, then WIM config)
//
//	timeout_ms, ca_file, insecure_skip_verify, bearer_token, auth   see connectors/rest
//	customer_name   customer-name of the services ("wimro")
//	default_mtu     service/mtu of the accesses (1500)
//	eline_vpn_type  vpn-type of an ELINE: vpws (default) or vpws-evpn
//	elan_vpn_type   vpn-type of an ELAN: vpls (default), mpls-evpn, pbb-evpn or vxlan-evpn
//	dialect         "rfc9291" (default) or "cnc": create with PUT of the entry
//
// Basic auth with the account's user and password, or bearer_token, or
// (auth "crosswork", as Cisco CNC asks) a JWT from Crosswork's single
// sign-on; TLS
// trusts ca_file's CAs (connectors/rest).
//
// # Idempotency
//
// The client chooses the vpn-id, which follows from the key
// (Capabilities.ServiceID). A create looks the vpn-service up first: one
// that holds what the create would write is adopted, one that differs
// (other points or bandwidth, left by an earlier create) is replaced with
// PUT, and a missing one is POSTed; a 409 on the POST (another process
// made it meanwhile) is handled as a found one. Changes to one vpn-service
// are serialised (connectors.Config.MutationLock). ListServices and
// ClearAll only see vpn-ids starting with "wimro-". Edit reads the service
// (its vpn-type keeps an ELINE point-to-point; its bandwidth is kept) and
// PUTs the new entry in its place.
//
// Create, edit, delete, listing and idempotency follow
// connectors/internal/vpnrc (a Model with DiscoverRoot, Adopt and
// SingleEntry).
//
// # Status
//
// GET of the vpn-service. Its status/oper-status (config false in
// ietf-vpn-common) gives the status where the controller reports it: op-up
// is ACTIVE, op-unknown BUILD, op-down DOWN naming the vpn-nodes and
// accesses reported down. A controller that reports no oper-status is
// read by existence: 200 is ACTIVE. 404 is a NotFound error.
package l2nm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/internal/vpnrc"
)

// Type is the WIM type this package registers.
const Type = "l2nm"

// IDPrefix starts every vpn-id wimro makes; the rest is the service key.
const IDPrefix = vpnrc.IDPrefix

const module = "ietf-l2vpn-ntw"

// The vpn-type identities (ietf-vpn-common) eline_vpn_type and
// elan_vpn_type may name.
var (
	elineTypes = []string{"vpws", "vpws-evpn"}
	elanTypes  = []string{"vpls", "mpls-evpn", "pbb-evpn", "vxlan-evpn"}
)

// Register adds the l2nm connector to r under Type.
func Register(r *connectors.Registry) {
	r.Register(Type, Factory, Capabilities)
}

// Capabilities are l2nm's: ELINE (vpws) and ELAN (vpls, multipoint), a
// bandwidth (the accesses' bandwidth leaves; L2NM has none for latency),
// edited in place (PUT), listed, with ids that follow from the key.
var Capabilities = connectors.Capabilities{
	Services:  []connectors.ServiceType{connectors.ServiceELINE, connectors.ServiceELAN},
	QoS:       []connectors.QoSField{connectors.QoSBandwidth},
	Edit:      true,
	List:      true,
	ServiceID: vpnrc.ServiceID,
}

// Dialects (setting dialect).
const (
	// DialectRFC9291 creates with POST under the list, as RFC 8040
	// servers take it (default).
	DialectRFC9291 = "rfc9291"
	// DialectCNC creates with PUT on the entry: Cisco Crosswork Network
	// Controller's L2VPN API documents no POST.
	DialectCNC = "cnc"
)

type settings struct {
	vpnrc.Settings
	elineType string // module-qualified
	elanType  string
	dialect   string
}

// Factory builds an l2nm connector. It contacts nothing; invalid settings
// are Permanent errors naming the setting.
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	set, err := readSettings(cfg)
	if err != nil {
		return nil, err
	}
	return vpnrc.New(set.model(), cfg)
}

func readSettings(cfg connectors.Config) (settings, error) {
	var s settings
	var err error
	if s.Settings, err = vpnrc.ReadSettings(Type, cfg); err != nil {
		return s, err
	}
	pick := func(setting string, allowed []string) (string, error) {
		v, err := cfg.StringSetting(setting, allowed[0])
		if err != nil {
			return "", err
		}
		if name := strings.TrimPrefix(v, vpnrc.Common+":"); slices.Contains(allowed, name) {
			return vpnrc.VC(name), nil
		}
		return "", connectors.Errorf(connectors.KindPermanent, "%s: config %q must be one of %s (vpn-type identities of %s), got %q", Type, setting, strings.Join(allowed, ", "), vpnrc.Common, v)
	}
	if s.elineType, err = pick("eline_vpn_type", elineTypes); err != nil {
		return s, err
	}
	if s.elanType, err = pick("elan_vpn_type", elanTypes); err != nil {
		return s, err
	}
	if s.dialect, err = vpnrc.Dialect(Type, cfg, DialectRFC9291, DialectCNC); err != nil {
		return s, err
	}
	return s, nil
}

func (s settings) model() vpnrc.Model {
	return vpnrc.Model{
		Type: Type, Module: module, Top: "l2vpn-ntw",
		Caps: Capabilities,
		Keys: []vpnrc.Key{{Name: "ne-id", Required: true}, {Name: "interface-id", Required: true}, {Name: "bearer-reference"}},
		Lists: []vpnrc.List{{Path: "/vpn-services", Member: "vpn-service", Owner: func(e map[string]any) string {
			id, _ := e["vpn-id"].(string)
			return id
		}}},
		Entries:      s.entries,
		Status:       status,
		Place:        place,
		Attachments:  vpnrc.NodeAttachments(place),
		DiscoverRoot: true,
		Adopt:        true,
		SingleEntry:  true,
		CreateByPut:  s.dialect == DialectCNC,
		Edit:         edit,
		Info:         connInfo,
		ListInfo:     listInfo,
	}
}

// place names where an access attaches: its PE and interface.
func place(f map[string]string) string { return f["ne-id"] + "|" + f["interface-id"] }

// accessID is the id of the vpn-network-access of the i-th point.
func accessID(vpnID string, i int) string { return fmt.Sprintf("%s-%d", vpnID, i) }

// entries is the one vpn-service entry of req under vpn-id id. Create
// and edit both build it from a Request.
func (s settings) entries(id string, req connectors.Request, eps []vpnrc.Endpoint) []vpnrc.Entry {
	vpnType := s.elineType
	if req.Type == connectors.ServiceELAN {
		vpnType = s.elanType
	}
	nodes := vpnrc.Nodes(eps, func(string) map[string]any { return map[string]any{} },
		func(i int, ep vpnrc.Endpoint) map[string]any { return s.access(id, i, ep, req.QoS) })
	body := map[string]any{
		"vpn-id":               id,
		"vpn-description":      "wimro WAN link " + req.Key,
		"customer-name":        s.Customer,
		"vpn-type":             vpnType,
		"vpn-service-topology": vpnrc.VC("any-to-any"),
		"status":               vpnrc.AdminUp(),
		"vpn-nodes":            map[string]any{"vpn-node": nodes},
	}
	return []vpnrc.Entry{{List: "/vpn-services", Member: "vpn-service", Key: id, Body: body}}
}

// access is the vpn-network-access of the i-th point.
func (s settings) access(vpnID string, i int, ep vpnrc.Endpoint, q connectors.QoS) map[string]any {
	p := ep.Point
	encap := map[string]any{"encap-type": vpnrc.VC("untagged-int")}
	if p.Encapsulation == connectors.EncapDot1Q {
		encap = map[string]any{"encap-type": vpnrc.VC("dot1q"), "dot1q": map[string]any{"tag-type": vpnrc.VC("c-vlan"), "cvlan-id": p.VLAN}}
	}
	conn := map[string]any{"encapsulation": encap}
	if b := ep.Fields["bearer-reference"]; b != "" {
		conn["bearer-reference"] = b
	}
	svc := map[string]any{"mtu": s.MTU}
	if q.BandwidthMbps != 0 {
		bw := func() []any {
			return []any{map[string]any{
				"bw-type": vpnrc.VC("bw-per-port"),
				// uint64: a string in RFC 7951 JSON.
				"cir": strconv.FormatUint(uint64(q.BandwidthMbps)*1_000_000, 10),
			}}
		}
		svc["svc-pe-to-ce-bandwidth"] = map[string]any{"pe-to-ce-bandwidth": bw()}
		svc["svc-ce-to-pe-bandwidth"] = map[string]any{"ce-to-pe-bandwidth": bw()}
	}
	return map[string]any{
		"id":           accessID(vpnID, i),
		"description":  "wimro service endpoint " + p.ServiceEndpointID,
		"interface-id": ep.Fields["interface-id"],
		"status":       vpnrc.AdminUp(),
		"connection":   conn,
		"service":      svc,
	}
}

// BandwidthOf reads the bandwidth (Mbit/s) a vpn-service entry asks: the
// cir of its first access's PE-to-CE bw-per-port entry; 0 for none.
func BandwidthOf(svc map[string]any) int {
	nodes := entries(svc, "vpn-nodes", "vpn-node")
	if len(nodes) == 0 {
		return 0
	}
	accesses := entries(nodes[0], "vpn-network-accesses", "vpn-network-access")
	if len(accesses) == 0 {
		return 0
	}
	s, _ := accesses[0]["service"].(map[string]any)
	for _, bw := range entries(s, "svc-pe-to-ce-bandwidth", "pe-to-ce-bandwidth") {
		cir, _ := bw["cir"].(string)
		bps, err := strconv.ParseUint(cir, 10, 64)
		if err == nil && strings.TrimPrefix(fmt.Sprint(bw["bw-type"]), vpnrc.Common+":") == "bw-per-port" {
			return int(bps / 1_000_000)
		}
	}
	return 0
}

// entries returns the entries of list under container of m.
func entries(m map[string]any, container, list string) []map[string]any {
	c, _ := m[container].(map[string]any)
	items, _ := c[list].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if e, ok := it.(map[string]any); ok {
			out = append(out, e)
		}
	}
	return out
}

// connInfo adds the accesses to a create's or edit's connInfo.
func connInfo(id string, _ connectors.Request, eps []vpnrc.Endpoint) map[string]any {
	accesses := make([]any, len(eps))
	for i, ep := range eps {
		a := map[string]any{"ne-id": ep.Fields["ne-id"], "id": accessID(id, i), "service-endpoint-id": ep.Point.ServiceEndpointID, "encapsulation": string(ep.Point.Encapsulation)}
		if ep.Point.VLAN != 0 {
			a["vlan"] = ep.Point.VLAN
		}
		accesses[i] = a
	}
	return map[string]any{"vpn-network-accesses": accesses}
}

// listInfo adds a listed service's vpn-type, accesses and oper-status.
func listInfo(s map[string]any) map[string]any {
	var names []any
	for _, n := range entries(s, "vpn-nodes", "vpn-node") {
		for _, a := range entries(n, "vpn-network-accesses", "vpn-network-access") {
			names = append(names, fmt.Sprintf("%v/%v", n["ne-id"], a["id"]))
		}
	}
	return map[string]any{"vpn-type": s["vpn-type"], "vpn-network-accesses": names, "oper-status": vpnrc.OperOf(s)}
}

// status reads the oper-status of the service, its vpn-nodes and
// accesses; none reported is ACTIVE (it exists, as configured).
func status(id string, svc map[string]any) connectors.ServiceStatus {
	oper := vpnrc.OperOf(svc)
	info := map[string]any{"vpn-type": svc["vpn-type"], "oper-status": oper}
	var down []string
	for _, n := range entries(svc, "vpn-nodes", "vpn-node") {
		if vpnrc.OperOf(n) == "op-down" {
			down = append(down, fmt.Sprintf("vpn-node %v", n["vpn-node-id"]))
		}
		for _, a := range entries(n, "vpn-network-accesses", "vpn-network-access") {
			if vpnrc.OperOf(a) == "op-down" {
				down = append(down, fmt.Sprintf("vpn-network-access %v of %v", a["id"], n["vpn-node-id"]))
			}
		}
	}
	switch {
	case oper == "op-down" || len(down) > 0:
		msg := "the controller reports vpn-service " + id + " op-down"
		if len(down) > 0 {
			msg += ": " + strings.Join(down, ", ") + " down"
		}
		return connectors.ServiceStatus{Status: connectors.StatusDown, Info: info, Message: msg}
	case oper == "op-unknown":
		return connectors.ServiceStatus{Status: connectors.StatusBuild, Info: info, Message: "the controller reports vpn-service " + id + " op-unknown: not up yet"}
	case oper == "":
		info["oper-status"] = "not reported"
	}
	return connectors.ServiceStatus{Status: connectors.StatusActive, Info: info}
}

// edit keeps the service's type (its vpn-type: an ELINE stays
// point-to-point) and bandwidth, read from the controller.
func edit(svc map[string]any) (connectors.ServiceType, connectors.QoS) {
	t := connectors.ServiceELAN
	if s, _ := svc["vpn-type"].(string); slices.Contains(elineTypes, strings.TrimPrefix(s, vpnrc.Common+":")) {
		t = connectors.ServiceELINE
	}
	return t, connectors.QoS{BandwidthMbps: BandwidthOf(svc)}
}
