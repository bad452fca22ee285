package engine

import (
	"bytes"
	"encoding/json"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
)

// L3Value is the l3 of a network (its site of a layer-3 VPN in its
// datacenter) as the client sent it: {prefix, pe_address, ce_address,
// static_routes: [{prefix, next_hop}], bgp: {peer_as, peer_address}}.
// The decoder keeps it raw and the engine reads it, so that a bad
// address is refused naming the network's field, which a typed decode
// of the whole body cannot do.
type L3Value json.RawMessage

// UnmarshalJSON keeps the raw value; null is absent.
func (v *L3Value) UnmarshalJSON(b []byte) error {
	*v = keepRaw(b)
	return nil
}

// MarshalJSON writes the value back as it came.
func (v L3Value) MarshalJSON() ([]byte, error) { return writeRaw(v) }

// parseL3 reads and checks the l3 of the network at field, by the rules
// every connector applies (connectors.ValidateL3Site), and returns it as
// it is stored: the site's own JSON, so that what the runner hands the
// connector is what was checked. nil when absent.
func parseL3(field string, v L3Value) (map[string]any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	f := field + ".l3"
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	var site connectors.L3Site
	if err := dec.Decode(&site); err != nil {
		return nil, wimro.FieldErrorf(f, "%s must be an object {prefix, pe_address, ce_address, static_routes: [{prefix, next_hop}], bgp: {peer_as, peer_address}} "+
			"with addresses in their text form (10.0.1.0/24, 192.0.2.1/30): %s", f, shorten(err.Error(), 200))
	}
	if err := connectors.ValidateL3Site(&site); err != nil {
		return nil, wimro.FieldErrorf(f, "%s: %s", f, err)
	}
	b, err := json.Marshal(site)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

// groupService is the service type a VLD's WAN link is made as: an
// L3VPN when its networks give their l3 sites (every one of them must),
// else an ELAN across more than two datacenters, else an ELINE. field is
// what a refusal of the type names: the l3 of the first network, or the
// first network.
func groupService(g group, nets []wimro.InstanceNet, fields []string, ndcs int) (connectors.ServiceType, string, error) {
	with, without := -1, -1
	for _, i := range g.nets {
		if nets[i].L3 != nil {
			if with < 0 {
				with = i
			}
		} else if without < 0 {
			without = i
		}
	}
	switch {
	case with >= 0 && without >= 0:
		f := fields[without] + ".l3"
		return "", "", wimro.FieldErrorf(f, "%s is required: the networks of sce_net_id %s are one VLD and %s asks a layer-3 VPN, "+
			"so each of its datacenters needs its site (prefix, pe_address, ...)", f, g.sceNetID, fields[with])
	case with >= 0:
		return connectors.ServiceL3VPN, fields[with] + ".l3", nil
	case ndcs > 2:
		return connectors.ServiceELAN, fields[g.nets[0]], nil
	}
	return connectors.ServiceELINE, fields[g.nets[0]], nil
}
