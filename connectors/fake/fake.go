// Package fake provides WIM type "fake": a connector backed by an in-memory
// controller that follows the connector contract strictly (what OSM's
// fake/dummy connector was meant to be, without its v6 bugs). It lets wimro run
// end to end with no SDN controller, and lets tests steer the controller:
// slow calls, services that stay BUILD for a while, injected failures,
// replies lost after the controller acted, bad credentials, an unreachable
// or silent controller, services removed or faulted behind wimro's back.
//
// The controller state lives in a Controller shared through a process-wide
// map keyed by the WIM URL. Every connector built for the same URL, by any
// account and across restarts of the process, talks to the same Controller, the way
// real connectors share a real controller. State lasts as long as the
// process; tests use a distinct URL each (ControllerFor gives them the
// Controller to inspect).
//
// It makes ELINE, ELAN and L3VPN services (an L3VPN's points keep their
// L3 site, listed under "l3" in the status info and read back whole in
// Service.L3, so drift reconcile compares them), edits and lists them,
// and honours every QoS field (Capabilities): the controller keeps
// the QoS with the service (Controller.QoS, and "bandwidth" and "latency"
// in its status info). Its latency_ms setting below is unrelated: a delay
// of the connector's own calls.
//
// Settings, read from the account config (or the WIM config), so they can
// be set over the API:
//
//	latency_ms   every call waits this long before reaching the controller
//	             (0; the wait ends early with an error when ctx is done)
//	build_polls  a new service answers BUILD to its first N status calls,
//	             then ACTIVE (0)
//	state_file   keep the controller's services in this JSON file, so the
//	             "controller" outlives the wimd process (kill-and-restart
//	             tests: a real controller does not forget when wimd dies)
//	edit         false: declare no edit (EditService is Permanent), so an
//	             EDIT action replaces the service (true)
//	make_before_break
//	             false: a replace deletes the old service first (true)
//	multipoint   false: declare ELINE only, no ELAN (true)
package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
)

// Type is the WIM type this package registers.
const Type = "fake"

// Method names recorded in Call.Method.
const (
	MethodCheckCredentials = "CheckCredentials"
	MethodCreateService    = "CreateService"
	MethodGetServiceStatus = "GetServiceStatus"
	MethodEditService      = "EditService"
	MethodDeleteService    = "DeleteService"
	MethodListServices     = "ListServices"
	MethodClearAll         = "ClearAll"
)

// Register adds the fake connector to r under Type. Its state_file may be
// any path: for tests that build their registry; wimd uses RegisterConfined.
func Register(r *connectors.Registry) { r.Register(Type, Factory, Capabilities) }

// Capabilities are fake's: everything, QoS stored with the service; the
// settings edit, make_before_break and multipoint take edit,
// make-before-break or ELAN away (a replacing connector, one without
// multipoint, for tests).
var Capabilities = func() connectors.Capabilities {
	c := connectors.Everything()
	c.Narrow = func(cfg connectors.Config) connectors.Capabilities {
		n := connectors.Everything()
		n.Edit, n.MakeBeforeBreak = settingOr(cfg, "edit"), settingOr(cfg, "make_before_break")
		if !settingOr(cfg, "multipoint") {
			n.Services = []connectors.ServiceType{connectors.ServiceELINE}
		}
		return n
	}
	return c
}()

// settingOr reads a boolean setting that is true unless set false; a
// malformed one is left to Factory to refuse.
func settingOr(cfg connectors.Config, name string) bool {
	v, err := cfg.BoolSetting(name, true)
	return err != nil || v
}

// RegisterConfined adds the fake connector to r under Type with its
// state_file confined to folder dir and kept out of the reserved paths
// (files or folders of wimd's own inside dir): any other path is a
// Permanent error naming state_file, refused before the file is touched,
// so that a client cannot make wimd create or replace files.
func RegisterConfined(r *connectors.Registry, dir string, reserved ...string) {
	r.Register(Type, func(cfg connectors.Config) (connectors.Connector, error) {
		p, err := cfg.StringSetting("state_file", "")
		if err != nil {
			return nil, err
		}
		if p != "" {
			if err := confined(p, dir, reserved); err != nil {
				return nil, connectors.Errorf(connectors.KindPermanent, "fake: config \"state_file\": %v", err)
			}
		}
		return Factory(cfg)
	}, Capabilities)
}

// confined checks that path p lies inside dir and in none of reserved,
// symbolic links resolved (of the folder holding p, which must exist).
func confined(p, dir string, reserved []string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	real := func(p string) (string, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r, nil
		}
		return filepath.Clean(abs), nil
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return fmt.Errorf("%q: its folder: %w", p, err)
	}
	file := filepath.Join(parent, filepath.Base(p))
	root, err := real(dir)
	if err != nil {
		return err
	}
	inside := func(p, dir string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "."
	}
	if !inside(file, root) {
		return fmt.Errorf("%q is not inside wimd's data folder %s", p, dir)
	}
	for _, r := range reserved {
		rr, err := real(r)
		if err != nil {
			return err
		}
		if file == rr || inside(file, rr) {
			return fmt.Errorf("%q is one of wimd's own files", p)
		}
	}
	return nil
}

// Factory builds a fake connector on ControllerFor(cfg.URL). It contacts
// nothing, so it only fails on invalid settings (Permanent).
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	latency, err := cfg.IntSetting("latency_ms", 0)
	if err != nil {
		return nil, err
	}
	buildPolls, err := cfg.IntSetting("build_polls", 0)
	if err != nil {
		return nil, err
	}
	if latency < 0 || buildPolls < 0 {
		return nil, connectors.Errorf(connectors.KindPermanent, "fake: latency_ms and build_polls must not be negative")
	}
	stateFile, err := cfg.StringSetting("state_file", "")
	if err != nil {
		return nil, err
	}
	ctrl := ControllerFor(cfg.URL)
	if stateFile != "" {
		if err := ctrl.useStateFile(stateFile); err != nil {
			return nil, connectors.Errorf(connectors.KindPermanent, "fake: state_file: %w", err)
		}
	}
	edit, err := cfg.BoolSetting("edit", true)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"make_before_break", "multipoint"} {
		if _, err := cfg.BoolSetting(name, true); err != nil {
			return nil, err
		}
	}
	var endpoints map[string]bool
	if len(cfg.PortMappings) > 0 {
		endpoints = make(map[string]bool, len(cfg.PortMappings))
		for _, m := range cfg.PortMappings {
			endpoints[m.WANServiceEndpointID] = true
		}
	}
	return &connector{
		ctrl:       ctrl,
		latency:    time.Duration(latency) * time.Millisecond,
		buildPolls: buildPolls,
		endpoints:  endpoints,
		noEdit:     !edit,
		user:       cfg.User,
		password:   cfg.Password,
		log:        cfg.Log(),
	}, nil
}

var (
	controllersMu sync.Mutex
	controllers   = make(map[string]*Controller)
)

// ControllerFor returns the controller of the WIM at url, creating it on
// first use. A trailing slash does not make a different controller.
func ControllerFor(url string) *Controller {
	url = strings.TrimRight(url, "/")
	controllersMu.Lock()
	defer controllersMu.Unlock()
	c := controllers[url]
	if c == nil {
		c = newController()
		controllers[url] = c
	}
	return c
}

// Call is one call that reached a Controller.
type Call struct {
	Method string
	// Key is the service key of a CreateService.
	Key string
	// ID is the service id the call named or, for CreateService, returned.
	ID string
	// Err is what the caller got (nil on success).
	Err error
}

// Controller is the in-memory SDN controller behind fake connectors. It is
// safe for concurrent use; its methods other than the connector's are for
// tests.
type Controller struct {
	mu       sync.Mutex
	services map[string]*service // by id
	byKey    map[string]string   // service key → id: what makes create idempotent
	calls    []Call

	failures    []connectors.Kind // injected failures, consumed one per call
	lostReplies int               // calls that act but whose reply is lost
	down        bool
	hang        bool   // calls wait for their context to end
	user        string // required credentials when user != ""
	password    string
	stateFile   string // "" keeps the state in memory only
}

type service struct {
	id, key   string
	typ       connectors.ServiceType
	points    []connectors.ConnectionPoint
	qos       connectors.QoS
	buildLeft int // status calls still answered BUILD
	// status and message, when status is set, are what the status calls
	// answer once buildLeft is spent (SetStatus); "" answers ACTIVE.
	status  connectors.Status
	message string
}

func newController() *Controller {
	return &Controller{services: make(map[string]*service), byKey: make(map[string]string)}
}

// Count returns the number of services on the controller.
func (c *Controller) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.services)
}

// Services returns the services on the controller, sorted by id.
func (c *Controller) Services() []connectors.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listLocked()
}

// Points returns the connection points of service id.
func (c *Controller) Points(id string) ([]connectors.ConnectionPoint, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.services[id]
	if s == nil {
		return nil, false
	}
	return clonePoints(s.points), true
}

// QoS returns the QoS service id was created with.
func (c *Controller) QoS(id string) (connectors.QoS, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.services[id]
	if s == nil {
		return connectors.QoS{}, false
	}
	return s.qos, true
}

// Calls returns the calls that reached the controller, oldest first. Calls
// refused on the connector's side (invalid input, context already done)
// never reach it.
func (c *Controller) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// CallCount returns how many calls of method reached the controller.
func (c *Controller) CallCount(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, call := range c.calls {
		if call.Method == method {
			n++
		}
	}
	return n
}

// FailNext makes the next n calls fail with an error of the given kind,
// without taking effect. Successive FailNext calls queue up in order.
func (c *Controller) FailNext(n int, kind connectors.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range n {
		c.failures = append(c.failures, kind)
	}
}

// LoseNextReplies makes the next n calls take effect but return a Retryable
// error, as when the connection drops after the controller acted. This is
// the crash window that idempotent create exists for.
func (c *Controller) LoseNextReplies(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lostReplies += n
}

// SetDown makes the controller unreachable (every call fails Retryable)
// or reachable again.
func (c *Controller) SetDown(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
}

// SetHang makes every call wait, taking no effect, until its context ends
// (a controller that accepts connections and never answers), or stops
// doing so. Such calls are in Calls, with the error their caller got.
func (c *Controller) SetHang(hang bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hang = hang
}

// Remove deletes service id on the controller side, behind its clients'
// back (an operator, another tool, a controller that lost its state). It
// reports whether the service existed.
func (c *Controller) Remove(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.services[id]
	if s == nil {
		return false
	}
	delete(c.byKey, s.key)
	delete(c.services, id)
	if c.stateFile != "" {
		_ = c.saveLocked() // a test's state file; the next change saves again
	}
	return true
}

// SetStatus makes the status calls of service id answer status with
// message (the controller found a fault, or cleared one: ACTIVE answers
// without a message). It reports whether the service exists.
func (c *Controller) SetStatus(id string, status connectors.Status, message string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.services[id]
	if s == nil {
		return false
	}
	s.status, s.message = status, message
	if status == connectors.StatusActive {
		s.status, s.message = "", ""
	}
	return true
}

// SetCredentials makes the controller accept only this user and password
// (Unauthorized otherwise); an empty user accepts anyone, the default.
func (c *Controller) SetCredentials(user, password string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.user, c.password = user, password
}

// Reset forgets services, calls, injected faults and credentials.
func (c *Controller) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.services)
	clear(c.byKey)
	c.calls, c.failures, c.lostReplies = nil, nil, 0
	c.down, c.hang, c.user, c.password = false, false, "", ""
}

func (c *Controller) listLocked() []connectors.Service {
	out := make([]connectors.Service, 0, len(c.services))
	for _, id := range slices.Sorted(maps.Keys(c.services)) {
		s := c.services[id]
		out = append(out, connectors.Service{ID: s.id, Key: s.key, Info: s.info(), Endpoints: connectors.EndpointsOf(s.points), L3: connectors.L3FormsOf(s.points)})
	}
	return out
}

// info is the JSON-shaped description stored as wim_info and listed.
func (s *service) info() map[string]any {
	points := make([]any, len(s.points))
	for i, p := range s.points {
		m := map[string]any{
			"service_endpoint_id":                 p.ServiceEndpointID,
			"service_endpoint_encapsulation_type": string(p.Encapsulation),
		}
		if p.Encapsulation == connectors.EncapDot1Q {
			m["service_endpoint_encapsulation_info"] = map[string]any{"vlan": p.VLAN}
		}
		if p.L3 != nil {
			m["l3"] = l3Info(p.L3)
		}
		points[i] = m
	}
	m := map[string]any{"service_key": s.key, "service_type": string(s.typ), "connection_points": points}
	if s.qos.BandwidthMbps != 0 {
		m["bandwidth"] = s.qos.BandwidthMbps
	}
	if s.qos.LatencyMs != 0 {
		m["latency"] = s.qos.LatencyMs
	}
	return m
}

// l3Info is an L3 site as decoded JSON, so that the info stays
// JSON-shaped (it is stored as wim_info).
func l3Info(site *connectors.L3Site) map[string]any {
	var m map[string]any
	if b, err := json.Marshal(site); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// connector is one account's view of a Controller.
type connector struct {
	ctrl       *Controller
	latency    time.Duration
	buildPolls int
	endpoints  map[string]bool // known endpoint ids; nil accepts any
	noEdit     bool            // setting edit false: EditService is Permanent
	user       string
	password   string
	log        *slog.Logger
}

// do runs op on the controller the way a remote call would go: refused at
// once if ctx is done, delayed by the latency, then subject to the
// controller's reachability, credentials and injected faults. id and key
// are recorded in the call log; op may return the id it made.
func (c *connector) do(ctx context.Context, method, key, id string, op func() (string, error)) error {
	if err := ctx.Err(); err != nil {
		return connectors.Errorf(connectors.KindRetryable, "fake %s: %w", method, err)
	}
	if c.latency > 0 {
		t := time.NewTimer(c.latency)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return connectors.Errorf(connectors.KindRetryable, "fake %s: %w", method, ctx.Err())
		case <-t.C:
		}
	}
	ctrl := c.ctrl
	ctrl.mu.Lock()
	if ctrl.hang {
		ctrl.mu.Unlock()
		<-ctx.Done()
		ctrl.mu.Lock()
		err := connectors.Errorf(connectors.KindRetryable, "fake %s: no answer: %w", method, ctx.Err())
		ctrl.calls = append(ctrl.calls, Call{Method: method, Key: key, ID: id, Err: err})
		ctrl.mu.Unlock()
		return err
	}
	defer ctrl.mu.Unlock()
	var err error
	switch {
	case ctrl.down:
		err = connectors.Errorf(connectors.KindRetryable, "fake %s: controller unreachable", method)
	case ctrl.user != "" && (c.user != ctrl.user || c.password != ctrl.password):
		err = connectors.HTTPError(401, "fake %s: credentials refused for user %q", method, c.user)
	case len(ctrl.failures) > 0:
		kind := ctrl.failures[0]
		ctrl.failures = ctrl.failures[1:]
		err = connectors.Errorf(kind, "fake %s: injected %s failure", method, kind)
	default:
		var made string
		made, err = op()
		if made != "" {
			id = made
		}
		if err == nil && ctrl.stateFile != "" && method != MethodGetServiceStatus && method != MethodListServices && method != MethodCheckCredentials {
			err = ctrl.saveLocked()
		}
		if err == nil && ctrl.lostReplies > 0 {
			ctrl.lostReplies--
			err = connectors.Errorf(connectors.KindRetryable, "fake %s: reply lost after the controller acted", method)
		}
	}
	ctrl.calls = append(ctrl.calls, Call{Method: method, Key: key, ID: id, Err: err})
	if err != nil {
		c.log.Debug("fake call failed", "method", method, "service_id", id, "error", err)
	}
	return err
}

// checkPoints applies the shared rules and, when the WIM has port mappings,
// refuses endpoints it does not know, before anything reaches the
// controller.
func (c *connector) checkPoints(t connectors.ServiceType, points []connectors.ConnectionPoint) error {
	// A type fake does not declare is refused by name, as by any
	// connector: ValidatePoints accepts every type wimro knows.
	if err := Capabilities.Check(Type, connectors.Request{Type: t}); err != nil {
		return err
	}
	if err := connectors.ValidatePoints(t, points); err != nil {
		return err
	}
	if c.endpoints == nil {
		return nil
	}
	for _, p := range points {
		if !c.endpoints[p.ServiceEndpointID] {
			return connectors.Errorf(connectors.KindPermanent, "fake: service endpoint %q is not in the WIM's port mappings", p.ServiceEndpointID)
		}
	}
	return nil
}

func (c *connector) CheckCredentials(ctx context.Context) error {
	return c.do(ctx, MethodCheckCredentials, "", "", func() (string, error) { return "", nil })
}

// CreateService implements connectors.Connector: the controller keeps
// q with the service (Controller.QoS, and the status info).
func (c *connector) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	key, t, points, q := req.Key, req.Type, req.Points, req.QoS
	if key == "" {
		return "", nil, connectors.Errorf(connectors.KindPermanent, "fake: a service key is required")
	}
	if err := c.checkPoints(t, points); err != nil {
		return "", nil, err
	}
	var id string
	adopted := false
	err := c.do(ctx, MethodCreateService, key, "", func() (string, error) {
		ctrl := c.ctrl
		if existing, ok := ctrl.byKey[key]; ok {
			// Create-or-replace: the same key is the same service; bring it
			// in line with the request.
			s := ctrl.services[existing]
			s.typ, s.points, s.qos = t, clonePoints(points), q
			id, adopted = existing, true
			return id, nil
		}
		id = uuid.NewString()
		ctrl.services[id] = &service{id: id, key: key, typ: t, points: clonePoints(points), qos: q, buildLeft: c.buildPolls}
		ctrl.byKey[key] = id
		return id, nil
	})
	if err != nil {
		return "", nil, err
	}
	c.log.Debug("fake service created", "service_id", id, "service_key", key, "adopted", adopted)
	return id, map[string]any{"service_key": key}, nil
}

func (c *connector) GetServiceStatus(ctx context.Context, id string, _ map[string]any) (connectors.ServiceStatus, error) {
	var st connectors.ServiceStatus
	err := c.do(ctx, MethodGetServiceStatus, "", id, func() (string, error) {
		s := c.ctrl.services[id]
		if s == nil {
			return "", connectors.HTTPError(404, "fake: service %s not found", id)
		}
		st = connectors.ServiceStatus{Status: connectors.StatusActive, Info: s.info()}
		switch {
		case s.buildLeft > 0:
			s.buildLeft--
			st.Status, st.Message = connectors.StatusBuild, "service is being built"
		case s.status != "":
			st.Status, st.Message = s.status, s.message
		}
		return "", nil
	})
	if err != nil {
		return connectors.ServiceStatus{}, err
	}
	return st, nil
}

func (c *connector) EditService(ctx context.Context, id string, _ map[string]any, req connectors.Request) (map[string]any, error) {
	points := req.Points
	if err := ctx.Err(); err != nil {
		return nil, connectors.Errorf(connectors.KindRetryable, "fake edit: %w", err)
	}
	if c.noEdit {
		return nil, connectors.Errorf(connectors.KindPermanent, "fake edit of %s: not supported (setting edit is false)", id)
	}
	// The points are validated against the service's stored type, so the
	// controller does it (a real connector would keep the type in connInfo).
	err := c.do(ctx, MethodEditService, "", id, func() (string, error) {
		s := c.ctrl.services[id]
		if s == nil {
			return "", connectors.HTTPError(404, "fake: service %s not found", id)
		}
		t := s.typ
		if req.Type != "" {
			t = req.Type
		}
		if err := c.checkPoints(t, points); err != nil {
			return "", err
		}
		s.typ, s.points, s.qos = t, clonePoints(points), req.QoS
		return "", nil
	})
	if err != nil {
		return nil, err
	}
	return nil, nil // connInfo does not change
}

func (c *connector) DeleteService(ctx context.Context, id string, _ map[string]any) error {
	return c.do(ctx, MethodDeleteService, "", id, func() (string, error) {
		if s := c.ctrl.services[id]; s != nil {
			delete(c.ctrl.byKey, s.key)
			delete(c.ctrl.services, id)
			c.log.Debug("fake service deleted", "service_id", id)
		}
		return "", nil // already gone is success
	})
}

func (c *connector) ListServices(ctx context.Context) ([]connectors.Service, error) {
	var out []connectors.Service
	err := c.do(ctx, MethodListServices, "", "", func() (string, error) {
		out = c.ctrl.listLocked()
		return "", nil
	})
	return out, err
}

func (c *connector) ClearAll(ctx context.Context) error {
	return c.do(ctx, MethodClearAll, "", "", func() (string, error) {
		clear(c.ctrl.services)
		clear(c.ctrl.byKey)
		return "", nil
	})
}

// clonePoints copies points deeply enough that neither the caller nor a
// reader of the controller can change the stored ones.
func clonePoints(points []connectors.ConnectionPoint) []connectors.ConnectionPoint {
	out := slices.Clone(points)
	for i := range out {
		if out[i].MappingInfo != nil {
			out[i].MappingInfo = cloneValue(out[i].MappingInfo).(map[string]any)
		}
		if l3 := out[i].L3; l3 != nil {
			c := *l3
			c.StaticRoutes = slices.Clone(l3.StaticRoutes)
			if l3.BGP != nil {
				b := *l3.BGP
				c.BGP = &b
			}
			out[i].L3 = &c
		}
	}
	return out
}

// cloneValue deep-copies the maps and slices of decoded JSON.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = cloneValue(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = cloneValue(e)
		}
		return s
	default:
		return v
	}
}

var (
	_ connectors.Connector = (*connector)(nil)
)

func (c Call) String() string {
	if c.Err != nil {
		return fmt.Sprintf("%s(key=%q id=%q) error: %v", c.Method, c.Key, c.ID, c.Err)
	}
	return fmt.Sprintf("%s(key=%q id=%q)", c.Method, c.Key, c.ID)
}

// savedService is a service as the state file keeps it.
type savedService struct {
	ID        string                       `json:"id"`
	Key       string                       `json:"key"`
	Type      connectors.ServiceType       `json:"type"`
	Points    []connectors.ConnectionPoint `json:"points"`
	QoS       connectors.QoS               `json:"qos"`
	BuildLeft int                          `json:"build_left"`
}

// useStateFile makes the controller load its services from path (once)
// and save them there after every change.
func (c *Controller) useStateFile(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stateFile == path {
		return nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		var saved []savedService
		if err := json.Unmarshal(b, &saved); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, s := range saved {
			c.services[s.ID] = &service{id: s.ID, key: s.Key, typ: s.Type, points: s.Points, qos: s.QoS, buildLeft: s.BuildLeft}
			c.byKey[s.Key] = s.ID
		}
	}
	c.stateFile = path
	return nil
}

func (c *Controller) saveLocked() error {
	saved := make([]savedService, 0, len(c.services))
	for _, id := range slices.Sorted(maps.Keys(c.services)) {
		s := c.services[id]
		saved = append(saved, savedService{ID: s.id, Key: s.key, Type: s.typ, Points: s.points, QoS: s.qos, BuildLeft: s.buildLeft})
	}
	b, err := json.Marshal(saved)
	if err != nil {
		return connectors.Errorf(connectors.KindPermanent, "fake: save state: %w", err)
	}
	tmp := c.stateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return connectors.Errorf(connectors.KindRetryable, "fake: save state: %w", err)
	}
	if err := os.Rename(tmp, c.stateFile); err != nil {
		return connectors.Errorf(connectors.KindRetryable, "fake: save state: %w", err)
	}
	return nil
}

// ReadStateFile returns the services saved in a state file (for tests that
// look at the controller from another process), as ListServices lists
// them: their type, points (L3 sites included) and QoS in Info.
func ReadStateFile(path string) ([]connectors.Service, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var saved []savedService
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, err
	}
	out := make([]connectors.Service, len(saved))
	for i, s := range saved {
		sv := service{id: s.ID, key: s.Key, typ: s.Type, points: s.Points, qos: s.QoS}
		out[i] = connectors.Service{ID: s.ID, Key: s.Key, Info: sv.info(), Endpoints: connectors.EndpointsOf(s.Points), L3: connectors.L3FormsOf(s.Points)}
	}
	return out, nil
}
