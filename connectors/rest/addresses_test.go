package rest_test

import (
	"cmp"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/rest"
)

// countingServer serves h on addr (127.0.0.1 when empty) and counts the
// requests.
func countingServer(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	return connectortest.ServerAt(t, cmp.Or(addr, "127.0.0.1:0"), h)
}

// wantRefusal fails unless err is a permanent refusal naming want and
// the flag, without the metadata body.
func wantRefusal(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
		t.Fatalf("Do = %v (%s), want a permanent refusal", err, connectors.KindOf(err))
	}
	if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "--controller-allow") || strings.Contains(msg, "AKIA") {
		t.Fatalf("refusal %q: want it to name %q and the flag, and no body", msg, want)
	}
}

func policy(t *testing.T, lookup map[string]string, entries ...string) *connectors.AddressPolicy {
	t.Helper()
	p, err := connectors.ParseAddressPolicy(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return p.WithLookup(connectortest.Resolver(lookup))
}

const metadataBody = "ami-id\ninstance-id\niam/security-credentials/role: AKIASECRETMETADATA"

// TestAddressPolicyInClient checks that the client connects only where
// its policy allows, on the addresses names resolve to when connecting
// (whatever they said before: DNS rebinding gains nothing) and on every
// redirect: a refused address gets a permanent error naming it and the
// flag, and no request.
func TestAddressPolicyInClient(t *testing.T) {
	t.Parallel()
	target, hits := countingServer(t, "127.0.0.2:0", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(metadataBody))
	})
	at := func(host string) string {
		return "http://" + net.JoinHostPort(host, itoa(target.Listener.Addr().(*net.TCPAddr).Port)) + "/x"
	}
	tests := []struct {
		name     string
		policy   *connectors.AddressPolicy
		url      string
		redirect bool // url is where an allowed controller redirects to
		want     string
	}{
		{"default policy, a name for the metadata address", policy(t, map[string]string{"metadata.test": "169.254.169.254"}), at("metadata.test"), false, "169.254.169.254"},
		{"default policy, a name for a link-local address", policy(t, map[string]string{"ll.test": "169.254.10.10"}), at("ll.test"), false, "link-local"},
		{"a name for an address outside the list", policy(t, map[string]string{"ctl.test": "127.0.0.2"}, "10.0.0.0/8"), at("ctl.test"), false, "127.0.0.2"},
		{"an address outside the list", policy(t, nil, "10.0.0.0/8"), target.URL, false, "127.0.0.2"},
		{"redirect to an address outside the list", policy(t, nil, "127.0.0.1/32"), at("127.0.0.2"), true, "127.0.0.2"},
		{"redirect to a name for an address outside the list", policy(t, map[string]string{"other.test": "127.0.0.2"}, "127.0.0.1/32"), at("other.test"), true, "127.0.0.2"},
		{"redirect to a name for the metadata address", policy(t, map[string]string{"metadata.test": "169.254.169.254"}), at("metadata.test"), true, "169.254.169.254"},
		{"redirect to the metadata address", policy(t, nil), "http://169.254.169.254/wimro-test", true, "169.254.169.254"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if tt.redirect {
				ctl, _ := countingServer(t, "", func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, tt.url, http.StatusFound)
				})
				url = ctl.URL
			}
			// A literal address is refused when the client is built.
			c, err := rest.New("test", connectors.Config{URL: url, Addresses: tt.policy})
			if err == nil {
				_, err = c.Do(t.Context(), "check", rest.Request{Method: "GET", Path: "/"})
			}
			wantRefusal(t, err, tt.want)
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the refused server got %d requests, want none", n)
	}
}

// TestRedirectToMetadataByDefault checks that a client built with no
// policy (the default) does not follow a controller's redirect to the
// metadata address: a permanent refusal naming the address and the flag,
// without a connection attempt.
func TestRedirectToMetadataByDefault(t *testing.T) {
	t.Parallel()
	ctl, _ := countingServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/wimro-test", http.StatusFound)
	})
	c, err := rest.New("test", connectors.Config{URL: ctl.URL, AccountConfig: map[string]any{"timeout_ms": 2000}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(t.Context(), "check", rest.Request{Method: "GET", Path: "/"})
	wantRefusal(t, err, "169.254.169.254")
}

// TestControllerBodyExcerpt checks that what a controller answers reaches
// an error only as a short one-line excerpt without the account's
// secrets.
func TestControllerBodyExcerpt(t *testing.T) {
	t.Parallel()
	const password, token = "pa55-w0rd-secret", "tok-3n-secret"
	body := "first line\r\n\x1b[31mred\x1b[0m\u202egnp.exe\t" + password + " " + token + " " + strings.Repeat("x", 300) + "TAIL-SECRET"
	srv, _ := countingServer(t, "", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(body))
	})
	for secret, cfg := range map[string]connectors.Config{
		password: {URL: srv.URL, User: "admin", Password: password},
		token:    {URL: srv.URL, AccountConfig: map[string]any{"bearer_token": token}},
	} {
		c, err := rest.New("test", cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Do(t.Context(), "check", rest.Request{Method: "GET", Path: "/"})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{c.Error("check", r, ""), c.Decode("check", r, new(struct{}))} {
			msg := err.Error()
			start, end := strings.Index(msg, "first line"), strings.Index(msg, "…")
			if start < 0 || end < 0 || end-start > rest.MaxSnippet {
				t.Errorf("the body is not quoted as an excerpt of at most %d bytes: %q", rest.MaxSnippet, msg)
			}
			if strings.ContainsFunc(msg, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
				t.Errorf("control or format characters in %q", msg)
			}
			if strings.Contains(msg, secret) || strings.Contains(msg, "TAIL-SECRET") {
				t.Errorf("a secret or the body's tail in %q", msg)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
