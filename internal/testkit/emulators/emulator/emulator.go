// Package emulator is the shared plumbing of wimro's controller emulators:
// request log, fault injection, delays, basic auth, and the
// ietf-restconf:errors body the RESTCONF emulators share (a protocol
// format, not a controller's).
//
// An emulator embeds a Recorder, which gives it the fault knobs of Faults
// (FailNext, FailNextRetryAfter, Delay, DropNext) and Requests, and runs
// its ServeHTTP through Recorder.Serve. The package knows no controller's
// error format: Serve hands an injected failure's status to the emulator,
// which writes the body its controller would. The knobs sit in front of
// the emulator's handler, so its validation of the published API is the
// same with or without them.
package emulator

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults is what a test harness drives on any emulator, whatever its
// controller: every emulator embedding a Recorder offers it.
type Faults interface {
	// FailNext makes the next n requests answer status without effect.
	FailNext(n, status int)
	// FailNextRetryAfter is FailNext with a Retry-After header (429, 503).
	FailNextRetryAfter(n, status int, after time.Duration)
	// Delay makes every following request wait d first (a hang when d
	// exceeds the client's timeout).
	Delay(d time.Duration)
	// DropNext makes the next n mutations take effect and then lose their
	// reply: the connection is closed without an answer.
	DropNext(n int)
	// Queued is how many injected failures and drops are still to come.
	Queued() int
	// Requests is the request log, mutations with their User-Agent and
	// when they were served.
	Requests() []Request
}

var _ Faults = (*Recorder)(nil)

// StatusClientClosed is the status logged for a request whose client went
// away during a Delay (nginx's "client closed request"); nothing is
// written to the client then.
const StatusClientClosed = 499

// Request is one request an emulator received, as recorded in its log.
type Request struct {
	Method string
	// Path is the escaped URL path, as sent (NewRequest), unless the
	// emulator records another form.
	Path        string
	ContentType string
	Body        string
	// User is the basic-auth user name and HasAuth reports basic-auth
	// credentials, when the request carried them; Bearer reports a bearer
	// token in the Authorization header.
	User    string
	HasAuth bool
	Bearer  bool
	// UserAgent is the request's User-Agent (wimd names its process in it).
	UserAgent string
	// Status is the HTTP status of the reply (StatusClientClosed when the
	// client gave up during a Delay).
	Status int
	// Start is when the request arrived (before any Delay) and End when
	// it was answered, given up or dropped: set by Serve.
	Start, End time.Time
	// Dropped reports a request that took effect but whose reply was
	// dropped (DropNext); Status is then the reply that was never sent.
	Dropped bool
}

// NewRequest returns the log entry of r, whose body is body, without its
// Status.
func NewRequest(r *http.Request, body []byte) Request {
	user, _, hasAuth := r.BasicAuth()
	return Request{
		Method:      r.Method,
		Path:        r.URL.EscapedPath(),
		ContentType: r.Header.Get("Content-Type"),
		Body:        string(body),
		User:        user,
		HasAuth:     hasAuth,
		Bearer:      strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "),
		UserAgent:   r.UserAgent(),
	}
}

// IsMutation reports whether a request of method may change a
// controller's state (anything but GET, HEAD and OPTIONS).
func IsMutation(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// Recorder keeps an emulator's request log, its queue of injected failures
// and its delay. Embedded in an emulator, its FailNext, Delay and Requests
// are the emulator's. The zero value is ready to use; it is safe for
// concurrent use.
type Recorder struct {
	mu       sync.Mutex
	requests []Request
	failNext []failure
	dropNext int
	delay    time.Duration
}

// failure is one queued injected failure.
type failure struct {
	status     int
	retryAfter time.Duration // 0: no Retry-After header
}

// FailNext makes the next n requests fail with the HTTP status status,
// without taking effect; the emulator answers them in its controller's
// error format. Calls queue up.
func (rc *Recorder) FailNext(n, status int) { rc.FailNextRetryAfter(n, status, 0) }

// FailNextRetryAfter is FailNext whose replies also carry Retry-After:
// after, in whole seconds rounded up (none when after is 0), as a
// controller that throttles (429) or is briefly unavailable (503) says.
func (rc *Recorder) FailNextRetryAfter(n, status int, after time.Duration) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.failNext = append(rc.failNext, slices.Repeat([]failure{{status, after}}, max(n, 0))...)
}

// DropNext makes the next n mutations (IsMutation) take effect as usual
// and then lose their reply: the connection is closed without an answer,
// as when a controller acts and crashes, or a proxy drops the reply. The
// client cannot tell whether it took effect. It needs a real HTTP server
// (httptest.Server): the handler aborts with http.ErrAbortHandler. Calls
// add up.
func (rc *Recorder) DropNext(n int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.dropNext += max(n, 0)
}

// Queued returns how many injected failures (FailNext) and dropped
// replies (DropNext) are still queued.
func (rc *Recorder) Queued() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.failNext) + rc.dropNext
}

// Delay makes every following request wait d before being handled (0
// stops it). The wait ends early when the client gives up; the request is
// then logged with StatusClientClosed and not handled.
func (rc *Recorder) Delay(d time.Duration) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.delay = d
}

// Requests returns the requests received so far, oldest first.
func (rc *Recorder) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

// Serve runs one request through the plumbing: it waits the Delay (when
// r's client goes away first, it logs rec with StatusClientClosed and
// returns), takes the next FailNext status (0 when none is queued), calls
// handle with it, and logs rec with the status handle replied (200 when it
// wrote nothing). When injected is not 0, handle must answer it in its
// controller's error format and take no other effect.
//
// A request DropNext applies to is handled into a reply that is thrown
// away, logged as Dropped, and the connection closed (http.ErrAbortHandler).
func (rc *Recorder) Serve(w http.ResponseWriter, r *http.Request, rec Request, handle func(w http.ResponseWriter, injected int)) {
	rec.Start = time.Now()
	if !rc.wait(r) {
		rec.Status = StatusClientClosed
		rc.record(rec)
		return
	}
	fail, drop := rc.next(rec.Method)
	if drop {
		sw := &statusWriter{ResponseWriter: &discard{header: http.Header{}}}
		handle(sw, fail.status)
		rec.Status, rec.Dropped = sw.code(), true
		rc.record(rec)
		panic(http.ErrAbortHandler)
	}
	if fail.retryAfter > 0 {
		secs := (fail.retryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
	}
	sw := &statusWriter{ResponseWriter: w}
	handle(sw, fail.status)
	rec.Status = sw.code()
	rc.record(rec)
}

// discard is a reply nobody will read (a dropped one).
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// wait applies the Delay; it reports false when r's client gave up first.
func (rc *Recorder) wait(r *http.Request) bool {
	rc.mu.Lock()
	d := rc.delay
	rc.mu.Unlock()
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// next pops the next FailNext failure (status 0 when none is queued) and,
// for a mutation, reports whether DropNext applies to it.
func (rc *Recorder) next(method string) (f failure, drop bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.failNext) > 0 {
		f = rc.failNext[0]
		rc.failNext = rc.failNext[1:]
	}
	if rc.dropNext > 0 && IsMutation(method) {
		rc.dropNext--
		drop = true
	}
	return f, drop
}

func (rc *Recorder) record(rec Request) {
	rec.End = time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests = append(rc.requests, rec)
}

// statusWriter remembers the status of the reply, for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// code is the status of the reply (200 when nothing was written).
func (s *statusWriter) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Errors of CheckBasicAuth.
var (
	// ErrNoCredentials: the request carried no basic-auth credentials.
	ErrNoCredentials = errors.New("basic authentication required")
	// ErrBadCredentials: the request's credentials are not the wanted ones.
	ErrBadCredentials = errors.New("wrong basic-auth credentials")
)

// CheckBasicAuth reports whether r carries the basic-auth credentials user
// and password: nil when it does, or when user is empty (no auth wanted),
// ErrNoCredentials when r carries none, ErrBadCredentials when they differ.
func CheckBasicAuth(r *http.Request, user, password string) error {
	if user == "" {
		return nil
	}
	u, p, ok := r.BasicAuth()
	switch {
	case !ok:
		return ErrNoCredentials
	case u != user || p != password:
		return ErrBadCredentials
	}
	return nil
}

// Challenge sets the WWW-Authenticate header of a 401 reply asking for
// basic auth in realm.
func Challenge(w http.ResponseWriter, realm string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`"`)
}
