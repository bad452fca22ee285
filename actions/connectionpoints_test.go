package actions_test

import (
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
