// Package dynpac provides WIM type "dynpac": a connector for DynPaC, the
// Dynamic Path Computation framework (an ONOS application), through its
// bespoke REST API, as OSM's dynpac plugin drives it:
//
//	GET    {url}/checkCredentials       HTTP basic auth (cfg.User, cfg.Password)
//	GET    {url}/checkConnectivity      liveness probe
//	POST   {url}/service/create         form body body=<json>; the reply body is the new uuid
//	GET    {url}/service/status/{uuid}
//	DELETE {url}/service/delete/{uuid}
//	DELETE {url}/service/clearAll
//
// A non-2xx reply carries {code, description}; both end up in the error
// text ("Reason: <code>. Description: <description>.").
//
// Only ELINE with exactly two dot1q points is supported. Each point's
// MappingInfo (the port mapping's wan_service_mapping_info, or, when the
// point carries none, the WIM's port mapping for its endpoint) must give
// wan_switch_dpid and wan_switch_port; wan_vlan is the point's VLAN.
// EditService is not supported (Permanent "Unsupported feature").
//
// QoS: a create's bandwidth (connectors.QoS, Mbit/s) is DynPaC's
// bandwidth field; without one the configured bandwidth is sent (OSM
// hardcoded 100). DynPaC has no latency field, so latency is not honoured.
// A create asking a bandwidth that adopts a service this process made
// with another one is Permanent: DynPaC cannot edit a service.
//
// # Idempotency (documented limitation)
//
// DynPaC chooses the service uuid and keeps no client data, and it has no
// route that lists services, so a create cannot be looked up by key on the
// controller. The connector does what the API allows: it keeps a
// process-wide map (per controller URL) from service key to the uuid the
// controller returned, creates of one key are serialised, and a create
// whose key is in the map adopts the service after checking that it still
// exists on the controller. What remains non-idempotent: a create whose
// reply was lost (connection dropped or timeout after the controller
// acted), or a retry in another process (wimd restarted between the
// controller's reply and the database write), makes a second service and
// the first one leaks. ListServices lists the services of the map that
// still exist on the controller (with their keys); services created before
// the process started are not listed. ClearAll uses DynPaC's clearAll,
// which deletes every service on the controller, including ones wimro did
// not create.
//
// Settings (account config, then WIM config):
//
//	timeout_ms            per-request timeout (30000)
//	ca_file               PEM file of CA certificates to trust
//	insecure_skip_verify  do not verify the controller's TLS certificate (false)
//	bearer_token          bearer token, used when cfg.User is empty
//	bandwidth             bandwidth (Mbit/s) of a create that asks none (100, as OSM)
//	backup                ask for a backup path (false, as OSM)
package dynpac

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// Type is the WIM type this package registers.
const Type = "dynpac"

// Register adds the dynpac connector to r under Type.
func Register(r *connectors.Registry) { r.Register(Type, Factory, Capabilities) }

// Capabilities are dynpac's: ELINE ("L2") with a bandwidth, no edit, and
// no List: DynPaC has no route that lists its services, so the connector
// lists only what this wimd process created since it started; from that,
// drift reconcile would see every other link missing and find no orphan.
//
// No edit: an EDIT action replaces the service, deleting the old one
// first (break-before-make): DynPaC reserves a port's VLAN for one
// service, so a second one on the unchanged end would be refused.
var Capabilities = connectors.Capabilities{
	Services: []connectors.ServiceType{connectors.ServiceELINE},
	QoS:      []connectors.QoSField{connectors.QoSBandwidth},
}

// Factory builds a dynpac connector. It contacts nothing; invalid settings
// are Permanent errors.
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	client, err := rest.New(Type, cfg)
	if err != nil {
		return nil, err
	}
	bandwidth, err := cfg.IntSetting("bandwidth", 100)
	if err != nil {
		return nil, err
	}
	if bandwidth <= 0 {
		return nil, connectors.Errorf(connectors.KindPermanent, "dynpac: config \"bandwidth\" must be positive, got %d", bandwidth)
	}
	backup, err := cfg.BoolSetting("backup", false)
	if err != nil {
		return nil, err
	}
	return &connector{
		client:    client,
		bandwidth: bandwidth,
		backup:    backup,
		mappings:  cfg.Mappings(),
		known:     knownFor(client.Base()),
		log:       cfg.Log(),
	}, nil
}

type connector struct {
	client    *rest.Client
	bandwidth int
	backup    bool
	mappings  connectors.MappingIndex
	known     *known
	log       *slog.Logger
}

// known is the process-wide memory of the services created on one
// controller: service key → uuid, and a lock per key so that creates of
// one key do not race.
type known struct {
	mu    sync.Mutex
	byKey map[string]string
	// bandwidth is the bandwidth each key's service was created with.
	bandwidth map[string]int
	locks     connectors.MemLocker
}

var (
	knownMu  sync.Mutex
	knownAll = make(map[string]*known)
)

func knownFor(base string) *known {
	knownMu.Lock()
	defer knownMu.Unlock()
	k := knownAll[base]
	if k == nil {
		k = &known{byKey: make(map[string]string), bandwidth: make(map[string]int)}
		knownAll[base] = k
	}
	return k
}

func (k *known) get(key string) (id string, bandwidth int, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id, ok = k.byKey[key]
	return id, k.bandwidth[key], ok
}

func (k *known) set(key, id string, bandwidth int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byKey[key] = id
	k.bandwidth[key] = bandwidth
}

// forgetID drops id from the map.
func (k *known) forgetID(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, v := range k.byKey {
		if v == id {
			delete(k.byKey, key)
			delete(k.bandwidth, key)
		}
	}
}

func (k *known) snapshot() map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]string, len(k.byKey))
	for key, id := range k.byKey {
		out[key] = id
	}
	return out
}

func (k *known) clear() {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.byKey)
	clear(k.bandwidth)
}

// do sends one request. Every request carries the account's credentials
// (basic auth with cfg.User/cfg.Password, or the bearer token); DynPaC
// checks them on checkCredentials.
func (c *connector) do(ctx context.Context, op, method, path string, body string, contentType string) (rest.Reply, error) {
	req := rest.Request{Method: method, Path: path, ContentType: contentType, Accept: "application/json, text/plain"}
	if body != "" {
		req.Body = []byte(body)
	}
	return c.client.Do(ctx, op, req)
}

// httpError turns a non-2xx reply into a classified error carrying DynPaC's
// {code, description}, or the raw body when it is not that JSON.
func (c *connector) httpError(op string, r rest.Reply) error {
	var e struct {
		Code        any    `json:"code"`
		Description string `json:"description"`
	}
	detail := ""
	if json.Unmarshal(r.Body, &e) == nil && (e.Code != nil || e.Description != "") {
		detail = rest.Clip(fmt.Sprintf("Reason: %v. Description: %s.", e.Code, e.Description), rest.MaxSnippet)
	}
	return c.client.Error(op, r, detail)
}

func (c *connector) CheckCredentials(ctx context.Context) error {
	r, err := c.do(ctx, "check credentials", http.MethodGet, "/checkCredentials", "", "")
	if err != nil {
		return err
	}
	if !r.OK() {
		return c.httpError("check credentials (Failed while authenticating)", r)
	}
	return nil
}

// point is one connection point as DynPaC takes it.
type point struct {
	WANSwitchDPID string `json:"wan_switch_dpid"`
	WANSwitchPort any    `json:"wan_switch_port"`
	WANVLAN       int    `json:"wan_vlan"`
}

// createBody is the JSON sent in the form field "body".
type createBody struct {
	ConnectionPoints []point `json:"connection_points"`
	Bandwidth        int     `json:"bandwidth"`
	ServiceType      string  `json:"service_type"`
	Backup           bool    `json:"backup"`
}

// toPoints checks the input against DynPaC's rules and builds the points.
func (c *connector) toPoints(t connectors.ServiceType, points []connectors.ConnectionPoint) ([]point, error) {
	if err := connectors.ValidatePoints(t, points); err != nil {
		return nil, err
	}
	if t != connectors.ServiceELINE {
		return nil, connectors.Errorf(connectors.KindPermanent, `dynpac: unexpected service type %s: only ELINE ("L2") is accepted`, t)
	}
	out := make([]point, len(points))
	for i, p := range points {
		if p.Encapsulation != connectors.EncapDot1Q {
			return nil, connectors.Errorf(connectors.KindPermanent, "dynpac: connection point %d (%s): encapsulation %q is not supported, only dot1q", i, p.ServiceEndpointID, p.Encapsulation)
		}
		info, err := c.mappings.For(Type, i, p)
		if err != nil {
			return nil, err
		}
		dpid, port, err := switchPort(info)
		if err != nil {
			return nil, connectors.Errorf(connectors.KindPermanent, "dynpac: connection point %d (%s): %s", i, p.ServiceEndpointID, err)
		}
		out[i] = point{WANSwitchDPID: dpid, WANSwitchPort: port, WANVLAN: p.VLAN}
	}
	return out, nil
}

// switchPort reads the WAN switch dpid and port of a
// wan_service_mapping_info.
func switchPort(info map[string]any) (dpid string, port any, err error) {
	dpid, _ = info["wan_switch_dpid"].(string)
	if dpid == "" {
		return "", nil, fmt.Errorf("wan_service_mapping_info has no wan_switch_dpid")
	}
	port = info["wan_switch_port"]
	switch v := port.(type) {
	case string:
		if v == "" {
			port = nil
		}
	case float64, int, int64, json.Number:
	default:
		port = nil
	}
	if port == nil {
		return "", nil, fmt.Errorf("wan_service_mapping_info has no valid wan_switch_port")
	}
	return dpid, port, nil
}

// CheckMapping implements connectors.MappingChecker: info must give
// wan_switch_dpid and wan_switch_port.
func (c *connector) CheckMapping(endpointID string, info map[string]any) error {
	if _, _, err := switchPort(info); err != nil {
		return connectors.Errorf(connectors.KindPermanent, "dynpac: service endpoint %q: %s", endpointID, err)
	}
	return nil
}

// CreateService implements connectors.Connector: q's bandwidth
// replaces the configured one.
func (c *connector) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	key, t, points, q := req.Key, req.Type, req.Points, req.QoS
	if key == "" {
		return "", nil, connectors.Errorf(connectors.KindPermanent, "dynpac: a service key is required")
	}
	if q.LatencyMs != 0 {
		return "", nil, connectors.Errorf(connectors.KindPermanent, "dynpac: latency cannot be honoured: DynPaC's create has no latency field")
	}
	bandwidth := c.bandwidth
	if q.BandwidthMbps != 0 {
		bandwidth = q.BandwidthMbps
	}
	dp, err := c.toPoints(t, points)
	if err != nil {
		return "", nil, err
	}
	unlock, err := c.known.locks.Lock(ctx, key)
	if err != nil {
		return "", nil, connectors.Errorf(connectors.KindRetryable, "dynpac create: %w", err)
	}
	defer unlock()

	// Adopt a service this process already created for key, if the
	// controller still has it.
	if id, had, ok := c.known.get(key); ok {
		_, err := c.GetServiceStatus(ctx, id, nil)
		switch {
		case err == nil && q.BandwidthMbps != 0 && had != bandwidth:
			return "", nil, connectors.Errorf(connectors.KindPermanent,
				"dynpac create: service %s exists for key %s with bandwidth %d, not %d, and DynPaC cannot edit a service; delete it first", id, key, had, bandwidth)
		case err == nil:
			c.log.Debug("dynpac service adopted", "service_id", id, "service_key", key)
			return id, c.connInfo(key, dp, bandwidth), nil
		case connectors.IsNotFound(err):
			c.known.forgetID(id)
		default:
			return "", nil, err
		}
	}

	js, err := json.Marshal(createBody{ConnectionPoints: dp, Bandwidth: bandwidth, ServiceType: "L2", Backup: c.backup})
	if err != nil {
		return "", nil, connectors.Errorf(connectors.KindPermanent, "dynpac create: encoding the request: %w", err)
	}
	form := url.Values{"body": {string(js)}}.Encode()
	r, err := c.do(ctx, "create", http.MethodPost, "/service/create", form, "application/x-www-form-urlencoded")
	if err != nil {
		return "", nil, err
	}
	if !r.OK() {
		return "", nil, c.httpError("create", r)
	}
	id := strings.Trim(strings.TrimSpace(string(r.Body)), `"`)
	if !usableID(id) {
		// The controller may have acted; nothing can be adopted without an id.
		return "", nil, connectors.Errorf(connectors.KindPermanent, "dynpac create: the controller replied %d with no usable service id (%q)", r.Status, truncate(string(r.Body)))
	}
	c.known.set(key, id, bandwidth)
	c.log.Debug("dynpac service created", "service_id", id, "service_key", key)
	return id, c.connInfo(key, dp, bandwidth), nil
}

// usableID reports whether a create reply's body (trimmed) can be a
// service id: not empty, valid UTF-8, no control character (NUL
// included), nothing that would break the URL paths it goes into. An id
// that is not storable text would be changed when stored (wimro.CleanText)
// and would no longer name the service.
func usableID(id string) bool {
	return id != "" && utf8.ValidString(id) && !strings.ContainsAny(id, "/ ?#") && !strings.ContainsFunc(id, unicode.IsControl)
}

func (c *connector) connInfo(key string, dp []point, bandwidth int) map[string]any {
	pts := make([]any, len(dp))
	for i, p := range dp {
		pts[i] = map[string]any{"wan_switch_dpid": p.WANSwitchDPID, "wan_switch_port": p.WANSwitchPort, "wan_vlan": p.WANVLAN}
	}
	return map[string]any{"service_key": key, "connection_points": pts, "bandwidth": bandwidth, "backup": c.backup}
}

// truncate quotes controller text briefly (rest.Clip at 128 bytes).
func truncate(s string) string { return rest.Clip(s, 128) }

func (c *connector) GetServiceStatus(ctx context.Context, id string, _ map[string]any) (connectors.ServiceStatus, error) {
	if id == "" {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "dynpac status: empty service id")
	}
	r, err := c.do(ctx, "status", http.MethodGet, "/service/status/"+url.PathEscape(id), "", "")
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	if !r.OK() {
		return connectors.ServiceStatus{}, c.httpError("status of "+id, r)
	}
	return parseStatus(r.Body), nil
}

// parseStatus reads a 200 status reply: a JSON object with wim_status or
// status, a JSON string, or a bare status word. A reply with no status is
// ACTIVE (the service exists and DynPaC reports nothing wrong).
func parseStatus(body []byte) connectors.ServiceStatus {
	trimmed := strings.TrimSpace(string(body))
	var raw string
	var info map[string]any
	var obj map[string]any
	var str string
	switch {
	case trimmed == "":
	case json.Unmarshal(body, &obj) == nil && obj != nil:
		info = obj
		for _, k := range []string{"wim_status", "status", "state"} {
			if s, ok := obj[k].(string); ok && s != "" {
				raw = s
				break
			}
		}
	case json.Unmarshal(body, &str) == nil:
		raw = str
	default:
		raw = trimmed
	}
	st := connectors.ServiceStatus{Status: connectors.StatusActive, Info: info}
	if raw == "" {
		return st
	}
	if st.Info == nil {
		st.Info = map[string]any{"status": raw}
	}
	switch strings.ToUpper(strings.TrimSpace(raw)) {
	case "ACTIVE", "UP", "OK", "ESTABLISHED", "RUNNING", "INSTALLED", "ENABLED":
		st.Status = connectors.StatusActive
	case "BUILD", "BUILDING", "PENDING", "CREATING", "SCHEDULED", "RESERVED", "INSTALLING", "PROVISIONING":
		st.Status, st.Message = connectors.StatusBuild, "DynPaC status "+raw
	case "INACTIVE", "UNKNOWN":
		st.Status, st.Message = connectors.StatusInactive, "DynPaC status "+raw
	case "DOWN", "DISABLED", "DEGRADED":
		st.Status, st.Message = connectors.StatusDown, "DynPaC status "+raw
	case "ERROR", "FAILED", "FAILURE", "REJECTED":
		st.Status, st.Message = connectors.StatusError, "DynPaC status "+raw
	default:
		st.Status, st.Message = connectors.StatusInactive, fmt.Sprintf("unknown DynPaC status %q", truncate(raw))
	}
	return st
}

func (c *connector) EditService(ctx context.Context, id string, _ map[string]any, _ connectors.Request) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, connectors.Errorf(connectors.KindRetryable, "dynpac edit: %w", err)
	}
	return nil, connectors.HTTPError(http.StatusNotImplemented, "dynpac edit of %s: Unsupported feature", id)
}

func (c *connector) DeleteService(ctx context.Context, id string, _ map[string]any) error {
	if id == "" {
		return nil
	}
	r, err := c.do(ctx, "delete", http.MethodDelete, "/service/delete/"+url.PathEscape(id), "", "")
	if err != nil {
		return err
	}
	if !r.OK() && r.Status != http.StatusNotFound && r.Status != http.StatusGone {
		return c.httpError("delete of "+id, r)
	}
	c.known.forgetID(id)
	return nil
}

// ListServices lists the services this process created on the controller
// that still exist there (DynPaC has no list route). It probes the
// controller first, so an unreachable controller is an error even when
// nothing is known.
func (c *connector) ListServices(ctx context.Context) ([]connectors.Service, error) {
	r, err := c.do(ctx, "list", http.MethodGet, "/checkConnectivity", "", "")
	if err != nil {
		return nil, err
	}
	if !r.OK() {
		return nil, c.httpError("list (checkConnectivity)", r)
	}
	snap := c.known.snapshot()
	keys := make([]string, 0, len(snap))
	for k := range snap {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return snap[keys[i]] < snap[keys[j]] })
	out := make([]connectors.Service, 0, len(keys))
	for _, key := range keys {
		id := snap[key]
		st, err := c.GetServiceStatus(ctx, id, nil)
		if connectors.IsNotFound(err) {
			c.known.forgetID(id)
			continue
		}
		if err != nil {
			return nil, err
		}
		info := map[string]any{"status": string(st.Status)}
		if st.Message != "" {
			info["message"] = st.Message
		}
		out = append(out, connectors.Service{ID: id, Key: key, Info: info})
	}
	return out, nil
}

// ClearAll deletes every service on the controller (DynPaC's clearAll
// cannot tell wimro's services from others).
func (c *connector) ClearAll(ctx context.Context) error {
	r, err := c.do(ctx, "clear all", http.MethodDelete, "/service/clearAll", "", "")
	if err != nil {
		return err
	}
	if !r.OK() {
		return c.httpError("clear all", r)
	}
	c.known.clear()
	c.log.Debug("dynpac services cleared", "deleted", truncate(string(r.Body)))
	return nil
}

var (
	_ connectors.Connector = (*connector)(nil)
)
