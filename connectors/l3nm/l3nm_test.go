package l3nm_test

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/internal/vpnrc/vpnrctest"
	"github.com/wimro/wimro/connectors/l3nm"
	emu "github.com/wimro/wimro/internal/testkit/emulators/l3nm"
)

var setup = vpnrctest.Setup{
	Type:     l3nm.Type,
	Register: l3nm.Register,
	NewServer: func(user, password string) vpnrctest.Server {
		return emu.New(emu.Options{User: user, Password: password, BuildPolls: 2})
	},
	Mapping: func(site string) map[string]any {
		return map[string]any{"ne-id": site + "-pe", "interface-id": "ge-0/0/1", "bearer-reference": site + "-pe:ge-0/0/1"}
	},
	StoredQoS:      storedQoS,
	ListsEndpoints: true,
	ListsL3:        true,
}

// storedQoS is the bandwidth every access of vpn-service id carries in
// both directions; they must agree.
func storedQoS(t *testing.T, s vpnrctest.Server, id string) connectors.QoS {
	t.Helper()
	svc, ok := s.(*emu.Emulator).Service(id)
	if !ok {
		t.Fatalf("the emulator has no vpn-service %s", id)
	}
	seen := map[string]bool{}
	nodes, _ := svc["vpn-nodes"].(map[string]any)["vpn-node"].([]any)
	for _, n := range nodes {
		accesses, _ := n.(map[string]any)["vpn-network-accesses"].(map[string]any)["vpn-network-access"].([]any)
		for _, a := range accesses {
			svc, _ := a.(map[string]any)["service"].(map[string]any)
			in, _ := svc["pe-to-ce-bandwidth"].(string)
			out, _ := svc["ce-to-pe-bandwidth"].(string)
			seen[in], seen[out] = true, true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("the accesses of %s carry different bandwidths: %v", id, seen)
	}
	for bps := range seen {
		n, _ := strconv.Atoi(bps)
		return connectors.QoS{BandwidthMbps: n / 1_000_000}
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

// TestCreateRequests: the vpn-id is looked up, then POSTed with one
// vpn-node per PE; a second create with the same key replaces it (PUT).
func TestCreateRequests(t *testing.T) {
	t.Parallel()
	c, e := newConnector(t)
	points := setup.L3Points(0)
	points[2].L3.BGP = &connectors.BGPPeer{PeerAS: 65002, PeerAddress: points[2].L3.CEAddress}
	req := connectors.Request{Key: "k1", Type: connectors.ServiceL3VPN, Points: points, QoS: connectors.QoS{BandwidthMbps: 50}}
	id, _, err := c.CreateService(t.Context(), req)
	if err != nil || id != "wimro-k1" {
		t.Fatalf("CreateService = %q, %v", id, err)
	}
	if _, _, err := c.CreateService(t.Context(), req); err != nil {
		t.Fatalf("CreateService again: %v", err)
	}
	want := []string{
		"GET /vpn-services/vpn-service=wimro-k1 404", "POST /vpn-services 201", "GET /vpn-services 200",
		"GET /vpn-services/vpn-service=wimro-k1 200", "PUT /vpn-services/vpn-service=wimro-k1 204", "GET /vpn-services 200",
	}
	if got := vpnrctest.Calls(e); !slices.Equal(got, want) {
		t.Fatalf("requests\n got %q\nwant %q", got, want)
	}
	svc, _ := e.Service(id)
	nodes := svc["vpn-nodes"].(map[string]any)["vpn-node"].([]any)
	if len(nodes) != 3 {
		t.Fatalf("%d vpn-nodes, want one per PE (3): %v", len(nodes), nodes)
	}
	third := nodes[2].(map[string]any)
	access := third["vpn-network-accesses"].(map[string]any)["vpn-network-access"].([]any)[0].(map[string]any)
	checks := []struct {
		what      string
		got, want any
	}{
		{"ne-id", third["ne-id"], "dc-c-pe"},
		{"cvlan-id", access["connection"].(map[string]any)["encapsulation"].(map[string]any)["dot1q"].(map[string]any)["cvlan-id"], 300.0},
		{"local-address", access["ip-connection"].(map[string]any)["ipv4"].(map[string]any)["local-address"], "192.0.2.9"},
		{"customer-address", access["ip-connection"].(map[string]any)["ipv4"].(map[string]any)["address"].([]any)[0].(map[string]any)["customer-address"], "192.0.2.10"},
		{"bgp peer-as", access["routing-protocols"].(map[string]any)["routing-protocol"].([]any)[0].(map[string]any)["bgp"].(map[string]any)["peer-as"], 65002.0},
		{"bandwidth", access["service"].(map[string]any)["pe-to-ce-bandwidth"], "50000000"},
		{"interface-id", access["interface-id"], "ge-0/0/1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestStatus maps L3NM's oper-status; none reported is ACTIVE (exists).
func TestStatus(t *testing.T) {
	t.Parallel()
	c, e := newConnector(t)
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceL3VPN, Points: setup.Points(0)})
	if err != nil {
		t.Fatal(err)
	}
	// BuildPolls 2: the create's own listing was the first answer showing
	// it op-unknown.
	for i, want := range []connectors.Status{connectors.StatusBuild, connectors.StatusActive} {
		st, err := c.GetServiceStatus(t.Context(), id, connInfo)
		if err != nil || st.Status != want {
			t.Fatalf("status %d = %+v, %v; want %s", i, st, err, want)
		}
	}
	e.SetOperStatus(id, "op-down")
	if st, err := c.GetServiceStatus(t.Context(), id, connInfo); err != nil || st.Status != connectors.StatusDown || !strings.Contains(st.Message, "op-down") {
		t.Fatalf("status after op-down = %+v, %v; want DOWN naming op-down", st, err)
	}
	// A controller that reports no oper-status: the vpn-service exists.
	_, url := cncServer(t)
	c = setup.Build(t, setup.Config(url))
	if id, connInfo, err = c.CreateService(t.Context(), connectors.Request{Key: "k2", Type: connectors.ServiceL3VPN, Points: setup.Points(0)}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.GetServiceStatus(t.Context(), id, connInfo); err != nil || st.Status != connectors.StatusActive {
		t.Fatalf("status without oper-status = %+v, %v; want ACTIVE", st, err)
	}
}

// TestRefusals: what L3NM cannot carry, and mappings without ne-id, are
// refused by name before anything is sent.
func TestRefusals(t *testing.T) {
	t.Parallel()
	c, e := newConnector(t)
	noNE := setup.Points(0)
	noNE[1].MappingInfo = map[string]any{"interface-id": "ge-0/0/1"}
	tests := []struct {
		name string
		req  connectors.Request
		want string
	}{
		{"latency", connectors.Request{Key: "k", Type: connectors.ServiceL3VPN, Points: setup.Points(0), QoS: connectors.QoS{LatencyMs: 5}}, "latency"},
		{"ELINE", connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: setup.Points(0)}, "l3 site"},
		{"no ne-id", connectors.Request{Key: "k", Type: connectors.ServiceL3VPN, Points: noNE}, `"ne-id"`},
	}
	for _, tt := range tests {
		_, _, err := c.CreateService(t.Context(), tt.req)
		if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: CreateService error %v (kind %s), want Permanent naming %s", tt.name, err, connectors.KindOf(err), tt.want)
		}
	}
	if err := c.(connectors.MappingChecker).CheckMapping("ep-x", map[string]any{"ne-id": 7}); err == nil || !strings.Contains(err.Error(), `"ne-id"`) {
		t.Errorf("CheckMapping(ne-id 7) = %v, want an error naming ne-id", err)
	}
	if n := len(e.Requests()); n != 0 {
		t.Fatalf("refused requests reached the controller: %d requests", n)
	}
}

// TestCAFile: a controller behind TLS is trusted with its CA in ca_file.
func TestCAFile(t *testing.T) {
	t.Parallel()
	e := emu.New(emu.Options{})
	t.Cleanup(e.Close)
	srv := connectortest.TLSServer(t, e)
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c := setup.Build(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"ca_file": file}})
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatalf("CheckCredentials with ca_file: %v", err)
	}
}

// cncBody is the vpn-service a create of Points(0) sends with dialect
// cnc and local_as 65010: created by PUT, vpn-nodes named by vpn-node-id
// alone, ip-connection with the PE address and prefix length only.
const cncBody = `{"ietf-l3vpn-ntw:vpn-service": [{
  "vpn-id": "wimro-k1",
  "customer-name": "wimro",
  "vpn-type": "ietf-vpn-common:l3vpn",
  "vpn-service-topology": "ietf-vpn-common:any-to-any",
  "status": {"admin-status": {"status": "ietf-vpn-common:admin-up"}},
  "vpn-instance-profiles": {"vpn-instance-profile": [{
    "profile-id": "wimro-k1",
    "rd-auto": {"auto": [null]},
    "address-family": [{"address-family": "ietf-vpn-common:ipv4"}]
  }]},
  "vpn-nodes": {"vpn-node": [
    {
      "vpn-node-id": "dc-a-pe",
      "local-as": 65010,
      "status": {"admin-status": {"status": "ietf-vpn-common:admin-up"}},
      "active-vpn-instance-profiles": {"vpn-instance-profile": [{"profile-id": "wimro-k1"}]},
      "vpn-network-accesses": {"vpn-network-access": [{
        "id": "wimro-k1-0",
        "description": "wimro endpoint ep-dc-a",
        "vpn-network-access-type": "ietf-vpn-common:point-to-point",
        "vpn-instance-profile": "wimro-k1",
        "status": {"admin-status": {"status": "ietf-vpn-common:admin-up"}},
        "interface-id": "ge-0/0/1",
        "connection": {
          "encapsulation": {"type": "ietf-vpn-common:dot1q", "dot1q": {"tag-type": "ietf-vpn-common:c-vlan", "cvlan-id": 100}},
          "bearer-reference": "dc-a-pe:ge-0/0/1"
        },
        "ip-connection": {"ipv4": {"local-address": "192.0.2.1", "prefix-length": 30}},
        "routing-protocols": {"routing-protocol": [{
          "id": "static",
          "type": "ietf-vpn-common:static-routing",
          "static": {"cascaded-lan-prefixes": {"ipv4-lan-prefixes": [{"lan": "10.0.0.0/24", "next-hop": "192.0.2.2"}]}}
        }]},
        "service": {"mtu": 1500}
      }]}
    },
    {
      "vpn-node-id": "dc-b-pe",
      "local-as": 65010,
      "status": {"admin-status": {"status": "ietf-vpn-common:admin-up"}},
      "active-vpn-instance-profiles": {"vpn-instance-profile": [{"profile-id": "wimro-k1"}]},
      "vpn-network-accesses": {"vpn-network-access": [{
        "id": "wimro-k1-1",
        "description": "wimro endpoint ep-dc-b",
        "vpn-network-access-type": "ietf-vpn-common:point-to-point",
        "vpn-instance-profile": "wimro-k1",
        "status": {"admin-status": {"status": "ietf-vpn-common:admin-up"}},
        "interface-id": "ge-0/0/1",
        "connection": {
          "encapsulation": {"type": "ietf-vpn-common:dot1q", "dot1q": {"tag-type": "ietf-vpn-common:c-vlan", "cvlan-id": 100}},
          "bearer-reference": "dc-b-pe:ge-0/0/1"
        },
        "ip-connection": {"ipv4": {"local-address": "192.0.2.5", "prefix-length": 30}},
        "routing-protocols": {"routing-protocol": [{
          "id": "static",
          "type": "ietf-vpn-common:static-routing",
          "static": {"cascaded-lan-prefixes": {"ipv4-lan-prefixes": [{"lan": "10.1.0.0/24", "next-hop": "192.0.2.6"}]}}
        }]},
        "service": {"mtu": 1500}
      }]}
    }
  ]}
}]}`

// cncServer is an emulator that, as Cisco CNC's config API, reports no
// operational state.
func cncServer(t *testing.T) (*emu.Emulator, string) {
	t.Helper()
	s := setup
	s.NewServer = func(user, password string) vpnrctest.Server {
		return emu.New(emu.Options{User: user, Password: password, NoOperStatus: true})
	}
	e, srv := s.Serve(t, vpnrctest.User, vpnrctest.Password)
	return e.(*emu.Emulator), srv.URL
}

// TestDialectCNC: dialect cnc creates with PUT on the entry (CNC's config
// API documents no POST) a body without the leaves CNC's model lacks,
// still valid for RFC 9182 (the emulator checks it with yanglint); a
// service without oper-status is ACTIVE by its existence; listing reads
// the endpoints back by vpn-node-id.
func TestDialectCNC(t *testing.T) {
	t.Parallel()
	e, url := cncServer(t)
	cfg := setup.Config(url)
	cfg.AccountConfig = map[string]any{"dialect": "cnc", "local_as": 65010}
	c := setup.Build(t, cfg)
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceL3VPN, Points: setup.Points(0)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	want := []string{"GET /vpn-services/vpn-service=wimro-k1 404", "PUT /vpn-services/vpn-service=wimro-k1 201", "GET /vpn-services 200"}
	if got := vpnrctest.Calls(e); !slices.Equal(got, want) {
		t.Fatalf("requests\n got %q\nwant %q", got, want)
	}
	if sent := e.Requests()[1].Body; !connectortest.SameJSON(t, sent, cncBody) {
		t.Errorf("the create sent\n%s\nwant\n%s", sent, cncBody)
	}
	st, err := c.GetServiceStatus(t.Context(), id, connInfo)
	if err != nil || st.Status != connectors.StatusActive {
		t.Errorf("status without oper-status = %+v, %v; want ACTIVE (the vpn-service exists)", st, err)
	}
	list, err := c.ListServices(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("ListServices = %v, %v", list, err)
	}
	if got, want := list[0].Endpoints, []string{connectors.EndpointName("ep-dc-a", 100), connectors.EndpointName("ep-dc-b", 100)}; !slices.Equal(got, want) {
		t.Errorf("listed endpoints %q, want %q (read by vpn-node-id)", got, want)
	}
	// CNC keeps no CE address: the sites read back must not differ from
	// the ones sent for that alone (drift reconcile compares them).
	if diff := connectors.L3Diff(connectors.L3FormsOf(setup.Points(0)), list[0].L3); diff != nil || len(list[0].L3) != 2 {
		t.Errorf("listed L3 sites %v differ from the ones sent: %q", list[0].L3, diff)
	}
}

// TestSettings: local_as is each vpn-node's local-as (TestDialectCNC
// has it in dialect cnc); the default dialect POSTs and keeps ne-id and
// the static address leaves; bad values are refused naming the setting.
func TestSettings(t *testing.T) {
	t.Parallel()
	e, srv := setup.Serve(t, vpnrctest.User, vpnrctest.Password)
	cfg := setup.Config(srv.URL)
	cfg.AccountConfig = map[string]any{"local_as": 65010}
	c := setup.Build(t, cfg)
	if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceL3VPN, Points: setup.Points(0)}); err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	if got := vpnrctest.Calls(e)[1]; got != "POST /vpn-services 201" {
		t.Errorf("the default dialect created with %q, want POST /vpn-services 201", got)
	}
	svc, _ := e.(*emu.Emulator).Service("wimro-k1")
	node := svc["vpn-nodes"].(map[string]any)["vpn-node"].([]any)[0].(map[string]any)
	access := node["vpn-network-accesses"].(map[string]any)["vpn-network-access"].([]any)[0].(map[string]any)
	ipv4 := access["ip-connection"].(map[string]any)["ipv4"].(map[string]any)
	checks := []struct {
		what      string
		got, want any
	}{
		{"local-as", node["local-as"], 65010.0},
		{"ne-id", node["ne-id"], "dc-a-pe"},
		{"address-allocation-type", ipv4["address-allocation-type"], "ietf-l3vpn-ntw:static-address"},
		{"customer-address", ipv4["address"].([]any)[0].(map[string]any)["customer-address"], "192.0.2.2"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	tests := []struct {
		name    string
		account map[string]any
		want    string // "" accepted
	}{
		{"dialect", map[string]any{"dialect": "nso"}, `"dialect"`},
		{"local_as negative", map[string]any{"local_as": -1}, `"local_as"`},
		{"local_as over uint32", map[string]any{"local_as": 4294967296}, `"local_as"`},
		{"local_as text", map[string]any{"local_as": "AS65000"}, `"local_as"`},
		{"rfc9182", map[string]any{"dialect": "rfc9182", "local_as": 4294967295}, ""},
	}
	for _, tt := range tests {
		_, err := l3nm.Factory(connectors.Config{URL: "http://127.0.0.1:1", AccountConfig: tt.account})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Factory: %v", tt.name, err)
		case tt.want != "" && (err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Factory error %v, want Permanent naming %s", tt.name, err, tt.want)
		}
	}
}
