// Package emulator is the shared plumbing of wimro's controller emulators:
// request log, fault injection, delays, basic auth, and the
// ietf-restconf:errors body the RESTCONF emulators share (a protocol
// format, not a controller's).
//
// An emulator embeds a Recorder, which gives it FailNext, Delay and
// Requests, and runs its ServeHTTP through Recorder.Serve. The package
// knows no controller's error format: Serve hands an injected failure's
// status to the emulator, which writes the body its controller would.
package emulator

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

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
	// Status is the HTTP status of the reply (StatusClientClosed when the
	// client gave up during a Delay).
	Status int
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
	}
}

// Recorder keeps an emulator's request log, its queue of injected failures
// and its delay. Embedded in an emulator, its FailNext, Delay and Requests
// are the emulator's. The zero value is ready to use; it is safe for
// concurrent use.
type Recorder struct {
	mu       sync.Mutex
	requests []Request
	failNext []int
	delay    time.Duration
}

// FailNext makes the next n requests fail with the HTTP status status,
// without taking effect; the emulator answers them in its controller's
// error format. Calls queue up.
func (rc *Recorder) FailNext(n, status int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.failNext = append(rc.failNext, slices.Repeat([]int{status}, max(n, 0))...)
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
func (rc *Recorder) Serve(w http.ResponseWriter, r *http.Request, rec Request, handle func(w http.ResponseWriter, injected int)) {
	if !rc.wait(r) {
		rec.Status = StatusClientClosed
		rc.record(rec)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	handle(sw, rc.nextFailure())
	rec.Status = sw.code()
	rc.record(rec)
}

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

// nextFailure pops the next FailNext status, 0 when none is queued.
func (rc *Recorder) nextFailure() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.failNext) == 0 {
		return 0
	}
	status := rc.failNext[0]
	rc.failNext = rc.failNext[1:]
	return status
}

func (rc *Recorder) record(rec Request) {
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
