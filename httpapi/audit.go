package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/wimro/wimro"
)

// auditRecord is what a request's audit entry gathers on its way: the
// token's id (set by auth, which runs inside the audit middleware) and
// the ids its answer created (set by Respond).
type auditRecord struct {
	tokenID string
	created []string
}

type auditKey struct{}

func auditOf(r *http.Request) *auditRecord {
	rec, _ := r.Context().Value(auditKey{}).(*auditRecord)
	return rec
}

// mutating says whether a request of method may change something: every
// method but GET, HEAD and OPTIONS.
func mutating(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// audit records, through Options.Audit, every request to rt that may
// change something, and every request refused for its credentials (401,
// 403) whatever its method, once it is answered: a failed authentication
// is an entry without a token id, and never holds the token presented.
// The entry is written before the handler returns, with the request's
// context detached (a client that hangs up is still recorded); an entry
// the database refuses is logged in full instead (engine.RecordAudit).
func (s *Server) audit(rt Route, next http.HandlerFunc) http.HandlerFunc {
	if s.opts.Audit == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &auditRecord{}
		r = r.WithContext(context.WithValue(r.Context(), auditKey{}, rec))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		defer func() {
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			if !mutating(r.Method) && status != http.StatusUnauthorized && status != http.StatusForbidden {
				return
			}
			e := wimro.AuditEntry{TokenID: rec.tokenID, Client: clientAddr(r), Method: r.Method, Route: rt.Pattern,
				Objects: append(pathObjects(r), rec.created...), Status: status, Outcome: wimro.AuditOutcome(status),
				RequestID: wimro.CleanText(middleware.GetReqID(r.Context()), 128)}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
			defer cancel()
			if err := s.opts.Audit(ctx, e); err != nil {
				s.logger.Debug("audit entry not recorded", slog.Any("error", err))
			}
		}()
		next(ww, r)
	}
}

// clientAddr is the request's TCP peer, without its port. Headers such as
// X-Forwarded-For are not read: any client can write them.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// pathObjects are the request's path parameters as "name=value".
func pathObjects(r *http.Request) []string {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return []string{}
	}
	out := make([]string, 0, len(rc.URLParams.Keys))
	for i, k := range rc.URLParams.Keys {
		if k != "" && k != "*" {
			out = append(out, k+"="+rc.URLParams.Values[i])
		}
	}
	return out
}

// createdKeys are the answer's keys that name what a request made or
// queued: a created object's uuid, a queued instance action.
var createdKeys = []string{"uuid", "action_id", "instance_id"}

// maxCreated caps the ids an entry takes from one answer.
const maxCreated = 50

// noteAnswer gives the audit entry of a successful mutating request the
// ids of what its JSON answer holds at the top level or one level down
// (openmano wraps a created object in its kind: {"wim": {"uuid": ...}}),
// in lists too (port mappings).
func noteAnswer(r *http.Request, status int, body []byte) {
	rec := auditOf(r)
	if rec == nil || !mutating(r.Method) || status >= 300 {
		return
	}
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return
	}
	seen := map[string]bool{}
	for _, o := range pathObjects(r) {
		seen[o] = true
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if len(rec.created) >= maxCreated || depth > 2 {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			for _, k := range createdKeys {
				if id, ok := v[k].(string); ok && id != "" {
					o := k + "=" + id
					if !seen[o] && len(rec.created) < maxCreated {
						seen[o] = true
						rec.created = append(rec.created, o)
					}
				}
			}
			for _, c := range v {
				walk(c, depth+1)
			}
		case []any:
			for _, c := range v {
				walk(c, depth)
			}
		}
	}
	walk(doc, 0)
}

// auditListResponse is GET /openmano/audit's answer.
type auditListResponse struct {
	Audit []wimro.AuditEntry `json:"audit"`
}

// auditRoutes is the audit trail's one route (admin scope, in
// routeScopes).
func (a *api) auditRoutes() []Route {
	return []Route{{Method: "GET", Pattern: "/openmano/audit",
		Summary: "The audit trail, oldest first: every request that changed something or was refused for its credentials (401, 403), with when, the token's id, " +
			"the client address, method, route, the ids it touched and its status. since=<time> starts at a time; a page ends at limit (default 100, at most 1000) " +
			"entries, and the next page is after=<the last id>",
		Tags: []string{"meta"}, Query: []string{"since", "after", "limit"}, Response: auditListResponse{}, Handler: a.listAudit}}
}

func (a *api) listAudit(w http.ResponseWriter, r *http.Request) {
	f, err := parseAuditQuery(r)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	list, err := a.eng.ListAudit(r.Context(), f)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, auditListResponse{Audit: list})
}

// parseAuditQuery reads since, after and limit; any other key is refused.
func parseAuditQuery(r *http.Request) (wimro.AuditFilter, error) {
	f := wimro.AuditFilter{Limit: 100}
	for k, vals := range r.URL.Query() {
		v := vals[0]
		if len(vals) > 1 {
			return f, wimro.FieldErrorf(k, "Invalid query string at '%s=%s': given twice", k, shorten(vals[1], 80))
		}
		switch k {
		case "since":
			t, ok := parseTime(v)
			if !ok {
				return f, wimro.FieldErrorf("since", "Invalid query string at 'since=%s' (a time such as 2006-01-02T15:04:05Z)", shorten(v, 80))
			}
			f.Since = t
		case "after":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return f, wimro.FieldErrorf("after", "Invalid query string at 'after=%s' (the id of an audit entry)", shorten(v, 80))
			}
			f.After = n
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return f, wimro.FieldErrorf("limit", "Invalid query string at 'limit=%s' (an integer from 1 to 1000)", shorten(v, 80))
			}
			f.Limit = n
		default:
			field := k
			if strings.TrimSpace(field) == "" {
				field = "query"
			}
			return f, wimro.FieldErrorf(field, "Invalid query string at '%s=%s'", shorten(k, 80), shorten(v, 80))
		}
	}
	return f, nil
}

// parseTime reads a time as isTime accepts it (RFC 3339, a date and time
// in UTC, or a date).
func parseTime(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", time.DateTime, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
