package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestOpenAPIAnswerForms sends the requests whose answers take the less
// common forms (a dry-run plan, YAML, the statuses of the middleware and
// the router) through the bundle, whose server checks every answer
// against the OpenAPI document.
func TestOpenAPIAnswerForms(t *testing.T) {
	t.Parallel()
	b := setup(t, "tok")
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	plan, err := json.Marshal(instanceBody("ns1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, method, path, contentType, accept, body, token string
		want                                                 int
		contains                                             string // in the answer
	}{
		{"dry-run plan", "POST", "/openmano/tenant0/instances?dry_run=true", "application/json", "", string(plan), "tok", 200, `"plan"`},
		{"wim list projected", "GET", "/openmano/tenant0/wims?field=uuid&field=name", "", "", "", "tok", 200, `"wim0"`},
		{"YAML answer", "GET", "/openmano/tenants", "", "application/yaml", "", "tok", 200, "tenants:"},
		{"YAML error", "GET", "/openmano/tenants/nobody", "", "application/yaml", "", "tok", 404, "code: 404"},
		{"no token", "GET", "/openmano/tenants", "", "", "", "", 401, "bearer token"},
		{"public without token", "GET", "/healthz", "", "", "", "", 200, `"ok"`},
		{"bad query string", "GET", "/openmano/tenants?a=%zz", "", "", "", "tok", 400, `"code": 400`},
		{"not JSON nor YAML", "POST", "/openmano/tenants", "text/plain", "", "x", "tok", 415, `"code": 415`},
		{"body too large", "POST", "/openmano/tenants", "application/json", "", `{"tenant": {"name": "` + strings.Repeat("x", 2<<20) + `"}}`, "tok", 413, `"code": 413`},
		{"duplicate", "POST", "/openmano/tenants", "application/json", "", `{"tenant": {"name": "tenant0"}}`, "tok", 409, `"code": 409`},
		{"no cluster status", "GET", "/cluster", "", "", "", "tok", 404, `"code": 404`},
		{"no route", "GET", "/nothing", "", "", "", "tok", 404, `"code": 404`},
		{"method not allowed", "PATCH", "/openmano/tenants", "", "", "", "tok", 405, `"code": 405`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, b.srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.want || !strings.Contains(string(raw), tt.contains) {
				t.Fatalf("%s %s = %d, want %d with %q: %.500s", tt.method, tt.path, resp.StatusCode, tt.want, tt.contains, raw)
			}
		})
	}
}
