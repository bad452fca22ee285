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
	// sipInput and sipOutput are OSM's photonic pair ("sip_input",
	// "sip_output"): an INPUT and an OUTPUT SIP, joined by two
	// unidirectional services. Both are set or neither.
	sipInput, sipOutput string
}

// end is what one connection point resolves to: a bidirectional SIP, or
// a photonic pair.
type end struct {
	localID string // the end-point's local-id
	sip     string // the bidirectional SIP; "" for a photonic pair
	in, out string // the photonic pair's sip_input and sip_output
}

func (e end) photonic() bool { return e.in != "" }

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
	switch {
	case (m.sipInput == "") != (m.sipOutput == ""):
		return m, fmt.Errorf(`"sip_input" and "sip_output" name the two SIPs of a photonic port and go together`)
	case m.sipInput != "" && m.sipInput == m.sipOutput:
		return m, fmt.Errorf(`"sip_input" and "sip_output" must be two SIPs, got %q for both`, m.sipInput)
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

// endFor resolves one connection point (local-id aside). It never drops
// a tag: a dot1q point needs a SIP that is declared for its VLAN, and a
// photonic pair carries no VLAN.
func (m portMapping) endFor(p connectors.ConnectionPoint) (end, error) {
	if p.Encapsulation == connectors.EncapDot1Q {
		if s, ok := m.sips[p.VLAN]; ok {
			return end{sip: s}, nil
		}
		if m.sip != "" && m.sipVLAN == p.VLAN {
			return end{sip: m.sip}, nil
		}
		if m.sipInput != "" {
			return end{}, fmt.Errorf("no SIP for VLAN %d: the mapping's photonic pair (sip_input/sip_output) carries no VLAN; use an untagged point", p.VLAN)
		}
		return end{}, fmt.Errorf(`no SIP for VLAN %d: TAPI has no VLAN leaf, so the mapping must name one (wan_service_mapping_info "sips": {"%d": "<sip uuid>"}, or "sip" with "vlan": %d)`, p.VLAN, p.VLAN, p.VLAN)
	}
	switch {
	case m.sip != "" && m.sipVLAN != 0:
		return end{}, fmt.Errorf(`untagged point, but the mapping's "sip" carries VLAN %d`, m.sipVLAN)
	case m.sip != "":
		return end{sip: m.sip}, nil
	case m.sipInput != "":
		return end{in: m.sipInput, out: m.sipOutput}, nil
	case m.sips != nil:
		return end{}, fmt.Errorf(`untagged point, but the mapping only names per-VLAN SIPs ("sips"); add "sip"`)
	}
	// OSM's rule: with no SIP in the mapping, the endpoint id is the SIP.
	return end{sip: p.ServiceEndpointID}, nil
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
