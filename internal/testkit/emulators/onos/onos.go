// Package onos is an in-process emulator of the parts of the ONOS REST API
// that wimro's onos connector drives: the network
// configuration store with its real merge semantics, the VPLS application
// that acts on it, and the applications resource. It is an http.Handler:
// mount it on an httptest.Server and point a WIM at the server's URL.
//
// Routes (relative to the server root, as on a real controller on :8181):
//
//	GET    /onos/v1/network/configuration[/{class}[/{subject}[/{configKey}]]]
//	POST   /onos/v1/network/configuration[/{class}[/{subject}[/{configKey}]]]
//	DELETE /onos/v1/network/configuration[/{class}[/{subject}[/{configKey}]]]
//	GET    /onos/v1/applications/{name}
//	POST   /onos/v1/applications/{name}/active     activate
//	DELETE /onos/v1/applications/{name}/active     deactivate
//	POST   /onos/v1/applications/{name}/register   register an application id
//
// Every route needs HTTP basic auth when Options.User is set. Errors are
// ONOS's JSON {"code": <status>, "message": "<text>"}.
//
// # Network configuration
//
// The store is {class: {subject: {configKey: json}}}. A POST at any scope
// replaces, for every (class, subject, configKey) in its body, that config
// key's JSON and leaves every other key alone; a DELETE removes its scope
// (204). GET of a known, empty subject class answers {} like ONOS; GET of an
// unknown class, or of a subject or config key with nothing stored, answers
// 404 "Config for '<path>' not found". A subject holding a "/" (port
// subjects) must be percent-encoded in a path, as JAX-RS requires.
//
// POST bodies are validated as ONOS's config classes do: port subjects are
// of:<16 lower-case hex digits>/<port number>; the "interfaces" config of a
// port follows InterfaceConfig (fields name, ips, mac, vlan, vlan-untagged,
// vlan-tagged (an array of at least one), vlan-native (only with
// vlan-tagged); a VLAN given as a JSON number must be in 0..4095, while a
// VLAN string is accepted and the interface is then ignored by the VPLS
// application if it does not parse, as on a real controller); the "vpls"
// config of org.onosproject.vpls holds vplsList entries {name, interfaces,
// encapsulation ∈ NONE|VLAN|MPLS} and lastUpdateTime. An invalid config key
// fails the request with 400 and nothing applied, or, with
// Options.MultiStatus (newer ONOS releases), with 207 {"code": 207,
// "message": [...]} while the valid keys are applied.
//
// # VPLS application
//
// While org.onosproject.vpls is ACTIVE the emulator runs its engine
// (VplsConfigManager's behaviour): it acts on a posted
// vpls config only when the config has no lastUpdateTime; it resolves the
// interface names against the interfaces configured under ports and drops
// unknown ones silently; it removes the VPLSs missing from the list (all of
// them when the vpls config key is deleted); and it writes the config back
// with its own view and a lastUpdateTime. When a port's interfaces change,
// the VPLSs lose the interfaces that no longer resolve and the config is
// written back. The engine runs inside the request that changed the
// config, so a client sees its effect on its next read; within one POST the
// ports are applied before the vpls config. The engine binds each
// interface to its port and VLAN when it loads the vpls config and keeps
// that binding when only the ports config changes (a VLAN or port edited
// under ports alone is not seen until the vpls config changes), as
// VplsConfigManager, which listens to its own config class only, does.
// While the application is not active its config class is not registered:
// a posted vpls config is kept pending and GET of the vpls key answers 404.
// AppVPLSs returns the engine's operational set, with the attachments it
// bound, which is what a test should assert on.
package onos

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// VPLSApp is the name of ONOS's VPLS application.
const VPLSApp = "org.onosproject.vpls"

// Application states.
const (
	StateActive    = "ACTIVE"
	StateInstalled = "INSTALLED"
)

// Options configure an Emulator.
type Options struct {
	// User and Password are the basic-auth credentials every request must
	// carry. An empty User accepts any (or no) credentials.
	User, Password string
	// MultiStatus answers an invalid network configuration with 207 and
	// applies the valid config keys (newer ONOS), instead of 400 with
	// nothing applied.
	MultiStatus bool
	// VPLSInactive starts org.onosproject.vpls INSTALLED instead of ACTIVE.
	VPLSInactive bool
	// BeforeWrite, when set, is called for every POST and DELETE on the
	// network configuration that passed authentication, before the change
	// is applied and without any emulator lock held. A test can block in
	// it to pause one writer between its read and its write.
	BeforeWrite func(Write)
}

// Write describes a network-configuration change about to be applied (see
// Options.BeforeWrite).
type Write struct {
	Method string
	// Path is the URL path, e.g. /onos/v1/network/configuration/ports.
	Path string
	// Host is the Host header, which tells apart clients that reach the
	// emulator through different servers.
	Host string
	Body []byte
}

// Request is one request the emulator received, as recorded in the log.
// Its Path is the URL path as sent (escaped), e.g.
// /onos/v1/network/configuration/apps/org.onosproject.vpls/vpls.
type Request = emulator.Request

// Emulator is the in-memory ONOS controller. It is safe for concurrent use.
// Its FailNext answers the failed requests with an ONOS error body.
type Emulator struct {
	emulator.Recorder
	opts Options

	mu    sync.Mutex
	store netcfg
	apps  map[string]*application
	vpls  map[string]VPLS // the VPLS application's operational set
	clock int64           // last lastUpdateTime written
}

type application struct {
	id    int
	state string
}

// New returns an emulator with an empty network configuration and the
// applications org.onosproject.vpls, org.onosproject.openflow and
// org.onosproject.drivers.
func New(opts Options) *Emulator {
	vplsState := StateActive
	if opts.VPLSInactive {
		vplsState = StateInstalled
	}
	return &Emulator{
		opts:  opts,
		store: make(netcfg),
		apps: map[string]*application{
			"org.onosproject.drivers":  {id: 1, state: StateActive},
			"org.onosproject.openflow": {id: 2, state: StateActive},
			VPLSApp:                    {id: 3, state: vplsState},
		},
		vpls:  make(map[string]VPLS),
		clock: time.Now().UnixMilli(),
	}
}

const maxBody = 4 << 20

// ServeHTTP implements the ONOS REST API.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	e.Serve(w, r, emulator.NewRequest(r, body), func(w http.ResponseWriter, injected int) {
		switch {
		case injected != 0:
			writeError(w, injected, "injected failure")
		case emulator.CheckBasicAuth(r, e.opts.User, e.opts.Password) != nil:
			emulator.Challenge(w, "karaf")
			writeError(w, http.StatusUnauthorized, "Unauthorized")
		default:
			e.route(w, r, body)
		}
	})
}

const (
	apiPrefix    = "/onos/v1"
	netcfgPrefix = apiPrefix + "/network/configuration"
	appsPrefix   = apiPrefix + "/applications/"
)

func (e *Emulator) route(w http.ResponseWriter, r *http.Request, body []byte) {
	path := r.URL.EscapedPath()
	switch {
	case path == netcfgPrefix || strings.HasPrefix(path, netcfgPrefix+"/"):
		scope, ok := splitScope(strings.TrimPrefix(path, netcfgPrefix))
		if !ok {
			writeError(w, http.StatusNotFound, "HTTP 404 Not Found")
			return
		}
		e.netcfgRoute(w, r, scope, body)
	case strings.HasPrefix(path, appsPrefix):
		e.appsRoute(w, r, strings.TrimPrefix(path, appsPrefix))
	default:
		writeError(w, http.StatusNotFound, "HTTP 404 Not Found")
	}
}

func (e *Emulator) netcfgRoute(w http.ResponseWriter, r *http.Request, scope []string, body []byte) {
	switch r.Method {
	case http.MethodGet:
		status, reply := e.get(scope)
		writeJSON(w, status, reply)
	case http.MethodPost:
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			writeError(w, http.StatusUnsupportedMediaType, "HTTP 415 Unsupported Media Type")
			return
		}
		e.beforeWrite(r, body)
		status, reply := e.post(scope, body)
		writeJSON(w, status, reply)
	case http.MethodDelete:
		e.beforeWrite(r, body)
		e.mu.Lock()
		e.remove(scope)
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w, "GET, POST, DELETE")
	}
}

func (e *Emulator) beforeWrite(r *http.Request, body []byte) {
	if e.opts.BeforeWrite != nil {
		e.opts.BeforeWrite(Write{Method: r.Method, Path: r.URL.EscapedPath(), Host: r.Host, Body: slices.Clone(body)})
	}
}

func (e *Emulator) appsRoute(w http.ResponseWriter, r *http.Request, rest string) {
	name, action, _ := strings.Cut(rest, "/")
	e.mu.Lock()
	defer e.mu.Unlock()
	app := e.apps[name]
	if app == nil || name == "" {
		writeError(w, http.StatusNotFound, "App not found")
		return
	}
	switch {
	case action == "" && r.Method == http.MethodGet:
	case action == "active" && r.Method == http.MethodPost:
		e.setAppState(name, StateActive)
	case action == "active" && r.Method == http.MethodDelete:
		e.setAppState(name, StateInstalled)
	case action == "register" && r.Method == http.MethodPost:
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "id": app.id})
		return
	case action == "" || action == "active" || action == "register":
		methodNotAllowed(w, "GET, POST, DELETE")
		return
	default:
		writeError(w, http.StatusNotFound, "HTTP 404 Not Found")
		return
	}
	writeJSON(w, http.StatusOK, appJSON(name, app))
}

func appJSON(name string, app *application) map[string]any {
	return map[string]any{
		"name":         name,
		"id":           app.id,
		"version":      "2.7.0",
		"category":     "Traffic Engineering",
		"description":  "emulated " + name,
		"origin":       "ONOS Community",
		"state":        app.state,
		"permissions":  []any{},
		"features":     []any{strings.TrimPrefix(name, "org.onosproject.")},
		"requiredApps": []any{},
	}
}

// SetAppState sets an application's state (StateActive or
// StateInstalled), as POST or DELETE …/active would. Activating the VPLS
// application makes it load the current vpls config; deactivating it
// withdraws every VPLS. It reports whether the application exists.
func (e *Emulator) SetAppState(name, state string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.apps[name] == nil {
		return false
	}
	e.setAppState(name, state)
	return true
}

// AppState returns an application's state, "" when it does not exist.
func (e *Emulator) AppState(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if app := e.apps[name]; app != nil {
		return app.state
	}
	return ""
}

func (e *Emulator) setAppState(name, state string) {
	app := e.apps[name]
	was := app.state
	app.state = state
	if name != VPLSApp || was == state {
		return
	}
	if state == StateActive {
		e.reloadVPLS()
		return
	}
	clear(e.vpls)
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":500,"message":"encoding the reply"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes ONOS's error body {code, message}.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{"code": status, "message": message})
}
