package onos

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"

	"github.com/wimro/wimro/connectors"
)

// iface is one interface of a service: a (port, VLAN) of one point.
type iface struct {
	Name string
	// Port is the ONOS port subject, of:<16 hex>/<port>.
	Port string
	// VLAN is the access VLAN, 0 for untagged.
	VLAN int
}

// vlanText is the interface's vlan field: the VLAN as a string, as ONOS
// writes it, or "" for none.
func (i iface) vlanText() string {
	if i.VLAN == 0 {
		return ""
	}
	return strconv.Itoa(i.VLAN)
}

// entry is the interface's JSON under ports.
func (i iface) entry() map[string]any {
	m := map[string]any{"name": i.Name}
	if v := i.vlanText(); v != "" {
		m["vlan"] = v
	}
	return m
}

// ifaceName names the interface of point index of key after where it is:
// wimro-<key>-<index>.<8 hex digits of a hash of port and VLAN>. A point
// moved to another port or VLAN gets a new name, so that the VPLS entry
// changes with it: the VPLS application reloads only when its own config
// changes and would otherwise keep the point on its old port and VLAN.
func ifaceName(key string, index int, port string, vlan int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(port + "|" + strconv.Itoa(vlan)))
	return fmt.Sprintf("%s%s-%d.%08x", namePrefix, key, index, h.Sum32())
}

// ownedBy reports whether the interface name belongs to the service key:
// exactly wimro-<key>-<digits>.<8 hex> (or wimro-<key>-<digits>, the names
// of earlier releases), so that key "a" never claims key "a-1"'s
// interfaces ("wimro-a-1-0.…").
func ownedBy(key, name string) bool {
	rest, ok := strings.CutPrefix(name, namePrefix+key+"-")
	if !ok {
		return false
	}
	index, hash, hashed := strings.Cut(rest, ".")
	if hashed && (len(hash) != 8 || strings.Trim(hash, "0123456789abcdef") != "") {
		return false
	}
	return index != "" && strings.Trim(index, "0123456789") == ""
}

// interfaces checks the request and returns the service's interfaces, one
// per point. Every failure is Permanent and happens before any request.
func (c *connector) interfaces(key string, t connectors.ServiceType, points []connectors.ConnectionPoint) ([]iface, error) {
	if err := connectors.ValidatePoints(t, points); err != nil {
		return nil, err
	}
	if !keyPattern.MatchString(key) {
		return nil, connectors.Errorf(connectors.KindPermanent, "onos: service key %q must be 1 to 128 letters, digits, '.', '_' or '-'", key)
	}
	out := make([]iface, len(points))
	seen := make(map[string]int, len(points))
	for i, p := range points {
		info, err := c.mappings.For(Type, i, p)
		if err != nil {
			return nil, err
		}
		port, err := portSubject(info)
		if err != nil {
			return nil, connectors.Errorf(connectors.KindPermanent, "onos: connection point %d (%s): wan_service_mapping_info: %v", i, p.ServiceEndpointID, err)
		}
		out[i] = iface{Name: ifaceName(key, i, port, p.VLAN), Port: port, VLAN: p.VLAN}
		where := port + " vlan " + strconv.Itoa(p.VLAN)
		if j, dup := seen[where]; dup {
			return nil, connectors.Errorf(connectors.KindPermanent, "onos: connection points %d (%s) and %d (%s) are the same port and VLAN (%s)", j, points[j].ServiceEndpointID, i, p.ServiceEndpointID, where)
		}
		seen[where] = i
	}
	return out, nil
}

// CheckMapping implements connectors.MappingChecker: info must give a
// valid switch_dpid and switch_port.
func (c *connector) CheckMapping(endpointID string, info map[string]any) error {
	if _, err := portSubject(info); err != nil {
		return connectors.Errorf(connectors.KindPermanent, "onos: the wan_service_mapping_info of service endpoint %q: %s", endpointID, err)
	}
	return nil
}

// portSubject builds of:<16 hex>/<port> from switch_dpid and switch_port.
func portSubject(info map[string]any) (string, error) {
	dpid, err := normaliseDPID(info["switch_dpid"])
	if err != nil {
		return "", err
	}
	port, err := normalisePort(info["switch_port"])
	if err != nil {
		return "", err
	}
	return "of:" + dpid + "/" + port, nil
}

// normaliseDPID accepts "of:0000000000000011", "0000000000000011", "11",
// "0x11" and "00:00:00:00:00:00:00:11" and returns 16 lower-case hex digits.
func normaliseDPID(v any) (string, error) {
	if v == nil {
		return "", fmt.Errorf("switch_dpid is missing")
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("switch_dpid must be a string of hex digits, got %v", v)
	}
	bad := func() (string, error) {
		return "", fmt.Errorf("switch_dpid %q is not an OpenFlow datapath id (up to 16 hex digits, optionally of:-prefixed or colon-separated)", s)
	}
	h := strings.ToLower(strings.TrimSpace(s))
	h = strings.TrimPrefix(h, "of:")
	h = strings.TrimPrefix(h, "0x")
	if strings.Contains(h, ":") {
		groups := strings.Split(h, ":")
		if len(groups) > 8 {
			return bad()
		}
		for _, g := range groups {
			if len(g) != 2 {
				return bad()
			}
		}
		h = strings.Join(groups, "")
	}
	if h == "" || len(h) > 16 || strings.Trim(h, "0123456789abcdef") != "" {
		return bad()
	}
	return strings.Repeat("0", 16-len(h)) + h, nil
}

// maxPort is OpenFlow's OFPP_MAX, the highest physical port number.
const maxPort = 0xffffff00

// normalisePort accepts a port number as a JSON number or a decimal string.
func normalisePort(v any) (string, error) {
	var n float64
	switch p := v.(type) {
	case nil:
		return "", fmt.Errorf("switch_port is missing")
	case string:
		u, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return "", fmt.Errorf("switch_port %q is not a port number", p)
		}
		n = float64(u)
	case float64:
		n = p
	case int:
		n = float64(p)
	case int64:
		n = float64(p)
	case json.Number:
		f, err := p.Float64()
		if err != nil {
			return "", fmt.Errorf("switch_port %q is not a port number", p.String())
		}
		n = f
	default:
		return "", fmt.Errorf("switch_port must be a number or a string, got %v", v)
	}
	if n != math.Trunc(n) || n < 1 || n > maxPort {
		return "", fmt.Errorf("switch_port %v is not an OpenFlow port number (1..%d)", v, uint64(maxPort))
	}
	return strconv.FormatUint(uint64(n), 10), nil
}

// connInfo describes the service for the other methods and the operator.
func (c *connector) connInfo(key string, t connectors.ServiceType, want []iface) map[string]any {
	ifs := make([]any, len(want))
	for i, w := range want {
		m := map[string]any{"name": w.Name, "port": w.Port}
		if w.VLAN != 0 {
			m["vlan"] = w.VLAN
		}
		ifs[i] = m
	}
	return map[string]any{"vpls": vplsName(key), "type": string(t), "encapsulation": c.encap, "interfaces": ifs}
}

// expectedInterfaces reads the interfaces back from connInfo (after a
// database round trip numbers are float64). It returns nil when connInfo
// has none or is malformed: the caller then works without it.
func expectedInterfaces(connInfo map[string]any) []iface {
	var list []map[string]any
	switch l := connInfo["interfaces"].(type) {
	case []any:
		for _, v := range l {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			list = append(list, m)
		}
	case []map[string]any:
		list = l
	}
	out := make([]iface, 0, len(list))
	for _, m := range list {
		name, _ := m["name"].(string)
		port, _ := m["port"].(string)
		if name == "" || port == "" {
			return nil
		}
		it := iface{Name: name, Port: port}
		switch v := m["vlan"].(type) {
		case nil:
		case float64:
			it.VLAN = int(v)
		case int:
			it.VLAN = v
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				return nil
			}
			it.VLAN = int(n)
		default:
			return nil
		}
		out = append(out, it)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
