package emulator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds every wait on a channel.
const waitTimeout = 10 * time.Second

// serve runs req through rc.Serve with handle, returning the reply.
func serve(rc *Recorder, req *http.Request, handle func(w http.ResponseWriter, injected int)) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	rc.Serve(w, req, NewRequest(req, nil), handle)
	return w
}

// echo answers the injected status, or 200 "ok".
func echo(w http.ResponseWriter, injected int) {
	if injected != 0 {
		w.WriteHeader(injected)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func TestNewRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		target string
		header [2]string
		auth   []string
		want   Request
	}{
		{
			name:   "plain",
			target: "/a/b",
			want:   Request{Method: http.MethodPost, Path: "/a/b", ContentType: "application/json", Body: "{}"},
		},
		{
			name:   "escaped path kept",
			target: "/sites/site=edge%203%2Fb",
			want:   Request{Method: http.MethodPost, Path: "/sites/site=edge%203%2Fb", ContentType: "application/json", Body: "{}"},
		},
		{
			name:   "basic auth",
			target: "/x",
			auth:   []string{"alice", "secret"},
			want:   Request{Method: http.MethodPost, Path: "/x", ContentType: "application/json", Body: "{}", User: "alice", HasAuth: true},
		},
		{
			name:   "basic auth empty user",
			target: "/x",
			auth:   []string{"", ""},
			want:   Request{Method: http.MethodPost, Path: "/x", ContentType: "application/json", Body: "{}", HasAuth: true},
		},
		{
			name:   "bearer",
			target: "/x",
			header: [2]string{"Authorization", "Bearer tok"},
			want:   Request{Method: http.MethodPost, Path: "/x", ContentType: "application/json", Body: "{}", Bearer: true},
		},
		{
			name:   "malformed basic",
			target: "/x",
			header: [2]string{"Authorization", "Basic !!!"},
			want:   Request{Method: http.MethodPost, Path: "/x", ContentType: "application/json", Body: "{}"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, tt.target, nil)
			req.Header.Set("Content-Type", "application/json")
			if tt.header[0] != "" {
				req.Header.Set(tt.header[0], tt.header[1])
			}
			if tt.auth != nil {
				req.SetBasicAuth(tt.auth[0], tt.auth[1])
			}
			if got := NewRequest(req, []byte("{}")); got != tt.want {
				t.Fatalf("NewRequest = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	type fail struct{ n, status int }
	tests := []struct {
		name  string
		fails []fail
		// want are the statuses of the next requests (200: not failed).
		want []int
	}{
		{"none", nil, []int{200, 200}},
		{"one", []fail{{1, 503}}, []int{503, 200}},
		{"several", []fail{{3, 500}}, []int{500, 500, 500, 200}},
		{"calls queue up", []fail{{1, 503}, {2, 404}}, []int{503, 404, 404, 200}},
		{"zero", []fail{{0, 503}}, []int{200}},
		{"negative", []fail{{-2, 503}}, []int{200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rc Recorder
			for _, f := range tt.fails {
				rc.FailNext(f.n, f.status)
			}
			var got []int
			for range tt.want {
				called := false
				w := serve(&rc, httptest.NewRequest(http.MethodGet, "/", nil), func(w http.ResponseWriter, injected int) {
					called = true
					echo(w, injected)
				})
				if !called {
					t.Fatal("handle not called")
				}
				got = append(got, w.Code)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("replies = %v, want %v", got, tt.want)
			}
			var logged []int
			for _, r := range rc.Requests() {
				logged = append(logged, r.Status)
			}
			if !slices.Equal(logged, tt.want) {
				t.Fatalf("logged statuses = %v, want %v", logged, tt.want)
			}
		})
	}
}

func TestLoggedStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		handle func(w http.ResponseWriter)
		want   int
	}{
		{"nothing written", func(http.ResponseWriter) {}, http.StatusOK},
		{"body only", func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")) }, http.StatusOK},
		{"header", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }, http.StatusNoContent},
		{"first header wins", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusConflict)
			w.WriteHeader(http.StatusOK)
		}, http.StatusConflict},
		{"body before header", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte("x"))
			w.WriteHeader(http.StatusNotFound)
		}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rc Recorder
			w := serve(&rc, httptest.NewRequest(http.MethodGet, "/", nil), func(w http.ResponseWriter, _ int) { tt.handle(w) })
			reqs := rc.Requests()
			if len(reqs) != 1 || reqs[0].Status != tt.want || w.Code != tt.want {
				t.Fatalf("log %+v, reply %d, want status %d", reqs, w.Code, tt.want)
			}
		})
	}
}

func TestRequestsLog(t *testing.T) {
	t.Parallel()
	var rc Recorder
	if reqs := rc.Requests(); reqs != nil {
		t.Fatalf("empty log = %+v, want nil", reqs)
	}
	before := time.Now()
	for _, path := range []string{"/one", "/two"} {
		req := httptest.NewRequest(http.MethodPut, path, strings.NewReader("b"))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("User-Agent", "wimro/dev (w1)")
		rc.Serve(httptest.NewRecorder(), req, NewRequest(req, []byte("b")), echo)
	}
	after := time.Now()
	reqs := rc.Requests()
	// Each request is logged with when it was served, in order.
	last := before
	for i, r := range reqs {
		if r.Start.Before(last) || r.End.Before(r.Start) || r.End.After(after) {
			t.Fatalf("request %d served %v..%v, want within %v..%v and after the previous one", i, r.Start, r.End, last, after)
		}
		last = r.End
		reqs[i].Start, reqs[i].End = time.Time{}, time.Time{}
	}
	want := []Request{
		{Method: http.MethodPut, Path: "/one", ContentType: "text/plain", Body: "b", UserAgent: "wimro/dev (w1)", Status: 200},
		{Method: http.MethodPut, Path: "/two", ContentType: "text/plain", Body: "b", UserAgent: "wimro/dev (w1)", Status: 200},
	}
	if !slices.Equal(reqs, want) {
		t.Fatalf("log = %+v, want %+v", reqs, want)
	}
	reqs[0].Path = "/changed"
	if rc.Requests()[0].Path != "/one" {
		t.Fatal("Requests returned the log itself, not a copy")
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// delay is set before the request; cancel ends its context.
		delay  time.Duration
		cancel bool
		// handled: handle runs; want is the logged status.
		handled bool
		want    int
	}{
		{"no delay", 0, false, true, http.StatusOK},
		{"no delay, client gone", 0, true, true, http.StatusOK},
		{"short delay runs out", time.Millisecond, false, true, http.StatusOK},
		{"client gives up", time.Hour, true, false, StatusClientClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rc Recorder
			rc.Delay(tt.delay)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
			handled := false
			w := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				rc.Serve(w, req, NewRequest(req, nil), func(w http.ResponseWriter, injected int) {
					handled = true
					echo(w, injected)
				})
			}()
			if tt.cancel {
				cancel()
			}
			select {
			case <-done:
			case <-time.After(waitTimeout):
				t.Fatal("Serve did not return")
			}
			if handled != tt.handled {
				t.Fatalf("handled = %v, want %v", handled, tt.handled)
			}
			if !tt.handled && (w.Body.Len() != 0 || w.Code != http.StatusOK) {
				t.Fatalf("a request whose client gave up got a reply: %d %q", w.Code, w.Body)
			}
			reqs := rc.Requests()
			if len(reqs) != 1 || reqs[0].Status != tt.want {
				t.Fatalf("log = %+v, want one request with status %d", reqs, tt.want)
			}
		})
	}
}

func TestDelayZeroStops(t *testing.T) {
	t.Parallel()
	var rc Recorder
	rc.Delay(time.Hour)
	rc.Delay(0)
	done := make(chan int, 1)
	go func() { done <- serve(&rc, httptest.NewRequest(http.MethodGet, "/", nil), echo).Code }()
	select {
	case code := <-done:
		if code != http.StatusOK {
			t.Fatalf("reply %d", code)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Delay(0) did not stop the delay")
	}
}

// A request whose client gives up during the delay takes no queued
// failure: the next one does.
func TestClientGoneTakesNoFailure(t *testing.T) {
	t.Parallel()
	var rc Recorder
	rc.Delay(time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	rc.FailNext(1, http.StatusBadGateway)
	cancel()
	rc.Serve(httptest.NewRecorder(), req, NewRequest(req, nil), func(http.ResponseWriter, int) {
		t.Error("handle called for a request whose client gave up")
	})
	rc.Delay(0)
	if code := serve(&rc, httptest.NewRequest(http.MethodGet, "/", nil), echo).Code; code != http.StatusBadGateway {
		t.Fatalf("next request = %d, want the queued 502 (a client that gave up takes no failure)", code)
	}
}

func TestConcurrentServe(t *testing.T) {
	t.Parallel()
	const requests, failures = 50, 20
	var rc Recorder
	rc.FailNext(failures, http.StatusServiceUnavailable)
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() { serve(&rc, httptest.NewRequest(http.MethodGet, "/", nil), echo) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("concurrent requests did not finish")
	}
	reqs := rc.Requests()
	failed := 0
	for _, r := range reqs {
		if r.Status == http.StatusServiceUnavailable {
			failed++
		}
	}
	if len(reqs) != requests || failed != failures {
		t.Fatalf("%d requests logged, %d failed; want %d and %d", len(reqs), failed, requests, failures)
	}
}

// A throttled request answers its status with Retry-After in whole
// seconds, rounded up; the queue mixes failures with and without it.
func TestFailNextRetryAfter(t *testing.T) {
	t.Parallel()
	var rc Recorder
	rc.FailNextRetryAfter(1, http.StatusTooManyRequests, 1500*time.Millisecond)
	rc.FailNext(1, http.StatusBadGateway)
	if q := rc.Queued(); q != 2 {
		t.Fatalf("Queued = %d, want 2", q)
	}
	tests := []struct {
		code       int
		retryAfter string
	}{{http.StatusTooManyRequests, "2"}, {http.StatusBadGateway, ""}, {http.StatusOK, ""}}
	for i, tt := range tests {
		w := serve(&rc, httptest.NewRequest(http.MethodGet, "/", nil), echo)
		if w.Code != tt.code || w.Header().Get("Retry-After") != tt.retryAfter {
			t.Fatalf("request %d: %d Retry-After %q, want %d %q", i, w.Code, w.Header().Get("Retry-After"), tt.code, tt.retryAfter)
		}
	}
}

// A dropped mutation takes effect, its client gets no reply (the
// connection closes), and the log says so; reads are not dropped.
func TestDropNext(t *testing.T) {
	t.Parallel()
	var rc Recorder
	var mu sync.Mutex
	applied := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.Serve(w, r, NewRequest(r, nil), func(w http.ResponseWriter, injected int) {
			if r.Method != http.MethodGet {
				mu.Lock()
				applied++
				mu.Unlock()
			}
			w.WriteHeader(http.StatusCreated)
		})
	}))
	t.Cleanup(srv.Close)
	rc.DropNext(1)
	if q := rc.Queued(); q != 1 {
		t.Fatalf("Queued = %d, want 1", q)
	}
	do := func(method string) (int, error) {
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := do(http.MethodGet); err != nil || code != http.StatusCreated {
		t.Fatalf("GET = %d, %v; want 201: reads are not dropped", code, err)
	}
	if code, err := do(http.MethodPut); err == nil {
		t.Fatalf("dropped PUT answered %d, want no reply", code)
	}
	if code, err := do(http.MethodPut); err != nil || code != http.StatusCreated {
		t.Fatalf("next PUT = %d, %v; want 201", code, err)
	}
	if q := rc.Queued(); q != 0 {
		t.Fatalf("Queued = %d after the drop, want 0", q)
	}
	mu.Lock()
	defer mu.Unlock()
	if applied != 2 {
		t.Fatalf("%d PUTs took effect, want 2 (the dropped one too)", applied)
	}
	reqs := rc.Requests()
	if len(reqs) != 3 || reqs[0].Dropped || !reqs[1].Dropped || reqs[1].Status != http.StatusCreated || reqs[2].Dropped {
		t.Fatalf("log = %+v, want the second request Dropped with status 201", reqs)
	}
}

func TestCheckBasicAuth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		user, password string // wanted
		auth           []string
		header         string // raw Authorization, when auth is nil
		want           error
	}{
		{"no auth wanted, none sent", "", "", nil, "", nil},
		{"no auth wanted, some sent", "", "", []string{"x", "y"}, "", nil},
		{"match", "u", "p", []string{"u", "p"}, "", nil},
		{"missing", "u", "p", nil, "", ErrNoCredentials},
		{"bearer only", "u", "p", nil, "Bearer tok", ErrNoCredentials},
		{"malformed", "u", "p", nil, "Basic !!!", ErrNoCredentials},
		{"wrong user", "u", "p", []string{"v", "p"}, "", ErrBadCredentials},
		{"wrong password", "u", "p", []string{"u", "q"}, "", ErrBadCredentials},
		{"empty password wanted", "u", "", []string{"u", ""}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.auth != nil {
				req.SetBasicAuth(tt.auth[0], tt.auth[1])
			} else if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			if err := CheckBasicAuth(req, tt.user, tt.password); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("CheckBasicAuth = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestChallenge(t *testing.T) {
	t.Parallel()
	for _, realm := range []string{"tapi", "karaf"} {
		w := httptest.NewRecorder()
		Challenge(w, realm)
		if got, want := w.Header().Get("WWW-Authenticate"), `Basic realm="`+realm+`"`; got != want {
			t.Fatalf("WWW-Authenticate = %q, want %q", got, want)
		}
	}
}
