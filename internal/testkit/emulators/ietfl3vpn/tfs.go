package ietfl3vpn

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	"github.com/wimro/wimro/internal/testkit/emulators/rcstore"
)

// This file is the tfs mode: TeraFlowSDN's own L3VPN northbound (its NBI
// plugin ietf_l3vpn: L3VPN_Services.py, L3VPN_Service.py, Handlers.py,
// YangValidator.py in src/nbi/service/rest_server/nbi_plugins/ietf_l3vpn of
// ETSI TeraFlowSDN, and src/nbi/service/ietf_l3vpn in later releases, which
// answer the same and add the PUT below), which is no RESTCONF datastore:
//
//	POST   …/vpn-services                    the whole l3vpn-svc tree (vpn-services and
//	                                         sites) in one body; 201 [] or 500 [{"error": …}]
//	GET    …/vpn-services                    {} whatever it holds: it cannot list
//	GET    …/vpn-services/vpn-service=<id>/  200 {"service-id": id} when ACTIVE, 504 before,
//	                                         500 {"error": "VPN(<id>) not found in database"}
//	DELETE …/vpn-services/vpn-service=<id>/  204, known or not
//	PUT    …/vpn-services/vpn-service=<id>/  releases whose NBI is src/nbi/service/ietf_l3vpn:
//	                                         the tree again, of which it takes the bandwidths
//	                                         only; 204; no credentials asked
//
// Everything else is Flask's 404 (or 405) page. A body is validated with
// yanglint against ietf-l3vpn-svc as TFS's YangValidator does (a refusal is
// an unhandled exception there: Flask's 500), then read as Handlers.py
// reads it: every vpn-service becomes a service (a second one of an id is
// gRPC's ALREADY_EXISTS), every site's accesses become its endpoints, and
// a leaf Handlers.py indexes without a default is required here too.

// TFSOptions configure a TFS emulator.
type TFSOptions struct {
	// User and Password are the basic-auth credentials every request must
	// carry (TFS's HTTP_AUTH); both empty: no auth.
	User, Password string
	// BuildPolls is how many status reads a service answers 504 (not yet
	// ACTIVE) before it is ACTIVE, once it has two endpoints.
	BuildPolls int
}

// TFSEndpoint is one endpoint of a service as TFS's Handlers.py records
// it from a site-network-access.
type TFSEndpoint struct {
	Site, Device, Endpoint string
	// VLAN is the lan-tag of the site's first static route whose next-hop
	// lies in the access's subnet (0: none).
	VLAN                         int
	Address, Neighbor            string
	PrefixLength                 int
	BandwidthBps, LatencyMs, MTU int
	StaticRoutes                 []string // "lan via next-hop"
}

type tfsService struct {
	pending   int // status reads still answered 504
	endpoints []TFSEndpoint
}

// TFS is the TeraFlowSDN L3VPN NBI emulator; close it with Close.
type TFS struct {
	emulator.Recorder
	opts TFSOptions
	lint *emulator.Linter

	mu       sync.Mutex
	services map[string]*tfsService
}

// NewTFS returns an emulator of TeraFlowSDN's L3VPN NBI holding nothing.
func NewTFS(opts TFSOptions) *TFS {
	return &TFS{opts: opts, lint: emulator.NewLinter(rcstore.YANGDir(), Modules), services: map[string]*tfsService{}}
}

// Close stops yanglint.
func (e *TFS) Close() { e.lint.Close() }

// LintFailures are the bodies yanglint refused.
func (e *TFS) LintFailures() []string { return e.lint.Failures() }

// Linted is how many bodies yanglint checked.
func (e *TFS) Linted() int { return e.lint.Checked() }

// Root is the path of the module's top container.
func (e *TFS) Root() string { return Root }

// ServiceIDs are the services TFS holds, sorted.
func (e *TFS) ServiceIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]string, 0, len(e.services))
	for id := range e.services {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Endpoints are the endpoints of service id, nil when unknown.
func (e *TFS) Endpoints(id string) []TFSEndpoint {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.services[id]; s != nil {
		return slices.Clone(s.endpoints)
	}
	return nil
}

// SetPending makes service id answer 504 for the next n status reads.
func (e *TFS) SetPending(id string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.services[id]; s != nil {
		s.pending = n
	}
}

const (
	flask404 = "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n"
	flask405 = "<!doctype html>\n<html lang=en>\n<title>405 Method Not Allowed</title>\n<h1>Method Not Allowed</h1>\n"
	// flask500 is what Flask-RESTful answers for an exception its
	// resource does not handle (a YangValidator refusal, a KeyError).
	flask500 = `{"message": "Internal Server Error"}`
)

// ServeHTTP serves one request through the Recorder's knobs.
func (e *TFS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	e.Serve(w, r, emulator.NewRequest(r, body), func(w http.ResponseWriter, injected int) {
		status, reply := e.route(r, body, injected)
		switch v := reply.(type) {
		case nil:
			w.WriteHeader(status)
		case string:
			ct := "text/html; charset=utf-8"
			if strings.HasPrefix(v, "{") {
				ct = "application/json"
			}
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, v)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(v)
		}
	})
}

func (e *TFS) route(r *http.Request, body []byte, injected int) (int, any) {
	if injected != 0 {
		return injected, map[string]any{"error": "injected failure"}
	}
	rel, isNBI := strings.CutPrefix(r.URL.EscapedPath(), Root+"/vpn-services")
	// L3VPN_Service.put has no login_required: it checks no credentials.
	isPut := isNBI && r.Method == http.MethodPut && strings.HasPrefix(rel, "/vpn-service=")
	if e.opts.User != "" && !isPut && emulator.CheckBasicAuth(r, e.opts.User, e.opts.Password) != nil {
		return http.StatusUnauthorized, "Unauthorized Access"
	}
	if !isNBI {
		return http.StatusNotFound, flask404
	}
	if rel == "" || rel == "/" {
		switch r.Method {
		case http.MethodGet:
			return http.StatusOK, map[string]any{}
		case http.MethodPost:
			return e.post(r, body)
		}
		return http.StatusMethodNotAllowed, flask405
	}
	escaped, ok := strings.CutPrefix(strings.TrimSuffix(rel, "/"), "/vpn-service=")
	id, err := url.PathUnescape(escaped)
	if !ok || err != nil || strings.Contains(escaped, "/") {
		return http.StatusNotFound, flask404
	}
	switch r.Method {
	case http.MethodGet:
		return e.status(id)
	case http.MethodPut:
		return e.put(r, body)
	case http.MethodDelete:
		e.mu.Lock()
		delete(e.services, id)
		e.mu.Unlock()
		return http.StatusNoContent, nil
	}
	return http.StatusMethodNotAllowed, flask405
}

func (e *TFS) status(id string) (int, any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.services[id]
	switch {
	case s == nil:
		return http.StatusInternalServerError, map[string]any{"error": "VPN(" + id + ") not found in database"}
	case len(s.endpoints) < 2 || s.pending > 0:
		// PLANNED: TFS's Service component activates a service once it
		// has the endpoints to connect.
		if s.pending > 0 {
			s.pending--
		}
		return http.StatusGatewayTimeout, map[string]any{"service-id": id}
	}
	return http.StatusOK, map[string]any{"service-id": id}
}

// post is L3VPN_Services.post: validate, then Handlers.py's
// process_vpn_service and process_site; 201 with no errors, else 500
// with the list of them (what was made stays made).
func (e *TFS) post(r *http.Request, body []byte) (int, any) {
	tree, status, reply := e.tree(r, body, "POST vpn-services")
	if tree == nil {
		return status, reply
	}
	// _process_l3vpn indexes both lists without a default (a KeyError).
	if dig(tree, "vpn-services", "vpn-service") == nil || dig(tree, "sites", "site") == nil {
		return http.StatusInternalServerError, flask500
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []any
	for _, s := range list(tree, "vpn-services", "vpn-service") {
		id, _ := s["vpn-id"].(string) // yanglint: the key is there
		if e.services[id] != nil {
			errs = append(errs, map[string]any{"error": "<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.ALREADY_EXISTS\n\tdetails = \"Service(" + id + ") already exists\"\n>"})
			continue
		}
		e.services[id] = &tfsService{pending: e.opts.BuildPolls}
	}
	// Sites are processed in order: what came before a site or an access
	// that raises stays made, as in TFS.
	for _, site := range list(tree, "sites", "site") {
		got, err := readSite(site)
		for _, a := range got {
			if msg := e.attach(a); msg != "" {
				errs = append(errs, map[string]any{"error": msg})
			}
		}
		if err != nil {
			return http.StatusInternalServerError, flask500
		}
	}
	if len(errs) > 0 {
		return http.StatusInternalServerError, errs
	}
	return http.StatusCreated, []any{}
}

// tree reads the l3vpn-svc tree of a POST or PUT as TeraFlowSDN does:
// JSON (415, 400), the l3vpn-svc member (500 with the request), valid for
// ietf-l3vpn-svc (Flask's 500); nil with the answer otherwise.
func (e *TFS) tree(r *http.Request, body []byte, what string) (map[string]any, int, any) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") && !strings.HasPrefix(r.Header.Get("Content-Type"), rcstore.MediaType) {
		return nil, http.StatusUnsupportedMediaType, `{"message": "JSON payload is required"}`
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, http.StatusBadRequest, `{"message": "Failed to decode JSON object"}`
	}
	tree, ok := doc[Module+":l3vpn-svc"].(map[string]any)
	if !ok {
		return nil, http.StatusInternalServerError, []any{"unexpected request: " + string(body)}
	}
	if err := e.lint.Check(what, emulator.LintConfig, doc, nil); err != nil {
		return nil, http.StatusInternalServerError, flask500
	}
	return tree, 0, nil
}

// put is L3VPN_Service.put of the releases whose NBI is
// src/nbi/service/ietf_l3vpn: every site's accesses set their service's
// capacity (the larger of svc-input-bandwidth and svc-output-bandwidth)
// and nothing else: endpoints, VLANs, routes and latency stay as the POST
// made them. 204, or Flask's 500 for what Handlers.py's update_vpn raises
// on (a site not provider-managed, an access not multipoint, an unknown
// vpn-id, a missing leaf). The path's id is not compared with the body's.
func (e *TFS) put(r *http.Request, body []byte) (int, any) {
	tree, status, reply := e.tree(r, body, "PUT vpn-service")
	if tree == nil {
		return status, reply
	}
	if dig(tree, "sites", "site") == nil {
		return http.StatusInternalServerError, flask500
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, site := range list(tree, "sites", "site") {
		if str(site, "management", "type") != q+"provider-managed" {
			return http.StatusInternalServerError, flask500
		}
		for _, a := range list(site, "site-network-accesses", "site-network-access") {
			in, errIn := strconv.Atoi(str(a, "service", "svc-input-bandwidth"))
			out, errOut := strconv.Atoi(str(a, "service", "svc-output-bandwidth"))
			s := e.services[str(a, "vpn-attachment", "vpn-id")]
			if a["site-network-access-type"] != q+"multipoint" || errIn != nil || errOut != nil || s == nil {
				return http.StatusInternalServerError, flask500
			}
			for i := range s.endpoints {
				s.endpoints[i].BandwidthBps = max(in, out)
			}
		}
	}
	return http.StatusNoContent, nil
}

// attach is update_service_endpoint: the access becomes an endpoint of
// its service, one per device and endpoint; it returns TFS's error.
// e.mu is held.
func (e *TFS) attach(a tfsAccess) string {
	s := e.services[a.vpn]
	if s == nil {
		return "VPN(" + a.vpn + ") not found in database"
	}
	i := slices.IndexFunc(s.endpoints, func(p TFSEndpoint) bool { return p.Device == a.ep.Device && p.Endpoint == a.ep.Endpoint })
	if i < 0 {
		s.endpoints = append(s.endpoints, a.ep)
	} else {
		s.endpoints[i] = a.ep
	}
	return ""
}

type tfsAccess struct {
	vpn string
	ep  TFSEndpoint
}

const q = Module + ":"

type lanRoute struct {
	route, nextHop string
	tag            int
}

// readSite is process_site: a provider-managed site whose site-level
// routing-protocols are static only, each ipv4 LAN prefix with a lan-tag
// "vlan<N>", and its accesses; on an error, the accesses read before it.
func readSite(site map[string]any) ([]tfsAccess, error) {
	siteID, _ := site["site-id"].(string)
	if str(site, "management", "type") != q+"provider-managed" {
		return nil, fmt.Errorf("NotImplementedError: Site Management Type: %v", str(site, "management", "type"))
	}
	var routes []lanRoute
	rp, _ := site["routing-protocols"].(map[string]any)
	for _, p := range list(rp, "routing-protocol") {
		if p["type"] != q+"static" {
			return nil, fmt.Errorf("NotImplementedError: Site Routing Protocol Type: %v", p["type"])
		}
		static, _ := p["static"].(map[string]any)
		for _, lan := range list(static, "cascaded-lan-prefixes", "ipv4-lan-prefixes") {
			tag, ok := lan["lan-tag"].(string)
			if !ok {
				return nil, fmt.Errorf("KeyError: 'lan-tag'")
			}
			n, err := strconv.Atoi(strings.Replace(tag, "vlan", "", 1))
			if err != nil {
				return nil, fmt.Errorf("ValueError: invalid literal for int(): %q", tag)
			}
			nh, _ := lan["next-hop"].(string)
			routes = append(routes, lanRoute{route: fmt.Sprint(lan["lan"]), nextHop: nh, tag: n})
		}
	}
	var out []tfsAccess
	for _, a := range list(site, "site-network-accesses", "site-network-access") {
		got, err := readAccess(siteID, a, routes)
		if err != nil {
			return out, err
		}
		out = append(out, got)
	}
	return out, nil
}

// readAccess is process_site_network_access.
func readAccess(siteID string, a map[string]any, routes []lanRoute) (tfsAccess, error) {
	ep := TFSEndpoint{Site: siteID}
	ep.Endpoint, _ = a["site-network-access-id"].(string)
	if a["site-network-access-type"] != q+"multipoint" {
		return tfsAccess{}, fmt.Errorf("NotImplementedError: Site Network Access Type: %v", a["site-network-access-type"])
	}
	var ok bool
	if ep.Device, ok = a["device-reference"].(string); !ok {
		return tfsAccess{}, fmt.Errorf("KeyError: 'device-reference'")
	}
	vpn := str(a, "vpn-attachment", "vpn-id")
	if role := str(a, "vpn-attachment", "site-role"); role != q+"hub-role" && role != q+"spoke-role" {
		return tfsAccess{}, fmt.Errorf("NotImplementedError: Site VPN Attachment Role: %q", role)
	}
	v4, _ := dig(a, "ip-connection", "ipv4").(map[string]any)
	if v4 == nil {
		return tfsAccess{}, fmt.Errorf("KeyError: 'ipv4'")
	}
	if v4["address-allocation-type"] != q+"static-address" {
		return tfsAccess{}, fmt.Errorf("NotImplementedError: Site Network Access IPv4 Allocation Type: %v", v4["address-allocation-type"])
	}
	ep.Address, _ = dig(v4, "addresses", "customer-address").(string)
	ep.Neighbor, _ = dig(v4, "addresses", "provider-address").(string)
	plen, _ := dig(v4, "addresses", "prefix-length").(float64)
	ep.PrefixLength = int(plen)
	if ep.Address == "" || ep.Neighbor == "" || plen == 0 {
		return tfsAccess{}, fmt.Errorf("KeyError: the addresses need provider-address, customer-address and prefix-length")
	}
	if pe, err := netip.ParseAddr(ep.Neighbor); err == nil {
		subnet := netip.PrefixFrom(pe, ep.PrefixLength).Masked()
		for _, r := range routes {
			if nh, err := netip.ParseAddr(r.nextHop); err == nil && subnet.Contains(nh) {
				ep.VLAN = r.tag
				break
			}
		}
	}
	for _, r := range routes {
		ep.StaticRoutes = append(ep.StaticRoutes, r.route+" via "+r.nextHop)
	}
	svc, _ := a["service"].(map[string]any)
	mtu, okMTU := svc["svc-mtu"].(float64)
	in, okIn := svc["svc-input-bandwidth"].(string)
	out, okOut := svc["svc-output-bandwidth"].(string)
	if !okMTU || !okIn || !okOut {
		return tfsAccess{}, fmt.Errorf("KeyError: the service needs svc-mtu, svc-input-bandwidth and svc-output-bandwidth")
	}
	ep.MTU = int(mtu)
	inBps, _ := strconv.Atoi(in)
	outBps, _ := strconv.Atoi(out)
	ep.BandwidthBps = max(inBps, outBps)
	classes, _ := dig(svc, "qos", "qos-profile", "classes").(map[string]any)
	if classes == nil {
		return tfsAccess{}, fmt.Errorf("KeyError: 'qos'")
	}
	for _, c := range list(classes, "class") {
		if c["class-id"] != "qos-realtime" {
			return tfsAccess{}, fmt.Errorf("NotImplementedError: Site Network Access QoS Class Id: %v", c["class-id"])
		}
		if c["direction"] != q+"both" {
			return tfsAccess{}, fmt.Errorf("NotImplementedError: Site Network Access QoS Class Direction: %v", c["direction"])
		}
		lat, ok := dig(c, "latency", "latency-boundary").(float64)
		if !ok || dig(c, "bandwidth", "guaranteed-bw-percent") == nil {
			return tfsAccess{}, fmt.Errorf("KeyError: the class needs latency-boundary and guaranteed-bw-percent")
		}
		ep.LatencyMs = int(lat)
	}
	return tfsAccess{vpn: vpn, ep: ep}, nil
}

// dig follows the path of member names from m.
func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		node, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = node[p]
	}
	return v
}

func str(m map[string]any, path ...string) string {
	s, _ := dig(m, path...).(string)
	return s
}

// list is the entries of the list at path.
func list(m map[string]any, path ...string) []map[string]any {
	items, _ := dig(m, path...).([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if e, ok := it.(map[string]any); ok {
			out = append(out, e)
		}
	}
	return out
}
