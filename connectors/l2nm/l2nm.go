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
//	timeout_ms, ca_file, insecure_skip_verify, bearer_token   see connectors/rest
//	customer_name   customer-name of the services ("wimro")
//	default_mtu     service/mtu of the accesses (1500)
//	eline_vpn_type  vpn-type of an ELINE: vpws (default) or vpws-evpn
//	elan_vpn_type   vpn-type of an ELAN: vpls (default), mpls-evpn, pbb-evpn or vxlan-evpn
//
// Basic auth with the account's user and password, or bearer_token; TLS
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
// # Status
//
// GET of the vpn-service. Its status/oper-status (config false in
// ietf-vpn-common) gives the status where the controller reports it: op-up
// is ACTIVE, op-unknown BUILD, op-down DOWN naming the vpn-nodes and
// accesses reported down. A controller that reports no oper-status is
// read by existence: 200 is ACTIVE. 404 is a NotFound error.
package l2nm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// Type is the WIM type this package registers.
const Type = "l2nm"

// IDPrefix starts every vpn-id wimro makes; the rest is the service key.
const IDPrefix = "wimro-"

const (
	module = "ietf-l2vpn-ntw"
	common = "ietf-vpn-common"
	top    = "/data/" + module + ":l2vpn-ntw"
)

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
	ServiceID: serviceID,
}

// serviceID is the vpn-id of key's service (Capabilities.ServiceID).
func serviceID(key string) string {
	if key == "" {
		return ""
	}
	return IDPrefix + key
}

type settings struct {
	customer  string
	mtu       int
	elineType string // module-qualified
	elanType  string
}

type connector struct {
	rc       *rest.Client
	root     *rest.Root
	cfg      connectors.Config
	set      settings
	mappings connectors.MappingIndex
	log      *slog.Logger
}

// Factory builds an l2nm connector. It contacts nothing; invalid settings
// are Permanent errors naming the setting.
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	rc, err := rest.New(Type, cfg)
	if err != nil {
		return nil, err
	}
	set, err := readSettings(cfg)
	if err != nil {
		return nil, err
	}
	return &connector{rc: rc, root: rest.NewRoot(rc), cfg: cfg, set: set, mappings: cfg.Mappings(), log: cfg.Log()}, nil
}

func readSettings(cfg connectors.Config) (settings, error) {
	var s settings
	var err error
	bad := func(format string, args ...any) (settings, error) {
		return s, connectors.Errorf(connectors.KindPermanent, Type+": config "+format, args...)
	}
	if s.customer, err = cfg.StringSetting("customer_name", "wimro"); err != nil {
		return s, err
	}
	if s.customer == "" {
		return bad(`"customer_name" is empty`)
	}
	if s.mtu, err = cfg.IntSetting("default_mtu", 1500); err != nil {
		return s, err
	}
	if s.mtu < 1 || s.mtu > 65535 {
		return bad(`"default_mtu" must be in 1..65535, got %d`, s.mtu)
	}
	pick := func(setting string, allowed []string) (string, error) {
		v, err := cfg.StringSetting(setting, allowed[0])
		if err != nil {
			return "", err
		}
		if name := strings.TrimPrefix(v, common+":"); slices.Contains(allowed, name) {
			return common + ":" + name, nil
		}
		_, err = bad(`%q must be one of %s (vpn-type identities of %s), got %q`, setting, strings.Join(allowed, ", "), common, v)
		return "", err
	}
	if s.elineType, err = pick("eline_vpn_type", elineTypes); err != nil {
		return s, err
	}
	if s.elanType, err = pick("elan_vpn_type", elanTypes); err != nil {
		return s, err
	}
	return s, nil
}

// endpoint is a connection point resolved to its PE and interface.
type endpoint struct {
	id                string // service endpoint id
	ne, iface, bearer string
	encap             connectors.Encapsulation
	vlan              int
}

// CheckMapping implements connectors.MappingChecker: info must name the
// PE (ne-id) and its interface (interface-id).
func (c *connector) CheckMapping(endpointID string, info map[string]any) error {
	if _, err := readMapping(endpointID, info); err != nil {
		return connectors.Errorf(connectors.KindPermanent, "%s: %w", Type, err)
	}
	return nil
}

// readMapping reads one wan_service_mapping_info.
func readMapping(endpointID string, info map[string]any) (endpoint, error) {
	ep := endpoint{id: endpointID}
	field := func(key string, required bool) (string, error) {
		v, present := info[key]
		s, isString := v.(string)
		switch {
		case (!present || v == nil) && !required:
			return "", nil
		case !present || v == nil:
			return "", fmt.Errorf("the wan_service_mapping_info of service endpoint %q has no %q", endpointID, key)
		case !isString || s == "":
			return "", fmt.Errorf("the wan_service_mapping_info of service endpoint %q: %q must be a non-empty string, got %v", endpointID, key, v)
		}
		return s, nil
	}
	var err error
	if ep.ne, err = field("ne-id", true); err != nil {
		return ep, err
	}
	if ep.iface, err = field("interface-id", true); err != nil {
		return ep, err
	}
	ep.bearer, err = field("bearer-reference", false)
	return ep, err
}

// endpoints resolves the points' mappings; every failure is Permanent.
func (c *connector) endpoints(points []connectors.ConnectionPoint) ([]endpoint, error) {
	eps := make([]endpoint, len(points))
	for i, p := range points {
		info, err := c.mappings.For(Type, i, p)
		if err != nil {
			return nil, err
		}
		ep, err := readMapping(p.ServiceEndpointID, info)
		if err != nil {
			return nil, connectors.Errorf(connectors.KindPermanent, "%s: connection point %d: %w", Type, i, err)
		}
		ep.encap, ep.vlan = p.Encapsulation, p.VLAN
		eps[i] = ep
	}
	return eps, nil
}

func qualified(identity string) string { return common + ":" + identity }

func adminUp() map[string]any {
	return map[string]any{"admin-status": map[string]any{"status": qualified("admin-up")}}
}

// accessID is the id of the vpn-network-access of the i-th point.
func accessID(vpnID string, i int) string { return fmt.Sprintf("%s-%d", vpnID, i) }

// body is the vpn-service entry of req under vpn-id id, its points
// resolved as eps. Create and edit both build it from a Request.
func (c *connector) body(id string, req connectors.Request, eps []endpoint) map[string]any {
	vpnType := c.set.elineType
	if req.Type == connectors.ServiceELAN {
		vpnType = c.set.elanType
	}
	var nodes []any
	byNE := map[string]map[string]any{}
	for i, ep := range eps {
		node, ok := byNE[ep.ne]
		if !ok {
			node = map[string]any{"vpn-node-id": ep.ne, "ne-id": ep.ne, "status": adminUp(),
				"vpn-network-accesses": map[string]any{"vpn-network-access": []any{}}}
			byNE[ep.ne] = node
			nodes = append(nodes, node)
		}
		accesses := node["vpn-network-accesses"].(map[string]any)
		accesses["vpn-network-access"] = append(accesses["vpn-network-access"].([]any), c.access(id, i, ep, req.QoS))
	}
	return map[string]any{
		"vpn-id":               id,
		"vpn-description":      "wimro WAN link " + req.Key,
		"customer-name":        c.set.customer,
		"vpn-type":             vpnType,
		"vpn-service-topology": qualified("any-to-any"),
		"status":               adminUp(),
		"vpn-nodes":            map[string]any{"vpn-node": nodes},
	}
}

// access is the vpn-network-access of the i-th point.
func (c *connector) access(vpnID string, i int, ep endpoint, q connectors.QoS) map[string]any {
	encap := map[string]any{"encap-type": qualified("untagged-int")}
	if ep.encap == connectors.EncapDot1Q {
		encap = map[string]any{"encap-type": qualified("dot1q"), "dot1q": map[string]any{"tag-type": qualified("c-vlan"), "cvlan-id": ep.vlan}}
	}
	conn := map[string]any{"encapsulation": encap}
	if ep.bearer != "" {
		conn["bearer-reference"] = ep.bearer
	}
	svc := map[string]any{"mtu": c.set.mtu}
	if q.BandwidthMbps != 0 {
		bw := func() []any {
			return []any{map[string]any{
				"bw-type": qualified("bw-per-port"),
				// uint64: a string in RFC 7951 JSON.
				"cir": strconv.FormatUint(uint64(q.BandwidthMbps)*1_000_000, 10),
			}}
		}
		svc["svc-pe-to-ce-bandwidth"] = map[string]any{"pe-to-ce-bandwidth": bw()}
		svc["svc-ce-to-pe-bandwidth"] = map[string]any{"ce-to-pe-bandwidth": bw()}
	}
	return map[string]any{
		"id":           accessID(vpnID, i),
		"description":  "wimro service endpoint " + ep.id,
		"interface-id": ep.iface,
		"status":       adminUp(),
		"connection":   conn,
		"service":      svc,
	}
}

// BandwidthOf reads the bandwidth (Mbit/s) a vpn-service entry asks: the
// cir of its first access's PE-to-CE bw-per-port entry; 0 for none.
func BandwidthOf(svc map[string]any) int {
	for _, n := range entries(svc, "vpn-nodes", "vpn-node") {
		for _, a := range entries(n, "vpn-network-accesses", "vpn-network-access") {
			s, _ := a["service"].(map[string]any)
			for _, bw := range entries(s, "svc-pe-to-ce-bandwidth", "pe-to-ce-bandwidth") {
				cir, _ := bw["cir"].(string)
				bps, err := strconv.ParseUint(cir, 10, 64)
				if err == nil && strings.TrimPrefix(fmt.Sprint(bw["bw-type"]), common+":") == "bw-per-port" {
					return int(bps / 1_000_000)
				}
			}
			return 0
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

// base returns the path of the l2vpn-ntw container under the RESTCONF root.
func (c *connector) base(ctx context.Context, op string) (string, error) {
	root, err := c.root.Get(ctx, op)
	return root + top, err
}

func servicePath(base, id string) string {
	return base + "/vpn-services/vpn-service=" + rest.EscapeKey(id)
}

func (c *connector) get(ctx context.Context, op, path string) (rest.Reply, error) {
	return c.rc.Do(ctx, op, rest.Request{Method: http.MethodGet, Path: path, Accept: rest.MediaYANGJSON})
}

func (c *connector) fail(op string, r rest.Reply) error {
	return c.rc.Error(op, r, rest.RESTCONFDetail(r.Body))
}

// empty reports a reply that says "nothing here": 204, or a RESTCONF 404.
func empty(r rest.Reply) bool {
	return r.Status == http.StatusNoContent || (r.Status == http.StatusNotFound && rest.ParseRESTCONFErrors(r.Body) != nil)
}

// gone reports a DELETE reply saying the entry does not exist.
func gone(r rest.Reply) bool {
	return r.Status == http.StatusNotFound || (r.Status == http.StatusConflict && rest.HasRESTCONFTag(r.Body, "data-missing"))
}

// member decodes the module-qualified member name of a reply (the bare
// name is accepted too) into out.
func (c *connector) member(op string, r rest.Reply, name string, out any) error {
	var doc map[string]json.RawMessage
	if err := c.rc.Decode(op, r, &doc); err != nil {
		return err
	}
	raw, ok := doc[module+":"+name]
	if !ok {
		raw, ok = doc[name]
	}
	if !ok {
		return connectors.Errorf(connectors.KindPermanent, "%s %s: the controller replied %d without %q (%s)", Type, op, r.Status, module+":"+name, c.rc.Snippet(r.Body))
	}
	return c.rc.Decode(op, rest.Reply{Status: r.Status, Body: raw}, out)
}

// read returns the vpn-service id, or nil when the controller has none.
func (c *connector) read(ctx context.Context, op, base, id string) (map[string]any, error) {
	r, err := c.get(ctx, op, servicePath(base, id))
	switch {
	case err != nil:
		return nil, err
	case r.Status == http.StatusNotFound:
		return nil, nil
	case !r.OK():
		return nil, c.fail(op, r)
	}
	var list []map[string]any
	if err := c.member(op, r, "vpn-service", &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, connectors.Errorf(connectors.KindPermanent, "%s %s: the reply holds no vpn-service", Type, op)
	}
	return list[0], nil
}

// write sends the vpn-service entry with method (POST to the list, PUT to
// the entry) and returns the reply for the caller to judge.
func (c *connector) write(ctx context.Context, op, method, base string, entry map[string]any) (rest.Reply, error) {
	path := base + "/vpn-services"
	if method == http.MethodPut {
		path = servicePath(base, entry["vpn-id"].(string))
	}
	return c.rc.JSON(ctx, op, method, path, rest.MediaYANGJSON, map[string]any{module + ":vpn-service": []any{entry}})
}

// put replaces the vpn-service with entry.
func (c *connector) put(ctx context.Context, op, base string, entry map[string]any) error {
	r, err := c.write(ctx, op, http.MethodPut, base, entry)
	if err != nil {
		return err
	}
	if !r.OK() {
		return c.fail(op, r)
	}
	return nil
}

// lock serialises the changes to one vpn-service.
func (c *connector) lock(ctx context.Context, id string) (func(), error) {
	return c.cfg.MutationLock(ctx, Type+" "+c.rc.Controller()+" "+id)
}

func (c *connector) CheckCredentials(ctx context.Context) error {
	const op = "check credentials"
	base, err := c.base(ctx, op)
	if err != nil {
		return err
	}
	r, err := c.get(ctx, op, base+"/vpn-services")
	switch {
	case err != nil:
		return err
	case r.OK(), empty(r):
	case r.Status == http.StatusNotFound:
		e := connectors.Errorf(connectors.KindPermanent, "%s %s: GET %s: HTTP 404: no %s RESTCONF datastore at this URL (%s)", Type, op, base+"/vpn-services", module, c.rc.Snippet(r.Body))
		e.Status = r.Status
		return e
	default:
		return c.fail(op, r)
	}
	for _, m := range c.cfg.PortMappings {
		if _, err := readMapping(m.WANServiceEndpointID, m.WANServiceMappingInfo); err != nil {
			return connectors.Errorf(connectors.KindPermanent, "%s %s: port mapping %q: %v", Type, op, m.WANServiceEndpointID, err)
		}
	}
	return nil
}

// CreateService implements connectors.Connector: one vpn-service of the
// points, adopted when it exists as asked, replaced when it differs.
func (c *connector) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if req.Key == "" {
		return "", nil, connectors.Errorf(connectors.KindPermanent, "%s: a service key is required", Type)
	}
	if err := Capabilities.Check(Type, req); err != nil {
		return "", nil, err
	}
	if err := connectors.ValidatePoints(req.Type, req.Points); err != nil {
		return "", nil, err
	}
	eps, err := c.endpoints(req.Points)
	if err != nil {
		return "", nil, err
	}
	id := serviceID(req.Key)
	want := c.body(id, req, eps)
	op := "create vpn-service " + id
	base, err := c.base(ctx, op)
	if err != nil {
		return "", nil, err
	}
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return "", nil, err
	}
	defer unlock()

	got, err := c.read(ctx, "look up vpn-service "+id, base, id)
	if err != nil {
		return "", nil, err
	}
	if got == nil {
		r, err := c.write(ctx, op, http.MethodPost, base, want)
		switch {
		case err != nil:
			return "", nil, err
		case r.Status == http.StatusConflict:
			// Made meanwhile (a create whose reply was lost): judged
			// below as a found one.
			if got, err = c.read(ctx, "read existing vpn-service "+id, base, id); err != nil {
				return "", nil, err
			}
		case !r.OK():
			return "", nil, c.fail(op, r)
		}
	}
	if got != nil {
		if covers(got, jsonValue(want)) {
			c.log.Debug("l2nm vpn-service exists as asked; adopted", "service_id", id)
		} else if err := c.put(ctx, op+" (replace the existing one)", base, want); err != nil {
			return "", nil, err
		}
	}
	c.log.Debug("l2nm service created", "service_id", id, "service_key", req.Key, "points", len(eps))
	return id, newConnInfo(id, req, eps), nil
}

// newConnInfo records the vpn-id, the service type, the bandwidth and the
// accesses.
func newConnInfo(id string, req connectors.Request, eps []endpoint) map[string]any {
	accesses := make([]any, len(eps))
	for i, ep := range eps {
		a := map[string]any{"ne-id": ep.ne, "id": accessID(id, i), "service-endpoint-id": ep.id, "encapsulation": string(ep.encap)}
		if ep.vlan != 0 {
			a["vlan"] = ep.vlan
		}
		accesses[i] = a
	}
	m := map[string]any{"vpn-id": id, "service-type": string(req.Type), "vpn-network-accesses": accesses}
	if req.QoS.BandwidthMbps != 0 {
		m["bandwidth"] = req.QoS.BandwidthMbps
	}
	return m
}

// jsonValue returns v as encoding/json decodes it, for comparing with a
// reply.
func jsonValue(v any) any {
	var out any
	b, _ := json.Marshal(v)
	_ = json.Unmarshal(b, &out)
	return out
}

// covers reports whether got holds every leaf of want (the controller may
// add defaults and state), comparing identities with or without their
// module prefix.
func covers(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if !covers(g[k], wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !covers(g[i], w[i]) {
				return false
			}
		}
		return true
	case string:
		g, ok := got.(string)
		return ok && strings.TrimPrefix(g, common+":") == strings.TrimPrefix(w, common+":")
	}
	return got == want
}

// operOf reads the oper-status identity (without its module) of a
// service, node or access; "" when the controller reports none.
func operOf(m map[string]any) string {
	st, _ := m["status"].(map[string]any)
	oper, _ := st["oper-status"].(map[string]any)
	s, _ := oper["status"].(string)
	return s[strings.IndexByte(s, ':')+1:]
}

func (c *connector) GetServiceStatus(ctx context.Context, id string, _ map[string]any) (connectors.ServiceStatus, error) {
	if id == "" {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "%s status: empty service id", Type)
	}
	op := "status of vpn-service " + id
	base, err := c.base(ctx, op)
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	svc, err := c.read(ctx, op, base, id)
	switch {
	case err != nil:
		return connectors.ServiceStatus{}, err
	case svc == nil:
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "%s %s: the controller has no such vpn-service", Type, op)
	}
	oper := operOf(svc)
	info := map[string]any{"vpn-id": id, "vpn-type": svc["vpn-type"], "oper-status": oper}
	var down []string
	for _, n := range entries(svc, "vpn-nodes", "vpn-node") {
		if operOf(n) == "op-down" {
			down = append(down, fmt.Sprintf("vpn-node %v", n["vpn-node-id"]))
		}
		for _, a := range entries(n, "vpn-network-accesses", "vpn-network-access") {
			if operOf(a) == "op-down" {
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
		return connectors.ServiceStatus{Status: connectors.StatusDown, Info: info, Message: msg}, nil
	case oper == "op-unknown":
		return connectors.ServiceStatus{Status: connectors.StatusBuild, Info: info, Message: "the controller reports vpn-service " + id + " op-unknown: not up yet"}, nil
	case oper == "":
		// No operational state: it exists, as configured.
		info["oper-status"] = "not reported"
	}
	return connectors.ServiceStatus{Status: connectors.StatusActive, Info: info}, nil
}

// typeOf tells an ELINE (a point-to-point vpn-type) from an ELAN.
func typeOf(vpnType any) connectors.ServiceType {
	s, _ := vpnType.(string)
	if slices.Contains(elineTypes, strings.TrimPrefix(s, common+":")) {
		return connectors.ServiceELINE
	}
	return connectors.ServiceELAN
}

// EditService replaces the service's points: the vpn-service is read
// (its vpn-type and bandwidth stay) and PUT with the new ones.
func (c *connector) EditService(ctx context.Context, id string, connInfo map[string]any, points []connectors.ConnectionPoint) (map[string]any, error) {
	if id == "" {
		return nil, connectors.Errorf(connectors.KindNotFound, "%s edit: empty service id", Type)
	}
	// The rules shared by both types first; ELINE's two points once the
	// service's type is read.
	if err := connectors.ValidatePoints(connectors.ServiceELAN, points); err != nil {
		return nil, err
	}
	eps, err := c.endpoints(points)
	if err != nil {
		return nil, err
	}
	op := "edit vpn-service " + id
	base, err := c.base(ctx, op)
	if err != nil {
		return nil, err
	}
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cur, err := c.read(ctx, op, base, id)
	switch {
	case err != nil:
		return nil, err
	case cur == nil:
		return nil, connectors.Errorf(connectors.KindNotFound, "%s %s: the controller has no such vpn-service", Type, op)
	}
	req := connectors.Request{Key: strings.TrimPrefix(id, IDPrefix), Type: typeOf(cur["vpn-type"]), Points: points,
		QoS: connectors.QoS{BandwidthMbps: BandwidthOf(cur)}}
	if err := connectors.ValidatePoints(req.Type, points); err != nil {
		return nil, err
	}
	if err := c.put(ctx, op, base, c.body(id, req, eps)); err != nil {
		return nil, err
	}
	c.log.Debug("l2nm service edited", "service_id", id, "points", len(eps))
	return newConnInfo(id, req, eps), nil
}

func (c *connector) DeleteService(ctx context.Context, id string, _ map[string]any) error {
	if id == "" {
		return nil
	}
	op := "delete vpn-service " + id
	base, err := c.base(ctx, op)
	if err != nil {
		return err
	}
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return c.delete(ctx, op, servicePath(base, id))
}

func (c *connector) delete(ctx context.Context, op, path string) error {
	r, err := c.rc.Do(ctx, op, rest.Request{Method: http.MethodDelete, Path: path, Accept: rest.MediaYANGJSON})
	if err != nil {
		return err
	}
	if r.OK() || gone(r) {
		return nil
	}
	return c.fail(op, r)
}

// ours returns wimro's vpn-services (vpn-id prefix "wimro-"), sorted.
func (c *connector) ours(ctx context.Context, op string) (string, []map[string]any, error) {
	base, err := c.base(ctx, op)
	if err != nil {
		return "", nil, err
	}
	r, err := c.get(ctx, op, base+"/vpn-services")
	switch {
	case err != nil:
		return "", nil, err
	case empty(r):
		return base, nil, nil
	case !r.OK():
		return "", nil, c.fail(op, r)
	}
	var doc struct {
		Service []map[string]any `json:"vpn-service"`
	}
	if err := c.member(op, r, "vpn-services", &doc); err != nil {
		return "", nil, err
	}
	list := slices.DeleteFunc(doc.Service, func(s map[string]any) bool {
		id, _ := s["vpn-id"].(string)
		return !strings.HasPrefix(id, IDPrefix)
	})
	slices.SortFunc(list, func(a, b map[string]any) int { return strings.Compare(a["vpn-id"].(string), b["vpn-id"].(string)) })
	return base, list, nil
}

// ListServices lists wimro's vpn-services; Endpoints reads each access
// back (ne-id, interface-id, cvlan-id) through the port mappings, nil
// when one matches no mapping, or two.
func (c *connector) ListServices(ctx context.Context) ([]connectors.Service, error) {
	_, list, err := c.ours(ctx, "list vpn-services")
	if err != nil {
		return nil, err
	}
	places := c.places()
	out := make([]connectors.Service, 0, len(list))
	for _, s := range list {
		id := s["vpn-id"].(string)
		var names []any
		var ends []string
		known := true // every access leads back to one port mapping
		for _, n := range entries(s, "vpn-nodes", "vpn-node") {
			ne, _ := n["ne-id"].(string)
			for _, a := range entries(n, "vpn-network-accesses", "vpn-network-access") {
				names = append(names, fmt.Sprintf("%s/%v", ne, a["id"]))
				ifc, _ := a["interface-id"].(string)
				ep := places[ne+"|"+ifc]
				known = known && ep != ""
				ends = append(ends, connectors.EndpointName(ep, cvlanOf(a)))
			}
		}
		if known && len(ends) > 0 {
			slices.Sort(ends)
		} else {
			ends = nil
		}
		info := map[string]any{"vpn-type": s["vpn-type"], "customer-name": s["customer-name"], "vpn-network-accesses": names, "oper-status": operOf(s)}
		out = append(out, connectors.Service{ID: id, Key: strings.TrimPrefix(id, IDPrefix), Info: info, Endpoints: ends})
	}
	return out, nil
}

// cvlanOf reads an access's cvlan-id; 0 when untagged.
func cvlanOf(a map[string]any) int {
	conn, _ := a["connection"].(map[string]any)
	enc, _ := conn["encapsulation"].(map[string]any)
	d, _ := enc["dot1q"].(map[string]any)
	if v, ok := d["cvlan-id"].(float64); ok {
		return int(v)
	}
	return 0
}

// places maps "ne-id|interface-id" of each port mapping to its service
// endpoint id, "" when two mappings share it.
func (c *connector) places() map[string]string {
	out := map[string]string{}
	for _, m := range c.cfg.PortMappings {
		ep, err := readMapping(m.WANServiceEndpointID, m.WANServiceMappingInfo)
		if err != nil {
			continue
		}
		p := ep.ne + "|" + ep.iface
		if prev, ok := out[p]; ok && prev != ep.id {
			out[p] = ""
			continue
		}
		out[p] = ep.id
	}
	return out
}

// ClearAll deletes wimro's vpn-services; other services are left alone.
func (c *connector) ClearAll(ctx context.Context) error {
	base, list, err := c.ours(ctx, "clear all")
	if err != nil {
		return err
	}
	for _, s := range list {
		id := s["vpn-id"].(string)
		unlock, err := c.lock(ctx, id)
		if err != nil {
			return err
		}
		err = c.delete(ctx, "clear all: delete vpn-service "+id, servicePath(base, id))
		unlock()
		if err != nil {
			return err
		}
	}
	c.log.Debug("l2nm services cleared", "deleted", len(list))
	return nil
}

var (
	_ connectors.Connector      = (*connector)(nil)
	_ connectors.MappingChecker = (*connector)(nil)
)
