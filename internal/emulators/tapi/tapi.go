// Package tapi is an in-process emulator of an ONF Transport API (TAPI)
// controller's RESTCONF interface, as wimro's tapi connector drives it.
// It is an http.Handler: mount it on an
// httptest.Server and point a WIM at the server's URL. Paths and the
// module-qualified top-level names are those that OSM's tapi connector and
// its mock_tapi_handler use; unlike that mock, the emulator enforces the
// model's rules.
//
// Resources (relative to the WIM URL):
//
//	GET    /restconf/data/tapi-common:context                    the whole context
//	GET    /restconf/data/tapi-common:context/service-interface-point[=<uuid>]
//	GET    /restconf/data/tapi-common:context/tapi-connectivity:connectivity-context
//	POST   …/tapi-connectivity:connectivity-context               create with the client's uuid: 201; 409 data-exists
//	GET    …/connectivity-context/connectivity-service             the list (200, possibly empty)
//	GET    …/connectivity-context/connectivity-service=<uuid>      one service; 404
//	DELETE …/connectivity-context/connectivity-service=<uuid>      204; 404
//	POST   /restconf/operations/tapi-connectivity:create-connectivity-service   server-chosen uuid: 200 with output/service
//	POST   /restconf/operations/tapi-connectivity:delete-connectivity-service   204; 404
//
// Creates are validated strictly: module-qualified body, uuid format,
// at least two end-points with unique local-ids and existing, distinct
// SIPs whose layer-protocol-name matches, supported qualifiers, the
// enumerations of connectivity-direction, service-type, layer-protocol-name,
// end-point direction and role and capacity unit, no unknown or read-only
// leaf. requested-capacity's value is accepted as a string (RFC 7951
// uint64) or a number. The delete RPC accepts the input leaf of
// Options.Version only.
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

	"github.com/wimro/wimro/internal/emulators/emulator"
)

// Resource paths.
const (
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
	QualifierPhotonic = "tapi-photonic-media:PHOTONIC_LAYER_QUALIFIER_NMC"
)

// Versions for Options.Version: they decide the delete RPC's input leaf.
const (
	Version213 = "2.1.3" // input {"service-id-or-name": …} (also "2.1.1")
	Version24  = "2.4"   // input {"uuid": …} (the default)
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

// OSMSIPs returns the SIPs of OSM's mock: R1-eth0 and R2-eth0 (DSR) and the
// photonic pairs of R3-opt1 and R4-opt1.
func OSMSIPs() []SIP {
	return slices.Concat([]SIP{DSRSIP("R1-eth0"), DSRSIP("R2-eth0")}, PhotonicSIPs("R3-opt1"), PhotonicSIPs("R4-opt1"))
}

// Options configure an Emulator.
type Options struct {
	// SIPs are the context's service interface points.
	SIPs []SIP
	// Version selects the delete RPC's input: "2.1.x" wants
	// service-id-or-name (and refuses a uuid in the create RPC input),
	// anything else (default "2.4") wants uuid.
	Version string
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
	// Direction is the end-point's direction as sent; in a UNIDIRECTIONAL
	// service, when none was sent, its SIP's (INPUT or OUTPUT).
	Direction string
	Role      string
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
	contextUUID string
	sips        map[string]SIP

	mu       sync.Mutex
	services map[string]*Service
}

// New returns an emulator with opts.SIPs and no services.
func New(opts Options) *Emulator {
	e := &Emulator{
		opts:        opts,
		contextUUID: uuid.NewString(),
		sips:        make(map[string]SIP, len(opts.SIPs)),
		services:    make(map[string]*Service),
	}
	for _, s := range opts.SIPs {
		e.sips[s.UUID] = s
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

func (e *Emulator) route(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	path := r.URL.EscapedPath()
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
	case path == ContextPath:
		return e.readOnly(w, r, func() any { return map[string]any{"tapi-common:context": e.context()} })
	case path == SIPsPath:
		return e.readOnly(w, r, func() any { return map[string]any{"tapi-common:service-interface-point": e.sipList()} })
	case keyed && strings.HasPrefix(path, SIPsPath+"="):
		if _, ok := e.sips[key]; !ok {
			return missing("service-interface-point", key)
		}
		return e.readOnly(w, r, func() any { return map[string]any{"tapi-common:service-interface-point": []any{sipJSON(e.sips[key])}} })
	case path == ConnectivityPath:
		if r.Method == http.MethodPost {
			return e.createData(w, r, body)
		}
		return e.readOnly(w, r, func() any {
			return map[string]any{"tapi-connectivity:connectivity-context": map[string]any{"connectivity-service": e.serviceList()}}
		})
	case path == ServicesPath:
		return e.readOnly(w, r, func() any { return map[string]any{"tapi-connectivity:connectivity-service": e.serviceList()} })
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

func (e *Emulator) readOnly(w http.ResponseWriter, r *http.Request, doc func() any) *rcError {
	if r.Method != http.MethodGet {
		return notAllowed(r, "GET")
	}
	writeJSON(w, http.StatusOK, doc())
	return nil
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
		out = append(out, sipJSON(s))
	}
	return out
}

func sipJSON(s SIP) map[string]any {
	return map[string]any{
		"uuid":                               s.UUID,
		"layer-protocol-name":                s.LayerProtocolName,
		"supported-layer-protocol-qualifier": slices.Clone(s.Qualifiers),
		"administrative-state":               "UNLOCKED",
		"operational-state":                  "ENABLED",
		"direction":                          s.Direction,
	}
}

func (e *Emulator) serviceList() []any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]any, 0, len(e.services))
	for _, id := range slices.Sorted(maps.Keys(e.services)) {
		out = append(out, e.services[id].wire())
	}
	return out
}

// wire renders the service as a TAPI connectivity-service entry.
func (s *Service) wire() map[string]any {
	names := make([]any, len(s.Names))
	for i, n := range s.Names {
		names[i] = map[string]any{"value-name": n.ValueName, "value": n.Value}
	}
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
			m["direction"] = ep.Direction
		}
		if ep.Role != "" {
			m["role"] = ep.Role
		}
		eps[i] = m
	}
	out := map[string]any{
		"uuid":                   s.UUID,
		"name":                   names,
		"end-point":              eps,
		"connectivity-direction": s.ConnectivityDirection,
		"service-type":           s.ServiceType,
		"administrative-state":   s.AdministrativeState,
		"operational-state":      s.OperationalState,
		"lifecycle-state":        s.LifecycleState,
	}
	if s.CapacityValue != "" {
		out["requested-capacity"] = map[string]any{"total-size": map[string]any{"value": s.CapacityValue, "unit": s.CapacityUnit}}
	}
	return out
}

// readService answers one service; the read moves a building service on.
func (e *Emulator) readService(w http.ResponseWriter, id string) *rcError {
	e.mu.Lock()
	s := e.services[id]
	var doc map[string]any
	if s != nil {
		doc = s.wire()
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
	writeJSON(w, http.StatusOK, map[string]any{"tapi-connectivity:connectivity-service": []any{doc}})
	return nil
}

func (e *Emulator) remove(id string) (found bool) {
	e.locked(func() {
		_, found = e.services[id]
		delete(e.services, id)
	})
	return found
}

// insert adds a validated service, or answers 409 data-exists.
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
		return &rcError{status: http.StatusConflict, tag: "data-exists", msg: fmt.Sprintf("connectivity-service %s already exists", s.UUID), path: "/tapi-common:context/tapi-connectivity:connectivity-context/connectivity-service"}
	}
	e.services[s.UUID] = s
	return nil
}

func (e *Emulator) legacy() bool { return strings.HasPrefix(e.opts.Version, "2.1") }

func (e *Emulator) createData(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	var doc struct {
		Services []serviceIn `json:"tapi-connectivity:connectivity-service"`
	}
	if err := decode(r, body, &doc); err != nil {
		return err
	}
	if len(doc.Services) != 1 {
		return invalid("tapi-connectivity:connectivity-service must hold exactly one entry, got %d", len(doc.Services))
	}
	in := doc.Services[0]
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
	w.Header().Set("Location", ServicesPath+"="+url.PathEscape(s.UUID))
	w.WriteHeader(http.StatusCreated)
	return nil
}

func (e *Emulator) createRPC(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	var doc struct {
		Input *serviceIn `json:"tapi-connectivity:input"`
	}
	if err := decode(r, body, &doc); err != nil {
		return err
	}
	if doc.Input == nil {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: "tapi-connectivity:input is required"}
	}
	in := *doc.Input
	if in.UUID != nil && e.legacy() {
		return &rcError{status: http.StatusBadRequest, tag: "unknown-element", msg: "uuid is not an input of create-connectivity-service in TAPI " + e.opts.Version}
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
	out := s.wire()
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"tapi-connectivity:output": map[string]any{"service": out}})
	return nil
}

func (e *Emulator) deleteRPC(w http.ResponseWriter, r *http.Request, body []byte) *rcError {
	var doc struct {
		Input *struct {
			UUID            *string `json:"uuid"`
			ServiceIDOrName *string `json:"service-id-or-name"`
		} `json:"tapi-connectivity:input"`
	}
	if err := decode(r, body, &doc); err != nil {
		return err
	}
	if doc.Input == nil {
		return &rcError{status: http.StatusBadRequest, tag: "missing-element", msg: "tapi-connectivity:input is required"}
	}
	want, other, ref, wrong := "uuid", "service-id-or-name", doc.Input.UUID, doc.Input.ServiceIDOrName != nil
	if e.legacy() {
		want, other, ref, wrong = other, want, doc.Input.ServiceIDOrName, doc.Input.UUID != nil
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
		return missing("connectivity-service", *ref)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (e *Emulator) version() string { return orDefault(e.opts.Version, Version24) }

// The create input, pointers telling a missing leaf from an empty one.
type serviceIn struct {
	UUID                  *string      `json:"uuid"`
	Name                  []nameIn     `json:"name"`
	EndPoint              []endPointIn `json:"end-point"`
	ConnectivityDirection *string      `json:"connectivity-direction"`
	ServiceType           *string      `json:"service-type"`
	RequestedCapacity     *struct {
		TotalSize *struct {
			Value any     `json:"value"`
			Unit  *string `json:"unit"`
		} `json:"total-size"`
	} `json:"requested-capacity"`
	AdministrativeState *string `json:"administrative-state"`
}

type nameIn struct {
	ValueName *string `json:"value-name"`
	Value     *string `json:"value"`
}

type endPointIn struct {
	LocalID                *string `json:"local-id"`
	LayerProtocolName      *string `json:"layer-protocol-name"`
	LayerProtocolQualifier *string `json:"layer-protocol-qualifier"`
	Direction              *string `json:"direction"`
	Role                   *string `json:"role"`
	SIP                    *struct {
		UUID *string `json:"service-interface-point-uuid"`
	} `json:"service-interface-point"`
}

// decode checks the media type and decodes body strictly: an unknown or
// read-only leaf is refused, as a schema-aware server would.
func decode(r *http.Request, body []byte, out any) *rcError {
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (ct != "application/yang-data+json" && ct != "application/json") {
		return &rcError{status: http.StatusUnsupportedMediaType, tag: "invalid-value", msg: "Content-Type must be application/yang-data+json"}
	}
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
	if err := capacityOf(in, s); err != nil {
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

func capacityOf(in serviceIn, s *Service) *rcError {
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
	if _, err := strconv.ParseUint(text, 10, 64); err != nil {
		return invalid("requested-capacity value %v is not a uint64", ts.Value)
	}
	if err := oneOf("requested-capacity unit", ts.Unit, capacityUnits); err != nil {
		return err
	}
	s.CapacityValue, s.CapacityUnit = text, *ts.Unit
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
	if in.Direction != nil {
		ep.Direction = *in.Direction
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
	if err := oneOf("end-point direction", in.Direction, portDirections); err != nil {
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
	status           int
	tag, appTag, msg string
	path             string
}

func writeError(w http.ResponseWriter, e *rcError) {
	typ := "application"
	switch e.tag {
	case "malformed-message", "access-denied", "operation-not-supported", "unknown-element":
		typ = "protocol"
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
