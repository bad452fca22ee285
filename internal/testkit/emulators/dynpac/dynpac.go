// Package dynpac is an in-process emulator of the DynPaC (Dynamic Path
// Computation framework) REST API that wimro's dynpac connector drives.
// It is an http.Handler: mount it
// on an httptest.Server and point a WIM at the server's URL.
//
// Routes (relative to the WIM URL):
//
//	GET    /checkConnectivity        200 "OK"
//	GET    /checkCredentials         HTTP basic auth checked against Options.User/Password
//	POST   /service/create           form body body=<json>; 200 with the new uuid as the raw body
//	GET    /service/status/{uuid}    200 with the status (see StatusFormat); 404 unknown
//	DELETE /service/delete/{uuid}    200; 404 unknown
//	DELETE /service/clearAll         200 with the number of services deleted as the raw body
//
// Every error reply is JSON {"code": "<NAME>", "description": "<text>"} with
// the HTTP status of the error. Like the real controller's OSM client, only
// checkCredentials is authenticated; the service routes accept any caller.
//
// The emulator picks the service ids (uuid4), as DynPaC does: nothing a
// client sends names a service.
package dynpac

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

// Service statuses the emulator reports.
const (
	StatusBuilding = "BUILDING"
	StatusActive   = "ACTIVE"
)

// Status formats of GET /service/status/{uuid} (Options.StatusFormat).
const (
	// FormatJSON answers {"uuid": "<id>", "status": "<status>"} (default).
	FormatJSON = "json"
	// FormatWIMStatus answers {"wim_status": "<status>"}.
	FormatWIMStatus = "wim_status"
	// FormatRaw answers the status as a bare text body, like the v6
	// connector expected.
	FormatRaw = "raw"
	// FormatEmpty answers 200 with an empty body (a client must read that
	// as ACTIVE).
	FormatEmpty = "empty"
)

// Options configure an Emulator.
type Options struct {
	// User and Password are the credentials checkCredentials accepts. An
	// empty User accepts any (or no) credentials.
	User, Password string
	// BuildPolls is how many status reads a new service answers BUILDING
	// before it turns ACTIVE (0: ACTIVE at once).
	BuildPolls int
	// StatusFormat selects the status reply body: FormatJSON (default),
	// FormatWIMStatus, FormatRaw or FormatEmpty.
	StatusFormat string
}

// Point is one connection point of a service as the client sent it.
// WANSwitchPort keeps the JSON type the client used (string or number).
type Point struct {
	WANSwitchDPID string `json:"wan_switch_dpid"`
	WANSwitchPort any    `json:"wan_switch_port"`
	WANVLAN       int    `json:"wan_vlan"`
}

// Service is a service held by the emulator.
type Service struct {
	ID               string  `json:"uuid"`
	ConnectionPoints []Point `json:"connection_points"`
	Bandwidth        float64 `json:"bandwidth"`
	ServiceType      string  `json:"service_type"`
	Backup           bool    `json:"backup"`
	// Status is StatusBuilding, StatusActive or what SetStatus set.
	Status string `json:"status"`

	buildLeft int
}

// Request is one request the emulator received, as recorded in the log.
// Its Path is the unescaped URL path, e.g. /service/create.
type Request struct {
	emulator.Request
	// FormBody is the decoded value of the "body" form field of a POST
	// (the service JSON of a create).
	FormBody string
}

// Emulator is the in-memory DynPaC controller. It is safe for concurrent
// use. Its FailNext answers the failed requests with a {code, description}
// body (code INJECTED).
type Emulator struct {
	emulator.Recorder
	opts Options

	mu       sync.Mutex
	services map[string]*Service
}

// New returns an emulator with no services.
func New(opts Options) *Emulator {
	if opts.StatusFormat == "" {
		opts.StatusFormat = FormatJSON
	}
	return &Emulator{opts: opts, services: make(map[string]*Service)}
}

// SetStatus sets the status string of service id (e.g. "DOWN", "ERROR",
// "FAILED"), ending its build phase. It reports whether the service exists.
func (e *Emulator) SetStatus(id, status string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.services[id]
	if s == nil {
		return false
	}
	s.Status, s.buildLeft = status, 0
	return true
}

// Requests returns the requests received so far, oldest first.
func (e *Emulator) Requests() []Request {
	var out []Request
	for _, rec := range e.Recorder.Requests() {
		req := Request{Request: rec}
		if rec.Method == http.MethodPost {
			if vals, err := url.ParseQuery(rec.Body); err == nil {
				req.FormBody = vals.Get("body")
			}
		}
		out = append(out, req)
	}
	return out
}

// Services returns copies of the services, sorted by id.
func (e *Emulator) Services() []Service {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Service, 0, len(e.services))
	for _, id := range slices.Sorted(maps.Keys(e.services)) {
		s := *e.services[id]
		s.ConnectionPoints = slices.Clone(s.ConnectionPoints)
		out = append(out, s)
	}
	return out
}

// Count returns the number of services.
func (e *Emulator) Count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.services)
}

// Service returns a copy of service id.
func (e *Emulator) Service(id string) (Service, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.services[id]
	if s == nil {
		return Service{}, false
	}
	c := *s
	c.ConnectionPoints = slices.Clone(c.ConnectionPoints)
	return c, true
}

const maxBody = 1 << 20

// ServeHTTP implements the DynPaC API.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	rec := emulator.NewRequest(r, body)
	rec.Path = r.URL.Path
	e.Serve(w, r, rec, func(w http.ResponseWriter, injected int) {
		if injected != 0 {
			writeError(w, injected, "INJECTED", "injected failure")
			return
		}
		e.route(w, r, body)
	})
}

func (e *Emulator) route(w http.ResponseWriter, r *http.Request, body []byte) {
	path := r.URL.Path
	switch {
	case path == "/checkConnectivity":
		if !method(w, r, http.MethodGet) {
			return
		}
		writeText(w, "OK")
	case path == "/checkCredentials":
		if !method(w, r, http.MethodGet) {
			return
		}
		e.checkCredentials(w, r)
	case path == "/service/create":
		if !method(w, r, http.MethodPost) {
			return
		}
		e.create(w, r, body)
	case path == "/service/clearAll":
		if !method(w, r, http.MethodDelete) {
			return
		}
		e.mu.Lock()
		n := len(e.services)
		clear(e.services)
		e.mu.Unlock()
		writeText(w, strconv.Itoa(n))
	case strings.HasPrefix(path, "/service/status/"):
		if !method(w, r, http.MethodGet) {
			return
		}
		e.status(w, strings.TrimPrefix(path, "/service/status/"))
	case strings.HasPrefix(path, "/service/delete/"):
		if !method(w, r, http.MethodDelete) {
			return
		}
		id := strings.TrimPrefix(path, "/service/delete/")
		e.mu.Lock()
		_, ok := e.services[id]
		delete(e.services, id)
		e.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("service %s does not exist", id))
			return
		}
		writeText(w, id)
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no route "+path)
	}
}

func method(w http.ResponseWriter, r *http.Request, want string) bool {
	if r.Method == want {
		return true
	}
	w.Header().Set("Allow", want)
	writeError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", r.Method+" not allowed, use "+want)
	return false
}

func (e *Emulator) checkCredentials(w http.ResponseWriter, r *http.Request) {
	switch err := emulator.CheckBasicAuth(r, e.opts.User, e.opts.Password); {
	case errors.Is(err, emulator.ErrNoCredentials):
		emulator.Challenge(w, "dynpac")
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "basic authentication required")
	case err != nil:
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "Failed while authenticating")
	default:
		writeText(w, "OK")
	}
}

// createBody is the JSON of the create form's "body" field. Pointers tell a
// missing field from a zero one.
type createBody struct {
	ConnectionPoints []createPoint `json:"connection_points"`
	Bandwidth        *float64      `json:"bandwidth"`
	ServiceType      *string       `json:"service_type"`
	Backup           *bool         `json:"backup"`
}

type createPoint struct {
	WANSwitchDPID *string      `json:"wan_switch_dpid"`
	WANSwitchPort any          `json:"wan_switch_port"`
	WANVLAN       *json.Number `json:"wan_vlan"`
}

func (e *Emulator) create(w http.ResponseWriter, r *http.Request, raw []byte) {
	bad := func(format string, args ...any) {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST", fmt.Sprintf(format, args...))
	}
	ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || ct != "application/x-www-form-urlencoded" {
		writeError(w, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/x-www-form-urlencoded")
		return
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		bad("malformed form body: %v", err)
		return
	}
	js := form.Get("body")
	if js == "" {
		bad("missing form field body")
		return
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var req createBody
	if err := dec.Decode(&req); err != nil {
		bad("malformed JSON in body: %v", err)
		return
	}
	if dec.More() {
		bad("malformed JSON in body: trailing data")
		return
	}
	switch {
	case req.ServiceType == nil:
		bad("missing field service_type")
		return
	case *req.ServiceType != "L2":
		bad(`Unexpected service_type. Only "L2" is accepted.`)
		return
	case req.Bandwidth == nil:
		bad("missing field bandwidth")
		return
	case *req.Bandwidth <= 0:
		bad("bandwidth must be positive, got %v", *req.Bandwidth)
		return
	case req.Backup == nil:
		bad("missing field backup")
		return
	case len(req.ConnectionPoints) != 2:
		bad("exactly 2 connection_points are required, got %d", len(req.ConnectionPoints))
		return
	}
	svc := &Service{
		ID:          uuid.NewString(),
		Bandwidth:   *req.Bandwidth,
		ServiceType: *req.ServiceType,
		Backup:      *req.Backup,
		Status:      StatusActive,
		buildLeft:   e.opts.BuildPolls,
	}
	for i, p := range req.ConnectionPoints {
		if p.WANSwitchDPID == nil || *p.WANSwitchDPID == "" {
			bad("connection_points[%d]: missing wan_switch_dpid", i)
			return
		}
		if !validPort(p.WANSwitchPort) {
			bad("connection_points[%d]: missing or invalid wan_switch_port", i)
			return
		}
		if p.WANVLAN == nil {
			bad("connection_points[%d]: missing wan_vlan: only VLAN connection points are supported", i)
			return
		}
		vlan, err := strconv.Atoi(p.WANVLAN.String())
		if err != nil || vlan < 1 || vlan > 4094 {
			bad("connection_points[%d]: wan_vlan must be an integer in 1..4094, got %s", i, p.WANVLAN)
			return
		}
		port := p.WANSwitchPort
		if n, ok := port.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				port = i
			} else {
				port = n.String()
			}
		}
		svc.ConnectionPoints = append(svc.ConnectionPoints, Point{WANSwitchDPID: *p.WANSwitchDPID, WANSwitchPort: port, WANVLAN: vlan})
	}
	if a, b := svc.ConnectionPoints[0], svc.ConnectionPoints[1]; a.WANSwitchDPID == b.WANSwitchDPID && fmt.Sprint(a.WANSwitchPort) == fmt.Sprint(b.WANSwitchPort) && a.WANVLAN == b.WANVLAN {
		bad("the two connection points are the same port and VLAN")
		return
	}
	if svc.buildLeft > 0 {
		svc.Status = StatusBuilding
	}
	e.mu.Lock()
	e.services[svc.ID] = svc
	e.mu.Unlock()
	writeText(w, svc.ID)
}

// validPort accepts a non-negative integer or a non-empty string.
func validPort(v any) bool {
	switch p := v.(type) {
	case string:
		return p != ""
	case json.Number:
		n, err := p.Int64()
		return err == nil && n >= 0
	}
	return false
}

func (e *Emulator) status(w http.ResponseWriter, id string) {
	e.mu.Lock()
	s := e.services[id]
	var status string
	if s != nil {
		if s.buildLeft > 0 {
			s.buildLeft--
			status = StatusBuilding
			if s.buildLeft == 0 {
				s.Status = StatusActive
			}
		} else {
			status = s.Status
		}
	}
	e.mu.Unlock()
	if s == nil {
		writeError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("service %s does not exist", id))
		return
	}
	switch e.opts.StatusFormat {
	case FormatWIMStatus:
		writeJSON(w, http.StatusOK, map[string]any{"wim_status": status})
	case FormatRaw:
		writeText(w, status)
	case FormatEmpty:
		w.WriteHeader(http.StatusOK)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"uuid": id, "status": status})
	}
}

func writeText(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, s)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeError writes DynPaC's error body {code, description}.
func writeError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]any{"code": code, "description": description})
}
