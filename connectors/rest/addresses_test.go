package rest_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// countingServer answers body on every request, on addr ("" for
// 127.0.0.1), and counts the requests.
func countingServer(t *testing.T, addr string, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// names resolves test host names without DNS.
func names(m map[string]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		if ip, ok := m[host]; ok {
			return []netip.Addr{netip.MustParseAddr(ip)}, nil
		}
		return nil, errors.New("no such host")
	}
}

func policy(t *testing.T, lookup map[string]string, entries ...string) *connectors.AddressPolicy {
	t.Helper()
	p, err := connectors.ParseAddressPolicy(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return p.WithLookup(names(lookup))
}

const metadataBody = "ami-id\ninstance-id\niam/security-credentials/role: AKIASECRETMETADATA"

// TestAddressPolicyAtDial checks that a controller URL whose host name
// resolves to an address the policy refuses is refused when connecting,
// without a connection, with a permanent error naming the address and the
// flag, and that the body of what answers there never shows.
func TestAddressPolicyAtDial(t *testing.T) {
	t.Parallel()
	meta, hits := countingServer(t, "", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(metadataBody))
	})
	port := meta.Listener.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name   string
		policy *connectors.AddressPolicy
		url    string
		want   string
	}{
		{"default policy, a name for the metadata address", policy(t, map[string]string{"metadata.test": "169.254.169.254"}),
			"http://metadata.test:" + itoa(port), "169.254.169.254"},
		{"default policy, a name for a link-local address", policy(t, map[string]string{"ll.test": "169.254.10.10"}),
			"http://ll.test:" + itoa(port), "link-local"},
		{"a list without the server's address", policy(t, map[string]string{"ctl.test": "127.0.0.1"}, "10.0.0.0/8"),
			"http://ctl.test:" + itoa(port), "127.0.0.1"},
		// DNS rebinding: checked at the dial, whatever the name said before.
		{"the server itself, outside the list", policy(t, nil, "10.0.0.0/8"), meta.URL, "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := rest.New("test", connectors.Config{URL: tt.url, Addresses: tt.policy})
			if err != nil {
				// A literal address is refused when the client is built.
				if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--controller-allow") {
					t.Fatalf("rest.New: %v", err)
				}
				return
			}
			_, err = c.Do(t.Context(), "check", rest.Request{Method: "GET", Path: "/latest/meta-data/"})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("Do = %v (%s), want a permanent refusal", err, connectors.KindOf(err))
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, "--controller-allow") || strings.Contains(msg, "AKIA") {
				t.Fatalf("refusal %q: want it to name %q and the flag, and no body", msg, tt.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the metadata server got %d requests, want none", n)
	}
}

// TestRedirectToRefusedAddress checks that a redirect from an allowed
// controller to an address the policy refuses is not followed.
func TestRedirectToRefusedAddress(t *testing.T) {
	t.Parallel()
	target, hits := countingServer(t, "127.0.0.2:0", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(metadataBody))
	})
	port := itoa(target.Listener.Addr().(*net.TCPAddr).Port)
	tests := []struct {
		name     string
		location string
		policy   *connectors.AddressPolicy
		want     string
	}{
		{"to an address outside the list", target.URL + "/x", policy(t, nil, "127.0.0.1/32"), "127.0.0.2"},
		{"to a name for an address outside the list", "http://other.test:" + port + "/x", policy(t, map[string]string{"other.test": "127.0.0.2"}, "127.0.0.1/32"), "127.0.0.2"},
		{"to a name for the metadata address", "http://metadata.test:" + port + "/x", policy(t, map[string]string{"metadata.test": "169.254.169.254"}), "169.254.169.254"},
		{"to the metadata address", "http://169.254.169.254/wimro-test", policy(t, nil), "169.254.169.254"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctl, _ := countingServer(t, "", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.location, http.StatusFound)
			})
			c, err := rest.New("test", connectors.Config{URL: ctl.URL, Addresses: tt.policy})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Do(t.Context(), "check", rest.Request{Method: "GET", Path: "/"})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("Do = %v, want a permanent refusal", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, "--controller-allow") {
				t.Fatalf("refusal %q: want it to name %q and the flag", msg, tt.want)
			}
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
	if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "169.254.169.254") || !strings.Contains(err.Error(), "--controller-allow") {
		t.Fatalf("Do = %v (%s), want a permanent refusal naming 169.254.169.254 and --controller-allow", err, connectors.KindOf(err))
	}
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
