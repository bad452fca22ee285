package ietfl3vpn_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/conformance"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/ietfl3vpn"
	"github.com/wimro/wimro/connectors/internal/vpnrc/vpnrctest"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl3vpn"
)

// tfsAccount sets the tfs dialect.
var tfsAccount = map[string]any{"dialect": ietfl3vpn.DialectTFS}

// tfsPoints are the points of the tfs dialect: each datacenter's PE
// names its endpoint as TeraFlowSDN does (device and endpoint).
var tfsPoints = vpnrctest.Setup{Mapping: func(site string) map[string]any {
	return map[string]any{"device-id": site + "-pe", "endpoint-id": "eth-1/0/1", "location-id": site}
}}

// tfsServe starts a TeraFlowSDN emulator until t ends, failing t when
// yanglint refused a body it was sent.
func tfsServe(t *testing.T, opts emu.TFSOptions) (*emu.TFS, string) {
	t.Helper()
	e := emu.NewTFS(opts)
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.Close()
		if f := e.LintFailures(); len(f) > 0 {
			t.Errorf("yanglint refused %d documents: %q", len(f), f)
		}
		e.Close()
	})
	return e, srv.URL
}

// tfsConfig is the config of a tfs-dialect connector on url, with the
// port mappings of the three datacenters.
func tfsConfig(url string) connectors.Config {
	var mappings []wimro.PortMapping
	for j := range vpnrctest.Sites {
		p := tfsPoints.Point(j, 0)
		mappings = append(mappings, wimro.PortMapping{WANServiceEndpointID: p.ServiceEndpointID, WANServiceMappingInfo: p.MappingInfo})
	}
	return connectors.Config{URL: url + "/", User: vpnrctest.User, Password: vpnrctest.Password, AccountConfig: tfsAccount, PortMappings: mappings}
}

func tfsConnector(t *testing.T, opts emu.TFSOptions) (connectors.Connector, *emu.TFS) {
	t.Helper()
	opts.User, opts.Password = vpnrctest.User, vpnrctest.Password
	e, url := tfsServe(t, opts)
	return setup.Build(t, tfsConfig(url)), e
}

// TestConformanceTFS runs the conformance suite in the tfs dialect
// against the emulator of TeraFlowSDN's NBI: no listing (what it holds
// is read from the emulator), no edit, no BGP and no IPv6.
func TestConformanceTFS(t *testing.T) {
	t.Parallel()
	var emulators sync.Map // connector → its emulator
	pair := func(t *testing.T) (connectors.Connector, connectors.Connector) {
		e, url := tfsServe(t, emu.TFSOptions{User: vpnrctest.User, Password: vpnrctest.Password, BuildPolls: 2})
		a, b := setup.Build(t, tfsConfig(url)), setup.Build(t, tfsConfig(url))
		emulators.Store(a, e)
		emulators.Store(b, e)
		return a, b
	}
	h := conformance.Harness{
		New: func(t *testing.T) connectors.Connector {
			c, _ := pair(t)
			return c
		},
		Pair:                pair,
		Type:                connectors.ServiceL3VPN,
		Points:              tfsPoints.Points,
		L3Points:            tfsPoints.L3Points,
		L3Unsupported:       []string{"bgp", "ipv6"},
		Capabilities:        connectortest.Capabilities(ietfl3vpn.Type, ietfl3vpn.Register, connectors.Config{AccountConfig: tfsAccount}),
		ClearAllUnsupported: true,
		MaxStatusPolls:      5,
		Unreachable: func(t *testing.T) connectors.Connector {
			return setup.Build(t, tfsConfig(connectortest.Unreachable(t)))
		},
		BadCredentials: func(t *testing.T) connectors.Connector {
			_, url := tfsServe(t, emu.TFSOptions{User: vpnrctest.User, Password: vpnrctest.Password})
			cfg := tfsConfig(url)
			cfg.Password = "not-" + vpnrctest.Password
			return setup.Build(t, cfg)
		},
		QoS: func(t *testing.T) (connectors.Connector, func(string) connectors.QoS) {
			c, e := tfsConnector(t, emu.TFSOptions{})
			emulators.Store(c, e)
			return c, func(id string) connectors.QoS { return tfsStoredQoS(t, e, id) }
		},
		Inventory: func(t *testing.T, c connectors.Connector) []connectors.Service {
			e, ok := emulators.Load(c)
			if !ok {
				t.Fatal("Inventory of a connector New did not build")
			}
			var out []connectors.Service
			for _, id := range e.(*emu.TFS).ServiceIDs() {
				out = append(out, connectors.Service{ID: id, Key: strings.TrimPrefix(id, "wimro-")})
			}
			return out
		},
	}
	conformance.Run(t, h)
}

// tfsStoredQoS is the bandwidth and latency TeraFlowSDN recorded for
// every endpoint of service id; they must agree.
func tfsStoredQoS(t *testing.T, e *emu.TFS, id string) connectors.QoS {
	t.Helper()
	seen := map[connectors.QoS]bool{}
	for _, ep := range e.Endpoints(id) {
		q := connectors.QoS{BandwidthMbps: ep.BandwidthBps / 1_000_000, LatencyMs: ep.LatencyMs}
		if q.BandwidthMbps == 1000 { // default_bandwidth_mbps: nothing asked
			q.BandwidthMbps = 0
		}
		if q.LatencyMs == 65535 { // no bound: nothing asked
			q.LatencyMs = 0
		}
		seen[q] = true
	}
	if len(seen) != 1 {
		t.Fatalf("the endpoints of %s carry different QoS: %v", id, seen)
	}
	for q := range seen {
		return q
	}
	return connectors.QoS{}
}

// TestTeraFlowSDN holds the tfs dialect to TeraFlowSDN's NBI: one POST of
// the whole tree in the shape its Handlers.py reads, its answers read
// right, and what it cannot read refused before anything is sent.
func TestTeraFlowSDN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"one POST of the whole tree, read as TeraFlowSDN reads it", func(t *testing.T) {
			c, e := tfsConnector(t, emu.TFSOptions{})
			points := tfsPoints.Points(0)
			points[1].L3.StaticRoutes = []connectors.StaticRoute{{Prefix: netip.MustParsePrefix("172.16.0.0/16"), NextHop: points[1].L3.CEAddress}}
			id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceL3VPN, Points: points, QoS: connectors.QoS{BandwidthMbps: 50, LatencyMs: 20}})
			if err != nil {
				t.Fatal(err)
			}
			want := []emu.TFSEndpoint{
				{Site: "wimro-k1-0", Device: "dc-a-pe", Endpoint: "eth-1/0/1", VLAN: 100, Address: "192.0.2.2", Neighbor: "192.0.2.1", PrefixLength: 30,
					BandwidthBps: 50_000_000, LatencyMs: 20, MTU: 1500, StaticRoutes: []string{"10.0.0.0/24 via 192.0.2.2"}},
				{Site: "wimro-k1-1", Device: "dc-b-pe", Endpoint: "eth-1/0/1", VLAN: 100, Address: "192.0.2.6", Neighbor: "192.0.2.5", PrefixLength: 30,
					BandwidthBps: 50_000_000, LatencyMs: 20, MTU: 1500, StaticRoutes: []string{"172.16.0.0/16 via 192.0.2.6"}},
			}
			if got := e.Endpoints(id); !reflect.DeepEqual(got, want) {
				t.Fatalf("TeraFlowSDN recorded endpoints\n%+v\nwant\n%+v", got, want)
			}
			if st, err := c.GetServiceStatus(t.Context(), id, connectortest.RoundTrip(t, ci)); err != nil || st.Status != connectors.StatusActive {
				t.Fatalf("status = %+v, %v; want ACTIVE", st, err)
			}
			if err := c.DeleteService(t.Context(), id, ci); err != nil {
				t.Fatal(err)
			}
			wantCalls := []string{
				"GET /vpn-services/vpn-service=wimro-k1/ 500", "POST /vpn-services 201",
				"GET /vpn-services/vpn-service=wimro-k1/ 200", "DELETE /vpn-services/vpn-service=wimro-k1/ 204",
			}
			if got := vpnrctest.Calls(e); !slices.Equal(got, wantCalls) {
				t.Fatalf("requests\n got %q\nwant %q", got, wantCalls)
			}
		}},
		{"504 is BUILD, until build_timeout_s makes it ERROR", func(t *testing.T) {
			c, e := tfsConnector(t, emu.TFSOptions{})
			id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "b", Type: connectors.ServiceL3VPN, Points: tfsPoints.Points(0)})
			if err != nil {
				t.Fatal(err)
			}
			e.SetPending(id, 1000)
			if st, err := c.GetServiceStatus(t.Context(), id, connectortest.RoundTrip(t, ci)); err != nil || st.Status != connectors.StatusBuild {
				t.Fatalf("status while TeraFlowSDN answers 504 = %+v, %v; want BUILD", st, err)
			}
			ci["requested_at"] = time.Now().Add(-16 * time.Minute).UTC().Format(time.RFC3339)
			if st, err := c.GetServiceStatus(t.Context(), id, connectortest.RoundTrip(t, ci)); err != nil || st.Status != connectors.StatusError || !strings.Contains(st.Message, "build_timeout_s 900") {
				t.Fatalf("status 16 minutes on = %+v, %v; want ERROR naming build_timeout_s", st, err)
			}
		}},
		{"500 not found in database is NotFound; DELETE of it succeeds", func(t *testing.T) {
			c, _ := tfsConnector(t, emu.TFSOptions{})
			if _, err := c.GetServiceStatus(t.Context(), "wimro-gone", nil); !connectors.IsNotFound(err) {
				t.Fatalf("status of an unknown VPN = %v (kind %s), want NotFound", err, connectors.KindOf(err))
			}
			if err := c.DeleteService(t.Context(), "wimro-gone", nil); err != nil {
				t.Fatalf("DeleteService(unknown) = %v, want success", err)
			}
		}},
		{"a body TeraFlowSDN's handler raises on is Permanent, and what it made is deleted", func(t *testing.T) {
			e, _ := tfsServe(t, emu.TFSOptions{})
			// A handler in front renames the QoS class, valid YANG that
			// Handlers.py raises NotImplementedError on (Flask's 500).
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					b, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(strings.NewReader(strings.ReplaceAll(string(b), `"class-id":"qos-realtime"`, `"class-id":"gold"`)))
					r.ContentLength = -1
				}
				e.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			c := setup.Build(t, tfsConfig(srv.URL))
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "p", Type: connectors.ServiceL3VPN, Points: tfsPoints.Points(0)})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "Internal Server Error") {
				t.Fatalf("CreateService = %v (kind %s), want Permanent with Flask's answer", err, connectors.KindOf(err))
			}
			if ids := e.ServiceIDs(); len(ids) != 0 {
				t.Fatalf("the refused create left %v on TeraFlowSDN", ids)
			}
		}},
		{"what TeraFlowSDN cannot read is refused, nothing sent", func(t *testing.T) {
			c, e := tfsConnector(t, emu.TFSOptions{})
			with := func(change func(p []connectors.ConnectionPoint)) []connectors.ConnectionPoint {
				p := tfsPoints.Points(0)
				for i := range p {
					l3 := *p[i].L3
					p[i].L3 = &l3
				}
				change(p)
				return p
			}
			cases := []struct {
				name   string
				points []connectors.ConnectionPoint
				want   string
			}{
				{"bgp", with(func(p []connectors.ConnectionPoint) {
					p[0].L3.BGP = &connectors.BGPPeer{PeerAS: 65001, PeerAddress: p[0].L3.CEAddress}
				}), "static routing only"},
				{"untagged", with(func(p []connectors.ConnectionPoint) { p[0].Encapsulation, p[0].VLAN = connectors.EncapNone, 0 }), "untagged"},
				{"two points on one endpoint", with(func(p []connectors.ConnectionPoint) {
					p[1].MappingInfo = p[0].MappingInfo
				}), "both on endpoint"},
				{"no endpoint-id", with(func(p []connectors.ConnectionPoint) {
					p[0].MappingInfo = map[string]any{"device-id": "dc-a-pe"}
				}), `"endpoint-id"`},
			}
			for _, tt := range cases {
				_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "r", Type: connectors.ServiceL3VPN, Points: tt.points})
				if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: CreateService = %v (kind %s), want Permanent naming %s", tt.name, err, connectors.KindOf(err), tt.want)
				}
			}
			if n := len(e.Requests()); n != 0 {
				t.Fatalf("refused requests reached TeraFlowSDN: %d requests", n)
			}
		}},
		{"the rfc8299 dialect on TeraFlowSDN is told to set the dialect", func(t *testing.T) {
			_, url := tfsServe(t, emu.TFSOptions{})
			cfg := tfsConfig(url)
			cfg.AccountConfig = nil
			err := setup.Build(t, cfg).CheckCredentials(t.Context())
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), `"dialect" to "tfs"`) {
				t.Fatalf("CheckCredentials = %v, want a Permanent error saying to set the dialect", err)
			}
		}},
		{"the dialect declares no edit and no listing; a bad dialect is refused", func(t *testing.T) {
			capsOf := func(d string) connectors.Capabilities {
				return connectortest.Capabilities(ietfl3vpn.Type, ietfl3vpn.Register, connectors.Config{WIMConfig: map[string]any{"dialect": d}})
			}
			if c := capsOf(ietfl3vpn.DialectTFS); c.Edit || c.List || c.ServiceID("k") != "wimro-k" {
				t.Fatalf("tfs capabilities %+v: want no edit, no list, ServiceID from the key", c)
			}
			if c := capsOf(ietfl3vpn.DialectRFC8299); !c.Edit || !c.List {
				t.Fatalf("rfc8299 capabilities %+v: want edit and list", c)
			}
			_, err := ietfl3vpn.Factory(connectors.Config{URL: "http://127.0.0.1:1", AccountConfig: map[string]any{"dialect": "osm"}})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), `"dialect"`) {
				t.Fatalf("Factory(dialect osm) = %v, want Permanent naming the setting", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t)
		})
	}
}
