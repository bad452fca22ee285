package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/testkit/logtest"
)

// opsServer serves the built-in routes plus extra ones, with a token and
// a readable log.
func opsServer(t *testing.T, extra ...httpapi.Route) (*httptest.Server, *logtest.Buffer) {
	t.Helper()
	logger, buf := logtest.Logger(t, "server log")
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Logger: logger, Token: "api-tok-0c1d", Version: "1.2.3-test"}, extra...).Handler())
	t.Cleanup(srv.Close)
	return srv, buf
}

func opsGet(t *testing.T, url, token string, header ...string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET %s: not JSON: %q", url, raw)
	}
	return resp.StatusCode, body, resp.Header
}

func TestLivezIsPublic(t *testing.T) {
	srv, _ := opsServer(t)
	status, body, _ := opsGet(t, srv.URL+"/livez", "")
	if status != 200 || body["status"] != "ok" || body["version"] != "1.2.3-test" {
		t.Fatalf("livez = %d %v", status, body)
	}
}

func TestOpenmanoVersion(t *testing.T) {
	srv, _ := opsServer(t)
	if status, body, _ := opsGet(t, srv.URL+"/openmano/version", "api-tok-0c1d"); status != 200 || body["version"] != "1.2.3-test" ||
		body["openmano_version"] != httpapi.OpenmanoVersion || len(body) != 2 {
		t.Fatalf("version = %d %v", status, body)
	}
	// Like every /openmano route, it asks for the token when one is set.
	if status, _, _ := opsGet(t, srv.URL+"/openmano/version", ""); status != 401 {
		t.Fatalf("version without the token = %d, want 401", status)
	}
}

// TestAccessLog: one INFO line per request with the route pattern (not
// the path), the status, the duration in milliseconds and the request id,
// which the answer echoes; never the token.
func TestAccessLog(t *testing.T) {
	srv, buf := opsServer(t)
	_, _, h := opsGet(t, srv.URL+"/openmano/version", "api-tok-0c1d", "X-Request-Id", "req-42")
	if h.Get("X-Request-Id") != "req-42" {
		t.Errorf("X-Request-Id answered %q", h.Get("X-Request-Id"))
	}
	opsGet(t, srv.URL+"/openmano/some-tenant/wims?secret=x", "api-tok-0c1d")
	_, _, h = opsGet(t, srv.URL+"/livez", "")
	generated := h.Get("X-Request-Id")
	if generated == "" {
		t.Error("no generated request id answered")
	}
	_, _, h = opsGet(t, srv.URL+"/livez", "", "X-Request-Id", strings.Repeat("x", 4000))
	if n := len(h.Get("X-Request-Id")); n > 128 {
		t.Errorf("a 4000-byte request id is echoed with %d bytes", n)
	}
	log := buf.String()
	if strings.Contains(log, strings.Repeat("x", 200)) {
		t.Error("a 4000-byte request id is logged whole")
	}
	for _, want := range []string{
		`level=INFO msg="http request" method=GET route=/openmano/version status=200 duration_ms=`,
		`request_id=req-42`,
		`route=/livez status=200`,
		"request_id=" + generated,
		`status=404`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	var access []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `msg="http request"`) {
			access = append(access, l)
		}
	}
	if len(access) != 4 {
		t.Errorf("%d access lines, want 4:\n%s", len(access), log)
	}
	if strings.Contains(log, "api-tok-0c1d") {
		t.Errorf("the log holds the token:\n%s", log)
	}
	for _, leak := range []string{"secret=x", "some-tenant"} {
		if strings.Contains(strings.Join(access, "\n"), leak) {
			t.Errorf("the log holds %q:\n%s", leak, log)
		}
	}
}

// TestPanicAnswersJSON500: a panicking handler answers the error shape
// with 500 (the panic's text stays in the log, not the answer), is logged
// with its request, and the server goes on.
func TestPanicAnswersJSON500(t *testing.T) {
	srv, buf := opsServer(t, httpapi.Route{Method: "GET", Pattern: "/boom", Public: true,
		Handler: func(http.ResponseWriter, *http.Request) { panic("kaboom") }})
	status, body, _ := opsGet(t, srv.URL+"/boom", "")
	e, _ := body["error"].(map[string]any)
	if status != 500 || e == nil || e["code"] != 500.0 || e["type"] != "500 Internal Server Error" || e["description"] == "" {
		t.Fatalf("panic answered %d %v", status, body)
	}
	if status, _, _ := opsGet(t, srv.URL+"/livez", ""); status != 200 {
		t.Fatalf("after the panic, livez = %d", status)
	}
	log := buf.String()
	if !strings.Contains(log, `msg="handler panicked"`) || !strings.Contains(log, "panic=kaboom") || !strings.Contains(log, `route=/boom status=500`) {
		t.Fatalf("the log lacks the panic or its access line:\n%s", log)
	}
}

// The probes log what changes, once, at the level it deserves, and never
// "request failed": a 503 of /readyz while a process starts is INFO the
// first time and DEBUG when it repeats; readiness lost after it was ready
// is a WARN (again when its reason changes); readiness (re)gained is INFO.
// /healthz: a failure is a WARN, the recovery INFO, the first success
// nothing above DEBUG.
func TestProbesLogWhatChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path  string
		steps []string // the check's error at each probe, "" passing
		want  []string // the line each probe logs, "LEVEL msg"
	}{
		{"/readyz",
			[]string{"a", "a", "b", "", "", "c", "c", "d", ""},
			[]string{"INFO not ready", "DEBUG not ready", "INFO not ready", "INFO ready", "DEBUG ready", "WARN not ready", "DEBUG not ready", "WARN not ready", "INFO ready"}},
		{"/healthz",
			[]string{"", "", "a", "a", ""},
			[]string{"DEBUG healthy", "DEBUG healthy", "WARN unhealthy", "DEBUG unhealthy", "INFO healthy"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			var step atomic.Pointer[string]
			check := func(context.Context) error {
				if s := *step.Load(); s != "" {
					return errors.New(s)
				}
				return nil
			}
			logger, buf := logtest.Logger(t, "server log")
			srv := httptest.NewServer(httpapi.NewServer(httpapi.Options{Logger: logger, Health: check, Ready: check}).Handler())
			t.Cleanup(srv.Close)
			line := regexp.MustCompile(`level=(\w+) msg="?(not ready|ready|unhealthy|healthy|request failed)"?( |$)`)
			seen := 0
			for i, s := range tt.steps {
				step.Store(&s)
				status, _, _ := opsGet(t, srv.URL+tt.path, "")
				if want := map[bool]int{true: 200, false: 503}[s == ""]; status != want {
					t.Fatalf("probe %d: %d, want %d", i, status, want)
				}
				var got []string
				for _, l := range strings.Split(buf.String(), "\n")[seen:] {
					if m := line.FindStringSubmatch(l); m != nil {
						got = append(got, m[1]+" "+m[2])
					}
				}
				seen = strings.Count(buf.String(), "\n")
				if len(got) != 1 || got[0] != tt.want[i] {
					t.Errorf("probe %d (%q): logged %q, want %q", i, s, got, tt.want[i])
				}
			}
		})
	}
}
