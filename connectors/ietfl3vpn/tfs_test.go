package ietfl3vpn_test

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

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
