package rest

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
)

// TestProxiedTargetChecked checks that a request sent through the
// environment's proxy is refused when the policy refuses its target: wimd
// does not connect to the target then, so the target's addresses are
// checked as wimd resolves them.
func TestProxiedTargetChecked(t *testing.T) {
	t.Parallel()
	proxyURL, _ := url.Parse("http://proxy.test:3128")
	viaProxy := func(*http.Request) (*url.URL, error) { return proxyURL, nil }
	p, err := connectors.ParseAddressPolicy()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]netip.Addr{"metadata.test": netip.MustParseAddr("169.254.169.254"), "ctl.test": netip.MustParseAddr("192.0.2.10")}
	proxy := checkedProxy(p.WithLookup(func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{names[host]}, nil
	}), viaProxy)
	for _, tt := range []struct {
		target, refused string
	}{
		{"http://ctl.test/x", ""},
		{"http://metadata.test/x", "169.254.169.254"},
		{"http://169.254.169.254/x", "169.254.169.254"},
		{"http://[fe80::1]/x", "fe80::1"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", tt.target, nil)
		u, err := proxy(req)
		switch {
		case tt.refused == "" && (err != nil || u != proxyURL):
			t.Errorf("proxy for %s = %v, %v; want the proxy", tt.target, u, err)
		case tt.refused != "" && (err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.refused)):
			t.Errorf("proxy for %s = %v, %v; want a permanent refusal naming %s", tt.target, u, err, tt.refused)
		}
	}
	// Without a proxy, the dial checks: nothing to do here.
	if u, err := checkedProxy(p, nil)(&http.Request{URL: proxyURL}); u != nil || err != nil {
		t.Errorf("no proxy = %v, %v", u, err)
	}
}
