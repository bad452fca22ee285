// Package l2nm is an in-process emulator of a RESTCONF (RFC 8040) server
// for the L2VPN Network Model (RFC 9291, module
// ietf-l2vpn-ntw@2022-09-20, with ietf-vpn-common@2022-02-11 of RFC 9181),
// as Cisco NSO / Crosswork Network Controller and Nokia NSP expose it: the
// controller that wimro's l2nm connector drives. It is an http.Handler:
// mount it on an httptest.Server and point a WIM at the server's URL.
//
// Resources, under Options.Root (/restconf) +
// /data/ietf-l2vpn-ntw:l2vpn-ntw:
//
//	GET                       (the container)                 the whole datastore, with state
//	GET, POST                 /vpn-services                   GET: 204 when empty; POST: 201 + Location, 409 data-exists
//	GET, PUT, PATCH, DELETE   /vpn-services/vpn-service=<id>  PUT: 201 created, 204 replaced; PATCH (merge): 204
//
// Key values are percent-decoded (RFC 8040 §3.5.3). Request bodies are
// application/yang-data+json (application/json is accepted too), their
// top member module-qualified ("ietf-l2vpn-ntw:vpn-service"); replies are
// application/yang-data+json, errors ietf-restconf:errors bodies with the
// RFC 8040 error-tag: invalid-value, malformed-message (400),
// access-denied (401), data-missing (404), data-exists (409),
// operation-not-supported (405).
//
// # Validation
//
// Every body is validated with yanglint, strictly, against the published
// modules (YANGDir: internal/testkit/emulators/yang, byte-for-byte copies
// from github.com/YangModels/yang, standard/ietf/RFC, with their imports):
// before a change takes effect, the whole configuration datastore it would
// leave is checked (-t config: mandatory leaves, identities, ranges,
// leafrefs, when and must, features: every feature of ietf-vpn-common and
// ietf-l2vpn-ntw is enabled, as a controller that supports them would),
// and a refused one is answered 400 with yanglint's message and changes
// nothing. Every answer with state is checked too (-t data); one the model
// refuses is the emulator's bug, answered 500. LintFailures lists every
// refusal, so that a test fails on any body wimro sent that the model
// refuses. Options.Devices, when set, makes the emulator refuse (400) a
// vpn-node whose ne-id, or an access whose interface-id, the network does
// not have, as a controller checks its device inventory.
//
// # Operational state
//
// Each vpn-service, vpn-node and vpn-network-access answers
// status/oper-status (config false in ietf-vpn-common): op-unknown for the
// first Options.BuildPolls GETs of the service after it is created or
// replaced, then op-up; SetOperStatus forces one (op-down for a failure).
// Options.NoOperStatus leaves oper-status out, as a server that keeps
// configuration only.
package l2nm

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// Module is the YANG module of the datastore; Top its top container.
const (
	Module = "ietf-l2vpn-ntw"
	Top    = Module + ":l2vpn-ntw"
	common = "ietf-vpn-common"
)

// DefaultRoot is the RESTCONF root the emulator serves without
// Options.Root.
const DefaultRoot = "/restconf"

// LintFiles are the modules yanglint loads (with -i, so that the
// identities their defaults name in ietf-vpn-common and
// ieee802-dot1q-types are implemented); naming ietf-vpn-common enables its
// features.
var LintFiles = []string{"ietf-vpn-common@2022-02-11.yang", "ietf-l2vpn-ntw@2022-09-20.yang"}

// YANGDir is the repository's folder of YANG modules shared by the
// emulators, found from this file's place.
func YANGDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "yang")
}

// Options configure an Emulator.
type Options struct {
	// Root is the RESTCONF root (DefaultRoot when empty).
	Root string
	// User and Password, when User is set, are the basic-auth credentials
	// required; Token, when set, is a bearer token accepted too.
	User, Password, Token string
	// YANGDir holds the modules (YANGDir() when empty).
	YANGDir string
	// BuildPolls is how many GETs that return a service (of it, of the
	// list, of the datastore), after it is created or replaced, answer
	// oper-status op-unknown before op-up.
	BuildPolls int
	// NoOperStatus leaves oper-status out of every answer.
	NoOperStatus bool
	// Devices, when not nil, are the network's devices (ne-id) and their
	// interfaces: a vpn-node or access elsewhere is refused.
	Devices map[string][]string
}

// Request is one request the emulator received.
type Request = emulator.Request

// Emulator is the in-memory L2NM controller. It is safe for concurrent
// use.
type Emulator struct {
	emulator.Recorder
	opts Options
	base string // path of the top container
	lint *emulator.Linter

	mu       sync.Mutex
	services map[string]*service
}

type service struct {
	doc   map[string]any // the vpn-service entry, as configured
	polls int            // GETs since it was written
	oper  string         // forced oper-status identity, "" none
	since time.Time      // last change, for last-change
}

// New returns an emulator holding no service.
func New(opts Options) *Emulator {
	if opts.Root == "" {
		opts.Root = DefaultRoot
	}
	if opts.YANGDir == "" {
		opts.YANGDir = YANGDir()
	}
	return &Emulator{
		opts:     opts,
		base:     strings.TrimRight(opts.Root, "/") + "/data/" + Top,
		lint:     emulator.NewLinter(opts.YANGDir, LintFiles, "-i"),
		services: map[string]*service{},
	}
}

// Close stops yanglint.
func (e *Emulator) Close() { e.lint.Close() }

// LintFailures returns what yanglint refused so far: request bodies
// (answered 400) and answers of the emulator's own (answered 500).
func (e *Emulator) LintFailures() []string { return e.lint.Failures() }

// Linted returns how many documents yanglint has checked.
func (e *Emulator) Linted() int { return e.lint.Checked() }

// Services returns the vpn-ids held, sorted.
func (e *Emulator) Services() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.services))
}

// Service returns a copy of the vpn-service id as configured, or nil.
func (e *Emulator) Service(id string) map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.services[id]
	if !ok {
		return nil
	}
	return clone(s.doc).(map[string]any)
}

// SetOperStatus forces the oper-status of service id to the
// ietf-vpn-common identity status (e.g. "op-down"); "" goes back to the
// emulated one. It reports whether the service exists.
func (e *Emulator) SetOperStatus(id, status string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.services[id]
	if ok {
		s.oper, s.since = status, time.Now()
	}
	return ok
}

// rcError is an error answer.
type rcError struct {
	status   int
	tag, msg string
	path     string
}

func (r *rcError) Error() string { return r.msg }

func invalid(format string, args ...any) *rcError {
	return &rcError{status: http.StatusBadRequest, tag: "invalid-value", msg: fmt.Sprintf(format, args...)}
}

func tagFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid-value"
	case http.StatusUnauthorized, http.StatusForbidden:
		return "access-denied"
	case http.StatusNotFound:
		return "data-missing"
	case http.StatusMethodNotAllowed:
		return "operation-not-supported"
	case http.StatusConflict:
		return "resource-denied"
	}
	return "operation-failed"
}

// maxBody bounds a request body.
const maxBody = 1 << 20

func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	e.Serve(w, r, emulator.NewRequest(r, body), func(w http.ResponseWriter, injected int) {
		var err *rcError
		switch {
		case injected != 0:
			err = &rcError{status: injected, tag: tagFor(injected), msg: "injected failure"}
		case !e.authorized(r):
			emulator.Challenge(w, "restconf")
			err = &rcError{status: http.StatusUnauthorized, tag: "access-denied", msg: "authentication failed"}
		default:
			err = e.route(w, r, body)
		}
		if err != nil {
			writeJSON(w, err.status, emulator.RESTCONFErrors(emulator.RESTCONFError{Type: "application", Tag: err.tag, Message: err.msg, Path: err.path}))
		}
	})
}

func (e *Emulator) authorized(r *http.Request) bool {
	o := e.opts
	if o.User == "" && o.Token == "" {
		return true
	}
	if o.User != "" && emulator.CheckBasicAuth(r, o.User, o.Password) == nil {
		return true
	}
	return o.Token != "" && r.Header.Get("Authorization") == "Bearer "+o.Token
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/yang-data+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// route serves one request; a nil error means it wrote its answer.
func (e *Emulator) route(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	p := r.URL.EscapedPath()
	if emulator.IsMutation(r.Method) && r.Method != http.MethodDelete && !mediaOK(r.Header.Get("Content-Type")) {
		return &rcError{status: http.StatusUnsupportedMediaType, tag: "invalid-value", msg: "the body must be application/yang-data+json, not " + r.Header.Get("Content-Type")}
	}
	rest, ok := strings.CutPrefix(p, e.base)
	if !ok {
		return &rcError{status: http.StatusNotFound, tag: "invalid-value", msg: "no resource " + p}
	}
	switch {
	case rest == "" || rest == "/":
		if r.Method != http.MethodGet {
			return notAllowed(r, "GET")
		}
		return e.getAll(w, r)
	case rest == "/vpn-services":
		switch r.Method {
		case http.MethodGet:
			return e.getList(w, r)
		case http.MethodPost:
			return e.post(w, body)
		}
		return notAllowed(r, "GET, POST")
	}
	raw, ok := strings.CutPrefix(rest, "/vpn-services/vpn-service=")
	if !ok || strings.Contains(raw, "/") {
		return &rcError{status: http.StatusNotFound, tag: "invalid-value", msg: "no resource " + p}
	}
	id, err := url.PathUnescape(raw)
	if err != nil || id == "" {
		return invalid("bad vpn-id key %q in the path", raw)
	}
	switch r.Method {
	case http.MethodGet:
		return e.getOne(w, r, id)
	case http.MethodPut:
		return e.put(w, id, body)
	case http.MethodPatch:
		return e.patch(w, id, body)
	case http.MethodDelete:
		return e.delete(w, id)
	}
	return notAllowed(r, "GET, PUT, PATCH, DELETE")
}

func notAllowed(r *http.Request, allow string) *rcError {
	return &rcError{status: http.StatusMethodNotAllowed, tag: "operation-not-supported", msg: r.Method + " is not supported here; allowed: " + allow}
}

func missing(id string) *rcError {
	return &rcError{status: http.StatusNotFound, tag: "data-missing", msg: "vpn-service " + id + " does not exist",
		path: "/" + Top + "/vpn-services/vpn-service[vpn-id='" + id + "']"}
}

// entry decodes a write body: {"ietf-l2vpn-ntw:vpn-service": [one entry]}.
func entry(body []byte) (map[string]any, *rcError) {
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, &rcError{status: http.StatusBadRequest, tag: "malformed-message", msg: "the body is not JSON: " + err.Error()}
	}
	const member = Module + ":vpn-service"
	if len(doc) != 1 {
		return nil, invalid("the body must hold one member, %q", member)
	}
	v, ok := doc[member]
	if !ok {
		for k := range doc {
			return nil, &rcError{status: http.StatusBadRequest, tag: "unknown-element", msg: fmt.Sprintf("unexpected member %q: want %q (module-qualified)", k, member)}
		}
	}
	list, _ := v.([]any)
	if len(list) != 1 {
		return nil, invalid("%q must be a list of exactly one entry", member)
	}
	m, ok := list[0].(map[string]any)
	if !ok {
		return nil, invalid("the vpn-service entry is not an object")
	}
	if id, _ := m["vpn-id"].(string); id == "" {
		return nil, &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: "the vpn-service has no vpn-id (its key)"}
	}
	return m, nil
}

// commit validates the datastore that would hold next as service id (nil:
// removed) and, when it is valid, stores it. e.mu is held.
func (e *Emulator) commit(what, id string, next map[string]any) *rcError {
	if next != nil {
		if err := e.checkDevices(next); err != nil {
			return err
		}
	}
	list := make([]any, 0, len(e.services)+1)
	for _, k := range slices.Sorted(maps.Keys(e.services)) {
		if k != id {
			list = append(list, e.services[k].doc)
		}
	}
	if next != nil {
		list = append(list, next)
	}
	doc := map[string]any{Top: map[string]any{"vpn-services": map[string]any{"vpn-service": list}}}
	if err := e.lint.Check(what, emulator.LintConfig, doc, nil); err != nil {
		return invalid("%s is not valid %s: %v", what, Module, err)
	}
	if next == nil {
		delete(e.services, id)
		return nil
	}
	e.services[id] = &service{doc: next, since: time.Now()}
	return nil
}

// checkDevices refuses a vpn-node or access the network (Options.Devices)
// does not have.
func (e *Emulator) checkDevices(svc map[string]any) *rcError {
	if e.opts.Devices == nil {
		return nil
	}
	for _, n := range listOf(svc, "vpn-nodes", "vpn-node") {
		ne, _ := n["ne-id"].(string)
		ifaces, ok := e.opts.Devices[ne]
		if !ok {
			return invalid("vpn-node %v: the network has no device (ne-id) %q", n["vpn-node-id"], ne)
		}
		for _, a := range listOf(n, "vpn-network-accesses", "vpn-network-access") {
			if ifc, _ := a["interface-id"].(string); !slices.Contains(ifaces, ifc) {
				return invalid("vpn-network-access %v: device %s has no interface %q", a["id"], ne, ifc)
			}
		}
	}
	return nil
}

// listOf returns the entries of list under container of m.
func listOf(m map[string]any, container, list string) []map[string]any {
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

func (e *Emulator) post(w http.ResponseWriter, body []byte) *rcError {
	m, err := entry(body)
	if err != nil {
		return err
	}
	id := m["vpn-id"].(string)
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, exists := e.services[id]; exists {
		return &rcError{status: http.StatusConflict, tag: "data-exists", msg: "vpn-service " + id + " already exists",
			path: "/" + Top + "/vpn-services/vpn-service[vpn-id='" + id + "']"}
	}
	if err := e.commit("the POST of vpn-service "+id, id, m); err != nil {
		return err
	}
	w.Header().Set("Location", e.base+"/vpn-services/vpn-service="+url.PathEscape(id))
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (e *Emulator) put(w http.ResponseWriter, id string, body []byte) *rcError {
	m, err := entry(body)
	if err != nil {
		return err
	}
	if m["vpn-id"] != id {
		return invalid("the body's vpn-id %v is not the key %q of the path", m["vpn-id"], id)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, existed := e.services[id]
	if err := e.commit("the PUT of vpn-service "+id, id, m); err != nil {
		return err
	}
	if existed {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Location", e.base+"/vpn-services/vpn-service="+url.PathEscape(id))
	w.WriteHeader(http.StatusCreated)
	return nil
}

// keys are the key leaves of the lists a PATCH merges entry by entry; any
// other list is replaced.
var keys = map[string]string{
	"vpn-node":           "vpn-node-id",
	"vpn-network-access": "id",
	"pe-to-ce-bandwidth": "bw-type",
	"ce-to-pe-bandwidth": "bw-type",
}

func (e *Emulator) patch(w http.ResponseWriter, id string, body []byte) *rcError {
	m, err := entry(body)
	if err != nil {
		return err
	}
	if m["vpn-id"] != id {
		return invalid("the body's vpn-id %v is not the key %q of the path", m["vpn-id"], id)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.services[id]
	if !ok {
		return missing(id) // RFC 8040 §4.6.1: a PATCH does not create
	}
	next := merge(clone(s.doc).(map[string]any), m)
	if err := e.commit("the PATCH of vpn-service "+id, id, next); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// merge merges patch into into (RFC 8040 plain patch: containers merge,
// list entries merge by key, leaves are replaced).
func merge(into, patch map[string]any) map[string]any {
	for k, pv := range patch {
		switch p := pv.(type) {
		case map[string]any:
			if cur, ok := into[k].(map[string]any); ok {
				into[k] = merge(cur, p)
				continue
			}
		case []any:
			if key, ok := keys[k]; ok {
				cur, _ := into[k].([]any)
				into[k] = mergeList(cur, p, key)
				continue
			}
		}
		into[k] = pv
	}
	return into
}

func mergeList(cur, patch []any, key string) []any {
	for _, pv := range patch {
		p, _ := pv.(map[string]any)
		found := false
		for i, cv := range cur {
			if c, ok := cv.(map[string]any); ok && p != nil && c[key] == p[key] {
				cur[i], found = merge(c, p), true
				break
			}
		}
		if !found {
			cur = append(cur, pv)
		}
	}
	return cur
}

func (e *Emulator) delete(w http.ResponseWriter, id string) *rcError {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.services[id]; !ok {
		return missing(id)
	}
	if err := e.commit("the DELETE of vpn-service "+id, id, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// withState returns a copy of s's entry with its operational state, and
// counts the GET. e.mu is held.
func (e *Emulator) withState(s *service) map[string]any {
	doc := clone(s.doc).(map[string]any)
	s.polls++
	if e.opts.NoOperStatus {
		return doc
	}
	status := "op-up"
	switch {
	case s.oper != "":
		status = s.oper
	case s.polls <= e.opts.BuildPolls:
		status = "op-unknown"
	}
	oper := map[string]any{"status": common + ":" + status, "last-change": s.since.UTC().Format(time.RFC3339)}
	setOper := func(m map[string]any) {
		st, _ := m["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
			m["status"] = st
		}
		st["oper-status"] = clone(oper)
	}
	setOper(doc)
	for _, n := range listOf(doc, "vpn-nodes", "vpn-node") {
		setOper(n)
		for _, a := range listOf(n, "vpn-network-accesses", "vpn-network-access") {
			setOper(a)
		}
	}
	return doc
}

// answer writes v after yanglint has accepted datastore, the whole tree it
// is part of (with state); a refusal is the emulator's bug.
func (e *Emulator) answer(w http.ResponseWriter, r *http.Request, v, datastore any) *rcError {
	if err := e.lint.Check("the answer to GET "+r.URL.Path, emulator.LintData, datastore, nil); err != nil {
		return &rcError{status: http.StatusInternalServerError, tag: "operation-failed", msg: "the emulator's answer is not valid " + Module + ": " + err.Error()}
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// all returns every service with its state, sorted by vpn-id. e.mu is held.
func (e *Emulator) all() []any {
	list := make([]any, 0, len(e.services))
	for _, k := range slices.Sorted(maps.Keys(e.services)) {
		list = append(list, e.withState(e.services[k]))
	}
	return list
}

func inTop(list []any) map[string]any {
	return map[string]any{Top: map[string]any{"vpn-services": map[string]any{"vpn-service": list}}}
}

func (e *Emulator) getAll(w http.ResponseWriter, r *http.Request) *rcError {
	e.mu.Lock()
	defer e.mu.Unlock()
	doc := inTop(e.all())
	return e.answer(w, r, doc, doc)
}

func (e *Emulator) getList(w http.ResponseWriter, r *http.Request) *rcError {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.services) == 0 {
		// NSO's answer for an empty container.
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	list := e.all()
	return e.answer(w, r, map[string]any{Module + ":vpn-services": map[string]any{"vpn-service": list}}, inTop(list))
}

func (e *Emulator) getOne(w http.ResponseWriter, r *http.Request, id string) *rcError {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.services[id]
	if !ok {
		return missing(id)
	}
	doc := e.withState(s)
	return e.answer(w, r, map[string]any{Module + ":vpn-service": []any{doc}}, inTop([]any{doc}))
}

// clone deep-copies a decoded JSON value.
func clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = clone(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = clone(x)
		}
		return out
	}
	return v
}

// mediaOK reports whether a write's Content-Type is a JSON one.
func mediaOK(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/yang-data+json" || mt == "application/json")
}
