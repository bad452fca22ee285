package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/testkit/openapitest"
	"github.com/wimro/wimro/internal/testkit/testfactory"
)

// scopedTokens is a token file of the new format (a token of each scope,
// one with two, one bare line of the old format) and the scopes each holds.
var scopedTokens = []struct {
	token, id string
	scopes    []httpapi.Scope
}{
	{"tok-reader-1", "prometheus", []httpapi.Scope{httpapi.ScopeRead}},
	{"tok-writer-1", "writer", []httpapi.Scope{httpapi.ScopeWrite}},
	{"tok-admin-1", "ops", []httpapi.Scope{httpapi.ScopeAdmin}},
	{"tok-nfvo-1", "nfvo", []httpapi.Scope{httpapi.ScopeRead, httpapi.ScopeWrite}},
	{"tok-bare-1", "", []httpapi.Scope{httpapi.ScopeRead, httpapi.ScopeWrite, httpapi.ScopeAdmin}},
}

// scopedServer serves the whole API (with /metrics) over a fresh database
// with the token file of scopedTokens, every answer checked against the
// OpenAPI document.
func scopedServer(t *testing.T) (*httptest.Server, *httpapi.Server, *testfactory.Factory) {
	t.Helper()
	var lines []string
	for _, tk := range scopedTokens {
		line := tk.token
		if tk.id != "" {
			var names []string
			for _, sc := range tk.scopes {
				names = append(names, string(sc))
			}
			line += "  id=" + tk.id + "\tscopes=" + strings.Join(names, ",")
		}
		lines = append(lines, line)
	}
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "# id and scopes after the token\n"+strings.Join(lines, "\n")+"\n")
	tf, err := httpapi.OpenTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := testfactory.New(t)
	f.Tenant(t, "restconf-user") // the RESTCONF routes' Basic user (x is deleted as a path)
	api := httpapi.New(f.Eng, httpapi.Options{TokenFile: tf, Metrics: promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})})
	checked := openapitest.MustLoad(t, api.OpenAPI()).Handler(t, api.Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" { // outside the document, as in wimd
			api.Handler().ServeHTTP(w, r)
			return
		}
		checked.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, api, f
}

// walked returns every "METHOD pattern" the router serves.
func walked(t *testing.T, api *httpapi.Server) []string {
	t.Helper()
	var out []string
	err := chi.Walk(api.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every route the router serves declares its scope in the route table
// (or is Public), and the table names no route that is not served.
func TestEveryRouteDeclaresAScope(t *testing.T) {
	t.Parallel()
	api := httpapi.New(engine.New(nil, nil, nil), httpapi.Options{Token: "x", Metrics: promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{})})
	byKey := map[string]httpapi.Route{}
	for _, rt := range api.ServedRoutes() {
		byKey[rt.Method+" "+rt.Pattern] = rt
	}
	served := walked(t, api)
	if len(served) < 40 {
		t.Fatalf("the router serves %d routes; the walk missed some", len(served))
	}
	for _, key := range served {
		rt, ok := byKey[key]
		if !ok {
			t.Errorf("%s: served by the router but not in the route table", key)
			continue
		}
		sc, declared := httpapi.DeclaredScope(rt)
		switch {
		case rt.Public && declared:
			t.Errorf("%s: Public and scope %q", key, sc)
		case !rt.Public && !declared:
			t.Errorf("%s: declares no scope (add it to routeScopes)", key)
		}
	}
	for _, key := range httpapi.ScopeTableKeys() {
		if !slices.Contains(served, key) {
			t.Errorf("routeScopes names %s, which the router does not serve", key)
		}
	}
}

// paramRE matches a chi path parameter.
var paramRE = regexp.MustCompile(`\{[^}]+\}`)

// Each route's declared scope is the one a real request needs: a token
// holding it passes (whatever the handler then answers, never 401 or
// 403), every token without it is answered 403 naming it.
func TestRouteScopes(t *testing.T) {
	t.Parallel()
	srv, api, _ := scopedServer(t)
	for _, rt := range api.ServedRoutes() {
		if rt.Public {
			continue
		}
		want, ok := httpapi.DeclaredScope(rt)
		if !ok {
			t.Errorf("%s %s: no scope declared", rt.Method, rt.Pattern)
			continue
		}
		path := paramRE.ReplaceAllString(rt.Pattern, "x")
		for _, tk := range scopedTokens {
			t.Run(fmt.Sprintf("%s %s as %s", rt.Method, rt.Pattern, tk.token), func(t *testing.T) {
				status, desc := send(t, srv.URL, rt.Method, path, tk.token)
				if slices.Contains(tk.scopes, want) {
					if status == http.StatusForbidden || status == http.StatusUnauthorized {
						t.Fatalf("token with %v: %d %s, want the route's answer", tk.scopes, status, desc)
					}
					return
				}
				if status != http.StatusForbidden || !strings.Contains(desc, "needs the "+string(want)+" scope") {
					t.Fatalf("token with %v: %d %q, want 403 naming the %s scope", tk.scopes, status, desc, want)
				}
			})
		}
	}
}

// send makes one request with a small JSON body for writes and returns
// the status and the error description, if any.
func send(t *testing.T, base, method, path, token string) (int, string) {
	t.Helper()
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if strings.HasPrefix(path, httpapi.L2SMRoot) {
		// The RESTCONF routes take Basic: the user names the tenant, the token is the password.
		req.SetBasicAuth("restconf-user", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Description string `json:"description"`
		} `json:"error"`
		Restconf struct {
			Error []struct {
				Message string `json:"error-message"`
			} `json:"error"`
		} `json:"ietf-restconf:errors"`
	}
	json.Unmarshal(raw, &e)
	if len(e.Restconf.Error) > 0 {
		return resp.StatusCode, e.Restconf.Error[0].Message
	}
	return resp.StatusCode, e.Error.Description
}

// A token file line is read as token, id and scopes; a malformed line is
// refused at start naming its line, never quoting the token.
func TestTokenFileScopesFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i, tc := range []struct{ text, want string }{
		{"sekrit-1 id=a scopes=read,delete\n", `line 1: scopes=read,delete: unknown scope "delete"`},
		{"# c\nsekrit-1 id=a\nsekrit-2 id=a\n", `line 3: id "a" is the id of line 2 too`},
		{"sekrit-1 id=a role=x\n", `unknown setting "role"`},
		{"sekrit-1 id=a b\n", "line 1: after the token, expected id=<name>"},
		{"sekrit-1 id=a/b\n", `id="a/b"`},
	} {
		path := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := httpapi.OpenTokenFile(path, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%q: %v, want an error with %q and without the token", tc.text, err, tc.want)
		}
	}
}
