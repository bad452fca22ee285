// Package tapi is an in-process emulator of an ONF Transport API (TAPI)
// controller's RESTCONF interface, as wimro's tapi connector drives it.
// It is an http.Handler: mount it on an
// httptest.Server and point a WIM at the server's URL. It plays TAPI 2.1.3
// (ONOS ODTN and most 2.1.x servers) or 2.4.1 (TransportPCE): request
// bodies are decoded in that version's shapes, the data shape for a
// data-mode create and the RPC input's own shape for the RPCs, and
// answers are written in it.
//
// Resources (relative to the WIM URL; {root} is Options.Root, "/restconf"
// by default and "/rests" in the TransportPCE (OpenDaylight) mode):
//
//	GET    /.well-known/host-meta                                 XRD naming {root} (RFC 6415, RFC 8040)
//	GET    {root}/data/ietf-yang-library:modules-state            the TAPI modules and their revisions
//	GET    {root}/data/tapi-common:context                        the whole context
//	GET    {root}/data/tapi-common:context/service-interface-point[=<uuid>]
//	GET    {root}/data/tapi-common:context/tapi-connectivity:connectivity-context
//	POST   …/tapi-connectivity:connectivity-context               create with the client's uuid: 201; 409
//	GET    …/connectivity-context/connectivity-service             the list (200, possibly empty)
//	GET    …/connectivity-context/connectivity-service=<uuid>      one service; 404
//	DELETE …/connectivity-context/connectivity-service=<uuid>      204; 404
//	POST   {root}/operations/tapi-connectivity:create-connectivity-service   200 with output/service
//	POST   {root}/operations/tapi-connectivity:delete-connectivity-service   204
//
// The version's shapes: in 2.1.3 a connectivity-service carries
// service-type, requested-capacity and connectivity-direction at its top,
// while the create RPC's input has them in connectivity-constraint and has
// neither uuid nor name (the server picks the uuid); end-point direction
// is INPUT or OUTPUT; a SIP lists supported-layer-protocol-qualifier; the
// delete RPC takes service-id-or-name. In 2.4.1 service-type and
// requested-capacity sit in connectivity-constraint in both shapes, the
// service's direction is "direction" and there is none in the RPC input,
// the RPC input takes uuid, name and layer-protocol-name, capacity units
// are identities (tapi-common:CAPACITY_UNIT_GBPS) and values decimal64,
// end-point and SIP directions are SOURCE or SINK (a 2.1 INPUT or
// OUTPUT port), a SIP lists supported-cep-layer-protocol-qualifier-
// instances, and the delete RPC takes uuid.
//
// With Options.YANGDir set, yanglint validates every request body against
// the modules there (a refused one is answered 400, as a strict server
// would) and every answer of the emulator's own (a refused one is recorded
// and answered 500); LintFailures lists both, so a test can fail on them.
//
// Creates are also validated with the model's rules that yanglint cannot
// see: at least two end-points with unique local-ids and existing,
// distinct SIPs whose layer-protocol-name matches, supported qualifiers,
// directions. A create of a uuid that exists is answered 409 with
// error-tag resource-denied (RFC 8040's rule for a POST of an existing
// resource), data-exists in the TransportPCE mode (OpenDaylight's).
//
// Directions follow the SIPs' direction (PhotonicSIPs makes INPUT and
// OUTPUT ones). A BIDIRECTIONAL service takes no INPUT or OUTPUT SIP and
// no end-point direction but BIDIRECTIONAL. In a UNIDIRECTIONAL service
// every end-point is INPUT or OUTPUT: its direction, when sent, must be
// one of these and match its SIP's when that is INPUT or OUTPUT; when not
// sent (OSM sends none) it is its SIP's, so a bidirectional SIP needs
// one; and the service needs at least one INPUT and one OUTPUT end-point.
// An end-point role, when sent, is a port-role; ROOT, LEAF and TRUNK only
// in a ROOTED_MULTIPOINT_CONNECTIVITY service.
//
// A delete of a service that does not exist is answered 404 by default;
// in the ONOS mode 417 (what ONOS answers), in the TransportPCE mode 500
// with a failed RPC result (error-type rpc, operation-failed).
//
// Every error is an ietf-restconf:errors body (RFC 8040 §7.1). A new
// service is lifecycle-state PLANNED, operational-state DISABLED for its
// first Options.BuildPolls reads (GET of that service), then INSTALLED and
// ENABLED. When Options.User is set every request needs HTTP basic auth
// with Options.User/Password (401 otherwise).
package tapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// Resource paths under the default root; with another Options.Root the
// "/restconf" prefix is that root.
const (
	DefaultRoot      = "/restconf"
	HostMetaPath     = "/.well-known/host-meta"
	YANGLibraryPath  = "/restconf/data/ietf-yang-library:modules-state"
	ContextPath      = "/restconf/data/tapi-common:context"
	SIPsPath         = ContextPath + "/service-interface-point"
	ConnectivityPath = ContextPath + "/tapi-connectivity:connectivity-context"
	ServicesPath     = ConnectivityPath + "/connectivity-service"
	CreateRPCPath    = "/restconf/operations/tapi-connectivity:create-connectivity-service"
	DeleteRPCPath    = "/restconf/operations/tapi-connectivity:delete-connectivity-service"
)

// TAPI enumeration values the emulator uses.
const (
	LifecyclePlanned        = "PLANNED"
	LifecycleInstalled      = "INSTALLED"
	LifecyclePendingRemoval = "PENDING_REMOVAL"
	OperationalEnabled      = "ENABLED"
	OperationalDisabled     = "DISABLED"

	QualifierDSR      = "tapi-dsr:DIGITAL_SIGNAL_TYPE"
	QualifierPhotonic = "tapi-photonic-media:PHOTONIC_LAYER_QUALIFIER_NMC" // 2.1.3; 2.4.1 has no NMC
	// QualifierPhotonic241 is the media channel qualifier of TAPI 2.4.1.
	QualifierPhotonic241 = "tapi-photonic-media:PHOTONIC_LAYER_QUALIFIER_MC"
)

// Versions for Options.Version.
const (
	Version213 = "2.1.3" // any "2.1…" plays 2.1.3
	Version241 = "2.4.1" // the default
)

// Servers for Options.Server: how a delete of a gone service is answered,
// and the RESTCONF root and 409 error-tag of OpenDaylight.
const (
	ServerONOS         = "onos"         // delete of a gone service: 417
	ServerTransportPCE = "transportpce" // failed RPC result (500); root /rests; 409 data-exists
)

// Revisions of tapi-connectivity that the yang library lists per version.
const (
	Revision213 = "2020-06-16"
	Revision241 = "2023-03-21"
)

var (
	layerProtocols = []string{"DSR", "ETH", "ODU", "OTU", "OTSiA", "PHOTONIC_MEDIA"}
	directions     = []string{"BIDIRECTIONAL", "UNIDIRECTIONAL", "UNDEFINED_OR_UNKNOWN"}
	portDirections = []string{"BIDIRECTIONAL", "INPUT", "OUTPUT", "UNIDENTIFIED_OR_UNKNOWN"}
	portRoles      = []string{"SYMMETRIC", "ROOT", "LEAF", "TRUNK", "UNKNOWN"}
	serviceTypes   = []string{"POINT_TO_POINT_CONNECTIVITY", "POINT_TO_MULTIPOINT_CONNECTIVITY", "MULTIPOINT_CONNECTIVITY", "ROOTED_MULTIPOINT_CONNECTIVITY"}
	adminStates    = []string{"LOCKED", "UNLOCKED"}
	capacityUnits  = []string{"TB", "TBPS", "GB", "GBPS", "MB", "MBPS", "KB", "KBPS", "GHz", "MHz"}
)

// SIP is a service interface point of the context.
type SIP struct {
	UUID              string
	LayerProtocolName string   // DSR, ETH, PHOTONIC_MEDIA, ...
	Qualifiers        []string // supported-layer-protocol-qualifier
	Direction         string   // BIDIRECTIONAL, INPUT or OUTPUT
}

// DSRSIP returns a bidirectional DSR SIP with OSM's mock qualifier.
func DSRSIP(id string) SIP {
	return SIP{UUID: id, LayerProtocolName: "DSR", Qualifiers: []string{QualifierDSR}, Direction: "BIDIRECTIONAL"}
}

// PhotonicSIPs returns an OSM-style photonic pair: <port>-rx (INPUT) and
// <port>-tx (OUTPUT).
func PhotonicSIPs(port string) []SIP {
	sip := func(suffix, dir string) SIP {
		return SIP{UUID: port + suffix, LayerProtocolName: "PHOTONIC_MEDIA", Qualifiers: []string{QualifierPhotonic}, Direction: dir}
	}
	return []SIP{sip("-rx", "INPUT"), sip("-tx", "OUTPUT")}
}

// VLANSIPUUID names the SIP of port and VLAN that VLANSIPs makes.
func VLANSIPUUID(port string, vlan int) string { return port + "." + strconv.Itoa(vlan) }

// VLANSIPs returns one DSR SIP per VLAN of port, named by VLANSIPUUID, the
// way controllers expose a port and VLAN to TAPI 2.1.x.
func VLANSIPs(port string, vlans ...int) []SIP {
	out := make([]SIP, len(vlans))
	for i, v := range vlans {
		out[i] = DSRSIP(VLANSIPUUID(port, v))
	}
	return out
}

// PhotonicSIPsFor is PhotonicSIPs with the media channel qualifier of
// version (TAPI 2.4.1 has no NMC).
func PhotonicSIPsFor(version, port string) []SIP {
	out := PhotonicSIPs(port)
	if !strings.HasPrefix(version, "2.1") {
		for i := range out {
			out[i].Qualifiers = []string{QualifierPhotonic241}
		}
	}
	return out
}

// OSMSIPs returns the SIPs of OSM's mock: R1-eth0 and R2-eth0 (DSR) and the
// photonic pairs of R3-opt1 and R4-opt1.
func OSMSIPs() []SIP {
	return slices.Concat([]SIP{DSRSIP("R1-eth0"), DSRSIP("R2-eth0")}, PhotonicSIPs("R3-opt1"), PhotonicSIPs("R4-opt1"))
}

// Options configure an Emulator.
type Options struct {
	// SIPs are the context's service interface points.
	SIPs []SIP
	// Version is the TAPI version played: Version213 (any "2.1…") or
	// Version241 (anything else, the default).
	Version string
	// YANGDir, when set, holds the modules of Version: yanglint (on PATH)
	// validates every request body and every answer against them.
	YANGDir string
	// Server is "", ServerONOS or ServerTransportPCE.
	Server string
	// Root is the RESTCONF root ("/restconf"; "/rests" in the
	// TransportPCE mode), named by host-meta.
	Root string
	// NoYANGLibrary answers 404 to the yang library, as servers that
	// do not implement it.
	NoYANGLibrary bool
	// BuildPolls is how many reads of a new service answer PLANNED before
	// it turns INSTALLED (0: INSTALLED at once).
	BuildPolls int
	// User and Password, when User is set, are required as basic auth on
	// every request.
	User, Password string
}

// Name is one entry of a service's name list.
type Name struct {
	ValueName, Value string
}

// EndPoint is one end-point of a service.
type EndPoint struct {
	LocalID                string
	LayerProtocolName      string
	LayerProtocolQualifier string
	SIP                    string
	// Direction is the end-point's direction as sent, in 2.1 words (a
	// 2.4.1 SOURCE is INPUT, SINK is OUTPUT); in a UNIDIRECTIONAL service,
	// when none was sent, its SIP's (INPUT or OUTPUT).
	Direction string
	Role      string
	// Names are the end-point's name entries (2.1.3 has no service name
	// in the create RPC; a client may name the end-points instead).
	Names []Name
}

// Service is a connectivity service held by the emulator.
type Service struct {
	UUID                  string
	Names                 []Name
	EndPoints             []EndPoint
	ConnectivityDirection string
	ServiceType           string
	// CapacityValue is requested-capacity's value in decimal ("" when not
	// requested), whether it was sent as a string or a number.
	CapacityValue, CapacityUnit string
	AdministrativeState         string
	OperationalState            string
	LifecycleState              string
	// Via is "data" or "rpc", how the service was created; "" when seeded
	// with AddService.
	Via string

	buildLeft int
}

// NameValue returns the value of the name entry valueName, or "".
func (s Service) NameValue(valueName string) string {
	for _, n := range s.Names {
		if n.ValueName == valueName {
			return n.Value
		}
	}
	return ""
}

// SIPs returns the SIP uuids of the end-points, in order.
func (s Service) SIPs() []string {
	out := make([]string, len(s.EndPoints))
	for i, ep := range s.EndPoints {
		out[i] = ep.SIP
	}
	return out
}

func (s *Service) clone() Service {
	c := *s
	c.Names = slices.Clone(s.Names)
	c.EndPoints = slices.Clone(s.EndPoints)
	for i := range c.EndPoints {
		c.EndPoints[i].Names = slices.Clone(c.EndPoints[i].Names)
	}
	return c
}

// Request is one request the emulator received; its Path is the escaped
// URL path.
type Request = emulator.Request

// Emulator is the in-memory TAPI controller. It is safe for concurrent use.
// Its FailNext answers the failed requests with an ietf-restconf:errors
// body.
type Emulator struct {
	emulator.Recorder
	opts        Options
	root        string
	lint        *emulator.Linter // nil without Options.YANGDir
	contextUUID string
	sips        map[string]SIP

	mu       sync.Mutex
	services map[string]*Service
}

// New returns an emulator with opts.SIPs and no services.
func New(opts Options) *Emulator {
	root := opts.Root
	if root == "" {
		root = DefaultRoot
		if opts.Server == ServerTransportPCE {
			root = "/rests"
		}
	}
	e := &Emulator{
		opts:        opts,
		root:        strings.TrimRight(root, "/"),
		contextUUID: uuid.NewString(),
		sips:        make(map[string]SIP, len(opts.SIPs)),
		services:    make(map[string]*Service),
	}
	for _, s := range opts.SIPs {
		e.sips[s.UUID] = s
	}
	if opts.YANGDir != "" {
		e.lint = emulator.NewLinter(opts.YANGDir, nil)
	}
	return e
}

// locked runs f with the emulator's state locked.
func (e *Emulator) locked(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
}

// Services returns copies of the services, sorted by uuid.
func (e *Emulator) Services() (out []Service) {
	e.locked(func() {
		for _, id := range slices.Sorted(maps.Keys(e.services)) {
			out = append(out, e.services[id].clone())
		}
	})
	return out
}

// Service returns a copy of service id.
func (e *Emulator) Service(id string) (s Service, ok bool) {
	e.locked(func() {
		if p := e.services[id]; p != nil {
			s, ok = p.clone(), true
		}
	})
	return s, ok
}

// Count returns the number of services.
func (e *Emulator) Count() (n int) {
	e.locked(func() { n = len(e.services) })
	return n
}

// AddService puts s in the context directly (a leftover of an earlier
// run, another tenant's service), skipping every check a create makes.
// Empty states become INSTALLED, ENABLED, UNLOCKED. The uuid must be new.
func (e *Emulator) AddService(s Service) error {
	if s.UUID == "" {
		return errors.New("tapi emulator: AddService needs a uuid")
	}
	s = s.clone()
	s.buildLeft = 0
	s.LifecycleState = orDefault(s.LifecycleState, LifecycleInstalled)
	s.OperationalState = orDefault(s.OperationalState, OperationalEnabled)
	s.AdministrativeState = orDefault(s.AdministrativeState, "UNLOCKED")
	var err error
	e.locked(func() {
		if _, dup := e.services[s.UUID]; dup {
			err = fmt.Errorf("tapi emulator: service %s exists", s.UUID)
			return
		}
		e.services[s.UUID] = &s
	})
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// RemoveService deletes service id directly (a service removed behind
// the client's back). It reports whether the service existed.
func (e *Emulator) RemoveService(id string) bool { return e.remove(id) }

// SetLifecycleState sets the lifecycle-state of service id (any string, so
// tests can send what a real controller might) and ends its build phase.
// It reports whether the service exists.
func (e *Emulator) SetLifecycleState(id, state string) bool {
	return e.set(id, func(s *Service) { s.LifecycleState = state })
}

// SetOperationalState sets the operational-state of service id and ends
// its build phase. It reports whether the service exists.
func (e *Emulator) SetOperationalState(id, state string) bool {
	return e.set(id, func(s *Service) { s.OperationalState = state })
}

func (e *Emulator) set(id string, f func(*Service)) (found bool) {
	e.locked(func() {
		s := e.services[id]
		if s == nil {
			return
		}
		if s.buildLeft > 0 {
			s.buildLeft = 0
			s.LifecycleState, s.OperationalState = LifecycleInstalled, OperationalEnabled
		}
		f(s)
		found = true
	})
	return found
}

const maxBody = 1 << 20

// ServeHTTP implements the TAPI RESTCONF interface.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	e.Serve(w, r, emulator.NewRequest(r, body), func(w http.ResponseWriter, injected int) {
		switch {
		case injected != 0:
			writeError(w, &rcError{status: injected, tag: tagFor(injected), msg: "injected failure"})
		case emulator.CheckBasicAuth(r, e.opts.User, e.opts.Password) != nil:
			emulator.Challenge(w, "tapi")
			writeError(w, &rcError{status: http.StatusUnauthorized, tag: "access-denied", msg: "authentication failed"})
		default:
			if err := e.route(w, r, body); err != nil {
				writeError(w, err)
			}
		}
	})
}

// tagFor picks the RESTCONF error-tag of an injected status (RFC 8040 §7).
func tagFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid-value"
	case http.StatusUnauthorized, http.StatusForbidden:
		return "access-denied"
	case http.StatusNotFound:
		return "invalid-value"
	case http.StatusConflict:
		return "resource-denied"
	}
	return "operation-failed"
}

// route serves host-meta, then what lies under the root, rewritten to the
// default root that the path constants use.
func (e *Emulator) route(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	path := r.URL.EscapedPath()
	if path == HostMetaPath {
		if r.Method != http.MethodGet {
			return notAllowed(r, "GET")
		}
		// RFC 8040's discovery document: an XRD naming the root.
		w.Header().Set("Content-Type", "application/xrd+xml")
		_, _ = fmt.Fprintf(w, "<XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>\n  <Link rel='restconf' href='%s'/>\n</XRD>\n", e.root)
		return nil
	}
	under, ok := strings.CutPrefix(path, e.root+"/")
	if !ok {
		return &rcError{status: http.StatusNotFound, tag: "invalid-value", msg: "no resource " + path}
	}
	path = DefaultRoot + "/" + under
	key, keyed := strings.CutPrefix(path, ServicesPath+"=")
	if !keyed {
		key, keyed = strings.CutPrefix(path, SIPsPath+"=")
	}
	if keyed {
		k, err := url.PathUnescape(key)
		if err != nil || k == "" || strings.Contains(key, "/") {
			return &rcError{status: http.StatusBadRequest, tag: "invalid-value", msg: "malformed list key in " + path}
		}
		key = k
	}
	switch {
	case path == YANGLibraryPath && !e.opts.NoYANGLibrary:
		if r.Method != http.MethodGet {
			return notAllowed(r, "GET")
		}
		// Not a TAPI document: ietf-yang-library is not among the modules.
		writeJSON(w, http.StatusOK, e.yangLibrary())
		return nil
	case path == ContextPath:
		return e.readOnly(w, r, func() (any, any) { c := e.context(); return map[string]any{"tapi-common:context": c}, nil })
	case path == SIPsPath:
		return e.readOnly(w, r, func() (any, any) {
			list := e.sipList()
			return map[string]any{"tapi-common:service-interface-point": list}, e.inContext(list, nil)
		})
	case keyed && strings.HasPrefix(path, SIPsPath+"="):
		if _, ok := e.sips[key]; !ok {
			return missing("service-interface-point", key)
		}
		return e.readOnly(w, r, func() (any, any) {
			list := []any{e.sipJSON(e.sips[key])}
			return map[string]any{"tapi-common:service-interface-point": list}, e.inContext(list, nil)
		})
	case path == ConnectivityPath:
		if r.Method == http.MethodPost {
			return e.createData(w, r, body)
		}
		return e.readOnly(w, r, func() (any, any) {
			cc := map[string]any{"connectivity-service": e.serviceList()}
			return map[string]any{"tapi-connectivity:connectivity-context": cc}, e.inContext(e.sipList(), cc)
		})
	case path == ServicesPath:
		return e.readOnly(w, r, func() (any, any) {
			list := e.serviceList()
			return map[string]any{"tapi-connectivity:connectivity-service": list}, e.inContext(e.sipList(), map[string]any{"connectivity-service": list})
		})
	case keyed:
		switch r.Method {
		case http.MethodGet:
			return e.readService(w, key)
		case http.MethodDelete:
			if !e.remove(key) {
				return missing("connectivity-service", key)
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		return notAllowed(r, "GET, DELETE")
	case path == CreateRPCPath:
		if r.Method != http.MethodPost {
			return notAllowed(r, "POST")
		}
		return e.createRPC(w, r, body)
	case path == DeleteRPCPath:
		if r.Method != http.MethodPost {
			return notAllowed(r, "POST")
		}
		return e.deleteRPC(w, r, body)
	}
	return &rcError{status: http.StatusNotFound, tag: "invalid-value", msg: "no resource " + path}
}

// readOnly answers a GET with doc's answer, after yanglint has checked
// its datastore form (nil: the answer is one already).
func (e *Emulator) readOnly(w http.ResponseWriter, r *http.Request, doc func() (answer, datastore any)) *rcError {
	if r.Method != http.MethodGet {
		return notAllowed(r, "GET")
	}
	answer, datastore := doc()
	if datastore == nil {
		datastore = answer
	}
	return e.answer(w, http.StatusOK, answer, "GET "+r.URL.Path, emulator.LintData, datastore, nil)
}

// answer writes v, after yanglint (with Options.YANGDir) has accepted
// lintDoc as kind; an answer the model refuses is the emulator's bug,
// recorded and answered 500. A nil lintDoc is not checked (not a TAPI
// document).
func (e *Emulator) answer(w http.ResponseWriter, status int, v any, what, kind string, lintDoc, operational any) *rcError {
	if e.lint != nil && lintDoc != nil {
		if err := e.lint.Check("answer to "+what, kind, lintDoc, operational); err != nil {
			return &rcError{status: http.StatusInternalServerError, tag: "operation-failed", msg: "the emulator's answer is not valid TAPI " + e.version() + ": " + err.Error()}
		}
	}
	writeJSON(w, status, v)
	return nil
}

// lintRequest has yanglint check a request body (in the datastore or RPC
// form yanglint wants); a refused one is answered 400.
func (e *Emulator) lintRequest(what, kind string, doc, operational any) *rcError {
	if e.lint == nil {
		return nil
	}
	if err := e.lint.Check(what, kind, doc, operational); err != nil {
		return invalid("%s is not valid TAPI %s: %v", what, e.version(), err)
	}
	return nil
}

// inContext is the datastore that holds sips and, when not nil, the
// connectivity context cc: the form yanglint validates an answer in.
func (e *Emulator) inContext(sips []any, cc any) map[string]any {
	ctx := map[string]any{"uuid": e.contextUUID, "service-interface-point": sips}
	if cc != nil {
		ctx["tapi-connectivity:connectivity-context"] = cc
	}
	return map[string]any{"tapi-common:context": ctx}
}

// operational is the operational datastore an RPC's leafrefs to SIPs
// point into; nil for 2.4.1, whose leafrefs require no instance.
func (e *Emulator) operational() any {
	if !e.legacy() {
		return nil
	}
	return e.inContext(e.sipList(), nil)
}

// yangLibrary answers ietf-yang-library's modules-state (RFC 7895) with
// the TAPI modules of the version played, so that a client can tell the
// version from tapi-connectivity's revision.
func (e *Emulator) yangLibrary() any {
	rev := Revision241
	if e.legacy() {
		rev = Revision213
	}
	var mods []any
	for _, m := range []string{"tapi-common", "tapi-topology", "tapi-path-computation", "tapi-connectivity", "tapi-dsr", "tapi-photonic-media"} {
		mods = append(mods, map[string]any{
			"name": m, "revision": rev, "namespace": "urn:onf:otcc:yang:" + m, "conformance-type": "implement",
		})
	}
	return map[string]any{"ietf-yang-library:modules-state": map[string]any{"module-set-id": e.version(), "module": mods}}
}

func notAllowed(r *http.Request, allow string) *rcError {
	return &rcError{status: http.StatusMethodNotAllowed, tag: "operation-not-supported", msg: r.Method + " is not allowed here (" + allow + ")"}
}

func missing(what, key string) *rcError {
	return &rcError{status: http.StatusNotFound, tag: "invalid-value", msg: fmt.Sprintf("%s %s does not exist", what, key)}
}

func (e *Emulator) context() map[string]any {
	return map[string]any{
		"uuid":                                   e.contextUUID,
		"service-interface-point":                e.sipList(),
		"tapi-connectivity:connectivity-context": map[string]any{"connectivity-service": e.serviceList()},
	}
}

func (e *Emulator) sipList() []any {
	out := make([]any, 0, len(e.opts.SIPs))
	for _, s := range e.opts.SIPs {
		out = append(out, e.sipJSON(s))
	}
	return out
}

// sipJSON renders a SIP in the version's shape.
func (e *Emulator) sipJSON(s SIP) map[string]any {
	out := map[string]any{
		"uuid":                 s.UUID,
		"layer-protocol-name":  s.LayerProtocolName,
		"administrative-state": "UNLOCKED",
		"operational-state":    "ENABLED",
		"direction":            e.directionOut(s.Direction),
	}
	if e.legacy() {
		out["supported-layer-protocol-qualifier"] = slices.Clone(s.Qualifiers)
		return out
	}
	var qs []any
	for _, q := range s.Qualifiers {
		qs = append(qs, map[string]any{"layer-protocol-qualifier": q})
	}
	out["supported-cep-layer-protocol-qualifier-instances"] = qs
	return out
}

// directionOut writes a port direction (kept in 2.1 words) in the
// version's words: 2.4.1 says SOURCE for INPUT and SINK for OUTPUT.
func (e *Emulator) directionOut(d string) string {
	if e.legacy() {
		return d
	}
	switch d {
	case "INPUT":
		return "SOURCE"
	case "OUTPUT":
		return "SINK"
	}
	return d
}

// directionIn reads a port direction of the version as 2.1 words; a word
// of the other version is left as is for oneOf to refuse.
func (e *Emulator) directionIn(d *string) *string {
	if d == nil || e.legacy() {
		return d
	}
	v := map[string]string{"SOURCE": "INPUT", "SINK": "OUTPUT", "BIDIRECTIONAL": "BIDIRECTIONAL", "INPUT": "2.1's INPUT", "OUTPUT": "2.1's OUTPUT"}[*d]
	if v == "" {
		v = *d
	}
	return &v
}

func (e *Emulator) serviceList() []any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]any, 0, len(e.services))
	for _, id := range slices.Sorted(maps.Keys(e.services)) {
		out = append(out, e.wire(e.services[id]))
	}
	return out
}

func namesJSON(names []Name) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"value-name": n.ValueName, "value": n.Value}
	}
	return out
}

// wire renders the service as a TAPI connectivity-service entry of the
// version played.
func (e *Emulator) wire(s *Service) map[string]any {
	eps := make([]any, len(s.EndPoints))
	for i, ep := range s.EndPoints {
		m := map[string]any{
			"local-id":                ep.LocalID,
			"layer-protocol-name":     ep.LayerProtocolName,
			"service-interface-point": map[string]any{"service-interface-point-uuid": ep.SIP},
		}
		if ep.LayerProtocolQualifier != "" {
			m["layer-protocol-qualifier"] = ep.LayerProtocolQualifier
		}
		if ep.Direction != "" {
			m["direction"] = e.directionOut(ep.Direction)
		}
		if ep.Role != "" {
			m["role"] = ep.Role
		}
		if len(ep.Names) > 0 {
			m["name"] = namesJSON(ep.Names)
		}
		eps[i] = m
	}
	out := map[string]any{
		"uuid":                 s.UUID,
		"end-point":            eps,
		"administrative-state": s.AdministrativeState,
		"operational-state":    s.OperationalState,
		"lifecycle-state":      s.LifecycleState,
	}
	if len(s.Names) > 0 {
		out["name"] = namesJSON(s.Names)
	}
	var capacity map[string]any
	if s.CapacityValue != "" {
		unit := s.CapacityUnit
		if !e.legacy() {
			unit = "tapi-common:CAPACITY_UNIT_" + unit
		}
		capacity = map[string]any{"total-size": map[string]any{"value": s.CapacityValue, "unit": unit}}
	}
	if e.legacy() {
		out["connectivity-direction"] = s.ConnectivityDirection
		out["service-type"] = s.ServiceType
		if capacity != nil {
			out["requested-capacity"] = capacity
		}
		return out
	}
	out["direction"] = s.ConnectivityDirection
	if len(s.EndPoints) > 0 {
		out["layer-protocol-name"] = s.EndPoints[0].LayerProtocolName
	}
	cc := map[string]any{"service-type": s.ServiceType}
	if capacity != nil {
		cc["requested-capacity"] = capacity
	}
	out["connectivity-constraint"] = cc
	return out
}

// readService answers one service; the read moves a building service on.
func (e *Emulator) readService(w http.ResponseWriter, id string) *rcError {
	e.mu.Lock()
	s := e.services[id]
	var doc map[string]any
	if s != nil {
		doc = e.wire(s)
		if s.buildLeft > 0 {
			s.buildLeft--
			if s.buildLeft == 0 {
				s.LifecycleState, s.OperationalState = LifecycleInstalled, OperationalEnabled
			}
		}
	}
	e.mu.Unlock()
	if s == nil {
		return missing("connectivity-service", id)
	}
	list := []any{doc}
	return e.answer(w, http.StatusOK, map[string]any{"tapi-connectivity:connectivity-service": list}, "GET service "+id,
		emulator.LintData, e.inContext(e.sipList(), map[string]any{"connectivity-service": list}), nil)
}

func (e *Emulator) remove(id string) (found bool) {
	e.locked(func() {
		_, found = e.services[id]
		delete(e.services, id)
	})
	return found
}

// insert adds a validated service, or answers 409: resource-denied, as
// RFC 8040 has a POST of an existing resource answered, or OpenDaylight's
// data-exists.
func (e *Emulator) insert(s *Service) *rcError {
	s.AdministrativeState = orDefault(s.AdministrativeState, "UNLOCKED")
	s.LifecycleState, s.OperationalState = LifecycleInstalled, OperationalEnabled
	if e.opts.BuildPolls > 0 {
		s.buildLeft = e.opts.BuildPolls
		s.LifecycleState, s.OperationalState = LifecyclePlanned, OperationalDisabled
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.services[s.UUID]; dup {
		tag := "resource-denied"
		if e.opts.Server == ServerTransportPCE {
			tag = "data-exists"
		}
		return &rcError{status: http.StatusConflict, tag: tag, msg: fmt.Sprintf("connectivity-service %s already exists", s.UUID), path: "/tapi-common:context/tapi-connectivity:connectivity-context/connectivity-service"}
	}
	e.services[s.UUID] = s
	return nil
}

func (e *Emulator) legacy() bool { return strings.HasPrefix(e.opts.Version, "2.1") }

func (e *Emulator) createData(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	var in serviceIn
	var raw []json.RawMessage
	if err := decodeMember(r, body, "tapi-connectivity:connectivity-service", &raw); err != nil {
		return err
	}
	if len(raw) != 1 {
		return invalid("tapi-connectivity:connectivity-service must hold exactly one entry, got %d", len(raw))
	}
	var entry any
	_ = json.Unmarshal(raw[0], &entry)
	config := map[string]any{"tapi-connectivity:connectivity-context": map[string]any{"connectivity-service": []any{entry}}}
	if e.legacy() {
		// 2.1.3's SIP list is configuration, which the end-points'
		// leafrefs need; 2.4.1's is state only.
		var sips []any
		for _, s := range e.opts.SIPs {
			sips = append(sips, map[string]any{"uuid": s.UUID})
		}
		config["service-interface-point"] = sips
	}
	if err := e.lintRequest("the data-mode create body", emulator.LintConfig, map[string]any{"tapi-common:context": config}, nil); err != nil {
		return err
	}
	var err *rcError
	if e.legacy() {
		var d data213
		err = strict(raw[0], &d)
		in = d.in()
	} else {
		var d data241
		err = strict(raw[0], &d)
		in = d.in()
	}
	if err != nil {
		return err
	}
	if in.UUID == nil {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: "connectivity-service: uuid is mandatory (list key)"}
	}
	s, err := e.validate(in)
	if err != nil {
		return err
	}
	s.Via = "data"
	if err := e.insert(s); err != nil {
		return err
	}
	w.Header().Set("Location", e.root+strings.TrimPrefix(ServicesPath, DefaultRoot)+"="+url.PathEscape(s.UUID))
	w.WriteHeader(http.StatusCreated)
	return nil
}

// createRPC decodes the RPC input in its own shape, which is not the data
// shape: in 2.1.3 no uuid and no name, the constraints in
// connectivity-constraint.
func (e *Emulator) createRPC(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	var raw json.RawMessage
	if err := decodeMember(r, body, "tapi-connectivity:input", &raw); err != nil {
		return err
	}
	if raw == nil {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: "tapi-connectivity:input is required"}
	}
	var input any
	_ = json.Unmarshal(raw, &input)
	if err := e.lintRequest("the create-connectivity-service input", emulator.LintRPC, map[string]any{"tapi-connectivity:create-connectivity-service": input}, e.operational()); err != nil {
		return err
	}
	var in serviceIn
	var err *rcError
	if e.legacy() {
		var d rpc213
		err = strict(raw, &d)
		in = d.in()
	} else {
		var d rpc241
		err = strict(raw, &d)
		in = d.in()
	}
	if err != nil {
		return err
	}
	if in.UUID == nil {
		id := uuid.NewString()
		in.UUID = &id
	}
	s, err := e.validate(in)
	if err != nil {
		return err
	}
	s.Via = "rpc"
	if err := e.insert(s); err != nil {
		return err
	}
	e.mu.Lock()
	out := e.wire(s)
	e.mu.Unlock()
	return e.answer(w, http.StatusOK, map[string]any{"tapi-connectivity:output": map[string]any{"service": out}}, "create-connectivity-service",
		emulator.LintReply, map[string]any{"tapi-connectivity:create-connectivity-service": map[string]any{"service": out}}, e.operational())
}

func (e *Emulator) deleteRPC(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	var raw json.RawMessage
	if err := decodeMember(r, body, "tapi-connectivity:input", &raw); err != nil {
		return err
	}
	if raw == nil {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: "tapi-connectivity:input is required"}
	}
	var doc any
	_ = json.Unmarshal(raw, &doc)
	if err := e.lintRequest("the delete-connectivity-service input", emulator.LintRPC, map[string]any{"tapi-connectivity:delete-connectivity-service": doc}, e.operational()); err != nil {
		return err
	}
	var input struct {
		UUID            *string `json:"uuid"`
		ServiceIDOrName *string `json:"service-id-or-name"`
	}
	if err := strict(raw, &input); err != nil {
		return err
	}
	want, other, ref, wrong := "uuid", "service-id-or-name", input.UUID, input.ServiceIDOrName != nil
	if e.legacy() {
		want, other, ref, wrong = other, want, input.ServiceIDOrName, input.UUID != nil
	}
	if wrong {
		return &rcError{status: http.StatusBadRequest, tag: "unknown-element", msg: fmt.Sprintf("%s is not an input of delete-connectivity-service in TAPI %s (it takes %s)", other, e.version(), want)}
	}
	if ref == nil {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: want + " is required"}
	}
	e.mu.Lock()
	id := *ref
	if _, ok := e.services[id]; !ok && e.legacy() {
		for uid, s := range e.services {
			if slices.ContainsFunc(s.Names, func(n Name) bool { return n.Value == *ref }) {
				id = uid
				break
			}
		}
	}
	_, ok := e.services[id]
	delete(e.services, id)
	e.mu.Unlock()
	if !ok {
		return e.gone(*ref)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// gone answers the delete RPC of a service that does not exist as the
// server played does.
func (e *Emulator) gone(ref string) *rcError {
	switch e.opts.Server {
	case ServerONOS:
		return &rcError{status: http.StatusExpectationFailed, tag: "operation-failed", msg: "connectivity service " + ref + " not found"}
	case ServerTransportPCE:
		// A failed RpcResult: OpenDaylight answers it 500, error-type rpc.
		return &rcError{status: http.StatusInternalServerError, typ: "rpc", tag: "operation-failed", msg: "Failed to delete Service: service " + ref + " does not exist"}
	}
	return missing("connectivity-service", ref)
}

func (e *Emulator) version() string {
	if e.legacy() {
		return Version213
	}
	return Version241
}

// serviceIn is a create of either version and shape, read into one form;
// pointers tell a missing leaf from an empty one.
type serviceIn struct {
	UUID                  *string
	Name                  []nameIn
	EndPoint              []endPointIn
	ConnectivityDirection *string
	ServiceType           *string
	RequestedCapacity     *capacityIn
	AdministrativeState   *string
}

type capacityIn struct {
	TotalSize *struct {
		Value any     `json:"value"`
		Unit  *string `json:"unit"`
	} `json:"total-size"`
}

// The shapes of a create: data213 and rpc213 are TAPI 2.1.3's
// connectivity-service and create-connectivity-service input, data241
// and rpc241 2.4.1's. An unknown leaf is refused when decoding.
type (
	data213 struct {
		UUID                  *string      `json:"uuid"`
		Name                  []nameIn     `json:"name"`
		EndPoint              []endPointIn `json:"end-point"`
		ConnectivityDirection *string      `json:"connectivity-direction"`
		ServiceType           *string      `json:"service-type"`
		RequestedCapacity     *capacityIn  `json:"requested-capacity"`
		AdministrativeState   *string      `json:"administrative-state"`
	}
	constraint213 struct {
		ServiceType           *string     `json:"service-type"`
		RequestedCapacity     *capacityIn `json:"requested-capacity"`
		ConnectivityDirection *string     `json:"connectivity-direction"`
	}
	rpc213 struct {
		EndPoint               []endPointIn   `json:"end-point"`
		ConnectivityConstraint *constraint213 `json:"connectivity-constraint"`
		State                  *string        `json:"state"`
	}
	constraint241 struct {
		ServiceType       *string     `json:"service-type"`
		RequestedCapacity *capacityIn `json:"requested-capacity"`
	}
	data241 struct {
		UUID                   *string        `json:"uuid"`
		Name                   []nameIn       `json:"name"`
		LayerProtocolName      *string        `json:"layer-protocol-name"`
		LayerProtocolQualifier *string        `json:"layer-protocol-qualifier"`
		Direction              *string        `json:"direction"`
		EndPoint               []endPointIn   `json:"end-point"`
		ConnectivityConstraint *constraint241 `json:"connectivity-constraint"`
		AdministrativeState    *string        `json:"administrative-state"`
	}
	rpc241 struct {
		UUID                   *string        `json:"uuid"`
		Name                   []nameIn       `json:"name"`
		LayerProtocolName      *string        `json:"layer-protocol-name"`
		EndPoint               []endPointIn   `json:"end-point"`
		ConnectivityConstraint *constraint241 `json:"connectivity-constraint"`
		State                  *string        `json:"state"`
	}
)

func (d data213) in() serviceIn {
	return serviceIn(d)
}

func (d rpc213) in() serviceIn {
	in := serviceIn{EndPoint: d.EndPoint, AdministrativeState: d.State}
	if c := d.ConnectivityConstraint; c != nil {
		in.ServiceType, in.RequestedCapacity, in.ConnectivityDirection = c.ServiceType, c.RequestedCapacity, c.ConnectivityDirection
	}
	return in
}

func (d data241) in() serviceIn {
	in := serviceIn{UUID: d.UUID, Name: d.Name, EndPoint: d.EndPoint, ConnectivityDirection: d.Direction, AdministrativeState: d.AdministrativeState}
	if c := d.ConnectivityConstraint; c != nil {
		in.ServiceType, in.RequestedCapacity = c.ServiceType, c.RequestedCapacity
	}
	return in
}

func (d rpc241) in() serviceIn {
	in := serviceIn{UUID: d.UUID, Name: d.Name, EndPoint: d.EndPoint, AdministrativeState: d.State}
	if c := d.ConnectivityConstraint; c != nil {
		in.ServiceType, in.RequestedCapacity = c.ServiceType, c.RequestedCapacity
	}
	return in
}

type nameIn struct {
	ValueName *string `json:"value-name"`
	Value     *string `json:"value"`
}

type endPointIn struct {
	LocalID                *string  `json:"local-id"`
	Name                   []nameIn `json:"name"`
	LayerProtocolName      *string  `json:"layer-protocol-name"`
	LayerProtocolQualifier *string  `json:"layer-protocol-qualifier"`
	Direction              *string  `json:"direction"`
	Role                   *string  `json:"role"`
	SIP                    *struct {
		UUID *string `json:"service-interface-point-uuid"`
	} `json:"service-interface-point"`
}

// decodeMember checks the media type and decodes the body's one member
// name (a module-qualified top-level node) into out, raw; any other
// member is refused.
func decodeMember(r *http.Request, body []byte, name string, out any) *rcError {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (ct != "application/yang-data+json" && ct != "application/json") {
		return &rcError{status: http.StatusUnsupportedMediaType, tag: "invalid-value", msg: "Content-Type must be application/yang-data+json"}
	}
	var doc map[string]json.RawMessage
	if err := strict(body, &doc); err != nil {
		return err
	}
	for k := range doc {
		if k != name {
			return &rcError{status: http.StatusBadRequest, tag: "unknown-element", msg: fmt.Sprintf("unknown field %q (want %s)", k, name)}
		}
	}
	if raw, ok := doc[name]; ok {
		return strict(raw, out)
	}
	return nil
}

// strict decodes body strictly: an unknown or read-only leaf is refused,
// as a schema-aware server would.
func strict(body []byte, out any) *rcError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return &rcError{status: http.StatusBadRequest, tag: "unknown-element", msg: err.Error()}
		}
		return &rcError{status: http.StatusBadRequest, tag: "malformed-message", msg: err.Error()}
	}
	if dec.More() {
		return &rcError{status: http.StatusBadRequest, tag: "malformed-message", msg: "trailing data after the JSON document"}
	}
	return nil
}

func invalid(format string, args ...any) *rcError {
	return &rcError{status: http.StatusBadRequest, tag: "invalid-value", msg: fmt.Sprintf(format, args...)}
}

func oneOf(leaf string, v *string, allowed []string) *rcError {
	if v != nil && !slices.Contains(allowed, *v) {
		return invalid("%s %q is not one of %s", leaf, *v, strings.Join(allowed, ", "))
	}
	return nil
}

// validate checks a create input against the model and the context.
func (e *Emulator) validate(in serviceIn) (*Service, *rcError) {
	if _, err := uuid.Parse(*in.UUID); err != nil || len(*in.UUID) != 36 {
		return nil, invalid("uuid %q is not a UUID", *in.UUID)
	}
	s := &Service{
		UUID:                  *in.UUID,
		ConnectivityDirection: "BIDIRECTIONAL",
		ServiceType:           "POINT_TO_POINT_CONNECTIVITY",
	}
	for _, c := range []struct {
		leaf    string
		v       *string
		allowed []string
		dst     *string
	}{
		{"connectivity-direction", in.ConnectivityDirection, directions, &s.ConnectivityDirection},
		{"service-type", in.ServiceType, serviceTypes, &s.ServiceType},
		{"administrative-state", in.AdministrativeState, adminStates, &s.AdministrativeState},
	} {
		if err := oneOf(c.leaf, c.v, c.allowed); err != nil {
			return nil, err
		}
		if c.v != nil {
			*c.dst = *c.v
		}
	}
	if in.ConnectivityDirection == nil && slices.ContainsFunc(in.EndPoint, func(ep endPointIn) bool {
		d := e.directionIn(ep.Direction)
		return d != nil && (*d == "INPUT" || *d == "OUTPUT")
	}) {
		// 2.4.1's RPC input states no direction: one-way end-points make
		// the service UNIDIRECTIONAL.
		s.ConnectivityDirection = "UNIDIRECTIONAL"
	}
	if err := e.capacityOf(in, s); err != nil {
		return nil, err
	}
	for i, n := range in.Name {
		if n.ValueName == nil || n.Value == nil {
			return nil, &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: fmt.Sprintf("name[%d] needs value-name and value", i)}
		}
		if slices.ContainsFunc(s.Names, func(x Name) bool { return x.ValueName == *n.ValueName }) {
			return nil, invalid("name value-name %q appears twice", *n.ValueName)
		}
		s.Names = append(s.Names, Name{ValueName: *n.ValueName, Value: *n.Value})
	}
	if len(in.EndPoint) < 2 {
		return nil, invalid("a connectivity-service needs at least 2 end-points, got %d", len(in.EndPoint))
	}
	if s.ServiceType == "POINT_TO_POINT_CONNECTIVITY" && len(in.EndPoint) != 2 {
		return nil, invalid("POINT_TO_POINT_CONNECTIVITY needs exactly 2 end-points, got %d", len(in.EndPoint))
	}
	for i, epIn := range in.EndPoint {
		ep, err := e.endPoint(i, epIn, s)
		if err != nil {
			return nil, err
		}
		s.EndPoints = append(s.EndPoints, ep)
	}
	if s.ConnectivityDirection == "UNIDIRECTIONAL" {
		dirs := make([]string, len(s.EndPoints))
		for i, ep := range s.EndPoints {
			dirs[i] = ep.Direction
		}
		if !slices.Contains(dirs, "INPUT") || !slices.Contains(dirs, "OUTPUT") {
			return nil, invalid("a UNIDIRECTIONAL service needs an INPUT and an OUTPUT end-point, got %s", strings.Join(dirs, ", "))
		}
	}
	return s, nil
}

// capacityOf reads requested-capacity: in 2.1.3 a uint64 and a unit
// word, in 2.4.1 a decimal64 and a unit identity.
func (e *Emulator) capacityOf(in serviceIn, s *Service) *rcError {
	if in.RequestedCapacity == nil {
		return nil
	}
	ts := in.RequestedCapacity.TotalSize
	if ts == nil || ts.Value == nil || ts.Unit == nil {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: "requested-capacity needs total-size with value and unit"}
	}
	var text string
	switch v := ts.Value.(type) {
	case string:
		text = v
	case json.Number:
		text = v.String()
	}
	unit := *ts.Unit
	if e.legacy() {
		if _, err := strconv.ParseUint(text, 10, 64); err != nil {
			return invalid("requested-capacity value %v is not a uint64", ts.Value)
		}
	} else {
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return invalid("requested-capacity value %v is not a decimal64", ts.Value)
		}
		var ok bool
		if unit, ok = strings.CutPrefix(unit, "tapi-common:CAPACITY_UNIT_"); !ok {
			return invalid("requested-capacity unit %q is not a tapi-common:CAPACITY_UNIT_… identity", *ts.Unit)
		}
	}
	if err := oneOf("requested-capacity unit", &unit, capacityUnits); err != nil {
		return err
	}
	s.CapacityValue, s.CapacityUnit = text, unit
	return nil
}

func (e *Emulator) endPoint(i int, in endPointIn, s *Service) (EndPoint, *rcError) {
	need := func(leaf string) *rcError {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: fmt.Sprintf("end-point[%d]: %s is mandatory", i, leaf)}
	}
	switch {
	case in.LocalID == nil || *in.LocalID == "":
		return EndPoint{}, need("local-id")
	case in.SIP == nil || in.SIP.UUID == nil:
		return EndPoint{}, need("service-interface-point/service-interface-point-uuid")
	case in.LayerProtocolName == nil:
		return EndPoint{}, need("layer-protocol-name")
	}
	ep := EndPoint{LocalID: *in.LocalID, LayerProtocolName: *in.LayerProtocolName, SIP: *in.SIP.UUID}
	if in.LayerProtocolQualifier != nil {
		ep.LayerProtocolQualifier = *in.LayerProtocolQualifier
	}
	direction := e.directionIn(in.Direction)
	if direction != nil {
		ep.Direction = *direction
	}
	for _, n := range in.Name {
		if n.ValueName == nil || n.Value == nil {
			return EndPoint{}, &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: fmt.Sprintf("end-point[%d]: a name needs value-name and value", i)}
		}
		ep.Names = append(ep.Names, Name{ValueName: *n.ValueName, Value: *n.Value})
	}
	if in.Role != nil {
		ep.Role = *in.Role
	}
	for _, prev := range s.EndPoints {
		if prev.LocalID == ep.LocalID {
			return EndPoint{}, invalid("end-point local-id %q appears twice", ep.LocalID)
		}
		if prev.SIP == ep.SIP {
			return EndPoint{}, invalid("SIP %s is used by two end-points", ep.SIP)
		}
	}
	if err := oneOf("layer-protocol-name", in.LayerProtocolName, layerProtocols); err != nil {
		return EndPoint{}, err
	}
	if err := oneOf("end-point direction", direction, portDirections); err != nil {
		return EndPoint{}, err
	}
	if err := oneOf("end-point role", in.Role, portRoles); err != nil {
		return EndPoint{}, err
	}
	if s.ServiceType != "ROOTED_MULTIPOINT_CONNECTIVITY" && (ep.Role == "ROOT" || ep.Role == "LEAF" || ep.Role == "TRUNK") {
		return EndPoint{}, invalid("end-point %s: role %s is only for ROOTED_MULTIPOINT_CONNECTIVITY", ep.LocalID, ep.Role)
	}
	sip, ok := e.sips[ep.SIP]
	switch {
	case !ok:
		return EndPoint{}, &rcError{status: http.StatusBadRequest, tag: "invalid-value", appTag: "instance-required", msg: fmt.Sprintf("end-point %s: SIP not found: %s", ep.LocalID, ep.SIP)}
	case sip.LayerProtocolName != ep.LayerProtocolName:
		return EndPoint{}, invalid("end-point %s: layer-protocol-name %s does not match SIP %s (%s)", ep.LocalID, ep.LayerProtocolName, sip.UUID, sip.LayerProtocolName)
	case ep.LayerProtocolQualifier != "" && !slices.Contains(sip.Qualifiers, ep.LayerProtocolQualifier):
		return EndPoint{}, invalid("end-point %s: SIP %s does not support layer-protocol-qualifier %s", ep.LocalID, sip.UUID, ep.LayerProtocolQualifier)
	}
	switch s.ConnectivityDirection {
	case "BIDIRECTIONAL":
		return ep, bidirectionalEndPoint(ep, sip)
	case "UNIDIRECTIONAL":
		return unidirectionalEndPoint(ep, sip)
	}
	return ep, nil
}

// bidirectionalEndPoint checks an end-point of a BIDIRECTIONAL service:
// a bidirectional SIP, and no other direction stated.
func bidirectionalEndPoint(ep EndPoint, sip SIP) *rcError {
	switch {
	case sip.Direction == "INPUT" || sip.Direction == "OUTPUT":
		return invalid("end-point %s: SIP %s is %s, a BIDIRECTIONAL service needs bidirectional SIPs", ep.LocalID, sip.UUID, sip.Direction)
	case ep.Direction != "" && ep.Direction != "BIDIRECTIONAL":
		return invalid("end-point %s: direction %s in a BIDIRECTIONAL service", ep.LocalID, ep.Direction)
	}
	return nil
}

// unidirectionalEndPoint checks an end-point of a UNIDIRECTIONAL service
// and fills in its direction: INPUT or OUTPUT, as stated or as its SIP's,
// and, when both are known, the same.
func unidirectionalEndPoint(ep EndPoint, sip SIP) (EndPoint, *rcError) {
	oneWay := func(d string) bool { return d == "INPUT" || d == "OUTPUT" }
	switch {
	case ep.Direction == "" && !oneWay(sip.Direction):
		return EndPoint{}, invalid("end-point %s: a UNIDIRECTIONAL service needs INPUT or OUTPUT end-points; SIP %s is %s and the end-point states no direction", ep.LocalID, sip.UUID, orDefault(sip.Direction, "BIDIRECTIONAL"))
	case ep.Direction == "":
		ep.Direction = sip.Direction
	case !oneWay(ep.Direction):
		return EndPoint{}, invalid("end-point %s: direction %s in a UNIDIRECTIONAL service (want INPUT or OUTPUT)", ep.LocalID, ep.Direction)
	case oneWay(sip.Direction) && sip.Direction != ep.Direction:
		return EndPoint{}, invalid("end-point %s: direction %s, but SIP %s is %s", ep.LocalID, ep.Direction, sip.UUID, sip.Direction)
	}
	return ep, nil
}

// rcError is one RESTCONF error reply.
type rcError struct {
	status                int
	typ, tag, appTag, msg string // typ "" picks one by tag
	path                  string
}

func writeError(w http.ResponseWriter, e *rcError) {
	typ := e.typ
	switch {
	case typ != "":
	case slices.Contains([]string{"malformed-message", "access-denied", "operation-not-supported", "unknown-element"}, e.tag):
		typ = "protocol"
	default:
		typ = "application"
	}
	writeJSON(w, e.status, emulator.RESTCONFErrors(emulator.RESTCONFError{Type: typ, Tag: e.tag, AppTag: e.appTag, Path: e.path, Message: e.msg}))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/yang-data+json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
