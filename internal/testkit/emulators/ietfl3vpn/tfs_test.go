package ietfl3vpn_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl3vpn"
)

// tfsSite is a site as TeraFlowSDN's test data has it; access replaces
// "ACCESS".
const tfsSite = `{"site-id": "S", "management": {"type": "ietf-l3vpn-svc:provider-managed"},
 "locations": {"location": [{"location-id": "L"}]}, "devices": {"device": [{"device-id": "D", "location": "L"}]},
 "routing-protocols": {"routing-protocol": [{"type": "ietf-l3vpn-svc:static", "static": {"cascaded-lan-prefixes": {"ipv4-lan-prefixes": [
   {"lan": "10.0.0.0/24", "lan-tag": "vlan100", "next-hop": "192.0.2.2"}]}}}]},
 "site-network-accesses": {"site-network-access": [ACCESS]}}`

const tfsAccess = `{"site-network-access-id": "E", "site-network-access-type": "ietf-l3vpn-svc:multipoint", "device-reference": "D",
 "vpn-attachment": {"vpn-id": "v1", "site-role": "ietf-l3vpn-svc:hub-role"},
 "ip-connection": {"ipv4": {"address-allocation-type": "ietf-l3vpn-svc:static-address",
   "addresses": {"provider-address": "192.0.2.1", "customer-address": "192.0.2.2", "prefix-length": 30}}},
 "service": {"svc-mtu": 1500, "svc-input-bandwidth": "1000000", "svc-output-bandwidth": "2000000"QOS}}`

const tfsQoS = `, "qos": {"qos-profile": {"classes": {"class": [{"class-id": "qos-realtime", "direction": "ietf-l3vpn-svc:both",
 "latency": {"latency-boundary": 10}, "bandwidth": {"guaranteed-bw-percent": "100"}}]}}}`

// tfsTree is a whole l3vpn-svc tree of vpn-service v1 and two sites on
// device D and D2, with QoS qos and qos2.
func tfsTree(qos, qos2 string) string {
	site := strings.ReplaceAll(tfsSite, "ACCESS", strings.ReplaceAll(tfsAccess, "QOS", qos))
	site2 := strings.NewReplacer(`"S"`, `"S2"`, `"D"`, `"D2"`).Replace(strings.ReplaceAll(tfsSite, "ACCESS", strings.ReplaceAll(tfsAccess, "QOS", qos2)))
	return `{"ietf-l3vpn-svc:l3vpn-svc": {"vpn-services": {"vpn-service": [{"vpn-id": "v1"}]}, "sites": {"site": [` + site + `,` + site2 + `]}}}`
}

// TestTFS: the emulator answers as TeraFlowSDN's L3VPN NBI.
func TestTFS(t *testing.T) {
	t.Parallel()
	const svc = "/vpn-services/vpn-service=v1/"
	type step struct {
		method, path, body string
		status             int
		want               string // in the answer
	}
	tests := []struct {
		name  string
		steps []step
		lint  int // bodies yanglint refused
		// endpoints is how many endpoints v1 has in the end.
		endpoints int
	}{
		{"create, 504 until ACTIVE, create again, delete", []step{
			{"GET", "/vpn-services", "", 200, "{}"},
			{"GET", svc, "", 500, `VPN(v1) not found in database`},
			{"POST", "/vpn-services", tfsTree(tfsQoS, tfsQoS), 201, "[]"},
			{"GET", svc, "", 504, `"service-id":"v1"`},
			{"GET", "/vpn-services/vpn-service=v1", "", 200, `"service-id":"v1"`},
			{"GET", "/vpn-services", "", 200, "{}"},
			{"POST", "/vpn-services", tfsTree(tfsQoS, tfsQoS), 500, "ALREADY_EXISTS"},
			{"DELETE", svc, "", 204, ""},
			{"DELETE", svc, "", 204, ""},
			{"GET", svc, "", 500, "not found in database"},
		}, 0, 0},
		{"an access without QoS raises after the vpn-service and the sites before it are made", []step{
			{"POST", "/vpn-services", tfsTree(tfsQoS, ""), 500, "Internal Server Error"},
			{"GET", svc, "", 504, `"service-id":"v1"`},
		}, 0, 1},
		{"a body yanglint refuses is Flask's 500", []step{
			{"POST", "/vpn-services", strings.Replace(tfsTree(tfsQoS, tfsQoS), `"svc-mtu": 1500, `, "", 1), 500, "Internal Server Error"},
			{"GET", svc, "", 500, "not found in database"},
		}, 1, 0},
		{"only TeraFlowSDN's routes", []step{
			{"GET", "/sites", "", 404, "Not Found"},
			{"PUT", "/vpn-services", tfsTree(tfsQoS, tfsQoS), 405, "Method Not Allowed"},
			{"POST", "/vpn-services", `{"ietf-l3vpn-svc:l3vpn-svc": {}}`, 500, "Internal Server Error"},
			{"POST", "/vpn-services", `{"x": 1}`, 500, "unexpected request"},
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := emu.NewTFS(emu.TFSOptions{BuildPolls: 1})
			t.Cleanup(e.Close)
			for i, s := range tt.steps {
				got := do(t, e, s.method, s.path, s.body)
				if got.status != s.status || !strings.Contains(got.body, s.want) {
					t.Fatalf("step %d: %s %s = %d %s, want %d with %q", i, s.method, s.path, got.status, got.body, s.status, s.want)
				}
			}
			if n := len(e.LintFailures()); n != tt.lint {
				t.Fatalf("yanglint refused %d bodies, want %d: %q", n, tt.lint, e.LintFailures())
			}
			if got := e.Endpoints("v1"); len(got) != tt.endpoints {
				t.Fatalf("v1 has endpoints %+v, want %d", got, tt.endpoints)
			}
		})
	}
}

// TestTFSPut: the PUT of later releases takes the bandwidths of the tree
// and nothing else, without credentials; what update_vpn raises on is
// Flask's 500.
func TestTFSPut(t *testing.T) {
	t.Parallel()
	const svc = "/vpn-services/vpn-service=v1/"
	e := emu.NewTFS(emu.TFSOptions{User: "u", Password: "p"})
	t.Cleanup(e.Close)
	auth := []string{"Authorization", "Basic dTpw"} // u:p
	if got := do(t, e, http.MethodPost, "/vpn-services", tfsTree(tfsQoS, tfsQoS), auth...); got.status != http.StatusCreated {
		t.Fatalf("POST = %d %s", got.status, got.body)
	}
	before := e.Endpoints("v1")
	moved := strings.NewReplacer(`"2000000"`, `"5000000"`, `"vlan100"`, `"vlan200"`, `"latency-boundary": 10`, `"latency-boundary": 20`).Replace(tfsTree(tfsQoS, tfsQoS))
	if got := do(t, e, http.MethodPut, svc, moved); got.status != http.StatusNoContent {
		t.Fatalf("PUT without credentials = %d %s, want 204", got.status, got.body)
	}
	after := e.Endpoints("v1")
	if len(after) != 2 {
		t.Fatalf("endpoints after the PUT: %+v", after)
	}
	for i, ep := range after {
		want := before[i]
		want.BandwidthBps = 5000000
		if !reflect.DeepEqual(ep, want) {
			t.Errorf("endpoint %d after the PUT %+v, want %+v (the bandwidth only)", i, ep, want)
		}
	}
	refused := []struct{ name, body string }{
		{"unknown vpn-id", strings.ReplaceAll(moved, `"vpn-id": "v1"`, `"vpn-id": "v9"`)},
		{"co-managed site", strings.Replace(moved, "ietf-l3vpn-svc:provider-managed", "ietf-l3vpn-svc:co-managed", 1)},
		{"no sites", `{"ietf-l3vpn-svc:l3vpn-svc": {"vpn-services": {"vpn-service": [{"vpn-id": "v1"}]}}}`},
	}
	for _, r := range refused {
		if got := do(t, e, http.MethodPut, svc, r.body); got.status != http.StatusInternalServerError || !strings.Contains(got.body, "Internal Server Error") {
			t.Errorf("PUT %s = %d %s, want Flask's 500", r.name, got.status, got.body)
		}
	}
	if n := len(e.LintFailures()); n != 0 {
		t.Fatalf("yanglint refused %d bodies: %q", n, e.LintFailures())
	}
}

// TestTFSAuth: TeraFlowSDN's NBI asks for basic auth.
func TestTFSAuth(t *testing.T) {
	t.Parallel()
	e := emu.NewTFS(emu.TFSOptions{User: "u", Password: "p"})
	t.Cleanup(e.Close)
	if got := do(t, e, http.MethodGet, "/vpn-services", ""); got.status != http.StatusUnauthorized {
		t.Fatalf("GET without credentials = %d, want 401", got.status)
	}
}
