// Package wimro holds the domain types and error codes of the WAN
// Infrastructure Manager orchestration engine. It imports nothing of the
// project, so every layer (persistence, engine, httpapi, workers) may use it.
package wimro

import (
	"errors"
	"fmt"
)

// Error codes. The transport maps each to one HTTP status in one place
// (httpapi); every other layer speaks only these codes.
const (
	EINVALID      = "invalid"      // bad input: the caller must change the request
	ENOTFOUND     = "not_found"    // the named thing does not exist
	ECONFLICT     = "conflict"     // duplicate, ambiguity or a dependency blocks the change
	EUNAUTHORIZED = "unauthorized" // missing or wrong credentials
	EFORBIDDEN    = "forbidden"    // valid credentials without the scope the request needs
	EUNAVAILABLE  = "unavailable"  // a dependency (database, controller) cannot answer now; retry may help
	ETOOMANY      = "too_many"     // a limit of the server (open event streams) is reached: retry later
	EINTERNAL     = "internal"     // a bug or an unexpected failure
)

// Error is an application error with a code and a message meant for the
// operator. Wrapped errors keep their code: ErrorCode walks the chain.
type Error struct {
	Code    string
	Message string
	// Field names the request field that is wrong, when there is one.
	Field string
	// Err is the underlying cause, if any; it is not shown to API clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("wimro error: code=%s message=%s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("wimro error: code=%s message=%s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns an EINVALID error that names the offending field.
func FieldErrorf(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the first *Error in err's chain, or a
// generic text for other errors so internals never leak to API clients.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}

// ErrorField returns the request field named by err, if any.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
