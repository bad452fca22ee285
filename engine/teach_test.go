package engine_test

import (
	"strings"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// TestErrorsTeach checks that the refusals a newcomer meets first say
// what to send, not only what is wrong (issue 18).
func TestErrorsTeach(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	tests := []struct {
		name  string
		call  func() error
		field string
		says  []string
	}{
		{
			name: "mapping without mapping_type",
			call: func() error {
				_, err := sc.eng.CreatePortMappings(sc.ctx, "tenantT", "wan1", []engine.PortMappingInput{{DatacenterName: "dcA",
					PopWANMappings: []engine.PopWANMappingInput{{PopSwitchDPID: "00:00:00:00:00:00:00:0c", PopSwitchPort: "9",
						WANServiceMappingInfo: engine.JSONObject{"wan_switch_dpid": "BB:BB", "wan_switch_port": 9}}}}})
				return err
			},
			field: "wim_port_mapping[0].pop_wan_mappings[0].wan_service_mapping_info.mapping_type",
			says:  []string{`"dpid-port"`, "wan_switch_dpid and wan_switch_port", "wan_service_endpoint_id starts with it"},
		},
		{
			name: "sce_net_id not a uuid",
			call: func() error {
				_, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", Networks: []engine.NetworkInput{{SceNetID: "vld1", Datacenter: "dcA"}}})
				return err
			},
			field: "instance.networks[0].sce_net_id",
			says:  []string{"must be a uuid", "scenario's network (the VLD)", "same sce_net_id in different datacenters are joined by one WAN link"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			wantField(t, err, tt.field)
			for _, s := range tt.says {
				if !strings.Contains(wimro.ErrorMessage(err), s) {
					t.Errorf("message %q does not say %q", wimro.ErrorMessage(err), s)
				}
			}
		})
	}
}
