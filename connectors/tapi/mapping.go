package tapi

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/wimro/wimro/connectors"
)

// portMapping is the TAPI reading of a port mapping's
// wan_service_mapping_info (see the package comment for the rules).
type portMapping struct {
	sip     string         // "sip", "" when absent
	sipVLAN int            // "vlan": the VLAN that "sip" carries, 0 when absent
	sips    map[int]string // "sips": VLAN → SIP uuid, nil when absent
	// sipInput and sipOutput are OSM's photonic pair, which needs two
	// unidirectional services; they are only read to be refused (and to be
	// checked by CheckCredentials).
	sipInput, sipOutput string
}

// parseMapping reads info, refusing values of the wrong shape so that a
// typo in a port mapping is reported instead of silently ignored.
func parseMapping(info map[string]any) (portMapping, error) {
	var m portMapping
	var err error
	if m.sip, err = stringField(info, "sip"); err != nil {
		return m, err
	}
	if m.sipInput, err = stringField(info, "sip_input"); err != nil {
		return m, err
	}
	if m.sipOutput, err = stringField(info, "sip_output"); err != nil {
		return m, err
	}
	if v, ok := info["vlan"]; ok && v != nil {
		if m.sipVLAN, err = vlanValue(v); err != nil {
			return m, fmt.Errorf(`"vlan": %w`, err)
		}
		if m.sip == "" {
			return m, fmt.Errorf(`"vlan" is given without "sip"`)
		}
	}
	if v, ok := info["sips"]; ok && v != nil {
		obj, isObj := v.(map[string]any)
		if !isObj {
			return m, fmt.Errorf(`"sips" must be an object of VLAN → SIP uuid, got %T`, v)
		}
		m.sips = make(map[int]string, len(obj))
		for k, s := range obj {
			vlan, err := vlanValue(k)
			if err != nil {
				return m, fmt.Errorf(`"sips" key %q: %w`, k, err)
			}
			uuid, ok := s.(string)
			if !ok || uuid == "" {
				return m, fmt.Errorf(`"sips"[%q] must be a non-empty SIP uuid string`, k)
			}
			m.sips[vlan] = uuid
		}
	}
	return m, nil
}

func stringField(info map[string]any, key string) (string, error) {
	v, ok := info[key]
	if !ok || v == nil {
		return "", nil
	}
	s, isString := v.(string)
	if !isString || s == "" {
		return "", fmt.Errorf("%q must be a non-empty string, got %v", key, v)
	}
	return s, nil
}

// vlanValue accepts what decoded JSON may hold for a VLAN: a whole number
// or a decimal string, in 1..4094.
func vlanValue(v any) (int, error) {
	var n int
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) || x < 1 || x > 4094 {
			return 0, fmt.Errorf("want a VLAN in 1..4094, got %v", x)
		}
		n = int(x)
	case int:
		n = x
	case string:
		i, err := strconv.Atoi(x)
		if err != nil {
			return 0, fmt.Errorf("want a VLAN in 1..4094, got %q", x)
		}
		n = i
	default:
		return 0, fmt.Errorf("want a VLAN in 1..4094, got %v", v)
	}
	if n < 1 || n > 4094 {
		return 0, fmt.Errorf("want a VLAN in 1..4094, got %d", n)
	}
	return n, nil
}

// sipFor picks the SIP of one connection point. It never drops a tag: a
// dot1q point needs a SIP that is declared for its VLAN.
func (m portMapping) sipFor(p connectors.ConnectionPoint) (string, error) {
	if p.Encapsulation == connectors.EncapDot1Q {
		if s, ok := m.sips[p.VLAN]; ok {
			return s, nil
		}
		if m.sip != "" && m.sipVLAN == p.VLAN {
			return m.sip, nil
		}
		return "", fmt.Errorf(`no SIP for VLAN %d: TAPI has no VLAN leaf, so the mapping must name one (wan_service_mapping_info "sips": {"%d": "<sip uuid>"}, or "sip" with "vlan": %d)`, p.VLAN, p.VLAN, p.VLAN)
	}
	switch {
	case m.sip != "" && m.sipVLAN != 0:
		return "", fmt.Errorf(`untagged point, but the mapping's "sip" carries VLAN %d`, m.sipVLAN)
	case m.sip != "":
		return m.sip, nil
	case m.sips != nil:
		return "", fmt.Errorf(`untagged point, but the mapping only names per-VLAN SIPs ("sips"); add "sip"`)
	case m.sipInput != "" || m.sipOutput != "":
		return "", fmt.Errorf("photonic SIP pairs (sip_input/sip_output, two unidirectional services) are not supported")
	}
	// OSM's rule: with no SIP in the mapping, the endpoint id is the SIP.
	return p.ServiceEndpointID, nil
}

// named returns every SIP the mapping refers to, for CheckCredentials.
// With none named, the endpoint id is (OSM's rule, as in sipFor).
func (m portMapping) named(endpointID string) []string {
	var out []string
	for _, s := range []string{m.sip, m.sipInput, m.sipOutput} {
		if s != "" {
			out = append(out, s)
		}
	}
	for _, vlan := range slices.Sorted(maps.Keys(m.sips)) {
		out = append(out, m.sips[vlan])
	}
	if len(out) == 0 {
		out = append(out, endpointID)
	}
	return out
}
