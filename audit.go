package wimro

import "time"

// AuditEntry is one record of the API's audit trail: a request that
// changes something (any method but GET and HEAD), or one refused for its
// credentials (401, 403) on any route.
type AuditEntry struct {
	ID int64     `json:"id" db:"id"`
	At time.Time `json:"at" db:"at"`
	// TokenID names the API token the request carried (its id in the
	// token file, never the token); "" when the server takes no token or
	// the token was not accepted.
	TokenID string `json:"token_id" db:"token_id"`
	// Client is the address the request came from (the TCP peer).
	Client string `json:"client" db:"client"`
	Method string `json:"method" db:"method"`
	// Route is the route pattern, e.g. /openmano/wims/{wim_id}.
	Route string `json:"route" db:"route"`
	// Objects are the ids the request touched, each "name=value": the
	// path's parameters (wim_id=...) and the ids of what the answer
	// created (uuid=..., action_id=...).
	Objects []string `json:"objects" db:"objects"`
	Status  int      `json:"status" db:"status"`
	// Outcome is the status in a word: ok, refused (4xx), unauthenticated
	// (401), forbidden (403) or failed (5xx).
	Outcome   string `json:"outcome" db:"outcome"`
	RequestID string `json:"request_id" db:"request_id"`
}

// Audit outcomes.
const (
	AuditOK              = "ok"
	AuditRefused         = "refused"
	AuditUnauthenticated = "unauthenticated"
	AuditForbidden       = "forbidden"
	AuditFailed          = "failed"
)

// AuditOutcome names the outcome of an HTTP status.
func AuditOutcome(status int) string {
	switch {
	case status == 401:
		return AuditUnauthenticated
	case status == 403:
		return AuditForbidden
	case status >= 500:
		return AuditFailed
	case status >= 400:
		return AuditRefused
	}
	return AuditOK
}

// AuditFilter selects audit entries: those at or after Since (zero: from
// the first), with an id after After (paging: the last id of the previous
// page), at most Limit, oldest first.
type AuditFilter struct {
	Since time.Time
	After int64
	Limit int
}
