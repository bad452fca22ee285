package rest_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/rest"
)

// recorder is a server that records the last request and answers status
// with body.
type recorder struct {
	srv    *httptest.Server
	got    chan *http.Request
	bodies chan string
}

func setup(t *testing.T, status int, body string) *recorder {
	t.Helper()
	r := &recorder{got: make(chan *http.Request, 16), bodies: make(chan string, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b := new(bytes.Buffer)
		_, _ = b.ReadFrom(req.Body)
		r.got <- req
		r.bodies <- b.String()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func client(t *testing.T, cfg connectors.Config) *rest.Client {
	t.Helper()
	c, err := rest.New("test", cfg)
	if err != nil {
		t.Fatalf("rest.New: %v", err)
	}
	return c
}

func TestDoSendsAuthAndBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      connectors.Config
		wantAuth string
		wantUA   string
	}{
		{"basic", connectors.Config{User: "u", Password: "p"}, "Basic dTpw", "wimro"},
		{"bearer", connectors.Config{AccountConfig: map[string]any{"bearer_token": "tok"}}, "Bearer tok", "wimro"},
		{"basic wins over bearer", connectors.Config{User: "u", Password: "p", WIMConfig: map[string]any{"bearer_token": "tok"}}, "Basic dTpw", "wimro"},
		{"none, named process", connectors.Config{UserAgent: "wimro/1.2 (host-a:9090)"}, "", "wimro/1.2 (host-a:9090)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := setup(t, http.StatusCreated, `{"ok":true}`)
			tt.cfg.URL = r.srv.URL + "/base/"
			c := client(t, tt.cfg)
			rep, err := c.JSON(t.Context(), "create", http.MethodPost, "/x", rest.MediaYANGJSON, map[string]int{"a": 1})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Status != http.StatusCreated || string(rep.Body) != `{"ok":true}` {
				t.Fatalf("reply = %d %q", rep.Status, rep.Body)
			}
			req := <-r.got
			if req.URL.Path != "/base/x" || req.Method != http.MethodPost {
				t.Errorf("request = %s %s, want POST /base/x", req.Method, req.URL.Path)
			}
			if got := req.Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if ua := req.Header.Get("User-Agent"); ua != tt.wantUA {
				t.Errorf("User-Agent = %q, want %q", ua, tt.wantUA)
			}
			if ct := req.Header.Get("Content-Type"); ct != rest.MediaYANGJSON {
				t.Errorf("Content-Type = %q", ct)
			}
			if b := <-r.bodies; b != `{"a":1}` {
				t.Errorf("body = %q", b)
			}
		})
	}
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		body   string
		kind   connectors.Kind
		text   string
	}{
		{http.StatusBadRequest, `bad vlan`, connectors.KindPermanent, "HTTP 400: bad vlan"},
		{http.StatusUnauthorized, ``, connectors.KindUnauthorized, "HTTP 401 Unauthorized"},
		{http.StatusNotFound, ``, connectors.KindNotFound, "HTTP 404"},
		{http.StatusServiceUnavailable, `busy`, connectors.KindRetryable, "busy"},
		{http.StatusNotImplemented, ``, connectors.KindPermanent, "HTTP 501"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			r := setup(t, tt.status, tt.body)
			c := client(t, connectors.Config{URL: r.srv.URL})
			rep, err := c.Do(t.Context(), "op", rest.Request{Method: http.MethodGet, Path: "/"})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() {
				t.Fatalf("status %d is OK", rep.Status)
			}
			e := c.Error("op", rep, "")
			if connectors.KindOf(e) != tt.kind || !strings.Contains(e.Error(), tt.text) || !strings.HasPrefix(e.Error(), "test op: ") {
				t.Fatalf("error = %q (kind %s), want kind %s containing %q", e, connectors.KindOf(e), tt.kind, tt.text)
			}
		})
	}
}

func TestTransportFailures(t *testing.T) {
	t.Parallel()
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		c := client(t, connectors.Config{URL: connectortest.WithUserInfo(connectortest.Unreachable(t), "user", "hunter2")})
		_, err := c.Do(t.Context(), "probe", rest.Request{Method: http.MethodGet, Path: "/"})
		if !connectors.Retryable(err) {
			t.Fatalf("error = %v, want Retryable", err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("error leaks the URL password: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		c := client(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"timeout_ms": 50}})
		_, err := c.Do(t.Context(), "slow", rest.Request{Method: http.MethodGet, Path: "/"})
		if !connectors.Retryable(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error = %v, want a Retryable deadline error", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		r := setup(t, 200, "")
		c := client(t, connectors.Config{URL: r.srv.URL})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.Do(ctx, "op", rest.Request{Method: http.MethodGet, Path: "/"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		select {
		case <-r.got:
			t.Fatal("a request was sent with a cancelled context")
		default:
		}
	})
}

func TestDecode(t *testing.T) {
	t.Parallel()
	c := client(t, connectors.Config{URL: "http://x"})
	var out struct{ A int }
	if err := c.Decode("get", rest.Reply{Status: 200, Body: []byte(`{"A":3}`)}, &out); err != nil || out.A != 3 {
		t.Fatalf("Decode = %v, %+v", err, out)
	}
	err := c.Decode("get", rest.Reply{Status: 200, Body: []byte(`<html>`)}, &out)
	if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "<html>") {
		t.Fatalf("Decode of HTML = %v, want a Permanent error quoting the body", err)
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a cert"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A FIFO nobody writes to hung the old reader; /dev/zero filled the
	// memory; a file just over the limit is refused too.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), rest.MaxCAFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  connectors.Config
		want string
	}{
		{"ca fifo", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"ca_file": fifo}}, "not a regular file"},
		{"ca device", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"ca_file": "/dev/zero"}}, "not a regular file"},
		{"ca directory", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"ca_file": dir}}, "not a regular file"},
		{"ca too big", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"ca_file": big}}, "larger than"},
		{"no url", connectors.Config{}, "wim_url"},
		{"not http", connectors.Config{URL: "ftp://x"}, "wim_url"},
		{"timeout text", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"timeout_ms": "soon"}}, "timeout_ms"},
		{"timeout negative", connectors.Config{URL: "http://x", WIMConfig: map[string]any{"timeout_ms": -1}}, "timeout_ms"},
		{"timeout zero", connectors.Config{URL: "http://x", WIMConfig: map[string]any{"timeout_ms": 0}}, "timeout_ms"},
		{"ca missing", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"ca_file": filepath.Join(dir, "none")}}, "ca_file"},
		{"ca not pem", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"ca_file": notPEM}}, "ca_file"},
		{"insecure not bool", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"insecure_skip_verify": "maybe"}}, "insecure_skip_verify"},
		{"token not string", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"bearer_token": 5}}, "bearer_token"},
		{"auth unknown", connectors.Config{URL: "https://x", User: "u", AccountConfig: map[string]any{"auth": "oauth"}}, `"auth"`},
		{"crosswork auth without a user", connectors.Config{URL: "https://x", AccountConfig: map[string]any{"auth": "crosswork"}}, `"auth"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := rest.New("test", tt.cfg)
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want a Permanent error naming %q", err, tt.want)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	srv := connectortest.TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	strict := client(t, connectors.Config{URL: srv.URL})
	if _, err := strict.Do(t.Context(), "probe", rest.Request{Method: http.MethodGet, Path: "/"}); err == nil || connectors.Retryable(err) {
		t.Fatalf("unverified certificate: error = %v, want a non-retryable error", err)
	}
	insecure := client(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"insecure_skip_verify": true}})
	if _, err := insecure.Do(t.Context(), "probe", rest.Request{Method: http.MethodGet, Path: "/"}); err != nil {
		t.Fatalf("insecure_skip_verify: %v", err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	writeCert(t, caFile, srv)
	trusted := client(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"ca_file": caFile}})
	if _, err := trusted.Do(t.Context(), "probe", rest.Request{Method: http.MethodGet, Path: "/"}); err != nil {
		t.Fatalf("ca_file: %v", err)
	}
}

func TestEscapeKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"wimro-1a2b":   "wimro-1a2b",
		"a,b":          "a%2Cb",
		"a/b c":        "a%2Fb%20c",
		"x=y'~._":      "x%3Dy%27~._",
		"é":            "%C3%A9",
		"of:0011/1":    "of%3A0011%2F1",
		"":             "",
		"%already%20x": "%25already%2520x",
	} {
		if got := rest.EscapeKey(in); got != want {
			t.Errorf("EscapeKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRESTCONFErrors(t *testing.T) {
	t.Parallel()
	body := []byte(`{"ietf-restconf:errors":{"error":[{"error-type":"application","error-tag":"data-exists","error-path":"/a:b","error-message":"exists"},{"error-type":"protocol","error-tag":"invalid-value"}]}}`)
	if got := rest.RESTCONFDetail(body); got != "data-exists: exists (at /a:b); invalid-value" {
		t.Errorf("RESTCONFDetail = %q", got)
	}
	if !rest.HasRESTCONFTag(body, "invalid-value") || rest.HasRESTCONFTag(body, "data-missing") {
		t.Error("HasRESTCONFTag is wrong")
	}
	if got := rest.RESTCONFDetail([]byte(`{"errors":{"error":[{"error-tag":"data-missing"}]}}`)); got != "data-missing" {
		t.Errorf("unqualified errors: %q", got)
	}
	for _, b := range []string{``, `not json`, `{"code":400}`, `{"ietf-restconf:errors":"x"}`} {
		if got := rest.ParseRESTCONFErrors([]byte(b)); got != nil {
			t.Errorf("ParseRESTCONFErrors(%q) = %+v, want nil", b, got)
		}
	}
}

// writeCert writes the test server's certificate as PEM.
func writeCert(t *testing.T, path string, srv *httptest.Server) {
	t.Helper()
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestController(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://onos:8181/onos/v1":             "http://onos:8181/onos/v1",
		"http://ONOS:8181/onos/v1/":            "http://onos:8181/onos/v1",
		"http://user:secret@onos:8181/onos/v1": "http://onos:8181/onos/v1",
		"http://onos/onos/v1":                  "http://onos:80/onos/v1",
		"https://onos/onos/v1":                 "https://onos:443/onos/v1",
		"http://[::1]:8181/onos/v1":            "http://[::1]:8181/onos/v1",
	} {
		if got := client(t, connectors.Config{URL: in}).Controller(); got != want {
			t.Errorf("Controller() of %q = %q, want %q", in, got, want)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	date := func(t time.Time) string { return t.UTC().Format(http.TimeFormat) }
	tests := []struct {
		name        string
		value, date string // Retry-After and Date; "" leaves it out
		want        time.Duration
	}{
		{"none", "", "", 0},
		{"seconds", "7", "", 7 * time.Second},
		{"seconds with spaces", " 7 ", "", 7 * time.Second},
		{"zero", "0", "", 0},
		{"leading zeros", "007", "", 7 * time.Second},
		{"an hour", "3600", "", time.Hour},
		{"above the cap", "3601", "", connectors.MaxRetryAfter},
		{"huge", "99999999999999999999", "", connectors.MaxRetryAfter},
		{"huger", strings.Repeat("9", 400), "", connectors.MaxRetryAfter},
		{"negative", "-5", "", 0},
		{"plus sign", "+5", "", 0},
		{"fraction", "1.5", "", 0},
		{"unit", "7s", "", 0},
		{"hex", "0x10", "", 0},
		{"garbage", "soon", "", 0},
		{"two values", "7, 8", "", 0},
		{"date", date(now.Add(30 * time.Second)), "", 30 * time.Second},
		{"date in the past", date(now.Add(-30 * time.Second)), "", 0},
		{"date now", date(now), "", 0},
		{"date far ahead", date(now.Add(48 * time.Hour)), "", connectors.MaxRetryAfter},
		{"date year 9999", "Fri, 31 Dec 9999 23:59:59 GMT", "", connectors.MaxRetryAfter},
		{"date year 1", "Mon, 01 Jan 0001 00:00:00 GMT", "", 0},
		{"RFC 850 date", now.Add(time.Minute).Format(time.RFC850), "", time.Minute},
		{"asctime date", now.Add(time.Minute).Format(time.ANSIC), "", time.Minute},
		// The controller's clock runs an hour late: its Date header, not
		// ours, is the reference.
		{"date after the reply's Date", date(now.Add(-time.Hour + 30*time.Second)), date(now.Add(-time.Hour)), 30 * time.Second},
		{"date before the reply's Date", date(now.Add(-time.Hour)), date(now.Add(-time.Hour + 30*time.Second)), 0},
		{"garbage Date header", date(now.Add(30 * time.Second)), "yesterday", 30 * time.Second},
		{"seconds ignore the Date header", "7", date(now.Add(-time.Hour)), 7 * time.Second},
		{"garbage date", "Fri, 32 Dec 2026 25:00:00 GMT", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tt.value != "" {
				h.Set("Retry-After", tt.value)
			}
			if tt.date != "" {
				h.Set("Date", tt.date)
			}
			if got := rest.RetryAfter(h, now); got != tt.want {
				t.Errorf("RetryAfter(Retry-After %q, Date %q) = %v, want %v", tt.value, tt.date, got, tt.want)
			}
		})
	}
}

// TestErrorRetryAfter: the error of a 429 or 503 reply carries the
// controller's Retry-After, and stays Retryable.
func TestErrorRetryAfter(t *testing.T) {
	t.Parallel()
	serverDate := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC) // a controller clock far off ours
	tests := []struct {
		name      string
		status    int
		header    map[string]string
		want      time.Duration
		retryable bool
	}{
		{"429 seconds", http.StatusTooManyRequests, map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"503 seconds", http.StatusServiceUnavailable, map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"503 date", http.StatusServiceUnavailable, map[string]string{
			"Retry-After": serverDate.Add(90 * time.Second).Format(http.TimeFormat),
			"Date":        serverDate.Format(http.TimeFormat),
		}, 90 * time.Second, true},
		{"429 huge", http.StatusTooManyRequests, map[string]string{"Retry-After": "99999999999999999999"}, connectors.MaxRetryAfter, true},
		{"429 garbage", http.StatusTooManyRequests, map[string]string{"Retry-After": "later"}, 0, true},
		{"429 without", http.StatusTooManyRequests, nil, 0, true},
		{"500 ignores it", http.StatusInternalServerError, map[string]string{"Retry-After": "7"}, 0, true},
		{"400 ignores it", http.StatusBadRequest, map[string]string{"Retry-After": "7"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
			}))
			t.Cleanup(srv.Close)
			c := client(t, connectors.Config{URL: srv.URL})
			rep, err := c.Do(t.Context(), "op", rest.Request{Method: http.MethodGet, Path: "/"})
			if err != nil {
				t.Fatal(err)
			}
			e := c.Error("op", rep, "")
			if got := connectors.RetryAfter(e); got != tt.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", e, got, tt.want)
			}
			if got := connectors.RetryAfter(fmt.Errorf("create: %w", e)); got != tt.want {
				t.Errorf("RetryAfter of the wrapped error = %v, want %v", got, tt.want)
			}
			if connectors.Retryable(e) != tt.retryable {
				t.Errorf("Retryable(%v) = %v, want %v", e, !tt.retryable, tt.retryable)
			}
		})
	}
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	head := "busy \uFFFD" + strings.Repeat("a", rest.MaxSnippet-9) // 511 bytes
	tests := []struct {
		name string
		body string
		want string
	}{
		{"empty", "", ""},
		{"short", "  bad vlan\n", "bad vlan"},
		{"exactly MaxSnippet", strings.Repeat("a", rest.MaxSnippet), strings.Repeat("a", rest.MaxSnippet)},
		{"one byte more", strings.Repeat("a", rest.MaxSnippet+1), strings.Repeat("a", rest.MaxSnippet) + "…"},
		{"rune across the cut", strings.Repeat("a", rest.MaxSnippet-1) + "€b", strings.Repeat("a", rest.MaxSnippet-1) + "…"},
		{"rune ending at the cut", strings.Repeat("a", rest.MaxSnippet-3) + "€b", strings.Repeat("a", rest.MaxSnippet-3) + "€…"},
		{"NUL bytes", "a\x00b\x00", "ab"},
		{"only NUL bytes", "\x00\x00", ""},
		{"NUL around spaces", "\x00 x \x00", "x"},
		{"0xff bytes", "a\xffb\xfe\xff", "a\uFFFDb\uFFFD"},
		{"all at once", connectortest.Unstorable, head + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := rest.Snippet([]byte(tt.body))
			if got != tt.want {
				t.Errorf("Snippet = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || len(got) > rest.MaxSnippet+len("…") {
				t.Errorf("Snippet = %q: not storable", got)
			}
		})
	}
}

// TestControllerTextInErrors: whichever way the controller's text reaches
// an error (Snippet of the body, a RESTCONF error-message, a detail that
// went through Clip), the error text is valid UTF-8, without NUL, and
// short.
func TestControllerTextInErrors(t *testing.T) {
	t.Parallel()
	restconf := connectortest.MustJSON(t, map[string]any{"ietf-restconf:errors": map[string]any{"error": []any{
		map[string]any{"error-type": "application", "error-tag": "operation-failed", "error-message": connectortest.Unstorable},
	}}})
	c := client(t, connectors.Config{URL: "http://x"})
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"Error with the body", c.Error("op", rest.Reply{Status: 503, Body: []byte(connectortest.Unstorable)}, ""), "test op: HTTP 503: busy \uFFFDaaa"},
		{"Error with RESTCONF detail", c.Error("op", rest.Reply{Status: 503, Body: []byte(restconf)}, rest.RESTCONFDetail([]byte(restconf))), "test op: HTTP 503: operation-failed: busy \uFFFDaaa"},
		{"Error with a clipped detail", c.Error("op", rest.Reply{Status: 503}, rest.Clip(connectortest.Unstorable, rest.MaxSnippet)), "test op: HTTP 503: busy \uFFFDaaa"},
		{"Decode", c.Decode("op", rest.Reply{Status: 200, Body: []byte(connectortest.Unstorable)}, new(map[string]any)), "not the expected JSON (busy \uFFFDaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.err.Error()
			if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || len(got) > 2*rest.MaxSnippet {
				t.Errorf("error text is not storable (%d bytes): %q", len(got), got)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("error = %q, want it to contain %q", got, tt.want)
			}
		})
	}
}
