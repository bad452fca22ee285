package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// Who reports the local networks of a datacenter (its
// config.network_status_source).
const (
	// NetSourceNFVO: the NFVO reports each network's status and
	// encapsulation through the API; a CREATE waits for them (default).
	NetSourceNFVO = "nfvo"
	// NetSourceNone: nobody will report them (OSM's own tools never do):
	// the networks are taken ACTIVE when the instance is created, and one
	// without a VLAN gets one from the datacenter's config.vlan_range.
	NetSourceNone = "none"
)

// DefaultVLANRange is the VLAN range of a datacenter with
// network_status_source none and no config.vlan_range.
const DefaultVLANRange = "3000-3999"

// netSource reads a datacenter's network_status_source and VLAN range.
func netSource(config map[string]any) (source string, lo, hi int, err error) {
	source = NetSourceNFVO
	if v, ok := config["network_status_source"]; ok && v != nil {
		s, _ := v.(string)
		if s != NetSourceNFVO && s != NetSourceNone {
			return "", 0, 0, wimro.FieldErrorf("datacenter.config.network_status_source",
				"datacenter.config.network_status_source must be %q (the NFVO reports each network) or %q (networks are ACTIVE at creation, VLANs allocated by wimro)", NetSourceNFVO, NetSourceNone)
		}
		source = s
	}
	lo, hi, err = vlanRange(config["vlan_range"])
	return source, lo, hi, err
}

// vlanRange reads config.vlan_range: "LOW-HIGH", or [LOW, HIGH].
func vlanRange(v any) (lo, hi int, err error) {
	const field = "datacenter.config.vlan_range"
	bad := wimro.FieldErrorf(field, `%s must be "LOW-HIGH" or [LOW, HIGH] with 1 <= LOW <= HIGH <= 4094 (default %s)`, field, DefaultVLANRange)
	var a, b string
	switch x := v.(type) {
	case nil:
		a, b, _ = strings.Cut(DefaultVLANRange, "-")
	case string:
		var ok bool
		if a, b, ok = strings.Cut(x, "-"); !ok {
			return 0, 0, bad
		}
	case []any:
		if len(x) != 2 {
			return 0, 0, bad
		}
		a, b = fmt.Sprint(x[0]), fmt.Sprint(x[1])
	default:
		return 0, 0, bad
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || lo < 1 || lo > hi || hi > 4094 {
		return 0, 0, bad
	}
	return lo, hi, nil
}

// vlanNeed is a local network, in a datacenter whose networks nobody
// reports, that the instance gave no encapsulation.
type vlanNeed struct {
	net    int // index into the instance's networks
	dc     string
	lo, hi int
}

// allocateVLANs gives each network of needs the lowest free VLAN of its
// datacenter's range (in the order of the networks), writing the choice
// into nets; the allocations are recorded by recordVLANs once the
// networks exist. Datacenters are locked in uuid order, so two instances
// sharing datacenters cannot deadlock.
func allocateVLANs(ctx context.Context, s *persistence.Store, nets []wimro.InstanceNet, needs []vlanNeed) ([]persistence.VLANAllocation, error) {
	byDC := map[string][]vlanNeed{}
	var dcs []string
	for _, n := range needs {
		if byDC[n.dc] == nil {
			dcs = append(dcs, n.dc)
		}
		byDC[n.dc] = append(byDC[n.dc], n)
	}
	sort.Strings(dcs)
	var out []persistence.VLANAllocation
	for _, dc := range dcs {
		list := byDC[dc]
		if err := s.LockVLANs(ctx, dc); err != nil {
			return nil, err
		}
		free, err := s.FreeVLANs(ctx, dc, list[0].lo, list[0].hi, len(list))
		if err != nil {
			return nil, err
		}
		if len(free) < len(list) {
			return nil, wimro.Errorf(wimro.ECONFLICT, "datacenter %s: %d VLAN(s) needed, %d free in its range %d-%d (config.vlan_range)",
				dc, len(list), len(free), list[0].lo, list[0].hi)
		}
		for i, n := range list {
			typ, id := "vlan", free[i]
			row := &nets[n.net]
			row.EncapsulationType, row.EncapsulationID = &typ, &id
			if row.VimInfo == nil {
				row.VimInfo = map[string]any{}
			}
			row.VimInfo["encapsulation_type"], row.VimInfo["encapsulation_id"] = typ, id
			out = append(out, persistence.VLANAllocation{DatacenterID: dc, VLAN: id, InstanceNetID: row.UUID})
		}
	}
	return out, nil
}
