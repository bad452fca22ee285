package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/wimro/wimro/engine"
)

// checkOpenAPI keeps the document true: every route chi serves is
// documented, and every documented operation is routed. The routes served
// outside the document on purpose (s.extra: the console's pages) are
// left out.
func checkOpenAPI(t *testing.T, s *Server) {
	t.Helper()
	doc := s.OpenAPI()
	paths := doc["paths"].(map[string]any)
	documented := map[string]bool{}
	for p, item := range paths {
		for m := range item.(map[string]any) {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	outside := map[string]bool{}
	for _, rt := range s.extra {
		outside[rt.Method+" "+rt.Pattern] = true
	}
	routed := map[string]bool{}
	err := chi.Walk(s.Handler().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if outside[method+" "+route] {
			return nil
		}
		routed[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range routed {
		if !documented[r] {
			t.Errorf("%s is routed but not documented", r)
		}
	}
	for d := range documented {
		if !routed[d] {
			t.Errorf("%s is documented but not routed", d)
		}
	}
	if len(routed) == 0 {
		t.Fatal("no routes")
	}
}

func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	s := New(engine.New(nil, nil, nil), Options{})
	checkOpenAPI(t, s)

	doc := s.OpenAPI()
	if doc["openapi"] != "3.0.3" {
		t.Fatalf("openapi = %v", doc["openapi"])
	}
	// Every openmano WIM route of the spec (§2.2) is there.
	paths := doc["paths"].(map[string]any)
	for _, want := range []string{
		"GET /openmano/{tenant_id}/wims", "GET /openmano/{tenant_id}/wims/{wim_id}", "POST /openmano/wims",
		"PUT /openmano/wims/{wim_id}", "DELETE /openmano/wims/{wim_id}", "POST /openmano/{tenant_id}/wims/{wim_id}",
		"PUT /openmano/{tenant_id}/wims/{wim_id}", "DELETE /openmano/{tenant_id}/wims/{wim_id}",
		"POST /openmano/{tenant_id}/wims/{wim_id}/port_mapping", "GET /openmano/{tenant_id}/wims/{wim_id}/port_mapping",
		"DELETE /openmano/{tenant_id}/wims/{wim_id}/port_mapping",
	} {
		m, p, _ := strings.Cut(want, " ")
		item, _ := paths[p].(map[string]any)
		if item[strings.ToLower(m)] == nil {
			t.Errorf("%s not documented", want)
		}
	}
	// Request schemas are reflected from the handler types.
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	wim, _ := schemas["EngineWIMInput"].(map[string]any)
	props, _ := wim["properties"].(map[string]any)
	for _, f := range []string{"name", "type", "wim_url", "config", "description"} {
		if props[f] == nil {
			t.Errorf("WIMInput schema lacks %s: %v", f, wim)
		}
	}

	// What the linter asks (scripts/openapi-lint.sh runs it), checked
	// here too so that go test alone catches a regression.
	if servers, _ := doc["servers"].([]any); len(servers) == 0 {
		t.Error("no servers")
	}
	ids := map[string]string{}
	for p, item := range paths {
		for m, o := range item.(map[string]any) {
			op := o.(map[string]any)
			where := strings.ToUpper(m) + " " + p
			id, _ := op["operationId"].(string)
			if other, dup := ids[id]; dup || id == "" {
				t.Errorf("%s: operationId %q (also %s)", where, id, other)
			}
			ids[id] = where
			if op["description"] == "" || op["summary"] == "" {
				t.Errorf("%s: no summary or description", where)
			}
			responses := op["responses"].(map[string]any)
			success := "200"
			security, secured := op["security"].([]any)
			basic := secured && len(security) == 1 && security[0].(map[string]any)["basicAuth"] != nil
			if basic {
				// RESTCONF: 201 for creations, 204 for answers without a body.
				for _, st := range []string{"201", "204"} {
					if responses[st] != nil {
						success = st
					}
				}
			}
			if responses["default"] != nil || responses[success] == nil {
				t.Errorf("%s: responses %v, want %s and one per error status, no default", where, responses, success)
			}
			public := secured && len(security) == 0
			if (responses["401"] != nil) == public {
				t.Errorf("%s: 401 documented %v, public %v", where, responses["401"] != nil, public)
			}
			if op["requestBody"] != nil && (responses["415"] == nil || responses["413"] == nil) {
				t.Errorf("%s: takes a body but documents no 413 or 415", where)
			}
		}
	}
	if paths["/metrics"] != nil {
		t.Error("/metrics is documented")
	}
	// Pointer fields answered as null are nullable; fields the handlers
	// always fill are required.
	tenant := schemas["WimroTenant"].(map[string]any)
	if desc := tenant["properties"].(map[string]any)["description"].(map[string]any); desc["nullable"] != true {
		t.Errorf("WimroTenant.description = %v, want nullable", desc)
	}
	if req := schemas["HttpapiTenantBody"].(map[string]any)["required"]; len(req.([]string)) != 1 {
		t.Errorf("HttpapiTenantBody.required = %v, want tenant", req)
	}

	// Served at /openapi.json.
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"/openmano/wims"`) {
		t.Fatalf("/openapi.json = %d", rec.Code)
	}
}
