package ietfl3vpn_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl3vpn"
)

func setup(t *testing.T, opts emu.Options) *emu.Emulator {
	t.Helper()
	e := emu.New(opts)
	t.Cleanup(e.Close)
	return e
}

type result struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, h http.Handler, method, path, body string, header ...string) result {
	t.Helper()
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, emu.Root+path, nil)
	} else {
		r = httptest.NewRequest(method, emu.Root+path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/yang-data+json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return result{w.Code, w.Header(), w.Body.String()}
}

func tag(t *testing.T, r result) (string, string) {
	t.Helper()
	errs, err := emulator.DecodeRESTCONFErrors([]byte(r.body))
	if err != nil || len(errs) != 1 {
		t.Fatalf("reply %d %q is not one ietf-restconf:errors entry: %v", r.status, r.body, err)
	}
	return errs[0].Tag, errs[0].Message
}

const service = `{"ietf-l3vpn-svc:vpn-service": [{"vpn-id": "v1", "customer-name": "c", "vpn-service-topology": "ietf-l3vpn-svc:any-to-any"}]}`

// site is a site attached to vpn v1, changed by edit.
func site(id string, edit func(s, access map[string]any)) string {
	access := map[string]any{
		"site-network-access-id": id, "device-reference": "pe1",
		"ip-connection":  map[string]any{"ipv4": map[string]any{"address-allocation-type": "ietf-l3vpn-svc:static-address", "addresses": map[string]any{"provider-address": "192.0.2.1", "customer-address": "192.0.2.2", "prefix-length": 30}}},
		"service":        map[string]any{"svc-input-bandwidth": "1000000", "svc-output-bandwidth": "1000000", "svc-mtu": 1500},
		"vpn-attachment": map[string]any{"vpn-id": "v1", "site-role": "ietf-l3vpn-svc:any-to-any-role"},
	}
	s := map[string]any{
		"site-id":               id,
		"management":            map[string]any{"type": "ietf-l3vpn-svc:provider-managed"},
		"locations":             map[string]any{"location": []any{map[string]any{"location-id": "l1"}}},
		"devices":               map[string]any{"device": []any{map[string]any{"device-id": "pe1", "location": "l1"}}},
		"site-network-accesses": map[string]any{"site-network-access": []any{access}},
	}
	if edit != nil {
		edit(s, access)
	}
	b, _ := json.Marshal(map[string]any{"ietf-l3vpn-svc:site": []any{s}})
	return string(b)
}

// TestResources walks one service through the RFC 8040 operations.
func TestResources(t *testing.T) {
	t.Parallel()
	e := setup(t, emu.Options{})
	steps := []struct {
		method, path, body string
		status             int
		tag                string
	}{
		{"GET", "/vpn-services", "", 404, "data-missing"},
		{"POST", "/vpn-services", service, 201, ""},
		{"POST", "/vpn-services", service, 409, "data-exists"},
		{"POST", "/sites", site("s1", nil), 201, ""},
		{"GET", "/vpn-services/vpn-service=v1", "", 200, ""},
		{"DELETE", "/vpn-services/vpn-service=v1", "", 409, "in-use"},
		{"PUT", "/sites/site=s1", site("s1", func(_, a map[string]any) { a["service"].(map[string]any)["svc-mtu"] = 9000 }), 204, ""},
		{"PUT", "/sites/site=s2", site("s2", nil), 201, ""},
		{"PUT", "/sites/site=s3", site("s2", nil), 400, "invalid-value"},
		{"PATCH", "/vpn-services/vpn-service=v1", `{"ietf-l3vpn-svc:vpn-service": [{"vpn-id": "v1", "customer-name": "d"}]}`, 204, ""},
		{"DELETE", "/sites/site=s1", "", 204, ""},
		{"DELETE", "/sites/site=s1", "", 404, "data-missing"},
		{"DELETE", "/sites/site=s2", "", 204, ""},
		{"DELETE", "/vpn-services/vpn-service=v1", "", 204, ""},
		{"HEAD", "/vpn-services", "", 405, ""},
	}
	for i, s := range steps {
		r := do(t, e, s.method, s.path, s.body)
		if r.status != s.status {
			t.Fatalf("step %d %s %s = %d %s, want %d", i, s.method, s.path, r.status, r.body, s.status)
		}
		if s.tag != "" {
			if got, msg := tag(t, r); got != s.tag {
				t.Fatalf("step %d %s %s: tag %q (%s), want %q", i, s.method, s.path, got, msg, s.tag)
			}
		}
		if s.status == 201 && !strings.HasPrefix(r.header.Get("Location"), emu.Root+"/") {
			t.Errorf("step %d: 201 with Location %q", i, r.header.Get("Location"))
		}
	}
	if r := do(t, e, "POST", "/vpn-services", service, "Content-Type", "text/plain"); r.status != 415 {
		t.Errorf("POST as text/plain = %d %s, want 415", r.status, r.body)
	}
	if got := do(t, e, "GET", "", ""); got.status != 200 || strings.Contains(got.body, "v1") {
		t.Fatalf("after the deletes the datastore is %d %s, want empty", got.status, got.body)
	}
	if e.Linted() == 0 {
		t.Fatal("yanglint checked nothing")
	}
}

// TestValidation sends bodies the model refuses: each is 400 naming the
// problem, and nothing is stored.
func TestValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body, want string
	}{
		{"unqualified member", "/vpn-services", `{"vpn-service": [{"vpn-id": "v2"}]}`, "qualified"},
		{"unknown identity", "/vpn-services", `{"ietf-l3vpn-svc:vpn-service": [{"vpn-id": "v2", "vpn-service-topology": "ietf-l3vpn-svc:mesh"}]}`, "mesh"},
		{"no management type", "/sites", site("s9", func(s, _ map[string]any) { delete(s, "management") }), "management"},
		{"no svc-mtu", "/sites", site("s9", func(_, a map[string]any) { delete(a["service"].(map[string]any), "svc-mtu") }), "svc-mtu"},
		{"device not in the site", "/sites", site("s9", func(_, a map[string]any) { a["device-reference"] = "pe9" }), "pe9"},
		{"unknown vpn", "/sites", site("s9", func(_, a map[string]any) { a["vpn-attachment"].(map[string]any)["vpn-id"] = "v9" }), "v9"},
		{"prefix-length 33", "/sites", site("s9", func(_, a map[string]any) {
			a["ip-connection"].(map[string]any)["ipv4"].(map[string]any)["addresses"].(map[string]any)["prefix-length"] = 33
		}), "33"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, emu.Options{})
			if r := do(t, e, "POST", "/vpn-services", service); r.status != 201 {
				t.Fatalf("POST service = %d %s", r.status, r.body)
			}
			before := do(t, e, "GET", "", "").body
			r := do(t, e, "POST", tt.path, tt.body)
			if r.status != 400 {
				t.Fatalf("POST = %d %s, want 400", r.status, r.body)
			}
			if _, msg := tag(t, r); !strings.Contains(msg, tt.want) {
				t.Errorf("error message %q does not name %q", msg, tt.want)
			}
			if after := do(t, e, "GET", "", "").body; after != before {
				t.Errorf("a refused body changed the datastore:\n%s\n%s", before, after)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := setup(t, emu.Options{User: "u", Password: "p", Token: "tok"})
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"none", nil, 401},
		{"wrong password", []string{"Authorization", "Basic dTp4"}, 401},
		{"basic", []string{"Authorization", "Basic dTpw"}, 404},
		{"bearer", []string{"Authorization", "Bearer tok"}, 404},
	}
	for _, tt := range tests {
		if r := do(t, e, "GET", "/vpn-services", "", tt.header...); r.status != tt.status {
			t.Errorf("%s: GET = %d %s, want %d", tt.name, r.status, r.body, tt.status)
		}
	}
}
