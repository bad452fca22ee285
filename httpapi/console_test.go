package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
)

// The console's embedded JavaScript and CSS stay within the budget, and
// every file the pages name is embedded (nothing is fetched from outside).
func TestConsoleAssetsWithinBudget(t *testing.T) {
	t.Parallel()
	assets := httpapi.ConsoleAssets()
	total := 0
	for name, size := range assets {
		switch path.Ext(name) {
		case ".js", ".css":
			total += size
			t.Logf("%s: %d bytes", name, size)
		}
	}
	t.Logf("JavaScript and CSS: %d bytes of %d", total, httpapi.ConsoleBudget)
	if total == 0 || total > httpapi.ConsoleBudget {
		t.Fatalf("JavaScript and CSS embedded: %d bytes, budget %d", total, httpapi.ConsoleBudget)
	}
	for _, want := range []string{"index.html", "console.js", "console.css", "docs.html", "docs.js", "favicon.svg"} {
		if assets[want] == 0 {
			t.Errorf("%s is not embedded: %v", want, assets)
		}
	}
}

// The pages are served with a strict Content-Security-Policy and no
// token; they name only files of their own origin (no CDN, no font from
// outside, no inline script or style), and / leads to the console.
func TestConsolePages(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(httpapi.New(engine.New(nil, nil, nil), httpapi.Options{Token: "secret-token"}).Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(p string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, string(raw)
	}
	external := regexp.MustCompile(`(?i)(src|href)="(https?:)?//|@import|url\(|<style|style=|<script>|\son[a-z]+=`)
	for _, tc := range []struct{ path, ctype string }{
		{"/ui/", "text/html"}, {"/docs", "text/html"}, {"/ui/console.js", "text/javascript"},
		{"/ui/docs.js", "text/javascript"}, {"/ui/console.css", "text/css"}, {"/ui/favicon.svg", "image/svg+xml"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := get(tc.path)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
				t.Fatalf("GET %s = %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			csp := resp.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe") {
				t.Errorf("CSP allows unsafe sources: %q", csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("headers: %v", resp.Header)
			}
			if strings.HasSuffix(tc.ctype, "html") {
				if m := external.FindString(body); m != "" {
					t.Errorf("%s names %q: only its own files, no inline script or style", tc.path, m)
				}
			}
			// The token travels in the Authorization header only.
			if strings.Contains(body, "?token") || strings.Contains(body, "access_token") {
				t.Errorf("%s puts a token in a URL", tc.path)
			}
		})
	}
	for p, loc := range map[string]string{"/": "/ui/", "/ui": "/ui/"} {
		if resp, _ := get(p); resp.StatusCode/100 != 3 || resp.Header.Get("Location") != loc {
			t.Errorf("GET %s = %d to %q, want a redirect to %s", p, resp.StatusCode, resp.Header.Get("Location"), loc)
		}
	}
	if resp, body := get("/ui/config.json"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"auth": true`) {
		t.Errorf("config.json = %d %s", resp.StatusCode, body)
	}
	for _, p := range []string{"/ui/nothing.js", "/ui/index.html", "/ui/..%2fconsole.go"} {
		if resp, _ := get(p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
	}
	// The data stays behind the token.
	if resp, _ := get("/openmano/tenants"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /openmano/tenants without a token = %d", resp.StatusCode)
	}
}
