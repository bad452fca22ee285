// Package connectortest holds the helpers the connector tests share: a
// log to search for secrets, JSON for comparisons, a URL where nothing
// answers, building a connector through a registry as wimd does, and the
// check that a connector hands its transport settings to the shared REST
// client, and the check of how a connector reports an overloaded
// controller's error text. It is imported only by _test.go files.
package connectortest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
	"github.com/wimro/wimro/internal/testkit/logtest"
)

// LogBuffer is an io.Writer that concurrent writers may share (a
// connector logs from the goroutines of parallel calls).
type LogBuffer = logtest.Buffer

// Logger returns a debug-level text logger and the buffer it writes to.
// When t fails, the log is printed.
func Logger(t testing.TB) (*slog.Logger, *LogBuffer) {
	t.Helper()
	return logtest.Logger(t, "connector log")
}

// NoSecret fails t when secret appears in the text of one of errs or in
// logs. errs are the errors of calls meant to fail: a nil one fails t too.
func NoSecret(t testing.TB, secret string, errs []error, logs string) {
	t.Helper()
	if secret == "" {
		t.Fatal("NoSecret: the secret is empty")
	}
	for i, err := range errs {
		switch {
		case err == nil:
			t.Errorf("error %d is nil: a call that should fail succeeded", i)
		case strings.Contains(err.Error(), secret):
			t.Errorf("the secret %q leaked into error %d: %v", secret, i, err)
		}
	}
	if strings.Contains(logs, secret) {
		t.Errorf("the secret %q leaked into the log:\n%s", secret, logs)
	}
}

// MustJSON returns v as JSON, failing t when it cannot be marshalled.
func MustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// SameJSON reports whether two JSON texts hold the same value (object
// member order and spacing aside); text that is not JSON fails t.
func SameJSON(t testing.TB, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

// Unreachable returns the http URL of a test server that is closed
// already: connections to it are refused.
func Unreachable(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// WithUserInfo returns rawURL ("scheme://host...") with user:password
// written into it as they are, unescaped, so that a leak of the password
// shows as the password itself.
func WithUserInfo(rawURL, user, password string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		panic("connectortest: WithUserInfo needs scheme://host, got " + rawURL)
	}
	return scheme + "://" + user + ":" + password + "@" + rest
}

// Builder returns a function that builds connectors through a registry
// holding what register registers, as wimd does, failing t on an error.
// A config without a type gets typ.
func Builder(typ string, register func(*connectors.Registry)) func(t testing.TB, cfg connectors.Config) connectors.Connector {
	return func(t testing.TB, cfg connectors.Config) connectors.Connector {
		t.Helper()
		if cfg.Type == "" {
			cfg.Type = typ
		}
		r := connectors.NewRegistry()
		register(r)
		c, err := r.New(cfg)
		if err != nil {
			t.Fatalf("building the connector: %v", err)
		}
		return c
	}
}

// Capabilities returns what type typ, registered by register, declares
// for a connector built with cfg (its Type set to typ): the conformance
// suite's Harness.Capabilities, taken from the registration itself so
// that the suite checks what the engine and the runner are told.
func Capabilities(typ string, register func(*connectors.Registry), cfg connectors.Config) connectors.Capabilities {
	r := connectors.NewRegistry()
	register(r)
	cfg.Type = typ
	return r.Capabilities(cfg)
}

// TLSServer serves h over TLS with a certificate no client trusts, until
// t ends. The handshakes that clients refuse are not logged.
func TLSServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// Resolver resolves the host names of names (name to address) without
// DNS, for connectors.AddressPolicy.WithLookup; any other name is not
// found.
func Resolver(names map[string]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		if ip, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(ip)}, nil
		}
		return nil, fmt.Errorf("no such host %q", host)
	}
}

// ServerAt serves h on addr (host:port; a loopback address other than
// 127.0.0.1, such as 127.0.0.2:0, is one an address policy can refuse
// while 127.0.0.1 is allowed) until t ends, and counts the requests it
// gets, so a test can tell that a refused address was never reached.
func ServerAt(t testing.TB, addr string, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &hits
}

// CheckTransport checks that the connectors build makes pass their
// settings on to the shared REST client. Behind a TLS server serving h (a
// controller emulator that asks for no credentials), CheckCredentials must
// fail, not Retryable, while the certificate is not trusted, and succeed
// with insecure_skip_verify, every request carrying the bearer_token set.
func CheckTransport(t testing.TB, build func(testing.TB, connectors.Config) connectors.Connector, h http.Handler) {
	t.Helper()
	const token = "connectortest-token"
	var mu sync.Mutex
	var auth []string
	srv := TLSServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	strict := build(t, connectors.Config{URL: srv.URL})
	switch err := strict.CheckCredentials(t.Context()); {
	case err == nil:
		t.Errorf("unverified certificate: CheckCredentials succeeded, want a non-retryable error")
	case connectors.Retryable(err):
		t.Errorf("unverified certificate: CheckCredentials = %v, Retryable; want a non-retryable error", err)
	}
	c := build(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"insecure_skip_verify": true, "bearer_token": token}})
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatalf("insecure_skip_verify and bearer_token: CheckCredentials = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 {
		t.Fatal("CheckCredentials sent no request")
	}
	for i, a := range auth {
		if a != "Bearer "+token {
			t.Errorf("request %d: Authorization = %q, want the bearer token", i, a)
		}
	}
}

// Unstorable is controller text that PostgreSQL would refuse as it is:
// "busy", a NUL and an 0xff byte, then a 3-byte rune (€) across byte
// rest.MaxSnippet both as it is and once cleaned (the NUL dropped, 0xff
// made the 3-byte U+FFFD), then 64 KiB. Its clean start is
// UnstorableStart.
var Unstorable = "busy\x00 \xff" + strings.Repeat("a", rest.MaxSnippet-9) + "€" + strings.Repeat("b", 64<<10)

// UnstorableStart is how an error quoting Unstorable shows its start.
const UnstorableStart = "busy \uFFFDaaaa"

// MaxQuoting bounds the text of an error quoting Unstorable: the
// connector's words around one rest.Snippet.
const MaxQuoting = 1024

// CheckControllerError checks how a connector reports an overloaded
// controller. Behind a server answering every request 503 Service
// Unavailable with "Retry-After: 7" and a body quoting Unstorable, first
// Unstorable itself, then errorBody as JSON (the controller's error format
// holding Unstorable; nil skips it), CheckCredentials must fail Retryable,
// with connectors.RetryAfter 7s, and with a text that PostgreSQL can store
// (valid UTF-8, no NUL), at most MaxQuoting bytes, quoting the controller:
// it contains UnstorableStart.
func CheckControllerError(t testing.TB, build func(testing.TB, connectors.Config) connectors.Connector, errorBody any) {
	t.Helper()
	bodies := [][2]string{{"raw body", Unstorable}}
	if errorBody != nil {
		bodies = append(bodies, [2]string{"error body", MustJSON(t, errorBody)})
	}
	for _, b := range bodies {
		name, body := b[0], b[1]
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		err := build(t, connectors.Config{URL: srv.URL}).CheckCredentials(t.Context())
		if err == nil {
			t.Errorf("%s: CheckCredentials succeeded against a controller answering 503", name)
			continue
		}
		if !connectors.Retryable(err) {
			t.Errorf("%s: CheckCredentials = %v (%s), want Retryable", name, err, connectors.KindOf(err))
		}
		if got := connectors.RetryAfter(err); got != 7*time.Second {
			t.Errorf("%s: Retry-After 7: connectors.RetryAfter = %v, want 7s", name, got)
		}
		text := err.Error()
		switch {
		case !utf8.ValidString(text):
			t.Errorf("%s: the error text is not valid UTF-8: %q", name, text)
		case strings.IndexByte(text, 0) >= 0:
			t.Errorf("%s: the error text holds a NUL byte: %q", name, text)
		case len(text) > MaxQuoting:
			t.Errorf("%s: the error text is %d bytes long, more than %d", name, len(text), MaxQuoting)
		case !strings.Contains(text, UnstorableStart):
			t.Errorf("%s: the error text %q does not quote the controller (%q)", name, text, UnstorableStart)
		}
	}
}
