package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/wimro/wimro"
)

// statusError is a transport-only error with its own status (413, 415,
// 404/405 of the router): conditions the domain codes do not cover.
type statusError struct {
	status int
	msg    string
	field  string
}

func (e *statusError) Error() string { return e.msg }

// codes maps each domain error code to its HTTP status: the one place.
var codes = map[string]int{
	wimro.EINVALID:      http.StatusBadRequest,
	wimro.ENOTFOUND:     http.StatusNotFound,
	wimro.ECONFLICT:     http.StatusConflict,
	wimro.EUNAUTHORIZED: http.StatusUnauthorized,
	wimro.EFORBIDDEN:    http.StatusForbidden,
	wimro.EUNAVAILABLE:  http.StatusServiceUnavailable,
	wimro.ETOOMANY:      http.StatusTooManyRequests,
	wimro.EINTERNAL:     http.StatusInternalServerError,
}

// StatusFor returns the HTTP status of a domain error code.
func StatusFor(code string) int {
	if s, ok := codes[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is openmano's error shape, used for every error status.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code        int    `json:"code"`
	Type        string `json:"type"`
	Description string `json:"description"`
	Field       string `json:"field,omitempty"`
}

// Error answers err with its status and the error body. Internal errors
// are logged in full and answered with a generic text.
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	if isRESTCONF(r) {
		// The RFC 8466 northbound answers RFC 8040's error body, the
		// middleware's refusals included.
		s.restconfError(w, r, err)
		return
	}
	status, msg, field := errorStatus(err)
	if status >= 500 {
		s.logger.Error("request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status), slog.Any("error", err))
	} else {
		s.logger.Debug("request refused", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status), slog.String("error", msg))
	}
	respondError(w, r, status, msg, field)
}

// errorStatus is the status, message and field that answer err.
func errorStatus(err error) (status int, msg, field string) {
	var se *statusError
	if errors.As(err, &se) {
		return se.status, se.msg, se.field
	}
	return StatusFor(wimro.ErrorCode(err)), wimro.ErrorMessage(err), wimro.ErrorField(err)
}

func respondError(w http.ResponseWriter, r *http.Request, status int, msg, field string) {
	Respond(w, r, status, errorBody{Error: errorDetail{
		Code: status, Type: fmt.Sprintf("%d %s", status, http.StatusText(status)), Description: msg, Field: field,
	}})
}
