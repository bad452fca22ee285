package l3nm_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	emu "github.com/wimro/wimro/internal/testkit/emulators/l3nm"
)

// service is a vpn-service with one access, changed by edit.
func service(id string, edit func(access map[string]any)) string {
	access := map[string]any{
		"id": id + "-0", "vpn-instance-profile": id,
		"connection":    map[string]any{"encapsulation": map[string]any{"type": "ietf-vpn-common:dot1q", "dot1q": map[string]any{"tag-type": "ietf-vpn-common:c-vlan", "cvlan-id": 100}}},
		"ip-connection": map[string]any{"ipv4": map[string]any{"local-address": "192.0.2.1", "prefix-length": 30}},
		"routing-protocols": map[string]any{"routing-protocol": []any{map[string]any{"id": "static", "type": "ietf-vpn-common:static-routing",
			"static": map[string]any{"cascaded-lan-prefixes": map[string]any{"ipv4-lan-prefixes": []any{map[string]any{"lan": "10.0.0.0/24", "next-hop": "192.0.2.2"}}}}}}},
	}
	if edit != nil {
		edit(access)
	}
	s := map[string]any{
		"vpn-id":                id,
		"vpn-instance-profiles": map[string]any{"vpn-instance-profile": []any{map[string]any{"profile-id": id}}},
		"vpn-nodes": map[string]any{"vpn-node": []any{map[string]any{"vpn-node-id": "pe1", "ne-id": "pe1",
			"active-vpn-instance-profiles": map[string]any{"vpn-instance-profile": []any{map[string]any{"profile-id": id}}},
			"vpn-network-accesses":         map[string]any{"vpn-network-access": []any{access}}}}},
	}
	b, _ := json.Marshal(map[string]any{"ietf-l3vpn-ntw:vpn-service": []any{s}})
	return string(b)
}

func do(t *testing.T, e *emu.Emulator, method, path, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, emu.Root+path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/yang-data+json")
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// TestValidation: RFC 9182's ranges, identities and leafrefs are
// enforced, with vpn-common's features on.
func TestValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(a map[string]any)
		status int
		want   string
	}{
		{"valid", nil, 201, ""},
		{"cvlan-id 5000", func(a map[string]any) {
			a["connection"].(map[string]any)["encapsulation"].(map[string]any)["dot1q"].(map[string]any)["cvlan-id"] = 5000
		}, 400, "5000"},
		{"prefix-length 33", func(a map[string]any) {
			a["ip-connection"].(map[string]any)["ipv4"].(map[string]any)["prefix-length"] = 33
		}, 400, "33"},
		{"unknown profile", func(a map[string]any) { a["vpn-instance-profile"] = "nope" }, 400, "nope"},
		{"bgp (vpn-common feature rtg-bgp, enabled)", func(a map[string]any) {
			a["routing-protocols"] = map[string]any{"routing-protocol": []any{map[string]any{"id": "bgp", "type": "ietf-vpn-common:bgp-routing",
				"bgp": map[string]any{"peer-as": 65001, "address-family": "ietf-vpn-common:ipv4", "neighbor": []any{"192.0.2.2"}}}}}
		}, 201, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := emu.New(emu.Options{})
			t.Cleanup(e.Close)
			status, body := do(t, e, "POST", "/vpn-services", service("v1", tt.edit))
			if status != tt.status {
				t.Fatalf("POST = %d %s, want %d", status, body, tt.status)
			}
			if tt.want == "" {
				return
			}
			errs, err := emulator.DecodeRESTCONFErrors([]byte(body))
			if err != nil || len(errs) != 1 || !strings.Contains(errs[0].Message, tt.want) {
				t.Fatalf("refusal %s does not name %q (%v)", body, tt.want, err)
			}
			if ids := e.ServiceIDs(); len(ids) != 0 {
				t.Fatalf("a refused body was stored: %v", ids)
			}
		})
	}
}

// TestOperStatus: a new vpn-service is op-unknown for BuildPolls answers,
// then op-up, or what SetOperStatus says; the answers pass yanglint as
// data.
func TestOperStatus(t *testing.T) {
	t.Parallel()
	e := emu.New(emu.Options{BuildPolls: 2})
	t.Cleanup(e.Close)
	if status, body := do(t, e, "POST", "/vpn-services", service("v1", nil)); status != 201 {
		t.Fatalf("POST = %d %s", status, body)
	}
	oper := func() string {
		status, body := do(t, e, "GET", "/vpn-services/vpn-service=v1", "")
		if status != 200 {
			t.Fatalf("GET = %d %s", status, body)
		}
		var doc map[string][]struct {
			Status struct {
				Oper struct {
					Status string `json:"status"`
				} `json:"oper-status"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc["ietf-l3vpn-ntw:vpn-service"]) != 1 {
			t.Fatalf("GET answered %s: %v", body, err)
		}
		return doc["ietf-l3vpn-ntw:vpn-service"][0].Status.Oper.Status
	}
	for i, want := range []string{"op-unknown", "op-unknown", "op-up"} {
		if got := oper(); got != "ietf-vpn-common:"+want {
			t.Fatalf("GET %d: oper-status %q, want %s", i, got, want)
		}
	}
	e.SetOperStatus("v1", "op-down")
	if got := oper(); got != "ietf-vpn-common:op-down" {
		t.Fatalf("after SetOperStatus: oper-status %q, want op-down", got)
	}
	if f := e.LintFailures(); len(f) != 0 {
		t.Fatalf("yanglint refused the emulator's answers: %q", f)
	}
}
