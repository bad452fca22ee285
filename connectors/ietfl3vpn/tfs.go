package ietfl3vpn

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/internal/vpnrc"
	"github.com/wimro/wimro/connectors/rest"
)

// This file is the tfs dialect: TeraFlowSDN's own L3VPN northbound (see
// "The tfs dialect" in the package documentation).

// Dialects (setting dialect).
const (
	// DialectRFC8299 is a RESTCONF datastore of ietf-l3vpn-svc (default).
	DialectRFC8299 = "rfc8299"
	// DialectTFS is TeraFlowSDN's L3VPN NBI.
	DialectTFS = "tfs"
)

// noLatencyBound is the latency-boundary (ms, uint16) sent when no
// latency is asked: TeraFlowSDN requires a QoS class with one on every
// access, and the largest value bounds nothing in practice.
const noLatencyBound = 65535

// tfsConnector speaks the tfs dialect.
type tfsConnector struct {
	keys     *vpnrc.Connector // reads port mappings (tfsKeys)
	rc       *rest.Client
	cfg      connectors.Config
	set      settings
	build    time.Duration
	log      *slog.Logger
	now      func() time.Time
	services string // path of the vpn-services resource
}

// tfsKeys are the port mapping keys of the tfs dialect: TeraFlowSDN names
// an endpoint by its device and the endpoint's name on it, which it reads
// from device-reference and site-network-access-id.
var tfsKeys = []vpnrc.Key{{Name: "device-id", Required: true}, {Name: "endpoint-id", Required: true}, {Name: "location-id"}}

func newTFS(s settings, cfg connectors.Config) (connectors.Connector, error) {
	buildS, err := cfg.IntSetting("build_timeout_s", 900)
	if err != nil {
		return nil, err
	}
	if buildS < 1 {
		return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"build_timeout_s\" must be a positive number of seconds, got %d", Type, buildS)
	}
	keys, err := vpnrc.New(vpnrc.Model{Type: Type, Module: module, Top: "l3vpn-svc", Caps: Capabilities, Keys: tfsKeys}, cfg)
	if err != nil {
		return nil, err
	}
	rc, err := rest.New(Type, cfg)
	if err != nil {
		return nil, err
	}
	return &tfsConnector{keys: keys, rc: rc, cfg: cfg, set: s, build: time.Duration(buildS) * time.Second, log: cfg.Log(), now: time.Now,
		services: "/restconf/data/" + module + ":l3vpn-svc/vpn-services"}, nil
}

// servicePath is a vpn-service's resource, with TeraFlowSDN's trailing
// slash.
func (c *tfsConnector) servicePath(id string) string {
	return c.services + "/vpn-service=" + rest.EscapeKey(id) + "/"
}

// CheckMapping implements connectors.MappingChecker.
func (c *tfsConnector) CheckMapping(endpointID string, info map[string]any) error {
	return c.keys.CheckMapping(endpointID, info)
}

func (c *tfsConnector) lock(ctx context.Context, id string) (func(), error) {
	return c.cfg.MutationLock(ctx, Type+" "+c.rc.Controller()+" "+id)
}

func (c *tfsConnector) get(ctx context.Context, op, path string) (rest.Reply, error) {
	return c.rc.Do(ctx, op, rest.Request{Method: http.MethodGet, Path: path})
}

// CheckCredentials reads the vpn-services resource (TeraFlowSDN answers
// {} there), then checks every port mapping's keys.
func (c *tfsConnector) CheckCredentials(ctx context.Context) error {
	const op = "check credentials"
	r, err := c.get(ctx, op, c.services)
	switch {
	case err != nil:
		return err
	case r.Status == http.StatusNotFound:
		e := connectors.Errorf(connectors.KindPermanent, "%s %s: GET %s: HTTP 404: no TeraFlowSDN L3VPN NBI at this URL (%s)", Type, op, c.services, c.rc.Snippet(r.Body))
		e.Status = r.Status
		return e
	case !r.OK():
		return c.rc.Error(op, r, "")
	}
	for _, m := range c.cfg.PortMappings {
		if _, err := c.keys.Endpoint(m.WANServiceEndpointID, m.WANServiceMappingInfo); err != nil {
			return c.keys.Bad("%s: port mapping %q: %v", op, m.WANServiceEndpointID, err)
		}
	}
	return nil
}

// tfsEndpoint is a point with its mapping's device, endpoint and location.
type tfsEndpoint struct {
	point                      connectors.ConnectionPoint
	device, endpoint, location string
}

// validate refuses, before anything is sent, what ValidatePoints and the
// declared capabilities refuse and what TeraFlowSDN cannot read.
func (c *tfsConnector) validate(req connectors.Request) ([]tfsEndpoint, error) {
	if err := connectors.ValidatePoints(req.Type, req.Points); err != nil {
		return nil, err
	}
	if err := Capabilities.For(c.cfg).Check(Type, req); err != nil {
		return nil, err
	}
	mappings := c.cfg.Mappings()
	eps := make([]tfsEndpoint, len(req.Points))
	seen := map[string]int{}
	for i, p := range req.Points {
		info, err := mappings.For(Type, i, p)
		if err != nil {
			return nil, err
		}
		f, err := c.keys.Endpoint(p.ServiceEndpointID, info)
		if err != nil {
			return nil, c.keys.Bad("connection point %d: %v", i, err)
		}
		ep := tfsEndpoint{point: p, device: f["device-id"], endpoint: f["endpoint-id"], location: f["location-id"]}
		if ep.location == "" {
			ep.location = ep.device
		}
		if err := tfsCheck(ep); err != nil {
			return nil, c.keys.Bad("connection point %d (%s): %v", i, p.ServiceEndpointID, err)
		}
		at := ep.device + " " + ep.endpoint
		if j, dup := seen[at]; dup {
			return nil, c.keys.Bad("connection points %d and %d are both on endpoint %q of device %q: TeraFlowSDN keeps one access per device endpoint in a service", j, i, ep.endpoint, ep.device)
		}
		seen[at] = i
		eps[i] = ep
	}
	return eps, nil
}

// tfsCheck refuses what TeraFlowSDN's Handlers.py cannot read of a
// point: it reads an access's ipv4 connection only, a site's static
// routes only (BGP raises NotImplementedError), and the access's VLAN from
// the lan-tag "vlan<N>" it requires on every static route, taking the
// one of a route whose next-hop is on the access link (ValidatePoints
// keeps every next-hop there).
func tfsCheck(ep tfsEndpoint) error {
	l3 := ep.point.L3
	switch {
	case vpnrc.Family(l3) != "ipv4":
		return fmt.Errorf("l3 prefix %s: the tfs dialect carries IPv4 only (TeraFlowSDN reads ip-connection ipv4 only)", l3.Prefix)
	case l3.BGP != nil:
		return fmt.Errorf("l3 bgp: the tfs dialect carries static routing only (TeraFlowSDN refuses any other routing protocol)")
	case ep.point.Encapsulation != connectors.EncapDot1Q:
		return fmt.Errorf("the point is untagged: the tfs dialect needs a dot1q VLAN (TeraFlowSDN reads the access's VLAN from the lan-tag \"vlan<N>\" it requires on every static route)")
	}
	return nil
}

type tfsRoute struct {
	lan     netip.Prefix
	nextHop netip.Addr
}

// tfsRoutes are the site's static routes, or its prefix via the CE
// address (vpnrc.StaticLANs' rule, BGP aside).
func tfsRoutes(l3 *connectors.L3Site) []tfsRoute {
	var out []tfsRoute
	for _, r := range l3.StaticRoutes {
		out = append(out, tfsRoute{r.Prefix, r.NextHop})
	}
	if len(out) == 0 {
		out = append(out, tfsRoute{l3.Prefix, l3.CEAddress})
	}
	return out
}

// tfsBody is the one document TeraFlowSDN takes: the vpn-service and one
// site per point, in the shape its Handlers.py reads.
func (c *tfsConnector) tfsBody(id string, req connectors.Request, eps []tfsEndpoint) map[string]any {
	sites := make([]any, len(eps))
	for i, ep := range eps {
		sites[i] = c.tfsSite(id, id+"-"+strconv.Itoa(i), i, ep, req.QoS)
	}
	return map[string]any{q("l3vpn-svc"): map[string]any{
		"vpn-services": map[string]any{"vpn-service": []any{map[string]any{"vpn-id": id, "customer-name": c.set.Customer}}},
		"sites":        map[string]any{"site": sites},
	}}
}

// tfsSite is a site: the static routes at the site level (where
// process_site reads them), each tagged with the point's VLAN, and one
// access on the mapping's device and endpoint. TeraFlowSDN takes hub-role
// and spoke-role only and connects every endpoint of the service either
// way: the first site is the hub.
func (c *tfsConnector) tfsSite(vpnID, siteID string, i int, ep tfsEndpoint, qos connectors.QoS) map[string]any {
	l3 := ep.point.L3
	tag := "vlan" + strconv.Itoa(ep.point.VLAN)
	var lans []any
	for _, r := range tfsRoutes(l3) {
		lans = append(lans, map[string]any{"lan": r.lan.String(), "lan-tag": tag, "next-hop": r.nextHop.String()})
	}
	mbps := qos.BandwidthMbps
	if mbps == 0 {
		mbps = c.set.bandwidthMbps
	}
	bps := strconv.FormatUint(uint64(mbps)*1_000_000, 10) // uint64: a string in RFC 7951
	latency := qos.LatencyMs
	if latency == 0 {
		latency = noLatencyBound
	}
	role := q("spoke-role")
	if i == 0 {
		role = q("hub-role")
	}
	access := map[string]any{
		"site-network-access-id":   ep.endpoint,
		"site-network-access-type": q("multipoint"),
		"device-reference":         ep.device,
		"vpn-attachment":           map[string]any{"vpn-id": vpnID, "site-role": role},
		"ip-connection": map[string]any{"ipv4": map[string]any{
			"address-allocation-type": q("static-address"),
			"addresses": map[string]any{
				"provider-address": l3.PEAddress.Addr().String(),
				"customer-address": l3.CEAddress.String(),
				"prefix-length":    l3.PEAddress.Bits(),
			},
		}},
		"service": map[string]any{
			"svc-mtu": c.set.MTU, "svc-input-bandwidth": bps, "svc-output-bandwidth": bps,
			"qos": map[string]any{"qos-profile": map[string]any{"classes": map[string]any{"class": []any{map[string]any{
				"class-id":  "qos-realtime",
				"direction": q("both"),
				"latency":   map[string]any{"latency-boundary": latency},
				"bandwidth": map[string]any{"guaranteed-bw-percent": "100"},
			}}}}},
		},
	}
	return map[string]any{
		"site-id":    siteID,
		"management": map[string]any{"type": q("provider-managed")},
		"locations":  map[string]any{"location": []any{map[string]any{"location-id": ep.location}}},
		"devices":    map[string]any{"device": []any{map[string]any{"device-id": ep.device, "location": ep.location}}},
		"routing-protocols": map[string]any{"routing-protocol": []any{map[string]any{
			"type":   q("static"),
			"static": map[string]any{"cascaded-lan-prefixes": map[string]any{"ipv4-lan-prefixes": lans}},
		}}},
		"site-network-accesses": map[string]any{"site-network-access": []any{access}},
	}
}

// lookUp reads vpn-service id: found (ACTIVE or not yet), or not.
// TeraFlowSDN answers 200 when ACTIVE, 504 before, and 500 {"error":
// "VPN(<id>) not found in database"} for an id it does not know.
func (c *tfsConnector) lookUp(ctx context.Context, op, id string) (active bool, err error) {
	r, err := c.get(ctx, op, c.servicePath(id))
	switch {
	case err != nil:
		return false, err
	case r.Status == http.StatusOK:
		return true, nil
	case r.Status == http.StatusGatewayTimeout:
		return false, nil
	case notFound(r):
		e := connectors.Errorf(connectors.KindNotFound, "%s %s: the controller has no vpn-service %s", Type, op, id)
		e.Status = r.Status
		return false, e
	}
	return false, c.rc.Error(op, r, "")
}

// notFound reports TeraFlowSDN's answer for an unknown VPN.
func notFound(r rest.Reply) bool {
	var body struct {
		Error string `json:"error"`
	}
	return r.Status == http.StatusInternalServerError && json.Unmarshal(r.Body, &body) == nil &&
		strings.Contains(body.Error, "not found in database")
}

// CreateService POSTs the whole tree of vpn-service "wimro-<key>". When
// the look-up finds TeraFlowSDN has it already, the POST brings its
// endpoints and QoS in line (TeraFlowSDN refuses the vpn-service again,
// ALREADY_EXISTS, and updates the endpoints of the sites anyway; it
// removes none, and has no replace that would). A POST refused on a
// service it made deletes what TeraFlowSDN made of it (the vpn-service
// stays made when a site fails), unless ctx is done.
func (c *tfsConnector) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if req.Key == "" {
		return "", nil, c.keys.Bad("a service key is required")
	}
	eps, err := c.validate(req)
	if err != nil {
		return "", nil, err
	}
	id := vpnrc.ServiceID(req.Key)
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	_, err = c.lookUp(ctx, "look up vpn-service "+id, id)
	exists := err == nil
	if err != nil && !connectors.IsNotFound(err) {
		return "", nil, err
	}
	op := "create vpn-service " + id
	r, err := c.rc.JSON(ctx, op, http.MethodPost, c.services, rest.MediaYANGJSON, c.tfsBody(id, req, eps))
	if err != nil {
		return "", nil, err
	}
	if !r.OK() && !(exists && onlyExists(r, id)) {
		err := c.refusal(op, r)
		if !exists && ctx.Err() == nil {
			if derr := c.remove(ctx, id); derr != nil {
				c.log.Warn(Type+" create failed and its compensation too", "service_id", id, "error", err, "compensation_error", derr)
			}
		}
		return "", nil, err
	}
	c.log.Debug(Type+" service created", "service_id", id, "service_key", req.Key, "points", len(eps), "adopted", exists)
	return id, c.connInfo(id, req), nil
}

// tfsErrors reads TeraFlowSDN's list of {"error": …} of a 500, nil for
// any other reply.
func tfsErrors(r rest.Reply) []string {
	var list []struct {
		Error string `json:"error"`
	}
	if r.Status != http.StatusInternalServerError || json.Unmarshal(r.Body, &list) != nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, m := range list {
		out = append(out, m.Error)
	}
	return out
}

// onlyExists reports a reply whose only complaint is that vpn-service id
// exists (gRPC ALREADY_EXISTS): the sites were processed.
func onlyExists(r rest.Reply, id string) bool {
	msgs := tfsErrors(r)
	for _, m := range msgs {
		if !strings.Contains(m, "ALREADY_EXISTS") || !strings.Contains(m, id) {
			return false
		}
	}
	return len(msgs) > 0
}

// refusal is the error of a POST refused. TeraFlowSDN answers 500 with a
// list of {"error": …} for what its Service component refused (passed on,
// Retryable as any 5xx), and Flask's 500 {"message": …} for an exception
// its handler raised on the body (a YANG violation, a leaf it needs and
// does not find, NotImplementedError): Permanent, the same body would
// fail again.
func (c *tfsConnector) refusal(op string, r rest.Reply) error {
	if msgs := tfsErrors(r); len(msgs) > 0 {
		return c.rc.Error(op, r, rest.Clip(strings.Join(msgs, "; "), rest.MaxSnippet))
	}
	if r.Status == http.StatusInternalServerError {
		e := connectors.Errorf(connectors.KindPermanent, "%s %s: HTTP 500: TeraFlowSDN's handler failed on the body (%s): its log says why", Type, op, c.rc.Snippet(r.Body))
		e.Status = r.Status
		return e
	}
	return c.rc.Error(op, r, "")
}

// connInfo records the service type, the QoS and when the service was
// asked for (build_timeout_s runs from then).
func (c *tfsConnector) connInfo(id string, req connectors.Request) map[string]any {
	m := map[string]any{"vpn-id": id, "service-type": string(req.Type), "dialect": DialectTFS, "requested_at": c.now().UTC().Format(time.RFC3339)}
	if req.QoS.BandwidthMbps != 0 {
		m["bandwidth"] = req.QoS.BandwidthMbps
	}
	if req.QoS.LatencyMs != 0 {
		m["latency"] = req.QoS.LatencyMs
	}
	return m
}

// GetServiceStatus: 200 is ACTIVE; 504 is BUILD until build_timeout_s
// after the create, then ERROR; unknown is NotFound.
func (c *tfsConnector) GetServiceStatus(ctx context.Context, id string, connInfo map[string]any) (connectors.ServiceStatus, error) {
	if id == "" {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "%s status: empty service id", Type)
	}
	op := "status of vpn-service " + id
	active, err := c.lookUp(ctx, op, id)
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	info := map[string]any{"vpn-id": id}
	if active {
		return connectors.ServiceStatus{Status: connectors.StatusActive, Info: info}, nil
	}
	asked, _ := connInfo["requested_at"].(string)
	since, perr := time.Parse(time.RFC3339, asked)
	if perr == nil && c.now().Sub(since) > c.build {
		return connectors.ServiceStatus{Status: connectors.StatusError, Info: info,
			Message: fmt.Sprintf("%s %s: not ACTIVE %s after its create (build_timeout_s %d): TeraFlowSDN answers 504", Type, op, c.now().Sub(since).Round(time.Second), int(c.build/time.Second))}, nil
	}
	return connectors.ServiceStatus{Status: connectors.StatusBuild, Info: info, Message: "TeraFlowSDN has not activated the service yet (504)"}, nil
}

// EditService is refused: TeraFlowSDN's L3VPN NBI replaces nothing (the
// PUT of later releases takes the bandwidths only, never the endpoints),
// and a second POST of an id fails (ALREADY_EXISTS) while adding
// endpoints it never removes.
func (c *tfsConnector) EditService(ctx context.Context, _ string, _ map[string]any, _ connectors.Request) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, connectors.Errorf(connectors.KindRetryable, "%s edit: %w", Type, err)
	}
	return nil, c.keys.Bad("edit: the tfs dialect cannot edit a service (TeraFlowSDN's L3VPN NBI has no replace); delete and create it")
}

// DeleteService deletes the vpn-service; TeraFlowSDN answers 204 whether
// it knew it or not.
func (c *tfsConnector) DeleteService(ctx context.Context, id string, _ map[string]any) error {
	if id == "" {
		return nil
	}
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return c.remove(ctx, id)
}

func (c *tfsConnector) remove(ctx context.Context, id string) error {
	op := "delete vpn-service " + id
	r, err := c.rc.Do(ctx, op, rest.Request{Method: http.MethodDelete, Path: c.servicePath(id)})
	switch {
	case err != nil:
		return err
	case r.OK(), r.Status == http.StatusNotFound, notFound(r):
		return nil
	}
	return c.rc.Error(op, r, "")
}

// ListServices returns what TeraFlowSDN lists: nothing, whatever it holds
// (GET vpn-services is {}). Capabilities.List is false in this dialect,
// so drift reconcile looks each link up by its ServiceID instead.
func (c *tfsConnector) ListServices(ctx context.Context) ([]connectors.Service, error) {
	const op = "list vpn-services"
	r, err := c.get(ctx, op, c.services)
	if err != nil {
		return nil, err
	}
	if !r.OK() {
		return nil, c.rc.Error(op, r, "")
	}
	return []connectors.Service{}, nil
}

// ClearAll is refused: nothing lists what there is to clear.
func (c *tfsConnector) ClearAll(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return connectors.Errorf(connectors.KindRetryable, "%s clear all: %w", Type, err)
	}
	return c.keys.Bad("clear all: TeraFlowSDN answers GET vpn-services with {} whatever it holds: it cannot list its services")
}

var (
	_ connectors.Connector      = (*tfsConnector)(nil)
	_ connectors.MappingChecker = (*tfsConnector)(nil)
)
