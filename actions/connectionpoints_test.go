package actions_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
)

// TestConnectionPoints: connection points are computed from what the claim
// read and the account's cached mappings, with no database.
func TestConnectionPoints(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	n := func(v int) *int { return &v }
	dcs := map[string]wimro.Datacenter{
		"dc-a": {UUID: "dc-a", Name: "A", Config: map[string]any{"external_connections": []any{
			map[string]any{"condition": map[string]any{"provider:physical_network": "physnet1"},
				"vim_external_port": map[string]any{"switch": "00:0a", "port": 1.0}}}}},
		"dc-b": {UUID: "dc-b", Name: "B"},
	}
	mappings := []wimro.PortMapping{
		{DatacenterID: "dc-a", PopSwitchDPID: "00:0a", PopSwitchPort: "1", WANServiceEndpointID: "ep-a", WANServiceMappingInfo: map[string]any{"k": "a"}},
		{DatacenterID: "dc-b", PopSwitchDPID: "00:0b", PopSwitchPort: "2", WANServiceEndpointID: "ep-b"},
		// Same switch port in another datacenter: must not be picked for dc-b.
		{DatacenterID: "dc-x", PopSwitchDPID: "00:0b", PopSwitchPort: "7", WANServiceEndpointID: "ep-x"},
	}
	netA := wimro.InstanceNet{UUID: "n-a", DatacenterID: "dc-a", VimInfo: map[string]any{"provider:physical_network": "physnet1"},
		EncapsulationType: s("vlan"), EncapsulationID: n(101)}
	netB := wimro.InstanceNet{UUID: "n-b", DatacenterID: "dc-b", PopSwitchDPID: s("00:0b"), PopSwitchPort: s("2")}
	cases := []struct {
		name     string
		nets     []wimro.InstanceNet
		dcs      map[string]wimro.Datacenter
		mappings []wimro.PortMapping
		want     []connectors.ConnectionPoint
		err      string // a substring of the permanent error
	}{
		{name: "rule and explicit port, in datacenter order", nets: []wimro.InstanceNet{netB, netA}, dcs: dcs, mappings: mappings,
			want: []connectors.ConnectionPoint{
				{ServiceEndpointID: "ep-a", Encapsulation: connectors.EncapDot1Q, VLAN: 101, MappingInfo: map[string]any{"k": "a"}},
				{ServiceEndpointID: "ep-b", Encapsulation: connectors.EncapNone},
			}},
		{name: "no exit port", nets: []wimro.InstanceNet{{UUID: "n-c", DatacenterID: "dc-a"}}, dcs: dcs, mappings: mappings,
			err: "No external port associated to the instance_net uuid(n-c)"},
		{name: "no mapping for the port", nets: []wimro.InstanceNet{netA}, dcs: dcs, mappings: mappings[1:],
			err: "No WIM port mapping found: wim_account: acct, datacenter: A, pop_switch_dpid: 00:0a, pop_switch_port: 1"},
		{name: "datacenter not loaded", nets: []wimro.InstanceNet{netB}, dcs: map[string]wimro.Datacenter{}, mappings: mappings,
			err: "datacenter dc-b"},
		{name: "no networks", dcs: dcs, mappings: mappings, want: []connectors.ConnectionPoint{}},
		{name: "an L3VPN site goes with its point", nets: []wimro.InstanceNet{withL3(netA, map[string]any{"prefix": "10.1.0.0/24", "pe_address": "192.0.2.1/30",
			"static_routes": []any{map[string]any{"prefix": "10.9.0.0/16", "next_hop": "192.0.2.2"}}, "bgp": map[string]any{"peer_as": 65001.0, "peer_address": "192.0.2.2"}})},
			dcs: dcs, mappings: mappings, want: []connectors.ConnectionPoint{
				{ServiceEndpointID: "ep-a", Encapsulation: connectors.EncapDot1Q, VLAN: 101, MappingInfo: map[string]any{"k": "a"}, L3: &connectors.L3Site{
					Prefix: netip.MustParsePrefix("10.1.0.0/24"), PEAddress: netip.MustParsePrefix("192.0.2.1/30"),
					StaticRoutes: []connectors.StaticRoute{{Prefix: netip.MustParsePrefix("10.9.0.0/16"), NextHop: netip.MustParseAddr("192.0.2.2")}},
					BGP:          &connectors.BGPPeer{PeerAS: 65001, PeerAddress: netip.MustParseAddr("192.0.2.2")}}},
			}},
		{name: "an unreadable L3VPN site", nets: []wimro.InstanceNet{withL3(netA, map[string]any{"prefix": "ten"})}, dcs: dcs, mappings: mappings,
			err: "The l3 site of the instance_net uuid(n-a) cannot be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := append([]wimro.InstanceNet(nil), c.nets...)
			got, err := actions.ConnectionPoints("acct", c.nets, c.dcs, c.mappings)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("points = %+v, want %+v", got, c.want)
			}
			if !reflect.DeepEqual(c.nets, before) {
				t.Fatalf("the networks given were reordered: %+v", c.nets)
			}
		})
	}
}

func withL3(n wimro.InstanceNet, l3 map[string]any) wimro.InstanceNet {
	n.L3 = l3
	return n
}

// TestServiceTypeOf: a link is made as the type the engine recorded;
// a link written before it was recorded is an ELAN when multipoint or
// over more than two points, else an ELINE.
func TestServiceTypeOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		link   wimro.WANLink
		points int
		want   connectors.ServiceType
	}{
		{wimro.WANLink{ServiceType: "L3VPN"}, 2, connectors.ServiceL3VPN},
		{wimro.WANLink{ServiceType: "L3VPN"}, 3, connectors.ServiceL3VPN},
		{wimro.WANLink{ServiceType: "ELAN"}, 2, connectors.ServiceELAN},
		{wimro.WANLink{}, 2, connectors.ServiceELINE},
		{wimro.WANLink{}, 3, connectors.ServiceELAN},
		{wimro.WANLink{Multipoint: true}, 2, connectors.ServiceELAN},
	} {
		if got := actions.ServiceTypeOf(c.link, c.points); got != c.want {
			t.Errorf("ServiceTypeOf(%+v, %d) = %s, want %s", c.link, c.points, got, c.want)
		}
	}
}
