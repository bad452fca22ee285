// Package ietfl2vpn is an in-process emulator of a strict RESTCONF (RFC
// 8040) server for the IETF L2VPN service model (RFC 8466, module
// ietf-l2vpn-svc@2018-10-09), the controller that wimro's ietfl2vpn
// connector drives. It is an http.Handler: mount it on
// an httptest.Server and point a WIM at the server's URL. Options.Dialect
// "osm" puts TeraFlowSDN's NBI in front of the same datastore (see "The
// osm dialect"); the rest describes the default, "rfc8466".
//
// Resources, under Root (/restconf/data/ietf-l2vpn-svc:l2vpn-svc):
//
//	GET                 Root                                      the whole datastore
//	GET, POST           /vpn-services                              POST: 201 + Location, 409 data-exists
//	GET, PUT, DELETE    /vpn-services/vpn-service=<vpn-id>          PUT: 201 created, 204 replaced
//	GET                 /sites, /sites/site=<site-id>               sites are seeded (Options.Sites), read-only
//	GET, POST           /sites/site=<id>/site-network-accesses
//	GET, PUT, DELETE    /sites/site=<id>/site-network-accesses/site-network-access=<network-access-id>
//
// Key values are percent-decoded (RFC 8040 §3.5.3). Request bodies are
// application/yang-data+json (application/json is accepted too); replies
// are application/yang-data+json, and every error is an
// {"ietf-restconf:errors": {"error": [...]}} body with the RFC 8040
// error-tag: unknown-element, missing-element, invalid-value (400),
// data-missing with error-app-tag instance-required for an unresolved
// leafref (400), access-denied (401), data-missing for an absent resource
// (404), data-exists (409 on POST), in-use (409 on DELETE of a vpn-service
// that a site-network-access still references), operation-not-supported
// (405).
//
// Validation is strict, from a hand-written rule table of the part of RFC
// 8466 a WIM uses (schema.go): the top-level member must be
// module-qualified, unknown members are refused (RFC 8466 members outside
// the table too, since the emulator could not check them), mandatory leaves
// (ce-vlan-preservation, ce-vlan-cos-preservation, svc-mtu, cvlan-id,
// multicast-gp-port-mapping under feature bum, oam's md-name and md-level
// under feature ethernet-oam) must be there, identityrefs must name identities of the module (with or without
// the "ietf-l2vpn-svc:" prefix; stored qualified), cvlan-id is a JSON number
// in 1..4094, dot1q-vlan-tagged needs tagged-interface type dot1q, the
// location-flavor choice must match the site's management type
// (location-reference for customer-managed sites, device-reference for
// provider- and co-managed ones) and name its location or device, and
// vpn-attachment/vpn-id must name an existing vpn-service (require-instance).
// Features follow Options.Features (default bearer-reference and dot1q).
//
// RFC 8466 has no operational status. Options.BuildPolls emulates the
// TeraFlowSDN dialect instead: GET of a new vpn-service answers 504 that
// many times before it answers 200. Dump returns the whole datastore as
// one RFC 7951 document, for checking with yanglint.
//
// # The osm dialect
//
// Options.Dialect "osm" answers like ETSI TeraFlowSDN's L2SM NBI, the
// server OSM's IETF L2VPN connector works with. Every
// write body is first rewritten as TeraFlowSDN does, then validated with
// the strict rules above, so that the datastore stays valid RFC 8466:
//
//   - vpn-service: ce-vlan-preservation and ce-vlan-cos-preservation default
//     to true, frame-delivery/multicast-gp-port-mapping to static-mapping;
//   - site-network-access: location-reference is dropped and
//     device-reference defaults to FakeDevice; encapsulation-type
//     "dot1q-vlan-tagged" becomes vlan with eth-inf-type tagged (default),
//     and a tagged-interface with dot1q-vlan-tagged gets type dot1q; a
//     connection gets the OAM block md-name FakeMDName, md-level 0; svc-mtu
//     defaults to DefaultMTU; bearer/bearer-reference must read
//     "device:endpoint" or "prefix:device:endpoint" (TeraFlowSDN finds the
//     endpoint with it).
//
// Members behind a disabled feature are not added; Features default to
// OSMFeatures (TeraFlowSDN's libyang enables bum and ethernet-oam). What
// the rewrite does not fix is refused as in the strict dialect: the v6
// typo vpn-scv-type, a top-level member without module prefix.
// TeraFlowSDN attaches everything to a site it makes up; here a write to a
// site that does not exist creates it (provider-managed, location
// FakeLocation, device FakeDevice, default-ce-vlan-id 1) when the write
// succeeds, and every seeded site with a device also has FakeDevice at
// FakeLocation (a customer-managed one has no device, so the rewritten
// attachment is refused there).
//
// Replies that differ: GET of a vpn-service answers {"service-id": <vpn-id>},
// 200 once active and 504 while BuildPolls lasts, and 500 {"error":
// "VPN(<id>) not found in database"} for an unknown one; DELETE of an
// unknown vpn-service is 204, and of one with attachments deletes them
// too (TeraFlowSDN deletes its service with its endpoints); POST of an
// attachment that exists replaces it (201: TeraFlowSDN updates its
// service). Everything else, reads of lists and sites included, is the
// strict datastore: TeraFlowSDN itself answers {} to GET vpn-services, has
// no sites or single-attachment resources, treats PUT and POST on
// site-network-accesses alike, answers errors with 500 and a JSON list of
// {"error": …}, and turns every encapsulation-type other than OSM's into
// ethernet (the emulator keeps valid values, so that strict bodies pass).
//
// # The tfs dialect
//
// Options.Dialect "tfs" is the osm dialect behind TeraFlowSDN's NBI's own
// routes and answers (its src/nbi/service/ietf_l2vpn), for tests that must
// not pass only because a datastore lists and answers 409:
//
//   - only vpn-services (GET, POST), vpn-service=<id> (GET, PUT, DELETE)
//     and sites/site=<id>/site-network-accesses (POST, PUT) exist; every
//     other path is Flask's HTML 404, another method its 405;
//   - GET vpn-services answers {} whatever it holds;
//   - a vpn-service posted again is 500 [{"error": "…StatusCode.ALREADY_EXISTS…"}]
//     (TeraFlowSDN's Service component refuses the second CreateService),
//     never 409;
//   - a PUT of a vpn-service is 500 (TeraFlowSDN wants a whole l2vpn-svc
//     tree with its sites there); a PUT on site-network-accesses is a POST
//     answered 204;
//   - every refusal (validation included) is 500 with a JSON list of
//     {"error": …}; a GET of a service is 504 while BuildPolls (or
//     SetPending) lasts, 500 "not found in database" when unknown; a
//     DELETE of an unknown one is 204.
package ietfl2vpn

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// Module is the YANG module the emulator serves.
const Module = "ietf-l2vpn-svc"

// Root is the path of the module's top container.
const Root = "/restconf/data/" + Module + ":l2vpn-svc"

// MediaType is RESTCONF's JSON media type.
const MediaType = "application/yang-data+json"

// DefaultFeatures are the ietf-l2vpn-svc features enabled when
// Options.Features is nil.
var DefaultFeatures = []string{"bearer-reference", "dot1q"}

// Dialects (Options.Dialect).
const (
	DialectRFC8466 = "rfc8466"
	DialectOSM     = "osm"
	// DialectTFS is the osm dialect with TeraFlowSDN's NBI's surface as
	// well: see "The tfs dialect".
	DialectTFS = "tfs"
)

// OSMFeatures are the features enabled when Options.Features is nil in the
// osm dialect: TeraFlowSDN's validator enables frame-delivery (bum) and the
// OAM block (ethernet-oam), whose mandatory leaves its rewrite fills in.
var OSMFeatures = []string{"bearer-reference", "dot1q", "bum", "ethernet-oam"}

// Site is a pre-provisioned site.
type Site struct {
	ID string
	// Management is the site's management type: "provider-managed"
	// (default), "co-managed" or "customer-managed".
	Management string
	// Location is the id of the site's one location (default ID+"-loc").
	Location string
	// Device is the id of the site's one device (default ID+"-pe"); a
	// customer-managed site has no devices (RFC 8466 "when").
	Device string
	// DefaultCEVLANID is default-ce-vlan-id (default 1).
	DefaultCEVLANID int
}

// Options configure an Emulator.
type Options struct {
	// User and Password are the basic-auth credentials every request must
	// carry; Token is a bearer token accepted as well. All empty: no auth.
	User, Password, Token string
	// Sites are the sites the datastore starts with.
	Sites []Site
	// Features are the enabled ietf-l2vpn-svc features (nil:
	// DefaultFeatures). Members behind a disabled feature are unknown.
	Features []string
	// BuildPolls is how many GETs of a new vpn-service answer 504 before
	// it answers 200 (TeraFlowSDN's "not active yet"; 0: never).
	BuildPolls int
	// RejectPUT makes every PUT answer 405, like servers that only create
	// with POST.
	RejectPUT bool
	// Dialect is "rfc8466" (or empty: the strict server), "osm"
	// (TeraFlowSDN's rewrite of OSM's bodies in front of the strict
	// datastore) or "tfs" (the osm dialect behind TeraFlowSDN's routes and
	// answers); see the package comment.
	Dialect string
}

// Request is one request the emulator received; its Path is the URL path
// as sent (percent-encoded).
type Request = emulator.Request

// AccessRef names a site-network-access and the VPN it is attached to.
type AccessRef struct {
	Site, ID, VPNID string
}

type site struct {
	Site
	// fake: the site also has TeraFlowSDN's device FakeDevice at location
	// FakeLocation (osm dialect).
	fake     bool
	accesses map[string]map[string]any // network-access-id → entry
}

type failRule struct {
	method, pathContains string
	status               int
}

// Emulator is the in-memory L2SM datastore. It is safe for concurrent use.
// Its FailNext answers the failed requests with an ietf-restconf:errors
// body.
type Emulator struct {
	emulator.Recorder
	opts  Options
	osm   bool
	tfs   bool
	check validator

	mu       sync.Mutex
	services map[string]map[string]any // vpn-id → entry
	pending  map[string]int            // vpn-id → GETs left answering 504
	sites    map[string]*site
	failOn   []failRule
}

// New returns an emulator holding the sites of opts and no vpn-service. It
// panics on an unknown Options.Dialect.
func New(opts Options) *Emulator {
	if !slices.Contains([]string{"", DialectRFC8466, DialectOSM, DialectTFS}, opts.Dialect) {
		panic(fmt.Sprintf("ietfl2vpn emulator: Options.Dialect %q is not %q, %q or %q", opts.Dialect, DialectRFC8466, DialectOSM, DialectTFS))
	}
	tfs := opts.Dialect == DialectTFS
	osm := opts.Dialect == DialectOSM || tfs
	features := opts.Features
	switch {
	case features != nil:
	case osm:
		features = OSMFeatures
	default:
		features = DefaultFeatures
	}
	e := &Emulator{
		opts:     opts,
		osm:      osm,
		tfs:      tfs,
		check:    validator{features: make(map[string]bool, len(features))},
		services: make(map[string]map[string]any),
		pending:  make(map[string]int),
		sites:    make(map[string]*site, len(opts.Sites)),
	}
	for _, f := range features {
		e.check.features[f] = true
	}
	for _, s := range opts.Sites {
		e.sites[s.ID] = newSite(s, osm)
	}
	return e
}

// newSite fills in the defaults of a seeded site; in the osm dialect a
// site with devices also gets TeraFlowSDN's fake device.
func newSite(s Site, osm bool) *site {
	if s.Management == "" {
		s.Management = "provider-managed"
	}
	if s.Location == "" {
		s.Location = s.ID + "-loc"
	}
	if s.Device == "" && s.Management != "customer-managed" {
		s.Device = s.ID + "-pe"
	}
	if s.Management == "customer-managed" {
		s.Device = ""
	}
	if s.DefaultCEVLANID == 0 {
		s.DefaultCEVLANID = 1
	}
	fake := osm && s.Device != "" && s.Device != FakeDevice
	return &site{Site: s, fake: fake, accesses: make(map[string]map[string]any)}
}

// FailOn makes the next request with method whose decoded path contains
// pathContains fail with status, without taking effect (once per call).
// Tests use it to fail one given attachment.
func (e *Emulator) FailOn(method, pathContains string, status int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failOn = append(e.failOn, failRule{method, pathContains, status})
}

// SetPending makes the next reads GETs of vpn-service id answer 504 (not
// active yet). It reports whether the service exists.
func (e *Emulator) SetPending(id string, reads int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.services[id] == nil {
		return false
	}
	e.pending[id] = reads
	return true
}

// RemoveAccess deletes a site-network-access behind the clients' back (a
// fault, or another tool). It reports whether it existed.
func (e *Emulator) RemoveAccess(siteID, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.sites[siteID]
	if s == nil || s.accesses[id] == nil {
		return false
	}
	delete(s.accesses, id)
	return true
}

// ServiceIDs returns the vpn-ids, sorted.
func (e *Emulator) ServiceIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.services))
}

// Service returns a copy of vpn-service id as stored (identities
// module-qualified, numbers as json.Number).
func (e *Emulator) Service(id string) (map[string]any, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.services[id]
	if !ok {
		return nil, false
	}
	return emulator.CloneJSON(s), true
}

// Accesses returns every site-network-access, sorted by site then id.
func (e *Emulator) Accesses() []AccessRef {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []AccessRef
	for _, sid := range slices.Sorted(maps.Keys(e.sites)) {
		s := e.sites[sid]
		for _, id := range slices.Sorted(maps.Keys(s.accesses)) {
			out = append(out, AccessRef{Site: sid, ID: id, VPNID: attachedVPN(s.accesses[id])})
		}
	}
	return out
}

// Access returns a copy of one site-network-access as stored.
func (e *Emulator) Access(siteID, id string) (map[string]any, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.sites[siteID]
	if s == nil || s.accesses[id] == nil {
		return nil, false
	}
	return emulator.CloneJSON(s.accesses[id]), true
}

// Dump returns the whole datastore, seeded sites included, as one RFC 7951
// JSON document {"ietf-l2vpn-svc:l2vpn-svc": {...}}.
func (e *Emulator) Dump() []byte {
	e.mu.Lock()
	doc := map[string]any{Module + ":l2vpn-svc": e.tree()}
	e.mu.Unlock()
	b, _ := json.MarshalIndent(doc, "", "  ")
	return b
}

// rcError is one RESTCONF error with its HTTP status.
type rcError struct {
	status           int
	tag, appTag      string
	path, msg        string
	errType          string // "application" unless set
	allow, authRealm string
}

func (r *rcError) body() any {
	typ := r.errType
	if typ == "" {
		typ = "application"
	}
	return emulator.RESTCONFErrors(emulator.RESTCONFError{Type: typ, Tag: r.tag, AppTag: r.appTag, Path: r.path, Message: r.msg})
}

// reply is what a handler answers.
type reply struct {
	status   int
	body     any
	location string
	err      *rcError
	// html is a text/html body (Flask's error pages, tfs dialect).
	html string
}

const maxBody = 1 << 20

// ServeHTTP implements the RESTCONF server.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	e.Serve(w, r, emulator.NewRequest(r, body), func(w http.ResponseWriter, injected int) {
		if injected == 0 {
			injected = e.failedOn(r)
		}
		var rep reply
		if injected != 0 {
			rep.err = &rcError{status: injected, tag: tagFor(injected), msg: "injected failure"}
		} else if err := e.authenticate(r); err != nil {
			rep.err = err
		} else {
			rep = e.route(r, body)
		}
		write(w, rep)
	})
}

// failedOn consumes a FailOn that applies to r and returns its status, 0
// when none does.
func (e *Emulator) failedOn(r *http.Request) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, f := range e.failOn {
		if f.method == r.Method && strings.Contains(r.URL.Path, f.pathContains) {
			e.failOn = slices.Delete(e.failOn, i, i+1)
			return f.status
		}
	}
	return 0
}

// tagFor picks the RFC 8040 error-tag of an injected status.
func tagFor(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound:
		return "invalid-value"
	case http.StatusUnauthorized, http.StatusForbidden:
		return "access-denied"
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return "operation-not-supported"
	case http.StatusConflict:
		return "resource-denied"
	}
	return "operation-failed"
}

func (e *Emulator) authenticate(r *http.Request) *rcError {
	o := e.opts
	if o.User == "" && o.Token == "" {
		return nil
	}
	if o.User != "" && emulator.CheckBasicAuth(r, o.User, o.Password) == nil {
		return nil
	}
	if o.Token != "" && r.Header.Get("Authorization") == "Bearer "+o.Token {
		return nil
	}
	return &rcError{status: http.StatusUnauthorized, tag: "access-denied", errType: "protocol", msg: "authentication failed", authRealm: "restconf"}
}

func write(w http.ResponseWriter, rep reply) {
	status, body := rep.status, rep.body
	if rep.err != nil {
		status, body = rep.err.status, rep.err.body()
		if rep.err.allow != "" {
			w.Header().Set("Allow", rep.err.allow)
		}
		if rep.err.authRealm != "" {
			emulator.Challenge(w, rep.err.authRealm)
		}
	}
	if rep.location != "" {
		w.Header().Set("Location", rep.location)
	}
	if rep.html != "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, rep.html)
		return
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", MediaType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// resource is a parsed target URL.
type resource struct {
	kind        string // root, services, service, sites, site, accesses, access
	path        string // the instance path, for error-path
	site, entry string // decoded keys
}

// parse maps the escaped URL path onto a resource.
func parse(escaped string) (resource, *rcError) {
	notFound := &rcError{status: http.StatusNotFound, tag: "invalid-value", errType: "protocol", msg: "no such resource " + escaped}
	rest, ok := strings.CutPrefix(escaped, Root)
	if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
		return resource{}, notFound
	}
	var segs []string
	if rest != "" {
		segs = strings.Split(rest[1:], "/")
	}
	base := "/" + Module + ":l2vpn-svc"
	keys := make([]string, 0, 2)
	shape := make([]string, 0, len(segs))
	for _, seg := range segs {
		name, raw, keyed := strings.Cut(seg, "=")
		shape = append(shape, name)
		if !keyed {
			continue
		}
		if strings.Contains(raw, ",") {
			return resource{}, &rcError{status: http.StatusBadRequest, tag: "invalid-value", errType: "protocol", msg: "list " + name + " has one key, got " + raw}
		}
		key, err := url.PathUnescape(raw)
		if err != nil {
			return resource{}, &rcError{status: http.StatusBadRequest, tag: "invalid-value", errType: "protocol", msg: "bad key encoding " + raw}
		}
		keys = append(keys, key)
		shape[len(shape)-1] += "="
	}
	res := resource{path: base}
	switch strings.Join(shape, "/") {
	case "":
		res.kind = "root"
	case "vpn-services":
		res.kind, res.path = "services", base+"/vpn-services"
	case "vpn-services/vpn-service=":
		res.kind, res.entry = "service", keys[0]
		res.path = entryPath(base+"/vpn-services/vpn-service", "vpn-id", keys[0])
	case "sites":
		res.kind, res.path = "sites", base+"/sites"
	case "sites/site=":
		res.kind, res.site = "site", keys[0]
		res.path = sitePath(keys[0])
	case "sites/site=/site-network-accesses":
		res.kind, res.site = "accesses", keys[0]
		res.path = sitePath(keys[0]) + "/site-network-accesses"
	case "sites/site=/site-network-accesses/site-network-access=":
		res.kind, res.site, res.entry = "access", keys[0], keys[1]
		res.path = entryPath(sitePath(keys[0])+"/site-network-accesses/site-network-access", "network-access-id", keys[1])
	default:
		return resource{}, notFound
	}
	return res, nil
}

func sitePath(id string) string {
	return entryPath("/"+Module+":l2vpn-svc/sites/site", "site-id", id)
}

// allowed lists the methods of each resource kind.
var allowed = map[string][]string{
	"root":     {http.MethodGet},
	"services": {http.MethodGet, http.MethodPost},
	"service":  {http.MethodGet, http.MethodPut, http.MethodDelete},
	"sites":    {http.MethodGet},
	"site":     {http.MethodGet},
	"accesses": {http.MethodGet, http.MethodPost},
	"access":   {http.MethodGet, http.MethodPut, http.MethodDelete},
}

func (e *Emulator) route(r *http.Request, body []byte) reply {
	res, err := parse(r.URL.EscapedPath())
	if e.tfs {
		return e.tfsRoute(r, body, res, err)
	}
	if err != nil {
		return reply{err: err}
	}
	return e.serve(r, body, res)
}

// serve answers a parsed request as the datastore does.
func (e *Emulator) serve(r *http.Request, body []byte, res resource) reply {
	methods := allowed[res.kind]
	if e.opts.RejectPUT {
		methods = slices.DeleteFunc(slices.Clone(methods), func(m string) bool { return m == http.MethodPut })
	}
	if !slices.Contains(methods, r.Method) {
		msg := r.Method + " is not supported on " + res.path
		if res.kind == "sites" || res.kind == "site" {
			msg += " (sites are provisioned by the operator)"
		}
		return reply{err: &rcError{status: http.StatusMethodNotAllowed, tag: "operation-not-supported", errType: "protocol", path: res.path, msg: msg, allow: strings.Join(methods, ", ")}}
	}
	var doc any
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		var err *rcError
		if doc, err = decode(r, body); err != nil {
			return reply{err: err}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if res.site != "" && e.sites[res.site] == nil && !(e.osm && r.Method != http.MethodGet && r.Method != http.MethodDelete) {
		// The osm dialect makes up the site of a write (store).
		return reply{err: missing(sitePath(res.site), "site "+res.site+" does not exist")}
	}
	switch r.Method {
	case http.MethodGet:
		return e.get(res)
	case http.MethodDelete:
		return e.remove(res)
	}
	return e.store(r, res, doc)
}

// decode reads a write body: JSON of the RESTCONF media type.
func decode(r *http.Request, body []byte) (any, *rcError) {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (ct != MediaType && ct != "application/json") {
		return nil, &rcError{status: http.StatusUnsupportedMediaType, tag: "invalid-value", errType: "protocol", msg: "Content-Type must be " + MediaType}
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return nil, &rcError{status: http.StatusBadRequest, tag: "malformed-message", errType: "protocol", msg: fmt.Sprintf("the body is not one JSON document: %v", err)}
	}
	return doc, nil
}

func missing(path, msg string) *rcError {
	return &rcError{status: http.StatusNotFound, tag: "data-missing", path: path, msg: msg}
}

func (e *Emulator) get(res resource) reply {
	ok := func(member string, v any) reply {
		return reply{status: http.StatusOK, body: map[string]any{Module + ":" + member: v}}
	}
	switch res.kind {
	case "root":
		return ok("l2vpn-svc", e.tree())
	case "services":
		return ok("vpn-services", e.servicesTree())
	case "service":
		s := e.services[res.entry]
		switch {
		case s == nil && e.osm:
			return tfsNotFound(res.entry)
		case s == nil:
			return reply{err: missing(res.path, "vpn-service "+res.entry+" does not exist")}
		case e.pending[res.entry] > 0 && e.osm:
			e.pending[res.entry]--
			return tfsService(http.StatusGatewayTimeout, res.entry)
		case e.pending[res.entry] > 0:
			e.pending[res.entry]--
			return reply{err: &rcError{status: http.StatusGatewayTimeout, tag: "operation-failed", path: res.path, msg: "vpn-service " + res.entry + " is not active yet"}}
		case e.osm:
			return tfsService(http.StatusOK, res.entry)
		}
		return ok("vpn-service", []any{emulator.CloneJSON(s)})
	case "sites":
		return ok("sites", e.sitesTree())
	case "site":
		return ok("site", []any{e.siteTree(e.sites[res.site])})
	case "accesses":
		return ok("site-network-accesses", accessesTree(e.sites[res.site]))
	}
	a := e.sites[res.site].accesses[res.entry]
	if a == nil {
		return reply{err: missing(res.path, "site-network-access "+res.entry+" does not exist in site "+res.site)}
	}
	return ok("site-network-access", []any{emulator.CloneJSON(a)})
}

func (e *Emulator) remove(res resource) reply {
	if res.kind == "service" {
		switch {
		case e.services[res.entry] == nil && e.osm:
			return reply{status: http.StatusNoContent} // TeraFlowSDN: nothing done
		case e.services[res.entry] == nil:
			return reply{err: missing(res.path, "vpn-service "+res.entry+" does not exist")}
		}
		for _, sid := range slices.Sorted(maps.Keys(e.sites)) {
			for _, aid := range slices.Sorted(maps.Keys(e.sites[sid].accesses)) {
				switch {
				case attachedVPN(e.sites[sid].accesses[aid]) != res.entry:
				case e.osm: // TeraFlowSDN deletes the service with its endpoints
					delete(e.sites[sid].accesses, aid)
				default:
					return reply{err: &rcError{status: http.StatusConflict, tag: "in-use", appTag: "instance-required", path: res.path,
						msg: fmt.Sprintf("vpn-service %s is referenced by site-network-access %s of site %s", res.entry, aid, sid)}}
				}
			}
		}
		delete(e.services, res.entry)
		delete(e.pending, res.entry)
		return reply{status: http.StatusNoContent}
	}
	s := e.sites[res.site]
	if s.accesses[res.entry] == nil {
		return reply{err: missing(res.path, "site-network-access "+res.entry+" does not exist in site "+res.site)}
	}
	delete(s.accesses, res.entry)
	return reply{status: http.StatusNoContent}
}

// store handles PUT on an entry and POST on a list's parent.
func (e *Emulator) store(r *http.Request, res resource, doc any) reply {
	schema, member, key := vpnServiceSchema, "vpn-service", "vpn-id"
	listPath := "/" + Module + ":l2vpn-svc/vpn-services/vpn-service"
	if res.kind == "accesses" || res.kind == "access" {
		schema, member, key = accessSchema, "site-network-access", "network-access-id"
		listPath = sitePath(res.site) + "/site-network-accesses/site-network-access"
	}
	if e.osm {
		e.normalise(doc, member)
	}
	entry, err := e.entry(doc, member, key, schema, listPath)
	if err != nil {
		return reply{err: err}
	}
	id := entry[key].(string)
	if r.Method == http.MethodPut && id != res.entry {
		return reply{err: invalid(entryPath(listPath, key, id)+"/"+key, fmt.Sprintf("the key %q in the body differs from the key %q in the URL", id, res.entry))}
	}
	table := e.services
	var s *site
	if member == "site-network-access" {
		if s = e.sites[res.site]; s == nil { // osm dialect
			s = tfsSite(res.site)
		}
		if err := e.checkAccess(s, entry, entryPath(listPath, key, id)); err != nil {
			return reply{err: err}
		}
		table = s.accesses
	}
	_, exists := table[id]
	// TeraFlowSDN updates its service with an attachment posted again.
	if r.Method == http.MethodPost && exists && e.tfs && s == nil {
		return tfsAlreadyExists(id)
	}
	if r.Method == http.MethodPost && exists && !(e.osm && s != nil) {
		return reply{err: &rcError{status: http.StatusConflict, tag: "data-exists", path: entryPath(listPath, key, id), msg: member + " " + id + " already exists"}}
	}
	table[id] = entry
	if s != nil {
		e.sites[res.site] = s
	}
	if member == "vpn-service" && !exists && e.opts.BuildPolls > 0 {
		e.pending[id] = e.opts.BuildPolls
	}
	if exists && r.Method == http.MethodPut {
		return reply{status: http.StatusNoContent}
	}
	loc := ""
	if r.Method == http.MethodPost {
		loc = r.URL.EscapedPath() + "/" + member + "=" + url.PathEscape(id)
	}
	return reply{status: http.StatusCreated, location: loc}
}

// entry checks a write body {"ietf-l2vpn-svc:<member>": [ {...} ]} and
// returns its one list entry, validated and normalised.
func (e *Emulator) entry(doc any, member, key string, schema *node, listPath string) (map[string]any, *rcError) {
	top, ok := doc.(map[string]any)
	if !ok || len(top) != 1 {
		return nil, &rcError{status: http.StatusBadRequest, tag: "malformed-message", errType: "protocol", msg: fmt.Sprintf("the body must be one JSON object with the single member %q", Module+":"+member)}
	}
	for name := range top {
		if name != Module+":"+member {
			msg := fmt.Sprintf("unknown top-level member %q, want %q", name, Module+":"+member)
			if name == member {
				msg = fmt.Sprintf("the top-level member %q must be module-qualified (%q, RFC 7951 §4)", name, Module+":"+member)
			}
			return nil, &rcError{status: http.StatusBadRequest, tag: "unknown-element", path: listPath, msg: msg}
		}
	}
	list, ok := top[Module+":"+member].([]any)
	if !ok || len(list) != 1 {
		return nil, invalid(listPath, "the body must hold exactly one "+member+" entry, as a JSON array")
	}
	if err := e.check.check(schema, list, listPath); err != nil {
		return nil, err
	}
	obj := list[0].(map[string]any)
	if _, ok := obj[key].(string); !ok {
		return nil, invalid(listPath+"/"+key, "the key "+key+" must be a string")
	}
	return obj, nil
}

// checkAccess applies the rules of a site-network-access that depend on
// its site and on the vpn-services: the location-flavor choice (its case
// must fit the site's management type and name an existing location or
// device) and the vpn-attachment choice (vpn-id must exist).
func (e *Emulator) checkAccess(s *site, a map[string]any, path string) *rcError {
	if e.osm {
		if err := tfsBearer(a, path); err != nil {
			return err
		}
	}
	loc, hasLoc := a["location-reference"].(string)
	dev, hasDev := a["device-reference"].(string)
	switch {
	case hasLoc && hasDev:
		return invalid(path, "location-reference and device-reference are two cases of the choice location-flavor: give one")
	case !hasLoc && !hasDev:
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", path: path + "/location-flavor",
			msg: "the mandatory choice location-flavor needs location-reference or device-reference"}
	case hasLoc && s.Management != "customer-managed":
		return invalid(path+"/location-reference", "location-reference applies only to a customer-managed site; site "+s.ID+" is "+s.Management+": use device-reference")
	case hasDev && s.Management == "customer-managed":
		return invalid(path+"/device-reference", "device-reference applies only to a provider- or co-managed site; site "+s.ID+" is customer-managed: use location-reference")
	case hasLoc && loc != s.Location:
		return leafref(path+"/location-reference", fmt.Sprintf("location %q does not exist in site %s", loc, s.ID))
	case hasDev && dev != s.Device && (!s.fake || dev != FakeDevice):
		return leafref(path+"/device-reference", fmt.Sprintf("device %q does not exist in site %s", dev, s.ID))
	}
	att, _ := a["vpn-attachment"].(map[string]any)
	vpn, hasVPN := att["vpn-id"].(string)
	_, hasPolicy := att["vpn-policy-id"]
	_, hasRole := att["site-role"]
	switch {
	case hasPolicy && (hasVPN || hasRole):
		return invalid(path+"/vpn-attachment", "vpn-id/site-role and vpn-policy-id are two cases of the choice attachment-flavor: give one")
	case hasPolicy:
		return leafref(path+"/vpn-attachment/vpn-policy-id", "site "+s.ID+" has no vpn-policies")
	case !hasVPN:
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", path: path + "/vpn-attachment/vpn-id",
			msg: "the mandatory choice attachment-flavor needs vpn-attachment/vpn-id"}
	case e.services[vpn] == nil:
		return leafref(path+"/vpn-attachment/vpn-id", fmt.Sprintf("vpn-service %q does not exist (leafref with require-instance)", vpn))
	}
	return nil
}

// leafref is the error of an unresolved leafref (RFC 7950 §15.5).
func leafref(path, msg string) *rcError {
	return &rcError{status: http.StatusBadRequest, tag: "data-missing", appTag: "instance-required", path: path, msg: msg}
}

func attachedVPN(a map[string]any) string {
	att, _ := a["vpn-attachment"].(map[string]any)
	id, _ := att["vpn-id"].(string)
	return id
}

// The tree builders assemble RFC 7951 JSON from the datastore; e.mu is
// held.

func (e *Emulator) tree() map[string]any {
	return map[string]any{"vpn-services": e.servicesTree(), "sites": e.sitesTree()}
}

func (e *Emulator) servicesTree() map[string]any {
	out := map[string]any{}
	if len(e.services) > 0 {
		list := make([]any, 0, len(e.services))
		for _, id := range slices.Sorted(maps.Keys(e.services)) {
			list = append(list, emulator.CloneJSON(e.services[id]))
		}
		out["vpn-service"] = list
	}
	return out
}

func (e *Emulator) sitesTree() map[string]any {
	out := map[string]any{}
	if len(e.sites) > 0 {
		list := make([]any, 0, len(e.sites))
		for _, id := range slices.Sorted(maps.Keys(e.sites)) {
			list = append(list, e.siteTree(e.sites[id]))
		}
		out["site"] = list
	}
	return out
}

func (e *Emulator) siteTree(s *site) map[string]any {
	locations := []any{map[string]any{"location-id": s.Location}}
	devices := []any{map[string]any{"device-id": s.Device, "location": s.Location}}
	if s.fake {
		locations = append(locations, map[string]any{"location-id": FakeLocation})
		devices = append(devices, map[string]any{"device-id": FakeDevice, "location": FakeLocation})
	}
	out := map[string]any{
		"site-id":            s.ID,
		"management":         map[string]any{"type": Module + ":" + s.Management},
		"locations":          map[string]any{"location": locations},
		"default-ce-vlan-id": s.DefaultCEVLANID,
	}
	if s.Device != "" {
		out["devices"] = map[string]any{"device": devices}
	}
	if len(s.accesses) > 0 {
		out["site-network-accesses"] = accessesTree(s)
	}
	return out
}

func accessesTree(s *site) map[string]any {
	out := map[string]any{}
	if len(s.accesses) > 0 {
		list := make([]any, 0, len(s.accesses))
		for _, id := range slices.Sorted(maps.Keys(s.accesses)) {
			list = append(list, emulator.CloneJSON(s.accesses[id]))
		}
		out["site-network-access"] = list
	}
	return out
}
