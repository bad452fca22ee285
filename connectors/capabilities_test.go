package connectors_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/builtin"
	"github.com/wimro/wimro/connectors/fake"
)

// Check refuses by name, Permanent, what the declaration does not hold,
// and lets everything it holds through.
func TestCapabilitiesCheck(t *testing.T) {
	t.Parallel()
	eline := connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}, QoS: []connectors.QoSField{connectors.QoSBandwidth}}
	tests := []struct {
		name string
		req  connectors.Request
		want []string // parts of the error; nil: accepted
	}{
		{"declared type and QoS", connectors.Request{Type: connectors.ServiceELINE, QoS: connectors.QoS{BandwidthMbps: 10}}, nil},
		{"ELAN not declared keeps OSM's text", connectors.Request{Type: connectors.ServiceELAN},
			[]string{connectors.MultipointNotSupported, "the t connector does not make ELAN services; it makes ELINE"}},
		{"another type not declared", connectors.Request{Type: "L3VPN"}, []string{"the t connector does not make L3VPN services; it makes ELINE"}},
		{"QoS not declared, by name", connectors.Request{Type: connectors.ServiceELINE, QoS: connectors.QoS{BandwidthMbps: 10, LatencyMs: 5}},
			[]string{"the t connector cannot honour latency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := eline.Check("t", tt.req)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("Check = %v (kind %s), want Permanent", err, connectors.KindOf(err))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// A type's declaration is narrowed by the settings it reads, never widened,
// and a type not registered can do nothing.
func TestRegistryCapabilitiesNarrowBySettings(t *testing.T) {
	t.Parallel()
	r := connectors.NewRegistry()
	builtin.Register(r)
	fake.Register(r)
	tests := []struct {
		name     string
		cfg      connectors.Config
		services []connectors.ServiceType
		qos      []connectors.QoSField
		edit     bool
		list     bool
	}{
		{"ietfl2vpn", connectors.Config{Type: "ietfl2vpn"}, []connectors.ServiceType{"ELINE", "ELAN"}, []connectors.QoSField{"bandwidth"}, true, true},
		{"ietfl2vpn in the osm dialect: no bandwidth, no listing (TeraFlowSDN)", connectors.Config{Type: "ietfl2vpn", WIMConfig: map[string]any{"dialect": "osm"}}, []connectors.ServiceType{"ELINE", "ELAN"}, nil, true, false},
		{"ietfl2vpn, osm set on the account", connectors.Config{Type: "ietfl2vpn", AccountConfig: map[string]any{"dialect": "osm"}}, []connectors.ServiceType{"ELINE", "ELAN"}, nil, true, false},
		{"tapi without multipoint: no ELAN", connectors.Config{Type: "tapi"}, []connectors.ServiceType{"ELINE"}, []connectors.QoSField{"bandwidth"}, false, true},
		{"tapi with multipoint", connectors.Config{Type: "tapi", WIMConfig: map[string]any{"multipoint": true}}, []connectors.ServiceType{"ELINE", "ELAN"}, []connectors.QoSField{"bandwidth"}, false, true},
		{"dynpac: no list", connectors.Config{Type: "dynpac"}, []connectors.ServiceType{"ELINE"}, []connectors.QoSField{"bandwidth"}, false, false},
		{"onos_vpls", connectors.Config{Type: "onos_vpls"}, []connectors.ServiceType{"ELINE", "ELAN"}, nil, true, true},
		{"fake", connectors.Config{Type: "fake"}, []connectors.ServiceType{"ELINE", "ELAN", "L3VPN"}, []connectors.QoSField{"bandwidth", "latency"}, true, true},
		{"l3nm: L3VPN, bandwidth only", connectors.Config{Type: "l3nm"}, []connectors.ServiceType{"L3VPN"}, []connectors.QoSField{"bandwidth"}, true, true},
		{"ietfl3vpn: L3VPN, bandwidth and latency", connectors.Config{Type: "ietfl3vpn"}, []connectors.ServiceType{"L3VPN"}, []connectors.QoSField{"bandwidth", "latency"}, true, true},
		{"ietfl3vpn in the tfs dialect: no edit, no listing (TeraFlowSDN)", connectors.Config{Type: "ietfl3vpn", WIMConfig: map[string]any{"dialect": "tfs"}}, []connectors.ServiceType{"L3VPN"}, []connectors.QoSField{"bandwidth", "latency"}, false, false},
		{"not registered", connectors.Config{Type: "nope"}, nil, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := r.Capabilities(tt.cfg)
			if !slices.Equal(c.Services, tt.services) || !slices.Equal(c.QoS, tt.qos) || c.Edit != tt.edit || c.List != tt.list {
				t.Fatalf("Capabilities(%s) = %+v, want services %v qos %v edit %v list %v", tt.cfg.Type, c, tt.services, tt.qos, tt.edit, tt.list)
			}
		})
	}
}

func TestRegisterWithoutAServiceTypePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Register with no service type did not panic")
		}
	}()
	connectors.NewRegistry().Register("x", fake.Factory, connectors.Capabilities{QoS: []connectors.QoSField{connectors.QoSBandwidth}})
}
