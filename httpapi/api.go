package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/wimro/wimro/engine"
)

// api holds the openmano-compatible routes over an engine.
type api struct {
	eng *engine.Engine
	srv *Server
}

// New returns the wimd HTTP server: the openmano routes under /openmano
// plus the built-in /healthz and /openapi.json.
func New(eng *engine.Engine, opts Options) *Server {
	a := &api{eng: eng}
	if opts.Health == nil {
		opts.Health = eng.Ping
	}
	if opts.Audit == nil {
		opts.Audit = eng.RecordAudit
	}
	var routes []Route
	routes = append(routes, a.tenantRoutes()...)
	routes = append(routes, a.datacenterRoutes()...)
	routes = append(routes, a.wimRoutes()...)
	routes = append(routes, a.scenarioRoutes()...)
	routes = append(routes, a.vnfRoutes()...)
	routes = append(routes, a.sdnRoutes()...)
	routes = append(routes, a.vimRoutes()...)
	routes = append(routes, a.instanceRoutes()...)
	routes = append(routes, a.overrideRoutes()...)
	routes = append(routes, a.reconcileRoutes()...)
	routes = append(routes, a.eventRoutes()...)
	routes = append(routes, a.auditRoutes()...)
	routes = append(routes, a.l2smRoutes()...)
	for i := range routes {
		// Every route reads the database, which may be away.
		routes[i].Errors = append(routes[i].Errors, http.StatusServiceUnavailable)
		if routes[i].Method == http.MethodPost {
			routes[i].Handler = a.idempotent(routes[i].Handler)
		}
	}
	a.srv = NewServer(opts, routes...)
	return a.srv
}

func param(r *http.Request, name string) string { return chi.URLParam(r, name) }

// result is openmano's answer to deletes and detaches.
type result struct {
	Result string `json:"result"`
}
