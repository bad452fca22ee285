package ietfl3vpn_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/ietfl3vpn"
	"github.com/wimro/wimro/connectors/internal/vpnrc/vpnrctest"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl3vpn"
)

var setup = vpnrctest.Setup{
	Type:     ietfl3vpn.Type,
	Register: ietfl3vpn.Register,
	NewServer: func(user, password string) vpnrctest.Server {
		return emu.New(emu.Options{User: user, Password: password})
	},
	Mapping: func(site string) map[string]any {
		return map[string]any{"device-id": site + "-pe", "location-id": site, "bearer-reference": site + "-pe:ge-0/0/1.{vlan}"}
	},
	StoredQoS:      storedQoS,
	ListsEndpoints: true,
	ListsL3:        true,
}

// storedQoS is the bandwidth and latency every site of vpn-service id
// carries; they must agree.
func storedQoS(t *testing.T, s vpnrctest.Server, id string) connectors.QoS {
	t.Helper()
	tree := s.(*emu.Emulator).Tree()
	sites, _ := tree["sites"].(map[string]any)["site"].([]any)
	seen := map[connectors.QoS]bool{}
	for _, item := range sites {
		accesses, _ := item.(map[string]any)["site-network-accesses"].(map[string]any)["site-network-access"].([]any)
		for _, a := range accesses {
			a := a.(map[string]any)
			if a["vpn-attachment"].(map[string]any)["vpn-id"] != id {
				continue
			}
			svc := a["service"].(map[string]any)
			in, _ := strconv.Atoi(svc["svc-input-bandwidth"].(string))
			out, _ := strconv.Atoi(svc["svc-output-bandwidth"].(string))
			if in != out {
				t.Fatalf("an access of %s has input bandwidth %d and output %d", id, in, out)
			}
			q := connectors.QoS{BandwidthMbps: in / 1_000_000}
			qos, _ := svc["qos"].(map[string]any)
			classes, _ := qos["qos-profile"].(map[string]any)["classes"].(map[string]any)
			list, _ := classes["class"].([]any)
			for _, c := range list {
				if lat, ok := c.(map[string]any)["latency"].(map[string]any)["latency-boundary"].(float64); ok {
					q.LatencyMs = int(lat)
				}
			}
			seen[q] = true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("the sites of %s carry different QoS: %v", id, seen)
	}
	for q := range seen {
		if q.BandwidthMbps == 1000 { // default_bandwidth_mbps: nothing asked
			q.BandwidthMbps = 0
		}
		return q
	}
	return connectors.QoS{}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	setup.Run(t)
}

func newConnector(t *testing.T) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	c, e := setup.Connector(t)
	return c, e.(*emu.Emulator)
}

// TestRequests: the vpn-service is created before the sites that
// reference it and deleted after them; the site carries the L3 site.
func TestRequests(t *testing.T) {
	t.Parallel()
	c, e := newConnector(t)
	points := setup.Points(0)
	points[1].L3.BGP = &connectors.BGPPeer{PeerAS: 65002, PeerAddress: points[1].L3.CEAddress}
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceL3VPN, Points: points, QoS: connectors.QoS{LatencyMs: 20}})
	if err != nil {
		t.Fatal(err)
	}
	site, ok := e.Get("/sites/site=wimro-k1-1")
	if !ok {
		t.Fatalf("no site wimro-k1-1: %v", e.Tree())
	}
	access := site.(map[string]any)["site-network-accesses"].(map[string]any)["site-network-access"].([]any)[0].(map[string]any)
	rp := access["routing-protocols"].(map[string]any)["routing-protocol"].([]any)
	if len(rp) != 1 || rp[0].(map[string]any)["bgp"].(map[string]any)["autonomous-system"] != 65002.0 {
		t.Errorf("routing-protocols %v, want bgp only, autonomous-system 65002", rp)
	}
	if got := access["device-reference"]; got != "dc-b-pe" {
		t.Errorf("device-reference %v, want dc-b-pe", got)
	}
	if got := access["bearer"].(map[string]any)["bearer-reference"]; got != "dc-b-pe:ge-0/0/1.100" {
		t.Errorf("bearer-reference %v, want dc-b-pe:ge-0/0/1.100 (the VLAN in the template)", got)
	}
	if err := c.DeleteService(t.Context(), id, connInfo); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /vpn-services/vpn-service=wimro-k1 404", "POST /vpn-services 201", "POST /sites 201", "POST /sites 201",
		"GET /vpn-services 200", "GET /sites 200",
		"GET /vpn-services 200", "GET /sites 200",
		"DELETE /sites/site=wimro-k1-1 204", "DELETE /sites/site=wimro-k1-0 204", "DELETE /vpn-services/vpn-service=wimro-k1 204",
	}
	if got := vpnrctest.Calls(e); !slices.Equal(got, want) {
		t.Fatalf("requests\n got %q\nwant %q", got, want)
	}
}

// TestStatus: existence is ACTIVE; a site gone behind wimro's back is
// DOWN naming it; a vpn-service gone is NotFound.
func TestStatus(t *testing.T) {
	t.Parallel()
	c, e := newConnector(t)
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceL3VPN, Points: setup.Points(0)})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.GetServiceStatus(t.Context(), id, connInfo); err != nil || st.Status != connectors.StatusActive {
		t.Fatalf("status = %+v, %v; want ACTIVE", st, err)
	}
	if err := e.Put("/sites/site=wimro-k1-0", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := c.GetServiceStatus(t.Context(), id, connInfo); err != nil || st.Status != connectors.StatusDown || !strings.Contains(st.Message, "wimro-k1-0") {
		t.Fatalf("status without a site = %+v, %v; want DOWN naming it", st, err)
	}
	if err := e.Put("/sites/site=wimro-k1-1", nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Put("/vpn-services/vpn-service="+id, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetServiceStatus(t.Context(), id, connInfo); !connectors.IsNotFound(err) {
		t.Fatalf("status of a vpn-service gone = %v, want NotFound", err)
	}
}

// TestRefusals: a BGP peer that is not the CE address cannot be said in
// L3SM; a mapping without device-id is refused; nothing is sent.
func TestRefusals(t *testing.T) {
	t.Parallel()
	c, e := newConnector(t)
	otherPeer := setup.Points(0)
	otherPeer[0].L3.BGP = &connectors.BGPPeer{PeerAS: 65001, PeerAddress: otherPeer[0].L3.PEAddress.Addr().Next().Next()}
	noDevice := setup.Points(0)
	noDevice[0].MappingInfo = map[string]any{"location-id": "dc-a"}
	untemplated := setup.Points(0)
	untemplated[1].MappingInfo = map[string]any{"device-id": "dc-b-pe", "bearer-reference": "dc-b-pe:ge-0/0/1"}
	untagged := setup.Points(0)
	untagged[0].Encapsulation, untagged[0].VLAN = connectors.EncapNone, 0
	tests := []struct {
		name   string
		points []connectors.ConnectionPoint
		want   string
	}{
		{"bgp peer not the ce", otherPeer, "peer_address"},
		{"no device-id", noDevice, `"device-id"`},
		{"dot1q without {vlan} in the bearer", untemplated, "vlan 100 cannot be carried"},
		{"untagged with {vlan} in the bearer", untagged, "untagged"},
	}
	for _, tt := range tests {
		_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceL3VPN, Points: tt.points})
		if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: CreateService error %v (kind %s), want Permanent naming %s", tt.name, err, connectors.KindOf(err), tt.want)
		}
	}
	if n := len(e.Requests()); n != 0 {
		t.Fatalf("refused requests reached the controller: %d requests", n)
	}
}
