package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

const (
	waitLink    = "11111111-1111-1111-1111-111111111111"
	waitActions = "/openmano/t0/instances/i1/action/a1"
)

// waitAgainst runs `openmano action-list i1 a1 --wait` against a server
// that lists one CREATE action a1 and answers its n-th stream request
// (from 1) with stream(w, r, n).
func waitAgainst(t *testing.T, stream func(w http.ResponseWriter, r *http.Request, n int)) result {
	t.Helper()
	var (
		mu       sync.Mutex
		requests int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case waitActions:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"actions": [{"uuid": "a1", "description": "CREATE", "number_tasks": 1, "number_done": 0, "number_failed": 0}]}`)
			return
		case waitActions + "/events":
		default:
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		stream(w, r, n)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	env := map[string]string{"OPENMANO_HOST": u.Hostname(), "OPENMANO_PORT": u.Port(), "OPENMANO_TENANT": "t0"}
	return runCLI(t, func(k string) string { return env[k] }, "", "action-list", "i1", "a1", "--wait")
}

// writeDone writes the stream's DONE change of the link and its done event.
func writeDone(w io.Writer, id string) {
	fmt.Fprintf(w, "id: %s\nevent: change\ndata: {\"task_index\":0,\"action\":\"CREATE\",\"status\":\"DONE\",\"wan_link_id\":%q,\"link_status\":\"ACTIVE\",\"error_msg\":null,\"at\":\"t2\"}\n\n", id, waitLink)
	fmt.Fprintf(w, "event: done\ndata: {\"number_tasks\":1,\"number_done\":1,\"number_failed\":0,\"links_by_status\":{\"ACTIVE\":1},\"wan_links\":[{\"wan_link_id\":%q,\"status\":\"ACTIVE\",\"error_msg\":null}]}\n\n", waitLink)
}

// A stream that drops before done is resumed after the last event seen,
// with Last-Event-ID, and the wait ends on the resumed stream's done.
func TestWaitResumesADroppedStream(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen []string // the Last-Event-ID of each stream request
	)
	r := waitAgainst(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Last-Event-ID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			// One event, then the connection drops.
			fmt.Fprintf(w, "id: 5-1\nevent: change\ndata: {\"task_index\":0,\"action\":\"CREATE\",\"status\":\"SCHEDULED\",\"wan_link_id\":%q,\"link_status\":\"BUILD\",\"error_msg\":null,\"at\":\"t1\"}\n\n", waitLink)
			return
		}
		io.WriteString(w, ": keep-alive\n\n")
		writeDone(w, "6-2")
	})
	if r.code != 0 || !strings.Contains(r.stdout, "t2 task 0 CREATE DONE link "+waitLink+" ACTIVE") ||
		!strings.Contains(r.stdout, "done: tasks done 1/1, failed 0; links ACTIVE 1/1") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[ 5-1]" {
		t.Fatalf("Last-Event-ID of the stream requests: %q, want none then 5-1", seen)
	}
}

// A stream refused by the server's cap (429 with Retry-After) is asked
// for again once the server says, not given up: the wait ends on the
// stream it then gets, and stderr says why it paused.
func TestWaitRetriesAStreamRefusedByTheCap(t *testing.T) {
	t.Parallel()
	r := waitAgainst(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= 2 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error": {"type": "TOO_MANY", "description": "2 event streams are open with this token, the most --max-event-streams-per-token allows"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		writeDone(w, "1")
	})
	if r.code != 0 || !strings.Contains(r.stdout, "done: tasks done 1/1, failed 0; links ACTIVE 1/1") ||
		strings.Count(r.stderr, "the most --max-event-streams-per-token allows; trying again in 100ms") != 2 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestWaitVerdict(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	idx := func(i int) *int { return &i }
	for _, tt := range []struct {
		name    string
		events  []wireEvent
		links   string // the summary's links: id=status,...
		problem string // in the error; "" for success
	}{
		{"created ACTIVE", []wireEvent{{TaskIndex: idx(0), Action: str("CREATE"), Status: str("DONE"), WANLinkID: str("L1"), LinkStatus: str("ACTIVE")}}, "L1=ACTIVE", ""},
		{"created DOWN", []wireEvent{{TaskIndex: idx(0), Action: str("CREATE"), Status: str("DONE"), WANLinkID: str("L1"), LinkStatus: str("DOWN")}}, "L1=DOWN",
			"link L1 is DOWN, not ACTIVE"},
		{"link in ERROR", []wireEvent{{TaskIndex: idx(0), Action: str("CREATE"), Status: str("DONE"), WANLinkID: str("L1"), LinkStatus: str("ERROR")}}, "L1=ERROR",
			"link L1 ERROR"},
		{"task failed", []wireEvent{{TaskIndex: idx(1), Action: str("CREATE"), Status: str("FAILED"), WANLinkID: str("L2"), LinkStatus: str("ERROR"), ErrorMsg: str("no port")}},
			"L2=ERROR", "task 1 CREATE of link L2 FAILED: no port"},
		{"deleted", []wireEvent{{TaskIndex: idx(0), Action: str("DELETE"), Status: str("DONE"), WANLinkID: str("L1")}}, "L1=DELETED", ""},
		{"delete left the link", []wireEvent{{TaskIndex: idx(0), Action: str("DELETE"), Status: str("DONE"), WANLinkID: str("L1")}}, "L1=ACTIVE",
			"link L1 is ACTIVE, not DELETED"},
		{"no links", nil, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			w := newWatcher(&out)
			for _, e := range tt.events {
				w.change(e)
			}
			var sum wireSummary
			for _, l := range strings.Split(tt.links, ",") {
				if id, st, ok := strings.Cut(l, "="); ok {
					sum.WANLinks = append(sum.WANLinks, struct {
						ID       string  `json:"wan_link_id"`
						Status   string  `json:"status"`
						ErrorMsg *string `json:"error_msg"`
					}{ID: id, Status: st})
				}
			}
			err := w.finish(sum)
			switch {
			case tt.problem == "" && err != nil:
				t.Fatalf("want success, got %v", err)
			case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
				t.Fatalf("want %q, got %v", tt.problem, err)
			}
			if !strings.Contains(out.String(), "done: ") {
				t.Fatalf("no final line: %q", out.String())
			}
		})
	}
}

// On a terminal the progress is one line rewritten in place.
func TestWaitProgressLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := newWatcher(&out)
	w.terminal = true
	s := func(v string) *string { return &v }
	for i, st := range []string{"SCHEDULED", "DONE"} {
		for task := range 2 {
			ls := "BUILD"
			if st == "DONE" {
				ls = "ACTIVE"
			}
			w.change(wireEvent{TaskIndex: &[]int{task}[0], Action: s("CREATE"), Status: s(st), WANLinkID: s(fmt.Sprint("L", task)), LinkStatus: s(ls), At: fmt.Sprint(i)})
		}
	}
	if err := w.finish(wireSummary{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Count(text, "\r") != 5 || strings.Count(text, "\n") != 2 || !strings.Contains(text, "\rtasks done 2/2, failed 0; links ACTIVE 2/2") {
		t.Fatalf("progress output: %q", text)
	}
}

// A retry line says which attempt failed, when the next one runs
// (counted from the event) and why, on one line, the error cut short.
func TestRetryLine(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	idx := func(i int) *int { return &i }
	long := strings.Repeat("refused ", 40)
	for _, tt := range []struct {
		name string
		e    wireEvent
		want string
	}{
		{"next try in 7.6 s", wireEvent{TaskIndex: idx(0), Action: str("CREATE"), WANLinkID: str("L1"), Attempt: idx(3), At: "2026-01-01T00:00:00Z",
			NextTryAt: str("2026-01-01T00:00:07.6Z"), ErrorMsg: str("Impossible to connect ELINE.\n\tconnection refused")},
			"2026-01-01T00:00:00Z task 0 CREATE retry: attempt 3 failed, next try in 7.6s (link L1): Impossible to connect ELINE. connection refused"},
		{"next try already passed", wireEvent{TaskIndex: idx(1), Action: str("DELETE"), Attempt: idx(12), At: "2026-01-01T00:00:09Z",
			NextTryAt: str("2026-01-01T00:00:08Z"), ErrorMsg: str("HTTP 503")},
			"2026-01-01T00:00:09Z task 1 DELETE retry: attempt 12 failed, next try in 0s: HTTP 503"},
		{"no next try time, a long error", wireEvent{TaskIndex: idx(0), Action: str("CREATE"), Attempt: idx(1), At: "t", ErrorMsg: str(long)},
			"t task 0 CREATE retry: attempt 1 failed, next try later: " + string([]rune(strings.TrimSpace(long))[:retryExcerpt-1]) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := retryLine(tt.e); got != tt.want {
				t.Fatalf("retryLine =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
