package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/testkit/openapitest"
)

func eventsPath(ids map[string]string) string {
	return "/openmano/tenant0/instances/" + ids["instance_id"] + "/action/" + ids["action_id"] + "/events"
}

func TestEventStreamRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	b.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "tenant1"}}, 200)
	path := eventsPath(ids)
	for _, tt := range []struct {
		name, path, lastID string
		status             int
		field              string // named by a 400
	}{
		{"bad Last-Event-ID", path, "12", 400, "Last-Event-ID"},
		{"Last-Event-ID not a number", path, "a-b", 400, "Last-Event-ID"},
		{"bad last_event_id", path + "?last_event_id=x", "", 400, "last_event_id"},
		{"unknown action", strings.Replace(path, ids["action_id"], "00000000-0000-0000-0000-000000000000", 1), "", 404, ""},
		{"unknown instance", strings.Replace(path, ids["instance_id"], "nobody", 1), "", 404, ""},
		{"another tenant's action", strings.Replace(path, "/tenant0/", "/tenant1/", 1), "", 404, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", b.srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.lastID != "" {
				req.Header.Set("Last-Event-ID", tt.lastID)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error struct {
					Code  int    `json:"code"`
					Field string `json:"field"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("%d answer is not the JSON error body: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != tt.status || body.Error.Code != tt.status || body.Error.Field != tt.field {
				t.Fatalf("= %d, field %q; want %d naming %q", resp.StatusCode, body.Error.Field, tt.status, tt.field)
			}
		})
	}
}

// flushWriter is a ResponseWriter that signals each flush, so a test knows
// the stream is running before it ends the request.
type flushWriter struct {
	mu      sync.Mutex
	header  http.Header
	body    strings.Builder
	flushes chan struct{}
}

func newFlushWriter() *flushWriter {
	return &flushWriter{header: http.Header{}, flushes: make(chan struct{}, 100)}
}

func (w *flushWriter) Header() http.Header { return w.header }
func (w *flushWriter) WriteHeader(int)     {}
func (w *flushWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}
func (w *flushWriter) Flush() {
	select {
	case w.flushes <- struct{}{}:
	default:
	}
}
func (w *flushWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.String()
}

// A stream of an action that does not settle ends when its request's
// context ends, and when the server closes its streams (shutdown).
func TestEventStreamEnds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		end  func(cancel context.CancelFunc, srv *httpapi.Server)
	}{
		{"the client goes away", func(cancel context.CancelFunc, _ *httpapi.Server) { cancel() }},
		{"the server stops", func(_ context.CancelFunc, srv *httpapi.Server) { srv.CloseStreams() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "")
			ids := b.liveFixture()
			srv := httpapi.New(b.f.Eng, httpapi.Options{EventPoll: 10 * time.Millisecond})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			w := newFlushWriter()
			done := make(chan struct{})
			go func() {
				defer close(done)
				srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", eventsPath(ids), nil).WithContext(ctx))
			}()
			// The headers, then the task's SCHEDULED event: the stream runs.
			for !strings.Contains(w.String(), "event: change") {
				select {
				case <-w.flushes:
				case <-done:
					t.Fatalf("the stream ended by itself: %q", w.String())
				case <-time.After(10 * time.Second):
					t.Fatalf("no event within 10 s: %q", w.String())
				}
			}
			tt.end(cancel, srv)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the stream did not end")
			}
			if strings.Contains(w.String(), "event: done") {
				t.Fatalf("an unsettled action's stream sent done: %q", w.String())
			}
		})
	}
}

// sseReader reads a stream's events and comments.
type sseReader struct {
	sc *bufio.Scanner
}

// next returns the next event (id, name, data), or a comment as name ":"
// with its text; ok is false at the end of the stream.
func (r *sseReader) next() (id, name, data string, ok bool) {
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if name != "" {
				return id, name, data, true
			}
		case strings.HasPrefix(line, ": "):
			return "", ":", line[2:], true
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			name = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	return "", "", "", false
}

// The stream outlives the server's read and write timeouts (kept alive
// by comments meanwhile), sends each change as it is written, and done
// with the summary once every task finished.
func TestEventStreamOutlivesTimeoutsAndSettles(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	api := httpapi.New(b.f.Eng, httpapi.Options{EventPoll: 20 * time.Millisecond, EventKeepAlive: 50 * time.Millisecond})
	srv := httptest.NewUnstartedServer(openapitest.MustLoad(t, api.OpenAPI()).Handler(t, api.Handler()))
	const timeout = 300 * time.Millisecond
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = timeout, timeout
	srv.Start()
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + eventsPath(ids))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("= %d, %q, %q", resp.StatusCode, ct, resp.Header.Get("Cache-Control"))
	}
	r := &sseReader{sc: bufio.NewScanner(resp.Body)}
	id, name, data, ok := r.next()
	if !ok || name != "change" || !strings.Contains(data, `"status":"SCHEDULED"`) || !strings.Contains(data, `"link_status":"BUILD"`) {
		t.Fatalf("first event: %q %q %q", id, name, data)
	}
	// Keep-alives for longer than both timeouts: the stream goes on.
	start := time.Now()
	for time.Since(start) < 3*timeout {
		if _, name, _, ok := r.next(); !ok || name != ":" {
			t.Fatalf("after %v: %q, %v; want keep-alives", time.Since(start), name, ok)
		}
	}

	// The task runs: claimed and finished DONE with its link ACTIVE.
	finishTask(t, b)
	var events []string
	for {
		id, name, data, ok := r.next()
		if !ok {
			t.Fatalf("the stream ended without done after %q", events)
		}
		if name == ":" {
			continue
		}
		events = append(events, name+" "+data)
		if name == "change" && id == "" {
			t.Fatalf("a change event without id: %q", data)
		}
		if name == "done" {
			if id != "" {
				t.Fatalf("done with an id: %q", id)
			}
			break
		}
	}
	if len(events) != 2 || !strings.Contains(events[0], `"status":"DONE"`) || !strings.Contains(events[0], `"link_status":"ACTIVE"`) {
		t.Fatalf("events after the outcome: %q", events)
	}
	var sum struct {
		Links map[string]int `json:"links_by_status"`
	}
	json.Unmarshal([]byte(strings.TrimPrefix(events[1], "done ")), &sum)
	if sum.Links["ACTIVE"] != 1 || len(sum.Links) != 1 || !strings.Contains(events[1], `"number_done":1`) {
		t.Fatalf("done: %q", events[1])
	}
	if _, _, _, ok := r.next(); ok {
		t.Fatal("the stream went on after done")
	}
}

// accountOf returns the uuid of tenant0's account on wim0.
func accountOf(t *testing.T, b *bundle) string {
	t.Helper()
	var id string
	if err := b.db.Pool().QueryRow(t.Context(), `SELECT uuid::text FROM wim_accounts`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// Each retry of a task is a "retry" event of the stream, with an id to
// resume after, the attempt, the error and when the task runs again
// (issue 30, point 8): a client following an action whose controller
// refuses every call sees each failed attempt, not minutes of silence.
// The answers are checked against the OpenAPI document's x-events.
func TestEventStreamSendsRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	api := httpapi.New(b.f.Eng, httpapi.Options{EventPoll: 20 * time.Millisecond})
	srv := httptest.NewServer(openapitest.MustLoad(t, api.OpenAPI()).Handler(t, api.Handler()))
	t.Cleanup(srv.Close)
	ctx := t.Context()
	leases, err := b.db.AcquireLeases(ctx, "test", []string{accountOf(t, b)}, time.Minute)
	if err != nil || len(leases) != 1 {
		t.Fatalf("lease: %v, %v", leases, err)
	}
	// Two attempts refused by the controller; the first due again at once.
	refused := "dynpac create: Post \"http://10.0.0.1:8080/service/create\": dial tcp 10.0.0.1:8080: connect: connection refused"
	next := []time.Time{time.Now().Add(-time.Second), time.Now().Add(time.Hour)}
	for i, at := range next {
		claimAndFinish(t, b, leases[0], fmt.Sprint("c", i), wimro.Outcome{Status: wimro.ActionScheduled, ErrorMsg: &refused,
			RunAfter: &at, Reached: true, Retry: true})
	}

	// The action never settles: the stream is cut after 10 s at most.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, "GET", srv.URL+eventsPath(ids), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &sseReader{sc: bufio.NewScanner(resp.Body)}
	var got []string
	for len(got) < 3 {
		id, name, data, ok := r.next()
		if !ok {
			t.Fatalf("the stream ended after %q", got)
		}
		if name == ":" {
			continue
		}
		if id == "" {
			t.Fatalf("a %s event without id: %q", name, data)
		}
		var e struct {
			Status    string     `json:"status"`
			ErrorMsg  *string    `json:"error_msg"`
			Attempt   *int       `json:"attempt"`
			NextTryAt *time.Time `json:"next_try_at"`
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		line := name + " " + e.Status
		if e.Attempt != nil {
			line += fmt.Sprintf(" attempt %d", *e.Attempt)
		}
		if e.NextTryAt != nil {
			line += " next " + e.NextTryAt.UTC().Format(time.RFC3339)
		}
		if e.ErrorMsg != nil {
			line += ": " + *e.ErrorMsg
		}
		got = append(got, line)
	}
	want := []string{
		"change SCHEDULED",
		"retry SCHEDULED attempt 1 next " + next[0].UTC().Format(time.RFC3339) + ": " + refused,
		"retry SCHEDULED attempt 2 next " + next[1].UTC().Format(time.RFC3339) + ": " + refused,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
