// Package httpapi is wimro's HTTP transport: the openmano-compatible REST
// API on chi, request decoding (JSON or YAML) and validation errors that
// name the field, the one error body format, optional bearer-token auth
// with scoped tokens (read, write, admin: each route's scope in one table,
// scope.go), the audit trail of every request that changes something
// (audit.go), and an OpenAPI document generated from the same route table
// as the router, so the two cannot drift. Answers keep the shapes OSM's
// own clients read (openmano v6's flat instance, the version text),
// warnings travel in Warning headers, and every POST takes an
// Idempotency-Key (a key is its client's: keys are held per API token).
// Besides openmano's API it serves the IETF L2VPN (RFC 8466) RESTCONF
// northbound OSM NG-RO's ietfl2vpn plugin drives (l2sm.go): Basic auth
// naming the tenant, RFC 8040 bodies and errors, on the same router.
package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/wimro/wimro"
)

// Options configure a Server.
type Options struct {
	Logger       *slog.Logger                    // nil discards
	Token        string                          // WIMRO_API_TOKEN; "" and no TokenFile means no auth
	TokenFile    *TokenFile                      // WIMRO_API_TOKEN_FILE; accepted besides Token
	MaxBodyBytes int64                           // 0 means 1 MiB
	Health       func(ctx context.Context) error // database ping for /healthz; nil is always healthy
	// Ready says whether the process does its work (account leases kept,
	// database, schema, listener, workers, an assignment applied since the
	// coordinator joined) for /readyz: an error names the failing check;
	// nil is always ready.
	Ready func(ctx context.Context) error
	// Cluster answers GET /cluster; nil answers 404.
	Cluster func(ctx context.Context) (wimro.ClusterStatus, error)
	Version string
	// Metrics, when set, is served at GET /metrics (Prometheus text
	// format), behind the API token like every route but /healthz and
	// /readyz.
	Metrics http.Handler
	// RequestMetrics, when set, times every request (NewRequestMetrics).
	RequestMetrics *RequestMetrics
	// EventPoll is how often an event stream reads again when nothing
	// woke it (0: 5 s; the engine's EventHub wakes it when its events
	// commit); EventKeepAlive how long it stays silent before a
	// keep-alive comment (0: 15 s).
	EventPoll, EventKeepAlive time.Duration
	// MaxEventStreams caps the event streams open at once in the process
	// (0: DefaultMaxEventStreams), MaxEventStreamsPerToken those opened
	// with one API token (0: DefaultMaxEventStreamsPerToken; without a
	// token configured only the process cap applies). A stream over a cap
	// is answered 429 with Retry-After.
	MaxEventStreams, MaxEventStreamsPerToken int
	// L2SMWait bounds how long the site-network-access that completes a
	// point-to-point vpn-service waits for its WAN link (0:
	// DefaultL2SMWait).
	L2SMWait time.Duration
	// Audit, when set, records the audit entry of every request that may
	// change something and of every one refused for its credentials
	// (New sets it to the engine's RecordAudit).
	Audit func(ctx context.Context, e wimro.AuditEntry) error
}

// Route describes one endpoint. The router and the OpenAPI document are
// both built from the list.
type Route struct {
	Method, Pattern string // Pattern in chi syntax: /openmano/{tenant_id}/wims
	Summary         string
	Tags            []string
	Request         any // zero value of the body type; nil: no body
	Response        any // zero value of the 200 body type
	// AlsoResponse, when set, is the other form of the 200 body, which
	// the request chooses (dry_run=true answers a plan).
	AlsoResponse any
	// Text, when set, describes a text/plain form of the 200 answer,
	// which the Accept header chooses.
	Text  string
	Query []string // documented query-string keys
	// Errors are the error statuses the route answers besides those the
	// OpenAPI document infers from its shape (400 and 500 always, 401
	// unless Public, 404 and 409 with path parameters, 409, 413 and 415
	// for writes with a body).
	Errors []int
	Public bool // no auth even with a token (/livez, /healthz, /readyz)
	// Scope is what the request's token must hold (read, write, admin);
	// every route but a Public one declares it, here in the route table.
	Scope Scope
	// Stream, when set, makes the 200 answer a text/event-stream: each
	// key names an event, its value is the zero value of the event's data.
	Stream map[string]any
	// RESTCONF marks a route of the RFC 8466 northbound (l2sm.go): HTTP
	// Basic (the user names the tenant, the password is an API token),
	// application/yang-data+json bodies, RFC 8040 error bodies, and
	// Status as its success status (0: 200).
	RESTCONF bool
	Status   int
	// CreatedToo: a RESTCONF PUT answers 201 with Location when it
	// created the resource, Status (204) when it replaced it.
	CreatedToo bool
	Handler    http.HandlerFunc
}

// Server is the HTTP API.
type Server struct {
	logger *slog.Logger
	opts   Options
	routes []Route
	// extra are routes served outside the OpenAPI document (/metrics).
	extra   []Route
	handler http.Handler
	// streamsDone is closed by CloseStreams: every event stream ends.
	streamsDone  chan struct{}
	closeStreams sync.Once
	streams      *streamSlots
	// health and ready remember the probes' last answers, for their log.
	health, ready *probe
	signals       testSignals
}

// NewServer builds the router from the built-in routes plus routes.
func NewServer(opts Options, routes ...Route) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.EventPoll <= 0 {
		opts.EventPoll = defaultEventPoll
	}
	if opts.EventKeepAlive <= 0 {
		opts.EventKeepAlive = defaultKeepAlive
	}
	if opts.MaxEventStreams <= 0 {
		opts.MaxEventStreams = DefaultMaxEventStreams
	}
	if opts.MaxEventStreamsPerToken <= 0 {
		opts.MaxEventStreamsPerToken = DefaultMaxEventStreamsPerToken
	}
	s := &Server{logger: opts.Logger, opts: opts, streamsDone: make(chan struct{}),
		health: &probe{failed: "unhealthy", passed: "healthy", quietPass: true}, ready: &probe{failed: "not ready", passed: "ready"},
		streams: &streamSlots{max: opts.MaxEventStreams, perToken: opts.MaxEventStreamsPerToken, byToken: map[[sha256.Size]byte]int{}}}
	s.routes = append([]Route{
		{Method: "GET", Pattern: "/livez", Summary: "Liveness: the process answers (nothing else is checked)", Tags: []string{"meta"}, Public: true, Response: health{}, Handler: s.livez},
		{Method: "GET", Pattern: "/healthz", Summary: "Liveness and database health", Tags: []string{"meta"}, Public: true, Response: health{}, Errors: []int{http.StatusServiceUnavailable}, Handler: s.healthz},
		{Method: "GET", Pattern: "/openmano/version", Summary: "The version of this server: openmano's text unless the request accepts only JSON or YAML", Tags: []string{"meta"},
			Response: versionBody{}, Text: "openmanod version " + OpenmanoVersion + " (wimro VERSION): the version word, then openmano's dotted version, which OSM's LCM checks at start.", Handler: s.version},
		{Method: "GET", Pattern: "/readyz", Summary: "Readiness: account leases kept, database, schema, notifications, workers and an account assignment applied", Tags: []string{"meta"}, Public: true, Response: health{}, Errors: []int{http.StatusServiceUnavailable}, Handler: s.readyz},
		{Method: "GET", Pattern: "/cluster", Summary: "The cluster as this process sees it: coordinator, leader, members, assignments and the accounts it owns", Tags: []string{"meta"}, Response: wimro.ClusterStatus{},
			Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable}, Handler: s.cluster},
		{Method: "GET", Pattern: "/openapi.json", Summary: "This API's OpenAPI 3 document", Tags: []string{"meta"}, Response: map[string]any{}, Handler: s.openapi},
	}, routes...)

	checkScopes(s.routes)
	r := chi.NewRouter()
	// RequestID first, so that the access line and any error logged while
	// answering carry it; the recoverer inside the access log, so that a
	// panic is logged with its 500; observe times every request for the
	// metrics.
	r.Use(s.observe)
	r.Use(middleware.RequestID, s.accessLog, s.recoverer, s.limitBody, s.checkContentType, restconfSlash)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.Error(w, r, &statusError{status: http.StatusNotFound, msg: fmt.Sprintf("No route for %s %s", r.Method, r.URL.Path)})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		s.Error(w, r, &statusError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("Method %s not allowed on %s", r.Method, r.URL.Path)})
	})
	for _, rt := range s.routes {
		h := s.checkParams(rt.Handler)
		if rt.RESTCONF {
			h = s.basicAuth(routeScope(rt), h)
		} else if !rt.Public {
			h = s.auth(routeScope(rt), h)
		}
		r.Method(rt.Method, rt.Pattern, s.audit(rt, h))
	}
	for _, cr := range s.consoleRoutes() {
		s.extra = append(s.extra, cr)
		r.Method(cr.Method, cr.Pattern, s.checkParams(cr.Handler))
	}
	if opts.Metrics != nil {
		mr := Route{Method: http.MethodGet, Pattern: "/metrics", Scope: ScopeRead, Handler: opts.Metrics.ServeHTTP}
		s.extra = append(s.extra, mr)
		r.Method(mr.Method, mr.Pattern, s.audit(mr, s.auth(mr.Scope, mr.Handler)))
	}
	s.handler = r
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes returns every route of the OpenAPI document, built-ins included.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// ServedRoutes returns every route the router serves: Routes and /metrics
// when it is served.
func (s *Server) ServedRoutes() []Route { return append(s.Routes(), s.extra...) }

type health struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
}

type versionBody struct {
	Version string `json:"version"`
	// Openmano is the openmano (OSM RO) version whose API this server
	// answers, dotted.
	Openmano string `json:"openmano_version"`
}

// OpenmanoVersion is the OSM RO release whose openmano API wimro answers.
// OSM's LCM reads it from /openmano/version at start and refuses an RO
// older than 0.6.3.
const OpenmanoVersion = "6.0.4"

func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	Respond(w, r, http.StatusOK, health{Status: "ok", Version: s.opts.Version})
}

// version answers openmano's text, "openmanod version X.Y.Z ...", which
// OSM's LCM parses (the first word with a dot), unless the request
// accepts JSON: LCM sends Accept: application/yaml and reads only the
// text; wimd's own version, structured, is answered as JSON.
func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		Respond(w, r, http.StatusOK, versionBody{Version: s.opts.Version, Openmano: OpenmanoVersion})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "openmanod version %s (wimro %s)\n", OpenmanoVersion, s.opts.Version)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		err := s.opts.Health(ctx)
		s.health.saw(s.logger, errorText(err))
		if err != nil {
			respondError(w, r, http.StatusServiceUnavailable, "database unavailable", "")
			return
		}
	}
	Respond(w, r, http.StatusOK, health{Status: "ok", Version: s.opts.Version})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		err := s.opts.Ready(ctx)
		s.ready.saw(s.logger, errorText(err))
		if err != nil {
			respondError(w, r, http.StatusServiceUnavailable, "not ready: "+wimro.ErrorMessage(err), "")
			return
		}
	}
	Respond(w, r, http.StatusOK, health{Status: "ready", Version: s.opts.Version})
}

// probe remembers what a health probe last answered, so that its log says
// what changed, once, and not what every probe saw: an orchestrator asks
// every few seconds, and a 503 while a process starts is its answer, not
// an error. A failure after success is a WARN (the process was serving
// and no longer can), a first failure or a new reason before it ever
// succeeded is INFO, success after failure is INFO, and an answer that
// repeats the last one is DEBUG.
type probe struct {
	failed, passed string // the messages: "not ready", "ready"
	// quietPass: the first success is not worth a line (a process is
	// expected healthy); only a recovery is.
	quietPass bool

	mu     sync.Mutex
	seen   bool   // a probe was answered
	ok     bool   // the last one passed
	ever   bool   // one passed since the process started
	reason string // the last failure's
}

// errorText is what a probe's log says of err: a domain error's message
// (the failing check), else the error itself; "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	var e *wimro.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// saw logs a probe's answer: reason is why it failed, "" when it passed.
func (p *probe) saw(logger *slog.Logger, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen, wasOK, ever := p.seen, p.ok, p.ever
	p.seen, p.ok = true, reason == ""
	if reason == "" {
		p.ever, p.reason = true, ""
		switch {
		case seen && !wasOK:
			logger.Info(p.passed)
		case !seen && !p.quietPass:
			logger.Info(p.passed)
		default:
			logger.Debug(p.passed)
		}
		return
	}
	level := slog.LevelDebug
	switch {
	case wasOK || (ever && reason != p.reason):
		level = slog.LevelWarn
	case !seen || reason != p.reason:
		level = slog.LevelInfo
	}
	p.reason = reason
	logger.Log(context.Background(), level, p.failed, slog.String("reason", reason))
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	if s.opts.Cluster == nil {
		s.Error(w, r, wimro.Errorf(wimro.ENOTFOUND, "no cluster status in this process"))
		return
	}
	st, err := s.opts.Cluster(r.Context())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, st)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	Respond(w, r, http.StatusOK, s.OpenAPI())
}

func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.Body
		if raw != nil {
			r.Body = http.MaxBytesReader(w, raw, s.opts.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
		if raw != nil {
			// Read what the handler left unread (a body refused early, or
			// one larger than the limit), bounded: a client still sending
			// then gets the answer instead of a connection reset.
			_, _ = io.Copy(io.Discard, io.LimitReader(raw, drainLimit(s.opts.MaxBodyBytes)))
		}
	})
}

// drainLimit is how much of an unread request body is read and dropped
// after the answer: 8 MiB, or four times the body limit if more.
func drainLimit(maxBody int64) int64 { return max(8<<20, 4*maxBody) }

// recoverer turns a panic of a handler into the JSON 500 every other
// error answers (chi's middleware.Recoverer answers an empty 500 and prints
// the stack to stderr outside the structured log), and logs the stack. The
// process goes on. http.ErrAbortHandler is re-panicked: net/http aborts
// the connection quietly, as the handler asked.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.logger.Error("handler panicked", slog.String("request_id", middleware.GetReqID(r.Context())),
					slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				s.Error(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// quietRoutes are the routes of health probes and scrapes: an
// orchestrator and Prometheus ask them every few seconds, so their access
// lines are DEBUG; the probes log what changes themselves (probe).
var quietRoutes = map[string]bool{"/livez": true, "/healthz": true, "/readyz": true, "/metrics": true}

// accessLog writes one INFO line per request once it is answered (DEBUG
// for quietRoutes): the method, the route pattern (not the path: ids and
// names stay out of the log and the lines group by endpoint), the status,
// the duration in milliseconds and the request id (chi's
// middleware.RequestID: the client's X-Request-Id, else a generated one,
// echoed in the answer).
// Never the query string, headers or body: no secret is logged.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// A client's id is kept, cut to 128 bytes of valid UTF-8.
		id := wimro.CleanText(middleware.GetReqID(r.Context()), 128)
		if id != "" {
			w.Header().Set(middleware.RequestIDHeader, id)
		}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		defer func() {
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK // nothing written
			}
			route := ""
			if rc := chi.RouteContext(r.Context()); rc != nil {
				route = rc.RoutePattern()
			}
			if route == "" {
				route = "(no route)"
			}
			level := slog.LevelInfo
			if quietRoutes[route] {
				level = slog.LevelDebug
			}
			s.logger.Log(r.Context(), level, "http request", slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", status), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.String("request_id", id))
		}()
		next.ServeHTTP(ww, r)
	})
}
