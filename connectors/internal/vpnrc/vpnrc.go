// Package vpnrc is the connector the RESTCONF (RFC 8040) VPN models share
// once their bodies are built: the l2nm (RFC 9291), l3nm (RFC 9182) and
// ietfl3vpn (RFC 8299) connectors are each a Model, the lists their
// entries live in and how one request becomes entries, and this package
// does the rest the same way for all: the deterministic vpn-id, look-up
// before create, POST under the list (PUT to replace what exists, or
// nothing when it holds the create already: Model.Adopt), compensation
// of a failed create, edit by PUT, delete in reverse order, status,
// listing and errors read from ietf-restconf:errors bodies.
//
// A service is a vpn-service entry (the first list of the Model) and,
// for models that keep attachments outside it (L3SM sites), more entries
// in the other lists, each owned by one vpn-id (Model.Lists' Owner).
// Only entries whose vpn-id starts with IDPrefix are wimro's: listing,
// pruning and ClearAll never touch another tenant's.
package vpnrc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// IDPrefix starts every vpn-id wimro makes; the rest is the service key.
const IDPrefix = "wimro-"

// ServiceID is the vpn-id of key's service (Capabilities.ServiceID).
func ServiceID(key string) string {
	if key == "" {
		return ""
	}
	return IDPrefix + key
}

// Entry is one list entry of a service.
type Entry struct {
	// List is the list's path under the module's top container
	// ("/vpn-services"); Member its member name ("vpn-service").
	List, Member string
	// Key is the entry's key value; Body the entry, key leaf included.
	Key  string
	Body map[string]any
}

// Path is the entry's path under the top container.
func (e Entry) Path() string { return e.List + "/" + e.Member + "=" + rest.EscapeKey(e.Key) }

func (e Entry) String() string { return e.Member + " " + e.Key }

// List is a list that holds entries of wimro's services.
type List struct {
	Path, Member string
	// Owner returns the vpn-id an entry of the list belongs to ("" for
	// none).
	Owner func(entry map[string]any) string
}

// Key is a key of a port mapping's wan_service_mapping_info.
type Key struct {
	Name     string
	Required bool
}

// Endpoint is a connection point with the mapping keys the Model reads.
type Endpoint struct {
	Point connectors.ConnectionPoint
	// Fields are the Model's Keys found in the mapping ("" when absent).
	Fields map[string]string
}

// Model is what one VPN model adds to the shared connector.
type Model struct {
	// Type is the WIM type; Module the YANG module and Top its top
	// container ("ietf-l3vpn-ntw", "l3vpn-ntw").
	Type, Module, Top string
	// Caps are the declared capabilities (Check refuses the rest).
	Caps connectors.Capabilities
	// Keys are the mapping keys each endpoint needs or may have.
	Keys []Key
	// Lists are where the entries live, the vpn-services list first.
	// Entries are created in this order and deleted in the reverse one.
	Lists []List
	// Check refuses, Permanent, what the model cannot carry of a request
	// that Capabilities let through; nil accepts all.
	Check func(req connectors.Request, eps []Endpoint) error
	// Entries returns the entries of service id for req, in creation
	// order, the vpn-service first.
	Entries func(id string, req connectors.Request, eps []Endpoint) []Entry
	// Status reads the status of vpn-service id from its entry as the
	// server returns it: the model's operational state, else what the
	// model makes of its existence. Info's "vpn-id" is set here.
	Status func(id string, service map[string]any) connectors.ServiceStatus
	// Place names where a port mapping's endpoint attaches, from the
	// mapping's Keys; Attachments reads the places and VLANs (0:
	// untagged) a service's entries attach to. With both set,
	// ListServices reads each service's Endpoints back through the port
	// mappings; without them Endpoints stay nil. Where Attachments also
	// reads each access's L3 site back (Attachment.L3), the service's L3
	// is listed too.
	Place       func(fields map[string]string) string
	Attachments func(entries []Entry) []Attachment

	// DiscoverRoot finds the RESTCONF root as RFC 8040 §3.1 says (the
	// WIM URL when its path ends in /restconf, else the one the server's
	// host-meta names, else /restconf: rest.Root); false: /restconf under
	// the WIM URL.
	DiscoverRoot bool
	// Adopt leaves a vpn-service a create finds as it is when it holds
	// every leaf the create would write (rest.Covers); otherwise it is
	// replaced.
	Adopt bool
	// SingleEntry says the vpn-service entry is the whole service (one
	// list): create, edit and delete list nothing, as nothing else of
	// the vpn-id can be left to prune.
	SingleEntry bool
	// CreateByPut creates an entry with PUT on the entry itself (201)
	// instead of POST under its list: RFC 8040 allows both, and Cisco
	// CNC's config APIs document only GET, PUT, PATCH and DELETE of the
	// entry.
	CreateByPut bool
	// NoCEAddress says the controller's model keeps no CE address (it is
	// not sent): the L3 sites listed say so (connectors.L3Form.CEUnheld),
	// so that drift reconcile does not find it missing.
	NoCEAddress bool
	// Edit returns the type and QoS an edit keeps, read from the
	// vpn-service as the controller holds it (for models that carry
	// more than one type); nil: the first declared type and the QoS
	// connInfo records.
	Edit func(service map[string]any) (connectors.ServiceType, connectors.QoS)
	// Info adds the model's own fields to a create's or edit's connInfo;
	// ListInfo to a listed service's Info. Either may be nil.
	Info     func(id string, req connectors.Request, eps []Endpoint) map[string]any
	ListInfo func(service map[string]any) map[string]any
}

// Attachment is where one access of a listed service attaches.
type Attachment struct {
	Place string
	VLAN  int
	// L3 is the access's L3 site as the controller holds it (its
	// Prefix zero: the routes carry it); nil when the model has none or
	// the Model does not read it back.
	L3 *connectors.L3Site
}

// Connector is the shared connector of a Model.
type Connector struct {
	m        Model
	rc       *rest.Client
	cfg      connectors.Config
	mappings connectors.MappingIndex
	log      *slog.Logger
	now      func() time.Time
	top      string     // the top container under the RESTCONF root
	root     *rest.Root // nil: DefaultRESTCONFRoot
}

// New builds the connector of m for cfg. It contacts nothing.
func New(m Model, cfg connectors.Config) (*Connector, error) {
	rc, err := rest.New(m.Type, cfg)
	if err != nil {
		return nil, err
	}
	c := &Connector{m: m, rc: rc, cfg: cfg, mappings: cfg.Mappings(), log: cfg.Log(), now: time.Now,
		top: "/data/" + m.Module + ":" + m.Top}
	if m.DiscoverRoot {
		c.root = rest.NewRoot(rc)
	}
	return c, nil
}

// base is the path of the top container, the RESTCONF root found first
// where the Model discovers it.
func (c *Connector) base(ctx context.Context, op string) (string, error) {
	if c.root == nil {
		return rest.DefaultRESTCONFRoot + c.top, nil
	}
	root, err := c.root.Get(ctx, op)
	return root + c.top, err
}

// Bad is the Permanent error of a bad setting or input, prefixed with the
// WIM type.
func (c *Connector) Bad(format string, args ...any) error {
	return connectors.Errorf(connectors.KindPermanent, "%s: "+format, append([]any{c.m.Type}, args...)...)
}

// Endpoint reads one wan_service_mapping_info for the Model's Keys.
func (c *Connector) Endpoint(endpointID string, info map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(c.m.Keys))
	for _, k := range c.m.Keys {
		v, present := info[k.Name]
		s, isString := v.(string)
		switch {
		case (!present || v == nil) && !k.Required:
			continue
		case !present || v == nil:
			return nil, fmt.Errorf("the wan_service_mapping_info of service endpoint %q has no %q", endpointID, k.Name)
		case !isString || s == "":
			return nil, fmt.Errorf("the wan_service_mapping_info of service endpoint %q: %q must be a non-empty string, got %v", endpointID, k.Name, v)
		}
		out[k.Name] = s
	}
	return out, nil
}

// CheckMapping implements connectors.MappingChecker: the mapping must
// carry the Model's required keys, as non-empty strings.
func (c *Connector) CheckMapping(endpointID string, info map[string]any) error {
	if _, err := c.Endpoint(endpointID, info); err != nil {
		return connectors.Errorf(connectors.KindPermanent, "%s: %w", c.m.Type, err)
	}
	return nil
}

func (c *Connector) endpoints(points []connectors.ConnectionPoint) ([]Endpoint, error) {
	eps := make([]Endpoint, len(points))
	for i, p := range points {
		info, err := c.mappings.For(c.m.Type, i, p)
		if err != nil {
			return nil, err
		}
		f, err := c.Endpoint(p.ServiceEndpointID, info)
		if err != nil {
			return nil, c.Bad("connection point %d: %v", i, err)
		}
		eps[i] = Endpoint{Point: p, Fields: f}
	}
	return eps, nil
}

// validate checks a request before anything is sent: the points (first,
// so that three points for an ELINE keep OSM's multipoint text), the
// declared capabilities, the mappings and what the Model cannot carry.
func (c *Connector) validate(req connectors.Request) ([]Endpoint, error) {
	if err := connectors.ValidatePoints(req.Type, req.Points); err != nil {
		return nil, err
	}
	if err := c.m.Caps.For(c.cfg).Check(c.m.Type, req); err != nil {
		return nil, err
	}
	eps, err := c.endpoints(req.Points)
	if err != nil {
		return nil, err
	}
	if c.m.Check != nil {
		if err := c.m.Check(req, eps); err != nil {
			return nil, err
		}
	}
	return eps, nil
}

func (c *Connector) lock(ctx context.Context, id string) (func(), error) {
	return c.cfg.MutationLock(ctx, c.m.Type+" "+c.rc.Controller()+" "+id)
}

func (c *Connector) qualified(name string) string { return c.m.Module + ":" + name }

func (c *Connector) get(ctx context.Context, op, path string) (rest.Reply, error) {
	base, err := c.base(ctx, op)
	if err != nil {
		return rest.Reply{}, err
	}
	return c.rc.Do(ctx, op, rest.Request{Method: http.MethodGet, Path: base + path, Accept: rest.MediaYANGJSON})
}

// fail is the error of a non-2xx reply, with its RESTCONF errors.
func (c *Connector) fail(op string, r rest.Reply) error {
	return c.rc.Error(op, r, rest.RESTCONFDetail(r.Body))
}

// member decodes member name of a reply into out.
func (c *Connector) member(op string, r rest.Reply, name string, out any) error {
	return c.rc.Member(op, r, c.m.Module, name, out)
}

// read GETs one entry: nil without error when the server has none.
func (c *Connector) read(ctx context.Context, op string, e Entry) (map[string]any, error) {
	r, err := c.get(ctx, op, e.Path())
	switch {
	case err != nil:
		return nil, err
	case r.Status == http.StatusNotFound:
		return nil, nil
	case !r.OK():
		return nil, c.fail(op, r)
	}
	var list []map[string]any
	if err := c.member(op, r, e.Member, &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, nil
	}
	return list[0], nil
}

// write creates e (POST under its list; a 409 means it is there after
// all and is replaced) or, when it exists or the Model creates by PUT,
// writes it with PUT on the entry.
func (c *Connector) write(ctx context.Context, e Entry, exists bool) error {
	doc := map[string]any{c.qualified(e.Member): []any{e.Body}}
	base, err := c.base(ctx, "write "+e.String())
	if err != nil {
		return err
	}
	if !exists && !c.m.CreateByPut {
		op := "create " + e.String()
		r, err := c.rc.JSON(ctx, op, http.MethodPost, base+e.List, rest.MediaYANGJSON, doc)
		switch {
		case err != nil:
			return err
		case r.OK():
			return nil
		case r.Status != http.StatusConflict:
			return c.fail(op, r)
		}
	}
	op := "replace " + e.String()
	if !exists {
		op = "create " + e.String()
	}
	r, err := c.rc.JSON(ctx, op, http.MethodPut, base+e.Path(), rest.MediaYANGJSON, doc)
	if err != nil {
		return err
	}
	if !r.OK() {
		return c.fail(op, r)
	}
	return nil
}

// remove deletes one entry; one already gone (404, 409 data-missing) is
// success.
func (c *Connector) remove(ctx context.Context, e Entry) error {
	op := "delete " + e.String()
	base, err := c.base(ctx, op)
	if err != nil {
		return err
	}
	r, err := c.rc.Do(ctx, op, rest.Request{Method: http.MethodDelete, Path: base + e.Path(), Accept: rest.MediaYANGJSON})
	switch {
	case err != nil:
		return err
	case r.OK(), rest.Gone(r):
		return nil
	}
	return c.fail(op, r)
}

// owned lists wimro's entries of every list, by vpn-id, each vpn-id's in
// the Model's list order; services are the vpn-service entries, sorted.
func (c *Connector) owned(ctx context.Context) (map[string][]Entry, []map[string]any, error) {
	out := map[string][]Entry{}
	var services []map[string]any
	for i, l := range c.m.Lists {
		op := "list " + strings.TrimPrefix(l.Path, "/")
		r, err := c.get(ctx, op, l.Path)
		switch {
		case err != nil:
			return nil, nil, err
		case rest.EmptyReply(r):
			continue
		case !r.OK():
			return nil, nil, c.fail(op, r)
		}
		var doc map[string][]map[string]any
		if err := c.member(op, r, strings.TrimPrefix(l.Path, "/"), &doc); err != nil {
			return nil, nil, err
		}
		keyLeaf := ""
		for _, e := range doc[l.Member] {
			id := l.Owner(e)
			if !strings.HasPrefix(id, IDPrefix) {
				continue
			}
			if keyLeaf == "" {
				keyLeaf = keyOf(e, l.Member)
			}
			key, _ := e[keyLeaf].(string)
			out[id] = append(out[id], Entry{List: l.Path, Member: l.Member, Key: key, Body: e})
			if i == 0 {
				services = append(services, e)
			}
		}
	}
	slices.SortFunc(services, func(a, b map[string]any) int { return strings.Compare(c.m.Lists[0].Owner(a), c.m.Lists[0].Owner(b)) })
	return out, services, nil
}

// keyOf names the key leaf of an entry of member: the model lists wimro
// writes are keyed "<member>-id", vpn-service by "vpn-id".
func keyOf(e map[string]any, member string) string {
	for _, k := range []string{member + "-id", "vpn-id", "id"} {
		if _, ok := e[k]; ok {
			return k
		}
	}
	return "id"
}

// prune deletes entries of id that are not wanted (left by an earlier
// create or edit with other points), in reverse list order.
func (c *Connector) prune(ctx context.Context, id string, wanted []Entry) error {
	if c.m.SingleEntry {
		return nil
	}
	found, _, err := c.owned(ctx)
	if err != nil {
		return err
	}
	stale := slices.DeleteFunc(found[id], func(e Entry) bool {
		return slices.ContainsFunc(wanted, func(w Entry) bool { return w.Path() == e.Path() })
	})
	return c.removeAll(ctx, stale)
}

// removeAll deletes entries, the last one first (attachments before the
// vpn-service they reference).
func (c *Connector) removeAll(ctx context.Context, entries []Entry) error {
	for _, e := range slices.Backward(entries) {
		if err := c.remove(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

func (c *Connector) serviceEntry(id string) Entry {
	return Entry{List: c.m.Lists[0].Path, Member: c.m.Lists[0].Member, Key: id}
}

// CheckCredentials reads the vpn-services list, then checks every port
// mapping's keys.
func (c *Connector) CheckCredentials(ctx context.Context) error {
	const op = "check credentials"
	path := c.m.Lists[0].Path
	r, err := c.get(ctx, op, path)
	if err != nil {
		return err
	}
	if r.Status == http.StatusNotFound && !rest.EmptyReply(r) {
		base, _ := c.base(ctx, op) // found by the GET
		e := connectors.Errorf(connectors.KindPermanent, "%s %s: GET %s: HTTP 404: no %s RESTCONF datastore at this URL (%s)", c.m.Type, op, base+path, c.m.Module, c.rc.Snippet(r.Body))
		e.Status = r.Status
		return e
	}
	if !r.OK() && !rest.EmptyReply(r) {
		return c.fail(op, r)
	}
	for _, m := range c.cfg.PortMappings {
		if _, err := c.Endpoint(m.WANServiceEndpointID, m.WANServiceMappingInfo); err != nil {
			return c.Bad("%s: port mapping %q: %v", op, m.WANServiceEndpointID, err)
		}
	}
	return nil
}

// CreateService makes the service of req.Key: its vpn-service is looked
// up first and, when there, it and its entries are replaced (PUT: the
// request's points and QoS win); otherwise each entry is POSTed under its
// list. Entries of the vpn-id that the request does not make are then
// deleted. A create that fails after a write deletes what it wrote,
// unless its context is done (a retry adopts or cleans up).
func (c *Connector) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if req.Key == "" {
		return "", nil, c.Bad("a service key is required")
	}
	eps, err := c.validate(req)
	if err != nil {
		return "", nil, err
	}
	id := ServiceID(req.Key)
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	existing, err := c.read(ctx, "look up "+c.serviceEntry(id).String(), c.serviceEntry(id))
	if err != nil {
		return "", nil, err
	}
	entries := c.m.Entries(id, req, eps)
	var written []Entry
	for _, e := range entries {
		exists := existing != nil
		if exists && c.m.Adopt && len(entries) == 1 && rest.Covers(existing, jsonValue(e.Body), Common) {
			break // as asked already
		}
		if err = c.write(ctx, e, exists); err != nil {
			break
		}
		written = append(written, e)
	}
	if err == nil {
		err = c.prune(ctx, id, entries)
	}
	if err != nil {
		c.compensate(ctx, id, written, err)
		return "", nil, err
	}
	c.log.Debug(c.m.Type+" service created", "service_id", id, "service_key", req.Key, "points", len(eps), "adopted", existing != nil)
	return id, c.connInfo(id, req, eps, entries), nil
}

// compensate removes what a failed create wrote; with ctx done it does
// nothing: the call must return now.
func (c *Connector) compensate(ctx context.Context, id string, written []Entry, cause error) {
	if ctx.Err() != nil || len(written) == 0 {
		return
	}
	if err := c.removeAll(ctx, written); err != nil {
		c.log.Warn(c.m.Type+" create failed and its compensation too", "service_id", id, "error", cause, "compensation_error", err)
	}
}

// connInfo records the service type, the entries other than the
// vpn-service (their presence is part of the status), the QoS (an edit
// keeps it) and when the service was asked for.
func (c *Connector) connInfo(id string, req connectors.Request, eps []Endpoint, entries []Entry) map[string]any {
	paths := make([]any, 0, len(entries))
	for _, e := range entries[1:] {
		paths = append(paths, []any{e.List, e.Member, e.Key})
	}
	m := map[string]any{"vpn-id": id, "service-type": string(req.Type), "entries": paths, "requested_at": c.now().UTC().Format(time.RFC3339)}
	if c.m.Info != nil {
		maps.Copy(m, c.m.Info(id, req, eps))
	}
	if req.QoS.BandwidthMbps != 0 {
		m["bandwidth"] = req.QoS.BandwidthMbps
	}
	if req.QoS.LatencyMs != 0 {
		m["latency"] = req.QoS.LatencyMs
	}
	return m
}

// entriesOf reads the entries a connInfo records.
func entriesOf(connInfo map[string]any) []Entry {
	list, _ := connInfo["entries"].([]any)
	var out []Entry
	for _, item := range list {
		parts, _ := item.([]any)
		if len(parts) != 3 {
			continue
		}
		l, _ := parts[0].(string)
		m, _ := parts[1].(string)
		k, _ := parts[2].(string)
		if l != "" && m != "" && k != "" {
			out = append(out, Entry{List: l, Member: m, Key: k})
		}
	}
	return out
}

// qosOf reads the QoS a connInfo records (decoded JSON: IntSetting reads
// its numbers as it reads settings).
func qosOf(connInfo map[string]any) connectors.QoS {
	info := connectors.Config{AccountConfig: connInfo}
	bw, _ := info.IntSetting("bandwidth", 0)
	lat, _ := info.IntSetting("latency", 0)
	return connectors.QoS{BandwidthMbps: bw, LatencyMs: lat}
}

// GetServiceStatus reads the vpn-service: absent is NotFound; else the
// Model's status, DOWN when an entry connInfo records is missing.
func (c *Connector) GetServiceStatus(ctx context.Context, id string, connInfo map[string]any) (connectors.ServiceStatus, error) {
	if id == "" {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "%s status: empty service id", c.m.Type)
	}
	svc := c.serviceEntry(id)
	op := "status of " + svc.String()
	body, err := c.read(ctx, op, svc)
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	if body == nil {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "%s %s: the controller has no such vpn-service", c.m.Type, op)
	}
	st := c.m.Status(id, body)
	if st.Info == nil {
		st.Info = map[string]any{}
	}
	st.Info["vpn-id"] = id
	var missing []string
	for _, e := range entriesOf(connInfo) {
		got, err := c.read(ctx, "status of "+e.String(), e)
		if err != nil {
			return connectors.ServiceStatus{}, err
		}
		if got == nil {
			missing = append(missing, e.String()+" is missing")
		}
	}
	if len(missing) > 0 {
		return connectors.ServiceStatus{Status: connectors.StatusDown, Info: map[string]any{"vpn-id": id}, Message: "vpn-service " + id + ": " + strings.Join(missing, "; ")}, nil
	}
	return st, nil
}

// EditService replaces the service's points: its entries are rebuilt
// from the points and the QoS connInfo records, written (PUT), and the
// ones no longer wanted deleted.
func (c *Connector) EditService(ctx context.Context, id string, connInfo map[string]any, in connectors.Request) (map[string]any, error) {
	if id == "" {
		return nil, connectors.Errorf(connectors.KindNotFound, "%s edit: empty service id", c.m.Type)
	}
	points := in.Points
	req := connectors.Request{Key: strings.TrimPrefix(id, IDPrefix), Type: c.m.Caps.Services[0], Points: points, QoS: qosOf(connInfo)}
	if !in.QoS.IsZero() {
		req.QoS = in.QoS
	}
	// A request that names its type is the service's whole new state;
	// without one the model reads type and QoS back from the service.
	readBack := c.m.Edit != nil && in.Type == ""
	if in.Type != "" {
		req.Type = in.Type
	}
	var eps []Endpoint
	var err error
	if !readBack {
		eps, err = c.validate(req)
	} else {
		// The type is read with the service: what no declared type
		// accepts is refused before anything is sent.
		err = c.anyType(points)
	}
	if err != nil {
		return nil, err
	}
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	svc := c.serviceEntry(id)
	existing, err := c.read(ctx, "edit "+svc.String(), svc)
	if err != nil {
		return nil, err
	}
	if existing == nil {
		return nil, connectors.Errorf(connectors.KindNotFound, "%s edit %s: the controller has no such vpn-service", c.m.Type, svc)
	}
	if readBack {
		req.Type, req.QoS = c.m.Edit(existing)
		if eps, err = c.validate(req); err != nil {
			return nil, err
		}
	}
	entries := c.m.Entries(id, req, eps)
	if err := c.prune(ctx, id, entries); err != nil {
		return nil, err
	}
	for i, e := range entries {
		// The vpn-service exists; a new attachment entry is POSTed.
		if err := c.write(ctx, e, i == 0); err != nil {
			return nil, err
		}
	}
	c.log.Debug(c.m.Type+" service edited", "service_id", id, "points", len(eps))
	return c.connInfo(id, req, eps, entries), nil
}

// anyType refuses points that no declared service type accepts, or
// whose mappings do not resolve.
func (c *Connector) anyType(points []connectors.ConnectionPoint) error {
	var err error
	for _, t := range c.m.Caps.Services {
		if err = connectors.ValidatePoints(t, points); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = c.endpoints(points)
	return err
}

// DeleteService deletes the service's entries the controller lists
// (connInfo may be nil or stale), the vpn-service last; gone is success.
func (c *Connector) DeleteService(ctx context.Context, id string, connInfo map[string]any) error {
	if id == "" {
		return nil
	}
	unlock, err := c.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return c.teardown(ctx, id, entriesOf(connInfo))
}

// teardown deletes the entries of id: the known ones and those listed,
// then the vpn-service.
func (c *Connector) teardown(ctx context.Context, id string, known []Entry) error {
	found := map[string][]Entry{}
	if !c.m.SingleEntry {
		var err error
		if found, _, err = c.owned(ctx); err != nil {
			return err
		}
	}
	all := []Entry{c.serviceEntry(id)}
	for _, e := range append(known, found[id]...) {
		if e.Path() != all[0].Path() && !slices.ContainsFunc(all, func(a Entry) bool { return a.Path() == e.Path() }) {
			all = append(all, e)
		}
	}
	if err := c.removeAll(ctx, all); err != nil {
		return err
	}
	c.log.Debug(c.m.Type+" service deleted", "service_id", id)
	return nil
}

// ListServices lists wimro's vpn-services (vpn-id prefix "wimro-").
// Endpoints are read back through the port mappings where the Model says
// how (endpointsOf), else nil.
func (c *Connector) ListServices(ctx context.Context) ([]connectors.Service, error) {
	found, services, err := c.owned(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]connectors.Service, 0, len(services))
	for _, s := range services {
		id := c.m.Lists[0].Owner(s)
		names := make([]any, 0, len(found[id]))
		for _, e := range found[id] {
			names = append(names, e.String())
		}
		info := map[string]any{"customer-name": s["customer-name"], "entries": names}
		if c.m.ListInfo != nil {
			maps.Copy(info, c.m.ListInfo(s))
		}
		eps, l3 := c.endpointsOf(found[id])
		out = append(out, connectors.Service{ID: id, Key: strings.TrimPrefix(id, IDPrefix), Info: info, Endpoints: eps, L3: l3})
	}
	return out, nil
}

// endpointsOf reads a service's entries back as endpoints through the
// port mappings (Model.Place, Model.Attachments), with the L3 site of
// each where the Model reads them; nil when the model cannot tell, or an
// access matches no mapping, or two.
func (c *Connector) endpointsOf(entries []Entry) ([]string, map[string]connectors.L3Form) {
	if c.m.Place == nil || c.m.Attachments == nil {
		return nil, nil
	}
	places := map[string]string{}
	for _, m := range c.cfg.PortMappings {
		f, err := c.Endpoint(m.WANServiceEndpointID, m.WANServiceMappingInfo)
		if err != nil {
			continue
		}
		p := c.m.Place(f)
		if prev, ok := places[p]; ok && prev != m.WANServiceEndpointID {
			places[p] = "" // two mappings attach there: ambiguous
			continue
		}
		places[p] = m.WANServiceEndpointID
	}
	atts := c.m.Attachments(entries)
	if len(atts) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(atts))
	var l3 map[string]connectors.L3Form
	for _, a := range atts {
		id := places[a.Place]
		if id == "" {
			return nil, nil
		}
		name := connectors.EndpointName(id, a.VLAN)
		out = append(out, name)
		if a.L3 != nil {
			if l3 == nil {
				l3 = map[string]connectors.L3Form{}
			}
			f := connectors.L3FormOf(a.L3)
			f.CEUnheld = c.m.NoCEAddress
			l3[name] = f
		}
	}
	slices.Sort(out)
	return out, l3
}

// ClearAll deletes wimro's services and their entries; other tenants'
// are left alone.
func (c *Connector) ClearAll(ctx context.Context) error {
	found, services, err := c.owned(ctx)
	if err != nil {
		return err
	}
	for _, s := range services {
		id := c.m.Lists[0].Owner(s)
		unlock, err := c.lock(ctx, id)
		if err != nil {
			return err
		}
		err = c.removeAll(ctx, found[id])
		unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

var (
	_ connectors.Connector      = (*Connector)(nil)
	_ connectors.MappingChecker = (*Connector)(nil)
)

// Family is the address family ("ipv4", "ipv6") of a site's prefix, as
// both models name it.
func Family(l3 *connectors.L3Site) string {
	if l3.Prefix.Addr().Is4() {
		return "ipv4"
	}
	return "ipv6"
}

// StaticLANs are a site's cascaded-lan-prefixes entries ({lan, next-hop},
// one shape in both models): its static routes, or, when it gives none
// and does not peer with BGP, its prefix via the CE address. Nil when the
// site learns its routes by BGP only.
func StaticLANs(l3 *connectors.L3Site) []any {
	var lans []any
	for _, r := range l3.StaticRoutes {
		lans = append(lans, map[string]any{"lan": r.Prefix.String(), "next-hop": r.NextHop.String()})
	}
	if len(lans) == 0 && l3.BGP == nil {
		lans = append(lans, map[string]any{"lan": l3.Prefix.String(), "next-hop": l3.CEAddress.String()})
	}
	return lans
}

// LAN is a cascaded-lan-prefixes entry as a controller lists it (one
// shape in both models: StaticLANs).
type LAN struct {
	LAN     string `json:"lan"`
	NextHop string `json:"next-hop"`
}

// Static is a static routing-protocol's container as listed.
type Static struct {
	LANs map[string][]LAN `json:"cascaded-lan-prefixes"` // by "<family>-lan-prefixes"
}

// Routes reads the listed cascaded-lan-prefixes back as static routes.
// An entry that does not parse is left out: the site then differs from
// the one asked, as it does on the controller.
func (s Static) Routes() []connectors.StaticRoute {
	var out []connectors.StaticRoute
	for _, lans := range s.LANs {
		for _, l := range lans {
			prefix, err1 := netip.ParsePrefix(l.LAN)
			via, err2 := netip.ParseAddr(l.NextHop)
			if err1 == nil && err2 == nil {
				out = append(out, connectors.StaticRoute{Prefix: prefix, NextHop: via})
			}
		}
	}
	return out
}

// Settings are the settings both models read.
type Settings struct {
	// Customer is customer-name of the services (setting customer_name).
	Customer string
	// MTU is the accesses' MTU (setting default_mtu).
	MTU int
}

// ReadSettings reads customer_name ("wimro") and default_mtu (1500, in
// 1..65535: L3SM's svc-mtu is a uint16) for WIM type typ; a bad value is
// a Permanent error naming the setting.
func ReadSettings(typ string, cfg connectors.Config) (Settings, error) {
	var s Settings
	var err error
	if s.Customer, err = cfg.StringSetting("customer_name", "wimro"); err != nil {
		return s, err
	}
	if s.Customer == "" {
		return s, connectors.Errorf(connectors.KindPermanent, "%s: config \"customer_name\" is empty", typ)
	}
	if s.MTU, err = cfg.IntSetting("default_mtu", 1500); err != nil {
		return s, err
	}
	if s.MTU < 1 || s.MTU > 65535 {
		return s, connectors.Errorf(connectors.KindPermanent, "%s: config \"default_mtu\" must be in 1..65535, got %d", typ, s.MTU)
	}
	return s, nil
}

// Dialect reads setting "dialect" of WIM type typ: one of allowed, the
// first by default; anything else is a Permanent error naming them.
func Dialect(typ string, cfg connectors.Config, allowed ...string) (string, error) {
	d, err := cfg.StringSetting("dialect", allowed[0])
	if err != nil {
		return "", err
	}
	if !slices.Contains(allowed, d) {
		return "", connectors.Errorf(connectors.KindPermanent, "%s: config \"dialect\" must be one of %s, got %q", typ, strings.Join(allowed, ", "), d)
	}
	return d, nil
}

// Common is the module of the identities the VPN network models share
// (RFC 9181).
const Common = "ietf-vpn-common"

// VC qualifies an ietf-vpn-common identity.
func VC(identity string) string { return Common + ":" + identity }

// AdminUp is the status container of an entry that is administratively
// up.
func AdminUp() map[string]any {
	return map[string]any{"admin-status": map[string]any{"status": VC("admin-up")}}
}

// OperOf reads the RFC 9181 oper-status identity of a vpn-service, node
// or access, without its module; "" when the controller reports none.
func OperOf(m map[string]any) string {
	st, _ := m["status"].(map[string]any)
	oper, _ := st["oper-status"].(map[string]any)
	s, _ := oper["status"].(string)
	return s[strings.IndexByte(s, ':')+1:]
}

// Nodes groups a network model's accesses (one per endpoint, built by
// access) under one vpn-node per PE (the endpoint's "ne-id"), in the
// endpoints' order; node returns a vpn-node of its own leaves.
func Nodes(eps []Endpoint, node func(ne string) map[string]any, access func(i int, ep Endpoint) map[string]any) []any {
	var nodes []any
	byNE := map[string][]any{}
	var order []string
	for i, ep := range eps {
		ne := ep.Fields["ne-id"]
		if _, ok := byNE[ne]; !ok {
			order = append(order, ne)
		}
		byNE[ne] = append(byNE[ne], access(i, ep))
	}
	for _, ne := range order {
		n := node(ne)
		n["vpn-node-id"], n["ne-id"], n["status"] = ne, ne, AdminUp()
		n["vpn-network-accesses"] = map[string]any{"vpn-network-access": byNE[ne]}
		nodes = append(nodes, n)
	}
	return nodes
}

// NodeAttachments reads the vpn-network-accesses of listed vpn-service
// entries of a network model (vpn-nodes by ne-id, else by vpn-node-id) back: each one's place
// (place of its ne-id, interface-id and bearer-reference) and cvlan-id.
func NodeAttachments(place func(fields map[string]string) string) func(entries []Entry) []Attachment {
	return NodeL3Attachments(place, nil)
}

// NodeL3Attachments is NodeAttachments with each access's L3 site read
// back by l3 from the access as listed.
func NodeL3Attachments(place func(fields map[string]string) string, l3 func(access map[string]any) *connectors.L3Site) func(entries []Entry) []Attachment {
	return func(entries []Entry) []Attachment {
		var out []Attachment
		for _, e := range entries {
			var svc struct {
				Nodes struct {
					Node []struct {
						NE       string `json:"ne-id"`
						ID       string `json:"vpn-node-id"`
						Accesses struct {
							Access []struct {
								Interface  string `json:"interface-id"`
								Connection struct {
									Encapsulation struct {
										Dot1Q struct {
											CVLAN int `json:"cvlan-id"`
										} `json:"dot1q"`
									} `json:"encapsulation"`
									Bearer string `json:"bearer-reference"`
								} `json:"connection"`
							} `json:"vpn-network-access"`
						} `json:"vpn-network-accesses"`
					} `json:"vpn-node"`
				} `json:"vpn-nodes"`
			}
			b, _ := json.Marshal(e.Body)
			if json.Unmarshal(b, &svc) != nil {
				return nil
			}
			nodes, _ := e.Body["vpn-nodes"].(map[string]any)
			raw, _ := nodes["vpn-node"].([]any)
			for i, n := range svc.Nodes.Node {
				ne := n.NE
				if ne == "" {
					// A controller that drops ne-id (Cisco CNC's L3NM
					// deviations): wimro names the vpn-node after it.
					ne = n.ID
				}
				for j, a := range n.Accesses.Access {
					p := place(map[string]string{"ne-id": ne, "interface-id": a.Interface, "bearer-reference": a.Connection.Bearer})
					att := Attachment{Place: p, VLAN: a.Connection.Encapsulation.Dot1Q.CVLAN}
					if l3 != nil {
						att.L3 = l3(rawAccess(raw, i, j))
					}
					out = append(out, att)
				}
			}
		}
		return out
	}
}

// rawAccess is access j of vpn-node i of a listed vpn-service, as
// decoded JSON (nil when absent).
func rawAccess(nodes []any, i, j int) map[string]any {
	if i >= len(nodes) {
		return nil
	}
	n, _ := nodes[i].(map[string]any)
	accesses, _ := n["vpn-network-accesses"].(map[string]any)
	list, _ := accesses["vpn-network-access"].([]any)
	if j >= len(list) {
		return nil
	}
	a, _ := list[j].(map[string]any)
	return a
}

// jsonValue returns v as encoding/json decodes it, to compare with a
// reply.
func jsonValue(v any) any {
	var out any
	b, _ := json.Marshal(v)
	_ = json.Unmarshal(b, &out)
	return out
}
