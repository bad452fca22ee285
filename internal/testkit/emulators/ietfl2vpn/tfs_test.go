package ietfl2vpn

import (
	"net/http"
	"strings"
	"testing"
)

// TestTFSAnswers: the tfs dialect answers as TeraFlowSDN's NBI does, where
// the osm dialect answers as a RESTCONF datastore.
func TestTFSAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 string // in the reply body
	}{
		{"vpn-services lists nothing", http.MethodGet, Root + "/vpn-services", "", 200, "{}"},
		{"a vpn-service posted again", http.MethodPost, Root + "/vpn-services", osmService("v1"), 500, "StatusCode.ALREADY_EXISTS"},
		{"a new vpn-service", http.MethodPost, Root + "/vpn-services", osmService("v2"), 201, ""},
		{"PUT of a vpn-service", http.MethodPut, Root + "/vpn-services/vpn-service=v1", osmService("v1"), 500, "Unexpected request format"},
		{"no sites resource", http.MethodGet, Root + "/sites", "", 404, "Not Found"},
		{"no site resource", http.MethodGet, Root + "/sites/site=dc-a", "", 404, "Not Found"},
		{"no single attachment", http.MethodGet, accessA, "", 404, "Not Found"},
		{"no datastore root", http.MethodGet, Root, "", 404, "Not Found"},
		{"no GET of attachments", http.MethodGet, sitesA, "", 405, "Method Not Allowed"},
		{"an attachment", http.MethodPost, sitesA, osmAccess("v1-0"), 201, ""},
		{"an attachment by PUT", http.MethodPut, sitesA, osmAccess("v1-0"), 204, ""},
		{"a bearer it cannot read", http.MethodPost, sitesA, osmAccess("v1-0", func(m map[string]any) { m["bearer"] = map[string]any{"bearer-reference": "a:b:c:d"} }), 500, "unable to auto-generated mapping"},
		{"an unknown VPN", http.MethodGet, Root + "/vpn-services/vpn-service=nope", "", 500, "not found in database"},
		{"delete of an unknown VPN", http.MethodDelete, Root + "/vpn-services/vpn-service=nope", "", 204, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := New(Options{Dialect: DialectTFS})
			if r := do(t, e, http.MethodPost, Root+"/vpn-services", osmService("v1")); r.status != http.StatusCreated {
				t.Fatalf("seed POST = %d %s", r.status, r.body)
			}
			r := do(t, e, tt.method, tt.path, tt.body)
			if r.status != tt.status || !strings.Contains(r.body, tt.contains) {
				t.Fatalf("%s %s = %d %q, want %d containing %q", tt.method, tt.path, r.status, r.body, tt.status, tt.contains)
			}
			if tt.status == 200 && strings.TrimSpace(r.body) != "{}" {
				t.Fatalf("GET vpn-services = %q, want {}", r.body)
			}
		})
	}
}

// TestTFSBuilding: a vpn-service answers 504 while it is not active, for
// as long as it stays so.
func TestTFSBuilding(t *testing.T) {
	t.Parallel()
	e := New(Options{Dialect: DialectTFS, BuildPolls: 3})
	if r := do(t, e, http.MethodPost, Root+"/vpn-services", osmService("v1")); r.status != http.StatusCreated {
		t.Fatalf("POST = %d %s", r.status, r.body)
	}
	for i, want := range []int{504, 504, 504, 200} {
		if r := do(t, e, http.MethodGet, Root+"/vpn-services/vpn-service=v1", ""); r.status != want || !strings.Contains(r.body, `"service-id":"v1"`) {
			t.Fatalf("GET #%d = %d %s, want %d with the service-id", i+1, r.status, r.body, want)
		}
	}
}
