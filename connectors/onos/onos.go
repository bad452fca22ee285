// Package onos provides WIM types "onos" and "onos_vpls" (the same
// connector): ONOS's VPLS application driven through the network
// configuration REST API (as OSM's onos_vpls plugin drives it), with basic auth (ONOS's default is
// onos/rocks). Every path is relative to {wim_url}/onos/v1 (a wim_url that
// already ends with /onos/v1 is used as is):
//
//	GET  /applications/org.onosproject.vpls                 CheckCredentials: auth, and the app is ACTIVE
//	GET  /network/configuration/ports                       the interfaces of every port (404 = none)
//	POST /network/configuration/ports                       {subject: {"interfaces": [...]}} of the ports we change
//	GET  /network/configuration/apps/org.onosproject.vpls/vpls   the VPLS list (404 = none)
//	POST /network/configuration/apps/org.onosproject.vpls/vpls   the whole VPLS list, without lastUpdateTime
//
// ONOS errors are {"code", "message"}; their message ends up in the error
// text. A 207 Multi-Status from netcfg (some config keys refused) is a
// Permanent failure carrying ONOS's messages.
//
// # Objects
//
// The service id is the caller's key (the WAN link's uuid; any 1 to 128
// letters, digits, '.', '_' or '-' starting with a letter or digit). The
// service
// is the VPLS named "wimro-<key>", with one interface per connection point
// named "wimro-<key>-<i>.<h>" (i is the point's index, h 8 hex digits of a
// hash of the point's port and VLAN), configured on the point's port with
// the access VLAN as a string ("vlan": "100", as ONOS writes it) for dot1q
// and no vlan for none. The hash makes an edit that moves a point to
// another VLAN or port rename its interface, so the VPLS entry changes
// too: ONOS's VPLS application reloads only when its own config changes
// (VplsConfigManager compares interfaces with their VLAN and connect point
// then), and a change under ports alone would leave traffic on the old
// VLAN. Interfaces named "wimro-<key>-<i>" by earlier releases are still
// the service's and are replaced by the first edit. Interfaces are never shared
// between services nor named after the endpoint, unlike OSM's: two services
// on one port with different VLANs have interfaces of their own. The VPLS
// encapsulation is the core transport encapsulation between the edge
// ports, from the setting "encapsulation", never the access VLAN.
//
// A point's port comes from its MappingInfo (the port mapping's
// wan_service_mapping_info; when the point carries none, the WIM's port
// mapping for its endpoint): "switch_dpid" is the OpenFlow datapath id,
// given as "of:<hex>", as hex digits, or as colon-separated hex bytes (up
// to 16 digits, left-padded with zeros); "switch_port" is the OpenFlow
// port number, a number or a decimal string in 1..4294967040. Anything
// else is a Permanent error naming the point and the key, raised before
// any request; so is a service whose two points land on the same port and
// VLAN.
//
// # Idempotency and concurrency
//
// Create and edit first ask ONOS for the VPLS application's state: while
// it is not ACTIVE, ONOS keeps a posted vpls config pending and answers 404
// for it, so nothing is written and the call fails Retryable naming the
// cause.
//
// Create looks the VPLS and its interfaces up by name and brings them in
// line with the request (create-or-replace), so a retried create adopts
// the service. Every change of the network configuration is a
// read-modify-write of one config key with no ETag, so create, edit,
// delete and clear run under cfg.MutationLock("onos-vpls:<base URL>"):
// goroutines of this process queue on it, and wimd's Locker (PostgreSQL
// advisory locks) keeps other wimd processes out. Only the config keys
// touched are posted (the ports we change, the VPLS list), other tenants'
// interfaces and VPLSs are carried over untouched, and lastUpdateTime is
// stripped from the VPLS config before every POST (the VPLS app ignores a
// config that carries one). After writing, the connector reads both keys
// again and re-applies what is missing (another controller client may
// have written in between), at most 3 times, then fails Retryable. A
// create of a new VPLS that fails after writing undoes what it added
// itself (its entry, the interfaces that were not there), never by
// re-posting an older tree; a failed edit, or create of an existing VPLS,
// is left for the retry to converge. Delete finds the interfaces by their
// name prefix on every port, so it needs no connInfo.
//
// The lock is keyed by the base URL (host lower-cased, default port made
// explicit, no user info): WIMs that reach one ONOS cluster through
// different hosts or addresses are not serialised with each other (the
// verify step repairs only the writer's own service).
//
// # Status
//
// The VPLS present with all its interfaces (in its VPLS entry and
// configured on their ports with their VLAN) is ACTIVE; present with some
// missing is DOWN, naming them; absent is a NotFound error. The expected
// interfaces come from connInfo, or, without it, from the VPLS entry and
// the interfaces bearing the service's prefix. ONOS keeps no other
// per-VPLS state in netcfg, so there is no BUILD phase. The vpls config
// read is what the VPLS application wrote back (its own view, the
// interfaces it resolved); when ONOS has no vpls config at all the
// application's state is asked, and an application that is not ACTIVE
// makes the service DOWN naming it (vpls_app_state in the info). Info gives the
// VPLS, its interfaces, its encapsulation and, once the VPLS app has
// written the config back, its last_update_time.
//
// ListServices and ClearAll see only the VPLSs named "wimro-<key>"; ClearAll
// removes them and their interfaces (interfaces left by a create that
// crashed before writing its VPLS are removed by a delete of that key).
//
// # Settings (account config, then WIM config)
//
//	timeout_ms            per-request timeout (30000)
//	ca_file               PEM file of CA certificates to trust
//	insecure_skip_verify  do not verify the controller's TLS certificate (false)
//	bearer_token          bearer token, used when the account has no user
//	encapsulation         VPLS core encapsulation: NONE, VLAN or MPLS (NONE)
package onos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// WIM types this package registers.
const (
	Type     = "onos"
	TypeVPLS = "onos_vpls"
)

// Register adds the connector to r under Type and TypeVPLS.
func Register(r *connectors.Registry) {
	r.Register(Type, Factory, Capabilities)
	r.Register(TypeVPLS, Factory, Capabilities)
}

// Capabilities are onos's: a VPLS is an ELINE or an ELAN, edited in place
// and listed; VPLS has no QoS.
var Capabilities = connectors.Capabilities{
	Services: []connectors.ServiceType{connectors.ServiceELINE, connectors.ServiceELAN},
	Edit:     true,
	List:     true,
}

const (
	apiPath   = "/onos/v1"
	vplsApp   = "org.onosproject.vpls"
	appPath   = "/applications/" + vplsApp
	portsPath = "/network/configuration/ports"
	vplsPath  = "/network/configuration/apps/" + vplsApp + "/vpls"

	// namePrefix marks the VPLSs and interfaces wimro owns.
	namePrefix = "wimro-"
	// maxAttempts bounds the write passes of one change; one more pass
	// only verifies.
	maxAttempts = 3
)

var encapsulations = map[string]bool{"NONE": true, "VLAN": true, "MPLS": true}

// keyPattern is what a service key may look like: it becomes part of ONOS
// object names, and ownership is read back from those names.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

type connector struct {
	cfg      connectors.Config // for MutationLock
	rest     *rest.Client
	encap    string
	mappings connectors.MappingIndex
	lockName string
	// portNames maps a port subject (of:<dpid>/<port>) to the endpoint
	// id of the port mapping that names it, "" when two do: ListServices
	// reads a VPLS's interfaces back as endpoints through it.
	portNames map[string]string
	log       *slog.Logger
}

// Factory builds an onos connector. It contacts nothing; invalid settings
// are Permanent errors.
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.URL), "/")
	if !strings.HasSuffix(base, apiPath) {
		base += apiPath
	}
	restCfg := cfg
	restCfg.URL = base
	client, err := rest.New("onos", restCfg)
	if err != nil {
		return nil, err
	}
	encap, err := cfg.StringSetting("encapsulation", "NONE")
	if err != nil {
		return nil, err
	}
	encap = strings.ToUpper(strings.TrimSpace(encap))
	if !encapsulations[encap] {
		return nil, connectors.Errorf(connectors.KindPermanent, "onos: config \"encapsulation\" must be NONE, VLAN or MPLS, got %q", encap)
	}
	portNames := map[string]string{}
	for _, m := range cfg.PortMappings {
		port, err := portSubject(m.WANServiceMappingInfo)
		if err != nil {
			continue // not an ONOS port: it names nothing here
		}
		if prev, ok := portNames[port]; ok && prev != m.WANServiceEndpointID {
			portNames[port] = ""
			continue
		}
		portNames[port] = m.WANServiceEndpointID
	}
	return &connector{
		cfg:       cfg,
		rest:      client,
		encap:     encap,
		mappings:  cfg.Mappings(),
		lockName:  "onos-vpls:" + client.Controller(),
		portNames: portNames,
		log:       cfg.Log(),
	}, nil
}

func vplsName(key string) string { return namePrefix + key }

// keyOf returns the key of a VPLS name wimro made.
func keyOf(name string) (string, bool) {
	key, ok := strings.CutPrefix(name, namePrefix)
	return key, ok && keyPattern.MatchString(key)
}

// lock takes the mutation lock of this controller.
func (c *connector) lock(ctx context.Context) (func(), error) {
	return c.cfg.MutationLock(ctx, c.lockName)
}

func (c *connector) CheckCredentials(ctx context.Context) error {
	const op = "check credentials"
	state, err := c.appState(ctx, op)
	if err != nil {
		return err
	}
	if state != "ACTIVE" {
		return connectors.Errorf(connectors.KindPermanent, "onos %s: VPLS application is not active (%s is %q); activate it on the controller", op, vplsApp, state)
	}
	return nil
}

// appState returns the state ONOS reports for the VPLS application
// (ACTIVE, INSTALLED); an application that is not installed is a
// Permanent error.
func (c *connector) appState(ctx context.Context, op string) (string, error) {
	r, err := c.rest.Do(ctx, op, rest.Request{Method: http.MethodGet, Path: appPath})
	if err != nil {
		return "", err
	}
	if r.Status == http.StatusNotFound {
		return "", connectors.Errorf(connectors.KindPermanent, "onos %s: the VPLS application %s is not installed (%s)", op, vplsApp, onosDetail(r.Body))
	}
	if !r.OK() {
		return "", c.fail(op, r)
	}
	var app struct {
		State string `json:"state"`
	}
	if err := c.rest.Decode(op, r, &app); err != nil {
		return "", err
	}
	if app.State == "" {
		return "", connectors.Errorf(connectors.KindPermanent, "onos %s: the answer for %s carries no state", op, vplsApp)
	}
	return app.State, nil
}

// requireApp fails when the VPLS application is not active: ONOS then
// keeps a posted vpls config pending and answers 404 for it, so a write
// could never be verified. It is Retryable (activating the application
// lets the retry through) and names the cause.
func (c *connector) requireApp(ctx context.Context, op string) error {
	state, err := c.appState(ctx, op)
	if err != nil {
		return err
	}
	if state != "ACTIVE" {
		return connectors.Errorf(connectors.KindRetryable, "onos %s: the VPLS application %s is %s, not ACTIVE: activate it on the controller", op, vplsApp, state)
	}
	return nil
}

func (c *connector) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if err := Capabilities.Check(Type, req); err != nil {
		return "", nil, err
	}
	key, t, points := req.Key, req.Type, req.Points
	want, err := c.interfaces(key, t, points)
	if err != nil {
		return "", nil, err
	}
	if err := c.requireApp(ctx, "create"); err != nil {
		return "", nil, err
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	existed, err := c.converge(ctx, key, want, false)
	if err != nil {
		return "", nil, err
	}
	c.log.Debug("onos VPLS in place", "service_id", key, "vpls", vplsName(key), "adopted", existed)
	return key, c.connInfo(key, t, want), nil
}

func (c *connector) EditService(ctx context.Context, id string, connInfo map[string]any, req connectors.Request) (map[string]any, error) {
	points := req.Points
	// The type asked, else an ELINE stays an ELINE; without connInfo,
	// VPLS's own rule (two points or more) applies.
	t := connectors.ServiceELAN
	if s, _ := connInfo["type"].(string); s == string(connectors.ServiceELINE) {
		t = connectors.ServiceELINE
	}
	if req.Type != "" {
		t = req.Type
	}
	if !keyPattern.MatchString(id) {
		if err := connectors.ValidatePoints(t, points); err != nil {
			return nil, err
		}
		return nil, connectors.Errorf(connectors.KindNotFound, "onos edit: %q is not a service id of this connector", id)
	}
	want, err := c.interfaces(id, t, points)
	if err != nil {
		return nil, err
	}
	if err := c.requireApp(ctx, "edit"); err != nil {
		return nil, err
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := c.converge(ctx, id, want, true); err != nil {
		return nil, err
	}
	c.log.Debug("onos VPLS edited", "service_id", id, "interfaces", len(want))
	return c.connInfo(id, t, want), nil
}

func (c *connector) DeleteService(ctx context.Context, id string, _ map[string]any) error {
	if !keyPattern.MatchString(id) {
		// Nothing wimro made can have this id.
		return nil
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.remove(ctx, []string{id}); err != nil {
		return err
	}
	c.log.Debug("onos VPLS deleted", "service_id", id)
	return nil
}

// ListServices lists wimro's VPLSs; Endpoints reads each one's interfaces
// back, from the ports they are configured on, through the port mappings
// (nil when an interface is configured on no port, on several, or on a
// port no single mapping names).
func (c *connector) ListServices(ctx context.Context) ([]connectors.Service, error) {
	doc, err := c.readVPLS(ctx)
	if err != nil {
		return nil, err
	}
	var (
		out   []connectors.Service
		where map[string][]place
	)
	for _, e := range doc.entries() {
		key, ok := keyOf(e.Name)
		if !ok {
			continue
		}
		if where == nil {
			p, err := c.readPorts(ctx)
			if err != nil {
				return nil, err
			}
			where = places(p)
		}
		out = append(out, connectors.Service{ID: key, Key: key, Info: e.info(), Endpoints: c.endpoints(e, where)})
	}
	return out, nil
}

// place is where an interface is configured: a port and its VLAN text.
type place struct{ port, vlan string }

// places indexes the configured interfaces by name.
func places(p ports) map[string][]place {
	out := make(map[string][]place)
	for port, list := range p {
		for _, raw := range list {
			h := headOf(raw)
			out[h.Name] = append(out[h.Name], place{port, vlanOf(h.VLAN)})
		}
	}
	return out
}

// endpoints reads a VPLS's interfaces back as endpoints; nil when one
// cannot be read.
func (c *connector) endpoints(e vplsEntry, where map[string][]place) []string {
	out := make([]string, 0, len(e.Interfaces))
	for _, name := range e.Interfaces {
		ps := where[name]
		if len(ps) != 1 {
			return nil
		}
		id := c.portNames[ps[0].port]
		vlan := 0
		if ps[0].vlan != "" {
			var err error
			if vlan, err = strconv.Atoi(ps[0].vlan); err != nil {
				return nil
			}
		}
		if id == "" {
			return nil
		}
		out = append(out, connectors.EndpointName(id, vlan))
	}
	slices.Sort(out)
	return out
}

// ClearAll removes every VPLS named wimro-<key> and the interfaces of
// those keys, and nothing else.
func (c *connector) ClearAll(ctx context.Context) error {
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	doc, err := c.readVPLS(ctx)
	if err != nil {
		return err
	}
	var keys []string
	for _, e := range doc.entries() {
		if key, ok := keyOf(e.Name); ok {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if err := c.remove(ctx, keys); err != nil {
		return err
	}
	c.log.Debug("onos VPLSs cleared", "deleted", len(keys))
	return nil
}

func (c *connector) GetServiceStatus(ctx context.Context, id string, connInfo map[string]any) (connectors.ServiceStatus, error) {
	if !keyPattern.MatchString(id) {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "onos status: %q is not a service id of this connector", id)
	}
	doc, err := c.readVPLS(ctx)
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	entry, ok := doc.find(vplsName(id))
	if !ok {
		if !doc.present {
			// No vpls config at all: ONOS answers so too while the VPLS
			// application is not active, and then no VPLS runs.
			state, err := c.appState(ctx, "status")
			if err != nil {
				return connectors.ServiceStatus{}, err
			}
			if state != "ACTIVE" {
				return connectors.ServiceStatus{Status: connectors.StatusDown, Message: fmt.Sprintf("the VPLS application %s is %s, not ACTIVE: no VPLS runs", vplsApp, state),
					Info: map[string]any{"vpls": vplsName(id), "vpls_app_state": state}}, nil
			}
		}
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "onos status: VPLS %s not found", vplsName(id))
	}
	ports, err := c.readPorts(ctx)
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	st := status(id, entry, ports, expectedInterfaces(connInfo))
	var updated any
	if json.Unmarshal(doc.updated, &updated) == nil && updated != nil {
		// Set when the VPLS app has applied the config and written it back.
		st.Info["last_update_time"] = updated
	}
	return st, nil
}

// fail returns the classified error of a non-2xx (or 207) reply, with
// ONOS's message.
func (c *connector) fail(op string, r rest.Reply) error {
	return c.rest.Error(op, r, onosDetail(r.Body))
}

// onosDetail returns the message of an ONOS error body {"code",
// "message"}, where message is a string or, for 207, a list of strings,
// through rest.Clip with rest.MaxSnippet; "" for any other body.
func onosDetail(body []byte) string {
	var e struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Message) == 0 {
		return ""
	}
	var one string
	if json.Unmarshal(e.Message, &one) == nil {
		return rest.Clip(one, rest.MaxSnippet)
	}
	var many []string
	if json.Unmarshal(e.Message, &many) == nil {
		return rest.Clip(strings.Join(many, "; "), rest.MaxSnippet)
	}
	return ""
}

var _ connectors.Connector = (*connector)(nil)
