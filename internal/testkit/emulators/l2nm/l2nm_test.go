package l2nm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

const services = DefaultRoot + "/data/" + Top + "/vpn-services"

func servicePath(id string) string { return services + "/vpn-service=" + id }

type result struct {
	status int
	body   string
	header http.Header
}

func call(t *testing.T, e *Emulator, method, path string, body any) result {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/yang-data+json")
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return result{w.Code, w.Body.String(), w.Header()}
}

func newEmulator(t *testing.T, opts Options) *Emulator {
	t.Helper()
	e := New(opts)
	t.Cleanup(e.Close)
	return e
}

// svc is a valid vpn-service: a VPWS between two accesses.
func svc(id string, vlan any) map[string]any {
	access := func(n int, ifc string) map[string]any {
		return map[string]any{
			"id": id + "-" + string(rune('0'+n)), "interface-id": ifc,
			"connection": map[string]any{"encapsulation": map[string]any{"encap-type": "ietf-vpn-common:dot1q", "dot1q": map[string]any{"cvlan-id": vlan}}},
			"service":    map[string]any{"mtu": 1500, "svc-pe-to-ce-bandwidth": map[string]any{"pe-to-ce-bandwidth": []any{map[string]any{"bw-type": "ietf-vpn-common:bw-per-port", "cir": "100000000"}}}},
		}
	}
	node := func(ne string, n int, ifc string) map[string]any {
		return map[string]any{"vpn-node-id": ne, "ne-id": ne, "vpn-network-accesses": map[string]any{"vpn-network-access": []any{access(n, ifc)}}}
	}
	return map[string]any{
		"vpn-id": id, "customer-name": "wimro", "vpn-type": "ietf-vpn-common:vpws",
		"vpn-service-topology": "ietf-vpn-common:any-to-any",
		"status":               map[string]any{"admin-status": map[string]any{"status": "ietf-vpn-common:admin-up"}},
		"vpn-nodes":            map[string]any{"vpn-node": []any{node("PE1", 0, "ge-0/0/1"), node("PE2", 1, "ge-0/0/2")}},
	}
}

func wrap(entry map[string]any) map[string]any {
	return map[string]any{Module + ":vpn-service": []any{entry}}
}

// TestWrites: every write is validated against the modules by yanglint
// before it takes effect, with RFC 8040's answers.
func TestWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		seed      bool // s1 exists first
		method    string
		path      string
		body      any
		status    int
		errSubstr string
		held      []string
	}{
		{"post creates", false, http.MethodPost, services, wrap(svc("s1", 100)), http.StatusCreated, "", []string{"s1"}},
		{"post twice conflicts", true, http.MethodPost, services, wrap(svc("s1", 100)), http.StatusConflict, "data-exists", []string{"s1"}},
		{"put creates", false, http.MethodPut, servicePath("s1"), wrap(svc("s1", 100)), http.StatusCreated, "", []string{"s1"}},
		{"put replaces", true, http.MethodPut, servicePath("s1"), wrap(svc("s1", 200)), http.StatusNoContent, "", []string{"s1"}},
		{"put key mismatch", false, http.MethodPut, servicePath("s2"), wrap(svc("s1", 100)), http.StatusBadRequest, "not the key", nil},
		{"vlan out of range refused by yanglint", false, http.MethodPost, services, wrap(svc("s1", 5000)), http.StatusBadRequest, "out of the allowed range", nil},
		{"vlan as a string refused by yanglint", false, http.MethodPost, services, wrap(svc("s1", "100")), http.StatusBadRequest, "yanglint", nil},
		{"unqualified member", false, http.MethodPost, services, map[string]any{"vpn-service": []any{svc("s1", 100)}}, http.StatusBadRequest, "module-qualified", nil},
		{"unknown leaf refused by yanglint", false, http.MethodPost, services, wrap(func() map[string]any { s := svc("s1", 100); s["vpn-svc-type"] = "vpws"; return s }()), http.StatusBadRequest, "vpn-svc-type", nil},
		{"l3vpn type refused by the model's must", false, http.MethodPost, services, wrap(func() map[string]any { s := svc("s1", 100); s["vpn-type"] = "ietf-vpn-common:l3vpn"; return s }()), http.StatusBadRequest, "L3VPN is only applicable in L3NM", nil},
		{"state data refused", false, http.MethodPost, services, wrap(func() map[string]any {
			s := svc("s1", 100)
			s["status"] = map[string]any{"oper-status": map[string]any{"status": "ietf-vpn-common:op-up"}}
			return s
		}()), http.StatusBadRequest, "oper-status", nil},
		{"patch merges", true, http.MethodPatch, servicePath("s1"), wrap(map[string]any{"vpn-id": "s1", "vpn-description": "patched"}), http.StatusNoContent, "", []string{"s1"}},
		{"patch does not create", false, http.MethodPatch, servicePath("s1"), wrap(map[string]any{"vpn-id": "s1"}), http.StatusNotFound, "data-missing", nil},
		{"delete", true, http.MethodDelete, servicePath("s1"), nil, http.StatusNoContent, "", []string{}},
		{"delete unknown", false, http.MethodDelete, servicePath("s1"), nil, http.StatusNotFound, "data-missing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEmulator(t, Options{})
			if tt.seed {
				if r := call(t, e, http.MethodPost, services, wrap(svc("s1", 100))); r.status != http.StatusCreated {
					t.Fatalf("seed: %d %s", r.status, r.body)
				}
			}
			r := call(t, e, tt.method, tt.path, tt.body)
			if r.status != tt.status || !strings.Contains(r.body, tt.errSubstr) {
				t.Fatalf("%s %s = %d %s, want %d with %q", tt.method, tt.path, r.status, r.body, tt.status, tt.errSubstr)
			}
			if tt.status == http.StatusCreated && r.header.Get("Location") != servicePath("s1") {
				t.Errorf("Location = %q, want %q", r.header.Get("Location"), servicePath("s1"))
			}
			if got := e.Services(); tt.held != nil && strings.Join(got, ",") != strings.Join(tt.held, ",") {
				t.Errorf("services held = %q, want %q", got, tt.held)
			}
			if tt.status >= 400 && tt.status != http.StatusConflict && tt.status != http.StatusNotFound {
				if _, err := emulator.DecodeRESTCONFErrors([]byte(r.body)); err != nil {
					t.Errorf("error body: %v", err)
				}
			}
		})
	}
}

// TestPatchMerge: a PATCH merges list entries by key and keeps the rest.
func TestPatchMerge(t *testing.T) {
	t.Parallel()
	e := newEmulator(t, Options{})
	call(t, e, http.MethodPost, services, wrap(svc("s1", 100)))
	patch := map[string]any{"vpn-id": "s1", "vpn-nodes": map[string]any{"vpn-node": []any{map[string]any{"vpn-node-id": "PE1", "description": "edge"}}}}
	if r := call(t, e, http.MethodPatch, servicePath("s1"), wrap(patch)); r.status != http.StatusNoContent {
		t.Fatalf("PATCH = %d %s", r.status, r.body)
	}
	nodes := listOf(e.Service("s1"), "vpn-nodes", "vpn-node")
	if len(nodes) != 2 || nodes[0]["description"] != "edge" || len(listOf(nodes[0], "vpn-network-accesses", "vpn-network-access")) != 1 {
		t.Fatalf("after the PATCH vpn-nodes = %v, want PE1 merged (description added, access kept) and PE2 kept", nodes)
	}
}

// TestOperStatus: GETs answer op-unknown for BuildPolls, then op-up;
// SetOperStatus forces op-down; every answer passes yanglint as data.
func TestOperStatus(t *testing.T) {
	t.Parallel()
	e := newEmulator(t, Options{BuildPolls: 2})
	call(t, e, http.MethodPost, services, wrap(svc("s1", 100)))
	oper := func() string {
		t.Helper()
		r := call(t, e, http.MethodGet, servicePath("s1"), nil)
		var doc map[string][]struct {
			Status struct {
				Oper struct {
					Status string `json:"status"`
				} `json:"oper-status"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(r.body), &doc); err != nil || r.status != http.StatusOK || len(doc[Module+":vpn-service"]) != 1 {
			t.Fatalf("GET = %d %s (%v)", r.status, r.body, err)
		}
		return doc[Module+":vpn-service"][0].Status.Oper.Status
	}
	for i, want := range []string{"op-unknown", "op-unknown", "op-up"} {
		if got := oper(); got != "ietf-vpn-common:"+want {
			t.Fatalf("GET %d: oper-status %q, want %s", i+1, got, want)
		}
	}
	e.SetOperStatus("s1", "op-down")
	if got := oper(); got != "ietf-vpn-common:op-down" {
		t.Fatalf("after SetOperStatus: %q", got)
	}
	if r := call(t, e, http.MethodGet, services, nil); r.status != http.StatusOK || !strings.Contains(r.body, `"`+Module+`:vpn-services"`) {
		t.Fatalf("GET the list = %d %s", r.status, r.body)
	}
	call(t, e, http.MethodDelete, servicePath("s1"), nil)
	if r := call(t, e, http.MethodGet, services, nil); r.status != http.StatusNoContent {
		t.Fatalf("GET the empty list = %d %s, want 204", r.status, r.body)
	}
	if f := e.LintFailures(); len(f) != 0 || e.Linted() < 7 {
		t.Fatalf("yanglint checked %d documents and refused %q; want every one accepted", e.Linted(), f)
	}
}

// TestDevicesAndAuth: with Devices, an unknown ne-id or interface is
// refused; with credentials, a request without them is 401.
func TestDevicesAndAuth(t *testing.T) {
	t.Parallel()
	e := newEmulator(t, Options{Devices: map[string][]string{"PE1": {"ge-0/0/1"}, "PE2": {"ge-0/0/9"}}, User: "u", Password: "p", Token: "tok"})
	if r := call(t, e, http.MethodGet, services, nil); r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("GET without credentials = %d, want 401 with a challenge", r.status)
	}
	b, _ := json.Marshal(wrap(svc("s1", 100)))
	for _, auth := range []func(*http.Request){
		func(r *http.Request) { r.SetBasicAuth("u", "p") },
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") },
	} {
		req := httptest.NewRequest(http.MethodPost, services, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/yang-data+json")
		auth(req)
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `device PE2 has no interface \"ge-0/0/2\"`) {
			t.Fatalf("POST on an unknown interface = %d %s, want 400 naming it", w.Code, w.Body)
		}
	}
	if len(e.Services()) != 0 {
		t.Fatalf("a refused service is held: %v", e.Services())
	}
}
