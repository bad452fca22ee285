package ietfl2vpn

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

const (
	svcPath = Root + "/vpn-services/vpn-service=v1"
	sitesA  = Root + "/sites/site=dc-a/site-network-accesses"
	accessA = sitesA + "/site-network-access=v1-0"
)

// seeded are the sites of most tests: two provider-managed, one
// customer-managed, one whose id needs percent-encoding.
var seeded = []Site{{ID: "dc-a"}, {ID: "dc-b", Device: "pe-b", DefaultCEVLANID: 7}, {ID: "cust", Management: "customer-managed"}, {ID: "pop 1/a"}}

type result struct {
	status int
	header http.Header
	body   string
}

// setup returns an emulator with the seeded sites and vpn-service v1.
func setup(t *testing.T, opts Options) *Emulator {
	t.Helper()
	if opts.Sites == nil {
		opts.Sites = seeded
	}
	e := New(opts)
	if r := do(t, e, http.MethodPost, Root+"/vpn-services", service("v1")); r.status != http.StatusCreated {
		t.Fatalf("setup POST vpn-service = %d %s", r.status, r.body)
	}
	return e
}

func do(t *testing.T, e http.Handler, method, path, body string, header ...string) result {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", MediaType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return result{w.Code, w.Result().Header, string(b)}
}

// service returns a valid vpn-service body; edits change its entry.
func service(id string, edits ...func(m map[string]any)) string {
	m := map[string]any{
		"vpn-id": id, "customer-name": "wimro", "vpn-svc-type": "ietf-l2vpn-svc:vpws", "svc-topo": "ietf-l2vpn-svc:any-to-any",
		"ce-vlan-preservation": true, "ce-vlan-cos-preservation": true,
	}
	return wrap("vpn-service", m, edits)
}

// access returns a valid dot1q site-network-access body of vpn v1 on a
// provider-managed site's device pe; edits change its entry.
func access(id, pe string, edits ...func(m map[string]any)) string {
	m := map[string]any{
		"network-access-id": id,
		"device-reference":  pe,
		"bearer":            map[string]any{"bearer-reference": pe + ":xe-0/0/1"},
		"connection": map[string]any{
			"encapsulation-type": "ietf-l2vpn-svc:vlan", "eth-inf-type": "ietf-l2vpn-svc:tagged",
			"tagged-interface": map[string]any{"type": "ietf-l2vpn-svc:dot1q",
				"dot1q-vlan-tagged": map[string]any{"tg-type": "ietf-l2vpn-svc:c-vlan", "cvlan-id": 100}},
		},
		"vpn-attachment": map[string]any{"vpn-id": "v1", "site-role": "ietf-l2vpn-svc:any-to-any-role"},
		"service":        map[string]any{"svc-mtu": 1500},
	}
	return wrap("site-network-access", m, edits)
}

func wrap(member string, m map[string]any, edits []func(m map[string]any)) string {
	for _, f := range edits {
		f(m)
	}
	b, _ := json.Marshal(map[string]any{Module + ":" + member: []any{m}})
	return string(b)
}

func sub(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

// rcErr decodes an ietf-restconf:errors reply.
func rcErr(t *testing.T, r result) (tag, path, msg string) {
	t.Helper()
	errs, err := emulator.DecodeRESTCONFErrors([]byte(r.body))
	if err != nil || len(errs) != 1 || errs[0].Type == "" {
		t.Fatalf("reply %d %q is not an ietf-restconf:errors body with one error", r.status, r.body)
	}
	return errs[0].Tag, errs[0].Path, errs[0].Message
}

func TestServiceValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		features []string
		body     string
		status   int
		tag      string
		contains string // in the error message or path
	}{
		{"valid", nil, service("v2"), 201, "", ""},
		{"identities without prefix", nil, service("v2", func(m map[string]any) { m["vpn-svc-type"] = "bgp-vpls" }), 201, "", ""},
		{"top member not qualified", nil, `{"vpn-service":[{"vpn-id":"v2","ce-vlan-preservation":true,"ce-vlan-cos-preservation":true}]}`, 400, "unknown-element", "module-qualified"},
		{"other top member", nil, `{"ietf-l2vpn-svc:site":[{"vpn-id":"v2"}]}`, 400, "unknown-element", "unknown top-level member"},
		{"unknown member (v6 typo)", nil, service("v2", func(m map[string]any) { m["vpn-scv-type"] = "vpws" }), 400, "unknown-element", "vpn-scv-type"},
		{"nested member qualified", nil, service("v2", func(m map[string]any) { m["ietf-l2vpn-svc:customer-name"] = "x" }), 400, "unknown-element", "customer-name"},
		{"missing ce-vlan-preservation", nil, service("v2", func(m map[string]any) { delete(m, "ce-vlan-preservation") }), 400, "missing-element", "ce-vlan-preservation"},
		{"missing ce-vlan-cos-preservation", nil, service("v2", func(m map[string]any) { delete(m, "ce-vlan-cos-preservation") }), 400, "missing-element", "ce-vlan-cos-preservation"},
		{"boolean as string", nil, service("v2", func(m map[string]any) { m["ce-vlan-preservation"] = "true" }), 400, "invalid-value", "boolean"},
		{"unknown identity", nil, service("v2", func(m map[string]any) { m["vpn-svc-type"] = "ietf-l2vpn-svc:vxlan-magic" }), 400, "invalid-value", "service-type"},
		{"identity of another base", nil, service("v2", func(m map[string]any) { m["svc-topo"] = "vpws" }), 400, "invalid-value", "vpn-topology"},
		{"identity of another module", nil, service("v2", func(m map[string]any) { m["vpn-svc-type"] = "other:vpws" }), 400, "invalid-value", "service-type"},
		{"key not a string", nil, service("v2", func(m map[string]any) { m["vpn-id"] = 2 }), 400, "invalid-value", "vpn-id"},
		{"two entries", nil, `{"ietf-l2vpn-svc:vpn-service":[{"vpn-id":"a"},{"vpn-id":"b"}]}`, 400, "invalid-value", "exactly one"},
		{"entry not in an array", nil, `{"ietf-l2vpn-svc:vpn-service":{"vpn-id":"v2"}}`, 400, "invalid-value", "JSON array"},
		{"frame-delivery without feature bum", nil, service("v2", func(m map[string]any) {
			m["frame-delivery"] = map[string]any{"multicast-gp-port-mapping": "static-mapping"}
		}), 400, "unknown-element", "frame-delivery"},
		{"feature bum makes frame-delivery mandatory", []string{"bum"}, service("v2"), 400, "missing-element", "multicast-gp-port-mapping"},
		{"frame-delivery with feature bum", []string{"bum"}, service("v2", func(m map[string]any) {
			m["frame-delivery"] = map[string]any{"multicast-gp-port-mapping": "ietf-l2vpn-svc:static-mapping",
				"bum-deliveries": map[string]any{"bum-delivery": []any{map[string]any{"frame-type": "broadcast-traffic", "delivery-mode": "unconditional"}}}}
		}), 201, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := New(Options{Features: tt.features})
			r := do(t, e, http.MethodPost, Root+"/vpn-services", tt.body)
			if r.status != tt.status {
				t.Fatalf("POST = %d %s, want %d", r.status, r.body, tt.status)
			}
			if tt.tag == "" {
				if got, ok := e.Service("v2"); !ok || !strings.HasPrefix(got["vpn-svc-type"].(string), Module+":") {
					t.Fatalf("stored service = %v, %v; want identities module-qualified", got, ok)
				}
				return
			}
			tag, path, msg := rcErr(t, r)
			if tag != tt.tag || !strings.Contains(msg+" "+path, tt.contains) {
				t.Fatalf("error %s %q at %q, want %s mentioning %q", tag, msg, path, tt.tag, tt.contains)
			}
			if ids := e.ServiceIDs(); len(ids) != 0 {
				t.Fatalf("a refused POST stored %v", ids)
			}
		})
	}
}

func TestAccessValidation(t *testing.T) {
	t.Parallel()
	conn := func(m map[string]any) map[string]any { return sub(m, "connection") }
	tests := []struct {
		name     string
		site     string
		body     string
		status   int
		tag      string
		contains string
	}{
		{"valid dot1q", "dc-a", access("v1-0", "dc-a-pe"), 201, "", ""},
		{"valid untagged", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) {
			m["connection"] = map[string]any{"encapsulation-type": "ethernet", "eth-inf-type": "untagged"}
		}), 201, "", ""},
		{"location-reference on a customer-managed site", "cust", access("v1-0", "", func(m map[string]any) {
			delete(m, "device-reference")
			m["location-reference"] = "cust-loc"
		}), 201, "", ""},
		{"cvlan-id as a string", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) {
			sub(m, "connection", "tagged-interface", "dot1q-vlan-tagged")["cvlan-id"] = "100"
		}), 400, "invalid-value", "JSON number"},
		{"cvlan-id 4095", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) {
			sub(m, "connection", "tagged-interface", "dot1q-vlan-tagged")["cvlan-id"] = 4095
		}), 400, "invalid-value", "1..4094"},
		{"dot1q-vlan-tagged without type (OSM)", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) {
			delete(sub(m, "connection", "tagged-interface"), "type")
		}), 400, "invalid-value", "when condition"},
		{"type dot1q without dot1q-vlan-tagged", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) {
			delete(sub(m, "connection", "tagged-interface"), "dot1q-vlan-tagged")
		}), 400, "missing-element", "cvlan-id"},
		{"OSM encapsulation-type", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) {
			conn(m)["encapsulation-type"] = "dot1q-vlan-tagged"
		}), 400, "invalid-value", "encapsulation-type"},
		{"missing svc-mtu", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { delete(m, "service") }), 400, "missing-element", "svc-mtu"},
		{"svc-mtu as a string", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { m["service"] = map[string]any{"svc-mtu": "1500"} }), 400, "invalid-value", "svc-mtu"},
		{"no location flavor", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { delete(m, "device-reference") }), 400, "missing-element", "location-flavor"},
		{"both location flavors", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { m["location-reference"] = "dc-a-loc" }), 400, "invalid-value", "choice"},
		{"location-reference on a provider-managed site", "dc-a", access("v1-0", "", func(m map[string]any) {
			delete(m, "device-reference")
			m["location-reference"] = "dc-a-loc"
		}), 400, "invalid-value", "customer-managed"},
		{"device-reference on a customer-managed site", "cust", access("v1-0", "cust-pe"), 400, "invalid-value", "location-reference"},
		{"unknown device", "dc-a", access("v1-0", "pe-x"), 400, "data-missing", "pe-x"},
		{"unknown vpn-id", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { sub(m, "vpn-attachment")["vpn-id"] = "nope" }), 400, "data-missing", "require-instance"},
		{"no vpn-id", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { m["vpn-attachment"] = map[string]any{} }), 400, "missing-element", "attachment-flavor"},
		{"vpn-policy-id", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { m["vpn-attachment"] = map[string]any{"vpn-policy-id": "p"} }), 400, "data-missing", "vpn-policies"},
		{"unknown site", "dc-z", access("v1-0", "dc-a-pe"), 404, "data-missing", "dc-z"},
		{"unknown member", "dc-a", access("v1-0", "dc-a-pe", func(m map[string]any) { m["mapping"] = nil }), 400, "unknown-element", "mapping"},
		{"bearer-reference without its feature", "dc-a", access("v1-0", "dc-a-pe"), 0, "unknown-element", "bearer-reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{}
			status := tt.status
			if status == 0 { // the feature case
				opts.Features, status = []string{"dot1q"}, 400
			}
			e := setup(t, opts)
			r := do(t, e, http.MethodPost, Root+"/sites/site="+tt.site+"/site-network-accesses", tt.body)
			if r.status != status {
				t.Fatalf("POST = %d %s, want %d", r.status, r.body, status)
			}
			if tt.tag == "" {
				if refs := e.Accesses(); len(refs) != 1 || refs[0] != (AccessRef{Site: tt.site, ID: "v1-0", VPNID: "v1"}) {
					t.Fatalf("accesses = %+v, want v1-0 on %s", refs, tt.site)
				}
				return
			}
			tag, path, msg := rcErr(t, r)
			if tag != tt.tag || !strings.Contains(msg+" "+path, tt.contains) {
				t.Fatalf("error %s %q at %q, want %s mentioning %q", tag, msg, path, tt.tag, tt.contains)
			}
			if refs := e.Accesses(); len(refs) != 0 {
				t.Fatalf("a refused POST stored %+v", refs)
			}
		})
	}
}

func TestPutReplaceAndKeys(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	if r := do(t, e, http.MethodPut, svcPath, service("v1", func(m map[string]any) { m["customer-name"] = "other" })); r.status != http.StatusNoContent {
		t.Fatalf("replacing PUT = %d %s, want 204", r.status, r.body)
	}
	if s, _ := e.Service("v1"); s["customer-name"] != "other" {
		t.Fatalf("service after replace = %v", s)
	}
	r := do(t, e, http.MethodPut, Root+"/vpn-services/vpn-service=v9", service("v1"))
	if tag, _, msg := rcErr(t, r); r.status != 400 || tag != "invalid-value" || !strings.Contains(msg, "differs") {
		t.Fatalf("PUT with a body key other than the URL key = %d %s %s", r.status, tag, msg)
	}
	// Percent-encoded keys: the site "pop 1/a", a vpn-id with a comma.
	odd := "v/1,x y"
	if r := do(t, e, http.MethodPut, Root+"/vpn-services/vpn-service=v%2F1%2Cx%20y", service(odd)); r.status != http.StatusCreated {
		t.Fatalf("PUT of an escaped key = %d %s", r.status, r.body)
	}
	if r := do(t, e, http.MethodGet, Root+"/vpn-services/vpn-service=v%2F1%2Cx%20y", ""); r.status != 200 || !strings.Contains(r.body, `"v/1,x y"`) {
		t.Fatalf("GET of an escaped key = %d %s", r.status, r.body)
	}
	if r := do(t, e, http.MethodGet, Root+"/vpn-services/vpn-service=a,b", ""); r.status != 400 {
		t.Fatalf("GET with two keys = %d, want 400", r.status)
	}
	path := Root + "/sites/site=pop%201%2Fa/site-network-accesses/site-network-access=v1-0"
	if r := do(t, e, http.MethodPut, path, access("v1-0", "pop 1/a-pe")); r.status != http.StatusCreated {
		t.Fatalf("PUT under an escaped site = %d %s", r.status, r.body)
	}
	if _, ok := e.Access("pop 1/a", "v1-0"); !ok {
		t.Fatal("the access is not stored under site \"pop 1/a\"")
	}
}

func TestPostLocationAndConflict(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	r := do(t, e, http.MethodPost, sitesA, access("v1-0", "dc-a-pe"))
	if r.status != http.StatusCreated || r.header.Get("Location") != accessA {
		t.Fatalf("POST = %d Location %q, want 201 %s", r.status, r.header.Get("Location"), accessA)
	}
	if got := do(t, e, http.MethodGet, r.header.Get("Location"), ""); got.status != 200 || !strings.Contains(got.body, `"ietf-l2vpn-svc:site-network-access":[`) {
		t.Fatalf("GET Location = %d %s", got.status, got.body)
	}
	r = do(t, e, http.MethodPost, sitesA, access("v1-0", "dc-a-pe"))
	if tag, _, _ := rcErr(t, r); r.status != http.StatusConflict || tag != "data-exists" {
		t.Fatalf("second POST = %d %s, want 409 data-exists", r.status, tag)
	}
	r = do(t, e, http.MethodPost, Root+"/vpn-services", service("v1"))
	if tag, _, _ := rcErr(t, r); r.status != http.StatusConflict || tag != "data-exists" {
		t.Fatalf("POST of an existing vpn-service = %d %s, want 409 data-exists", r.status, tag)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	if r := do(t, e, http.MethodPut, accessA, access("v1-0", "dc-a-pe")); r.status != http.StatusCreated {
		t.Fatalf("PUT access = %d %s", r.status, r.body)
	}
	r := do(t, e, http.MethodDelete, svcPath, "")
	if tag, _, msg := rcErr(t, r); r.status != http.StatusConflict || tag != "in-use" || !strings.Contains(msg, "v1-0") {
		t.Fatalf("DELETE of a referenced service = %d %s %s, want 409 in-use", r.status, tag, msg)
	}
	steps := []struct {
		path   string
		status int
	}{
		{accessA, http.StatusNoContent},
		{accessA, http.StatusNotFound},
		{svcPath, http.StatusNoContent},
		{svcPath, http.StatusNotFound},
	}
	for i, s := range steps {
		r := do(t, e, http.MethodDelete, s.path, "")
		if r.status != s.status {
			t.Fatalf("step %d: DELETE %s = %d, want %d", i, s.path, r.status, s.status)
		}
		if s.status == http.StatusNotFound {
			if tag, _, _ := rcErr(t, r); tag != "data-missing" {
				t.Fatalf("step %d: tag %s, want data-missing", i, tag)
			}
		}
	}
	if len(e.ServiceIDs()) != 0 || len(e.Accesses()) != 0 {
		t.Fatalf("left %v %v", e.ServiceIDs(), e.Accesses())
	}
}

func TestReads(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	tests := []struct {
		path, member string
		status       int
		contains     string
	}{
		{Root, "ietf-l2vpn-svc:l2vpn-svc", 200, `"vpn-id":"v1"`},
		{Root + "/vpn-services", "ietf-l2vpn-svc:vpn-services", 200, `"vpn-service":[`},
		{svcPath, "ietf-l2vpn-svc:vpn-service", 200, `"ce-vlan-preservation":true`},
		{Root + "/sites", "ietf-l2vpn-svc:sites", 200, `"site-id":"dc-b"`},
		{Root + "/sites/site=dc-b", "ietf-l2vpn-svc:site", 200, `"device-id":"pe-b"`},
		{sitesA, "ietf-l2vpn-svc:site-network-accesses", 200, `{}`},
		{Root + "/sites/site=nope", "ietf-restconf:errors", 404, "data-missing"},
		{Root + "/vpn-services/vpn-service=nope", "ietf-restconf:errors", 404, "data-missing"},
		{accessA, "ietf-restconf:errors", 404, "data-missing"},
		{Root + "/vpn-profiles", "ietf-restconf:errors", 404, "invalid-value"},
		{"/restconf/data/other:thing", "ietf-restconf:errors", 404, "invalid-value"},
	}
	for _, tt := range tests {
		r := do(t, e, http.MethodGet, tt.path, "")
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.body), &doc); err != nil || doc[tt.member] == nil || len(doc) != 1 {
			t.Errorf("GET %s = %s, want the single member %s", tt.path, r.body, tt.member)
		}
		if r.status != tt.status || !strings.Contains(r.body, tt.contains) {
			t.Errorf("GET %s = %d %s, want %d with %s", tt.path, r.status, r.body, tt.status, tt.contains)
		}
		if ct := r.header.Get("Content-Type"); ct != MediaType {
			t.Errorf("GET %s Content-Type = %q", tt.path, ct)
		}
	}
	var dump map[string]map[string]any
	if err := json.Unmarshal(e.Dump(), &dump); err != nil {
		t.Fatalf("Dump: %v", err)
	}
	sites := dump["ietf-l2vpn-svc:l2vpn-svc"]["sites"].(map[string]any)["site"].([]any)
	var cust map[string]any
	for _, s := range sites {
		if s.(map[string]any)["site-id"] == "cust" {
			cust = s.(map[string]any)
		}
	}
	if cust == nil || cust["devices"] != nil || sub(cust, "management")["type"] != "ietf-l2vpn-svc:customer-managed" {
		t.Fatalf("customer-managed site in the dump = %v, want no devices", cust)
	}
}

func TestMethodsAndMediaType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path, body, contentType string
		opts                                  Options
		status                                int
		tag, allow                            string
	}{
		{"POST on sites", http.MethodPost, Root + "/sites", `{}`, MediaType, Options{}, 405, "operation-not-supported", "GET"},
		{"DELETE of the root", http.MethodDelete, Root, "", "", Options{}, 405, "operation-not-supported", "GET"},
		{"PATCH of a service", http.MethodPatch, svcPath, service("v1"), MediaType, Options{}, 405, "operation-not-supported", "GET, PUT, DELETE"},
		{"RejectPUT", http.MethodPut, svcPath, service("v1"), MediaType, Options{RejectPUT: true}, 405, "operation-not-supported", "GET, DELETE"},
		{"text body", http.MethodPut, svcPath, service("v1"), "text/plain", Options{}, 415, "invalid-value", ""},
		{"plain JSON accepted", http.MethodPut, svcPath, service("v1"), "application/json; charset=utf-8", Options{}, 204, "", ""},
		{"broken JSON", http.MethodPut, svcPath, `{"ietf-l2vpn-svc:vpn-service":[`, MediaType, Options{}, 400, "malformed-message", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, tt.opts)
			r := do(t, e, tt.method, tt.path, tt.body, "Content-Type", tt.contentType)
			if r.status != tt.status {
				t.Fatalf("%s = %d %s, want %d", tt.method, r.status, r.body, tt.status)
			}
			if tt.tag != "" {
				if tag, _, _ := rcErr(t, r); tag != tt.tag {
					t.Fatalf("tag %s, want %s", tag, tt.tag)
				}
			}
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Fatalf("Allow = %q, want %q", got, tt.allow)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := New(Options{User: "u", Password: "p", Token: "tok"})
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"none", nil, 401},
		{"wrong password", []string{"Authorization", "Basic dTp4"}, 401}, // u:x
		{"basic", []string{"Authorization", "Basic dTpw"}, 200},          // u:p
		{"bearer", []string{"Authorization", "Bearer tok"}, 200},
		{"wrong bearer", []string{"Authorization", "Bearer nope"}, 401},
	}
	for _, tt := range tests {
		r := do(t, e, http.MethodGet, Root+"/vpn-services", "", tt.header...)
		if r.status != tt.status {
			t.Errorf("%s: %d, want %d", tt.name, r.status, tt.status)
		}
		if tt.status == 401 {
			if tag, _, _ := rcErr(t, r); tag != "access-denied" {
				t.Errorf("%s: tag %s, want access-denied", tt.name, tag)
			}
		}
	}
	reqs := e.Requests()
	if len(reqs) != len(tests) || reqs[2].User != "u" || !reqs[3].Bearer || reqs[0].Status != 401 {
		t.Fatalf("request log = %+v", reqs)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	e.FailNext(1, http.StatusServiceUnavailable)
	e.FailOn(http.MethodPut, "site-network-access=v1-1", http.StatusInternalServerError)
	steps := []struct {
		method, path, body string
		status             int
	}{
		{http.MethodPut, accessA, access("v1-0", "dc-a-pe"), 503}, // FailNext
		{http.MethodPut, accessA, access("v1-0", "dc-a-pe"), 201},
		{http.MethodPut, Root + "/sites/site=dc-b/site-network-accesses/site-network-access=v1-1", access("v1-1", "pe-b"), 500}, // FailOn
		{http.MethodPut, Root + "/sites/site=dc-b/site-network-accesses/site-network-access=v1-1", access("v1-1", "pe-b"), 201},
	}
	for i, s := range steps {
		r := do(t, e, s.method, s.path, s.body)
		if r.status != s.status {
			t.Fatalf("step %d = %d %s, want %d", i, r.status, r.body, s.status)
		}
		if s.status >= 500 {
			if tag, _, msg := rcErr(t, r); tag != "operation-failed" || msg != "injected failure" {
				t.Fatalf("step %d: %s %s", i, tag, msg)
			}
		}
	}
	if n := len(e.Accesses()); n != 2 {
		t.Fatalf("accesses = %d, want 2 (failed requests take no effect)", n)
	}
	if !e.RemoveAccess("dc-b", "v1-1") || e.RemoveAccess("dc-b", "v1-1") {
		t.Fatal("RemoveAccess should succeed once")
	}
}

func TestBuildPolls(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{BuildPolls: 2})
	want := []int{504, 504, 200, 200}
	for i, w := range want {
		if r := do(t, e, http.MethodGet, svcPath, ""); r.status != w {
			t.Fatalf("GET %d = %d, want %d", i, r.status, w)
		}
	}
	// A replacing PUT does not restart the build; SetPending does.
	do(t, e, http.MethodPut, svcPath, service("v1"))
	if r := do(t, e, http.MethodGet, svcPath, ""); r.status != 200 {
		t.Fatalf("GET after a replace = %d", r.status)
	}
	if !e.SetPending("v1", 1) || e.SetPending("nope", 1) {
		t.Fatal("SetPending: want true for v1 only")
	}
	if r := do(t, e, http.MethodGet, svcPath, ""); r.status != 504 {
		t.Fatalf("GET after SetPending = %d, want 504", r.status)
	}
}

func TestDelayEndsWhenClientGivesUp(t *testing.T) {
	t.Parallel()
	e := New(Options{})
	e.Delay(time.Minute)
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+Root, nil)
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client error = %v, want deadline exceeded", err)
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the delayed handler did not end when the client gave up")
	}
	if reqs := e.Requests(); len(reqs) != 1 || reqs[0].Status != 499 {
		t.Fatalf("request log = %+v, want one 499", reqs)
	}
}

// svc-bandwidth (if-feature input-bw): a list keyed by direction and
// type, uint64 leaves encoded as strings, cir and cbs mandatory.
func TestSvcBandwidthValidation(t *testing.T) {
	t.Parallel()
	entry := func(dir, typ string) map[string]any {
		return map[string]any{"direction": dir, "type": typ, "cir": "100000000", "cbs": "100000000"}
	}
	withBW := func(entries ...map[string]any) func(m map[string]any) {
		return func(m map[string]any) {
			list := make([]any, len(entries))
			for i, e := range entries {
				list[i] = e
			}
			m["service"] = map[string]any{"svc-mtu": 1500, "svc-bandwidth": map[string]any{"bandwidth": list}}
		}
	}
	in, out := entry("input-bw", "bw-per-port"), entry("ietf-l2vpn-svc:output-bw", "bw-per-port")
	cirNumber := entry("input-bw", "bw-per-port")
	cirNumber["cir"] = 100000000
	noCBS := entry("input-bw", "bw-per-port")
	delete(noCBS, "cbs")
	cosOnPort := entry("input-bw", "bw-per-port")
	cosOnPort["cos-id"] = 1
	cos := entry("input-bw", "bw-per-cos")
	cos["cos-id"] = 1
	tests := []struct {
		name     string
		features []string
		body     string
		tag      string // "" accepted
		contains string
	}{
		{"both directions", nil, access("v1-0", "dc-a-pe", withBW(in, out)), "", ""},
		{"one direction per cos", nil, access("v1-0", "dc-a-pe", withBW(cos)), "", ""},
		{"same direction, two types", nil, access("v1-0", "dc-a-pe", withBW(in, cos)), "", ""},
		{"duplicate key", nil, access("v1-0", "dc-a-pe", withBW(in, entry("input-bw", "bw-per-port"))), "invalid-value", "duplicate"},
		{"cir as a number", nil, access("v1-0", "dc-a-pe", withBW(cirNumber)), "invalid-value", "uint64"},
		{"no cbs", nil, access("v1-0", "dc-a-pe", withBW(noCBS)), "missing-element", "cbs"},
		{"no type", nil, access("v1-0", "dc-a-pe", withBW(map[string]any{"direction": "input-bw", "cir": "1", "cbs": "1"})), "missing-element", "type"},
		{"unknown direction", nil, access("v1-0", "dc-a-pe", withBW(entry("sideways", "bw-per-port"))), "invalid-value", "bw-direction"},
		{"cos-id on a per-port entry", nil, access("v1-0", "dc-a-pe", withBW(cosOnPort)), "invalid-value", "when condition"},
		{"without feature input-bw", DefaultFeatures, access("v1-0", "dc-a-pe", withBW(in)), "unknown-element", "svc-bandwidth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			features := tt.features
			if features == nil {
				features = append([]string{"input-bw"}, DefaultFeatures...)
			}
			e := setup(t, Options{Features: features})
			r := do(t, e, http.MethodPost, Root+"/sites/site=dc-a/site-network-accesses", tt.body)
			if tt.tag == "" {
				if r.status != 201 {
					t.Fatalf("POST = %d %s, want 201", r.status, r.body)
				}
				a, _ := e.Access("dc-a", "v1-0")
				svc, _ := a["service"].(map[string]any)
				if _, ok := svc["svc-bandwidth"].(map[string]any); !ok {
					t.Fatalf("stored access %v has no svc-bandwidth", a)
				}
				return
			}
			if r.status != 400 {
				t.Fatalf("POST = %d %s, want 400", r.status, r.body)
			}
			tag, path, msg := rcErr(t, r)
			if tag != tt.tag || !strings.Contains(msg+" "+path, tt.contains) {
				t.Fatalf("error %s %q at %q, want %s mentioning %q", tag, msg, path, tt.tag, tt.contains)
			}
		})
	}
}
