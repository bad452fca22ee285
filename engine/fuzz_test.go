package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wimro/wimro"
)

// Fuzz targets of the engine's request validation, without a database:
// whatever a decoded body holds, validation never panics and refuses with
// a 400 (EINVALID) that names the field; what it accepts as a name or
// description is storable text.

func FuzzValidateTenant(f *testing.F) {
	fuzzValidate(f, func(in TenantInput) ([]string, error) {
		if err := checkName("tenant.name", in.Name, 255); err != nil {
			return nil, err
		}
		return texts(in.Name, in.Description), checkDescription("tenant.description", in.Description)
	}, `{"name": "t0", "description": "d"}`, `{"name": "a\u0000"}`, "{\"name\": \"a\xff\"}", `{"name": "a;b"}`)
}

func FuzzValidateDatacenter(f *testing.F) {
	fuzzValidate(f, func(in DatacenterInput) ([]string, error) {
		var d wimro.Datacenter
		err := in.apply(&d)
		return texts(d.Name, d.Description), err
	}, `{"name": "dc", "vim_url": "http://dc", "config": {"external_connections": [{"condition": {"provider:physical_network": "p"}, "vim_external_port": {"switch": "00:01", "port": "1"}}]}}`,
		`{"name": "dc", "vim_url": "x", "config": {"external_connections": 5}}`)
}

func FuzzValidateWIM(f *testing.F) {
	fuzzValidate(f, func(in WIMInput) ([]string, error) {
		var w wimro.WIM
		if err := in.apply(&w); err != nil {
			return nil, err
		}
		_, list, ok, err := popMappings(in.Config)
		if err != nil || !ok {
			return texts(w.Name, w.Description), err
		}
		return texts(w.Name, w.Description), validateMappings("wim.config.wim_port_mapping", list)
	}, `{"name": "w", "type": "fake", "wim_url": "http://w", "config": {"wim_port_mapping": [{"datacenter_name": "dc", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": 1, "wan_service_endpoint_id": "e"}]}]}}`,
		`{"name": "w", "type": "fake", "wim_url": "http://w", "config": {"wim_port_mapping": {"x": 1}}}`)
}

func FuzzValidateAccount(f *testing.F) {
	fuzzValidate(f, func(in AccountInput) ([]string, error) {
		return nil, in.validate()
	}, `{"name": "a", "user": "u", "password": "p"}`, `{"config": {"wim_port_mapping": []}}`)
}

// FuzzPortMappings: port-mapping parsing (ports as strings or integers,
// free-form mapping info with numbers kept literal) and validation, then
// the endpoint id a valid mapping info derives.
func FuzzPortMappings(f *testing.F) {
	fuzzValidate(f, func(in []PortMappingInput) ([]string, error) {
		if err := validateMappings("wim_port_mapping", in); err != nil {
			return nil, err
		}
		var out []string
		for _, g := range in {
			out = append(out, g.DatacenterName)
			for _, m := range g.PopWANMappings {
				out = append(out, m.PopSwitchDPID, string(m.PopSwitchPort), m.WANServiceEndpointID)
				if m.WANServiceMappingInfo != nil {
					id, err := wimro.DeriveEndpointID(m.WANServiceMappingInfo)
					if err != nil {
						return nil, err
					}
					out = append(out, id)
				}
			}
		}
		return out, nil
	}, `[{"datacenter_name": "dc", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": 1, "wan_service_mapping_info": {"mapping_type": "dpid-port", "wan_switch_dpid": "AA", "wan_switch_port": 1}}]}]`,
		`[{"datacenter_name": "dc", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": 65535, "wan_service_endpoint_id": "e"}]}]`,
		`[{"datacenter_name": "dc", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": "1", "wan_service_mapping_info": {"mapping_type": "x", "n": 1e400}}]}]`)
}

func FuzzValidateInstance(f *testing.F) {
	fuzzValidate(f, func(in InstanceInput) ([]string, error) {
		if err := checkName("instance.name", in.Name, 255); err != nil {
			return nil, err
		}
		if err := checkDescription("instance.description", in.Description); err != nil {
			return nil, err
		}
		nets := make([]wimro.InstanceNet, 0, len(in.Networks))
		for i, n := range in.Networks {
			row, err := netRow("instance.networks["+itoa(i)+"]", n)
			if err != nil {
				return nil, err
			}
			nets = append(nets, row)
		}
		_, err := deriveGroups(in, in.Networks, listFields(len(in.Networks)), nets, func(string) string { return "http://vim" })
		return texts(in.Name, in.Description), err
	}, `{"name": "ns", "networks": [{"name": "n", "sce_net_id": "s", "datacenter": "dc", "physical_network": "p", "encapsulation_type": "vlan", "encapsulation_id": 10}]}`,
		`{"name": "ns", "wim_account": "acc", "networks": [{"uuid": "x", "status": "bogus", "encapsulation_id": 5000}]}`)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func texts(name string, desc *string) []string {
	if desc == nil {
		return []string{name}
	}
	return []string{name, *desc}
}

// fuzzValidate decodes each input as the transport does (typed JSON) and
// runs check on it: a refusal must be a 400 naming a field, and the texts
// check returns for an accepted input must be storable.
func fuzzValidate[T any](f *testing.F, check func(T) ([]string, error), seeds ...string) {
	f.Helper()
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in T
		if json.Unmarshal(data, &in) != nil {
			return
		}
		got, err := check(in)
		if err != nil {
			if wimro.ErrorCode(err) != wimro.EINVALID || wimro.ErrorField(err) == "" {
				t.Fatalf("%q refused without a 400 naming the field: %v", data, err)
			}
			return
		}
		for _, s := range got {
			if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
				t.Fatalf("%q accepted with unstorable text %q", data, s)
			}
		}
	})
}
