package connectors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/wimro/wimro"
)

// Kind says what the caller can do about a connector error. The actions
// react per kind (architecture "Actions and the queue"): retry later with
// back-off, give up with the controller's message, or treat the service as
// gone.
type Kind uint8

// Error kinds. The zero Kind is KindPermanent on purpose: an error nobody
// classified is not retried, because blind retry is what made OSM loop
// forever on unexpected exceptions.
const (
	// KindPermanent: retrying the same request cannot help (4xx validation,
	// unsupported service type or encapsulation, 409 that could not be
	// adopted, 501).
	KindPermanent Kind = iota
	// KindRetryable: the controller could not answer now (timeouts,
	// connection refused/reset, 408, 429, 5xx except 501).
	KindRetryable
	// KindNotFound: the service (or the object named) does not exist on the
	// controller.
	KindNotFound
	// KindUnauthorized: the account's credentials were refused (401, 403);
	// retrying needs an operator to fix the account.
	KindUnauthorized
)

var kindNames = [...]string{
	KindPermanent:    "permanent",
	KindRetryable:    "retryable",
	KindNotFound:     "not_found",
	KindUnauthorized: "unauthorized",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MarshalText makes a Kind read as its name in JSON and in logs.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText accepts the names MarshalText writes.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// ParseKind returns the Kind named s ("permanent", "retryable",
// "not_found", "unauthorized"), so kinds can be chosen in account config.
func ParseKind(s string) (Kind, error) {
	for k, name := range kindNames {
		if strings.EqualFold(s, name) {
			return Kind(k), nil
		}
	}
	return KindPermanent, fmt.Errorf("unknown connector error kind %q (want one of %s)", s, strings.Join(kindNames[:], ", "))
}

// MaxMessage bounds the text of an *Error, in bytes: a longer one keeps
// its head and tail (wimro.CleanText). Controller text quoted in a message
// is bounded well below (rest.Snippet), so this only catches what was not.
const MaxMessage = 4096

// Error is a classified connector error.
type Error struct {
	Kind Kind
	// Status is the controller's HTTP status, 0 when there was no reply.
	Status int
	// RetryAfter is the controller's Retry-After hint (429 and 503
	// replies): the least time to wait before retrying, 0 when it gave
	// none. Read it with the function RetryAfter, which finds it through
	// wrapping errors.
	RetryAfter time.Duration
	// Message is the text for the operator; it ends up in the WAN link's
	// error_msg, so it should carry the controller's own explanation.
	// Errorf and HTTPError make it storable (wimro.CleanText: valid UTF-8,
	// no NUL, at most MaxMessage bytes); Error() does so whatever it is.
	Message string
	// Err is the underlying cause, kept for errors.Is / errors.As.
	Err error

	// causeInMessage records that Message already contains Err's text
	// (Errorf with %w), so Error() does not repeat it.
	causeInMessage bool
}

// Error returns Message followed by the cause, if any, as storable text:
// valid UTF-8 without NUL, at most MaxMessage bytes (wimro.CleanText), so
// that it can go to error_msg as it is.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "connector error (" + e.Kind.String() + ")"
	}
	if e.Err != nil && !e.causeInMessage {
		msg += ": " + e.Err.Error()
	}
	return wimro.CleanText(msg, MaxMessage)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind. The format accepts %w like
// fmt.Errorf; the wrapped errors stay reachable through errors.Is/As.
func Errorf(kind Kind, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	e := &Error{Kind: kind, Message: wimro.CleanText(err.Error(), MaxMessage)}
	switch err.(type) {
	case interface{ Unwrap() error }, interface{ Unwrap() []error }:
		e.Err, e.causeInMessage = err, true
	}
	return e
}

// RetryAfter returns the controller's Retry-After hint that err carries:
// the RetryAfter of the first *Error in its chain that has one (an error
// wrapping a 503 keeps its hint), capped at MaxRetryAfter; 0 when none
// has, and for nil. Whether to retry at all is Retryable's call.
func RetryAfter(err error) time.Duration {
	var ce *Error
	for errors.As(err, &ce) {
		if ce.RetryAfter > 0 {
			return min(ce.RetryAfter, MaxRetryAfter)
		}
		err = ce.Err
	}
	return 0
}

// HTTPError returns an *Error for a controller reply with HTTP status
// code, its kind chosen by KindForStatus. Real connectors use it so that
// every one maps statuses the same way.
func HTTPError(status int, format string, args ...any) *Error {
	e := Errorf(KindForStatus(status), format, args...)
	e.Status = status
	return e
}

// KindForStatus classifies a controller's HTTP status:
// 401/403 are Unauthorized, 404 NotFound, 408, 429 and 5xx other than 501
// Retryable, and every other status Permanent.
func KindForStatus(status int) Kind {
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return KindUnauthorized
	case status == http.StatusNotFound:
		return KindNotFound
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return KindRetryable
	case status == http.StatusNotImplemented:
		return KindPermanent
	case status >= 500 && status <= 599:
		return KindRetryable
	}
	return KindPermanent
}

// KindOf classifies err:
//   - the Kind of the first *Error in its chain;
//   - KindRetryable for context.DeadlineExceeded and context.Canceled (the
//     call was interrupted, not refused: a caller that is stopping checks
//     its own context before deciding anything) and for network failures
//     (timeouts, dial/read/write errors, connection refused or reset, a
//     reply cut short);
//   - KindPermanent for anything else, including nil.
func KindOf(err error) Kind {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Kind
	}
	if err != nil && transient(err) {
		return KindRetryable
	}
	return KindPermanent
}

func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// A *net.OpError is a failure of the transport itself (dial, DNS, read,
	// write), unlike, say, a TLS certificate error, which retrying cannot
	// fix.
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF)
}

// Retryable reports whether retrying the call later can help (KindOf is
// KindRetryable).
func Retryable(err error) bool { return err != nil && KindOf(err) == KindRetryable }

// IsNotFound reports whether err says the service does not exist.
func IsNotFound(err error) bool { return err != nil && KindOf(err) == KindNotFound }

// IsUnauthorized reports whether err says the account's credentials were
// refused.
func IsUnauthorized(err error) bool { return err != nil && KindOf(err) == KindUnauthorized }
