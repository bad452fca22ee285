// Package vpnrctest runs the shared conformance suite for a connector
// built on vpnrc against its yanglint-validating emulator: the points,
// port mappings and harness the l3nm and ietfl3vpn tests share.
package vpnrctest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/conformance"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// Credentials every emulator of the tests asks for.
const (
	User     = "netops"
	Password = "l3vpn-pa55"
)

// Server is an emulator: a RESTCONF server validating with yanglint.
type Server interface {
	http.Handler
	LintFailures() []string
	Linted() int
	Close()
	Requests() []emulator.Request
	Root() string
}

// Calls renders the request log of e as "METHOD path status", paths
// relative to its module's root.
func Calls(e Server) []string {
	var out []string
	for _, r := range e.Requests() {
		out = append(out, r.Method+" "+strings.TrimPrefix(r.Path, e.Root())+" "+strconv.Itoa(r.Status))
	}
	return out
}

// Connector returns a connector on a fresh emulator of its own.
func (s Setup) Connector(t *testing.T) (connectors.Connector, Server) {
	t.Helper()
	e, srv := s.Serve(t, User, Password)
	return s.Build(t, s.Config(srv.URL)), e
}

// Setup describes one connector and its emulator.
type Setup struct {
	Type     string
	Register func(*connectors.Registry)
	// NewServer returns a fresh emulator asking for User and Password
	// (none when user is empty).
	NewServer func(user, password string) Server
	// Mapping is the wan_service_mapping_info of a site's endpoint.
	Mapping func(site string) map[string]any
	// StoredQoS reads the QoS the emulator holds for a service id.
	StoredQoS func(t *testing.T, s Server, id string) connectors.QoS
	// ListsEndpoints says ListServices reads endpoints back
	// (conformance.Harness.ListsEndpoints).
	ListsEndpoints bool
	// ListsL3 says ListServices reads the L3 sites back
	// (conformance.Harness.ListsL3).
	ListsL3 bool
}

// Sites are the datacenters of the tests.
var Sites = []string{"dc-a", "dc-b", "dc-c"}

// Point is an L3 point at datacenter j on vlan (untagged when 0).
func (s Setup) Point(j, vlan int) connectors.ConnectionPoint {
	p := connectors.ConnectionPoint{ServiceEndpointID: "ep-" + Sites[j], Encapsulation: connectors.EncapNone, MappingInfo: s.Mapping(Sites[j]), L3: conformance.L3Site(j)}
	if vlan > 0 {
		p.Encapsulation, p.VLAN = connectors.EncapDot1Q, vlan
	}
	return p
}

// Points are an L3VPN of dc-a and dc-b on VLAN 100+i.
func (s Setup) Points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{s.Point(0, 100+i), s.Point(1, 100+i)}
}

// L3Points are an L3VPN of the three datacenters on VLAN 300+i.
func (s Setup) L3Points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{s.Point(0, 300+i), s.Point(1, 300+i), s.Point(2, 300+i)}
}

// Serve starts a fresh emulator behind an HTTP server until t ends, when
// it fails t if yanglint refused anything the emulator received or
// answered, or checked nothing although the server was used.
func (s Setup) Serve(t *testing.T, user, password string) (Server, *httptest.Server) {
	t.Helper()
	e := s.NewServer(user, password)
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.Close()
		if f := e.LintFailures(); len(f) > 0 {
			t.Errorf("yanglint refused %d documents: %q", len(f), f)
		}
		e.Close()
	})
	return e, srv
}

// Config is the config of a connector on srv, with the WIM's port
// mappings of the three datacenters.
func (s Setup) Config(url string) connectors.Config {
	var mappings []wimro.PortMapping
	for j := range Sites {
		p := s.Point(j, 0)
		mappings = append(mappings, wimro.PortMapping{WANServiceEndpointID: p.ServiceEndpointID, WANServiceMappingInfo: p.MappingInfo})
	}
	return connectors.Config{URL: url + "/", User: User, Password: Password, PortMappings: mappings}
}

// Build builds a connector through a registry, as wimd does.
func (s Setup) Build(t testing.TB, cfg connectors.Config) connectors.Connector {
	return connectortest.Builder(s.Type, s.Register)(t, cfg)
}

// Harness is the conformance harness of the connector on its emulator.
func (s Setup) Harness() conformance.Harness {
	var servers sync.Map // connector → its emulator
	pair := func(t *testing.T) (connectors.Connector, connectors.Connector) {
		e, srv := s.Serve(t, User, Password)
		a, b := s.Build(t, s.Config(srv.URL)), s.Build(t, s.Config(srv.URL))
		servers.Store(a, e)
		return a, b
	}
	return conformance.Harness{
		New: func(t *testing.T) connectors.Connector {
			c, _ := pair(t)
			return c
		},
		Pair:           pair,
		Type:           connectors.ServiceL3VPN,
		Points:         s.Points,
		L3Points:       s.L3Points,
		Capabilities:   connectortest.Capabilities(s.Type, s.Register, connectors.Config{}),
		ListsEndpoints: s.ListsEndpoints,
		ListsL3:        s.ListsL3,
		MaxStatusPolls: 5,
		Unreachable: func(t *testing.T) connectors.Connector {
			return s.Build(t, s.Config(connectortest.Unreachable(t)))
		},
		BadCredentials: func(t *testing.T) connectors.Connector {
			_, srv := s.Serve(t, User, Password)
			cfg := s.Config(srv.URL)
			cfg.Password = "not-" + Password
			return s.Build(t, cfg)
		},
		QoS: func(t *testing.T) (connectors.Connector, func(string) connectors.QoS) {
			c, _ := pair(t)
			e, _ := servers.Load(c)
			return c, func(id string) connectors.QoS { return s.StoredQoS(t, e.(Server), id) }
		},
	}
}

// Run runs the conformance suite and checks that the emulators validated
// what they were sent.
func (s Setup) Run(t *testing.T) {
	conformance.Run(t, s.Harness())
	t.Run("TransportSettings", func(t *testing.T) {
		t.Parallel()
		e := s.NewServer("", "")
		t.Cleanup(e.Close)
		connectortest.CheckTransport(t, s.Build, e)
	})
	t.Run("ControllerError", func(t *testing.T) {
		t.Parallel()
		connectortest.CheckControllerError(t, s.Build, map[string]any{"ietf-restconf:errors": map[string]any{"error": []any{
			map[string]any{"error-type": "application", "error-tag": "resource-denied", "error-message": connectortest.Unstorable},
		}}})
	})
}
