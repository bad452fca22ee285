package engine

import (
	"context"
	"fmt"
	"slices"
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

// vlanNeed is a local network in a datacenter whose networks nobody
// reports: its VLAN is recorded, so that no two networks of the
// datacenter share one. vlan is the VLAN the instance gave (0: wimro
// chooses one from the datacenter's range).
type vlanNeed struct {
	net    int // index into the instance's networks
	field  string
	dc     wimro.Datacenter
	vlan   int
	lo, hi int
}

// allocateVLANs takes the VLAN of each network of needs: the one given,
// which must not be taken (a VIM refuses a duplicate segmentation id
// too; outside the range is allowed), or else the lowest free VLAN of the
// datacenter's range (in the order of the networks), written into nets.
// A VLAN stays taken after its network is gone while the WAN link it was
// part of may still hold it on the controller (persistence.LockVLANs).
// The allocations are recorded (linkVLANs, AllocateVLANs) once the networks and
// links exist. Datacenters are locked in uuid order, so two instances
// sharing datacenters cannot deadlock.
func allocateVLANs(ctx context.Context, s *persistence.Store, nets []wimro.InstanceNet, needs []vlanNeed) ([]persistence.VLANAllocation, error) {
	byDC := map[string][]vlanNeed{}
	var dcs []string
	for _, n := range needs {
		if byDC[n.dc.UUID] == nil {
			dcs = append(dcs, n.dc.UUID)
		}
		byDC[n.dc.UUID] = append(byDC[n.dc.UUID], n)
	}
	sort.Strings(dcs)
	var out []persistence.VLANAllocation
	for _, dc := range dcs {
		list := byDC[dc]
		if err := s.LockVLANs(ctx, dc); err != nil {
			return nil, err
		}
		given := map[int]vlanNeed{}
		var auto []vlanNeed
		var fixed []int
		for _, n := range list {
			if n.vlan == 0 {
				auto = append(auto, n)
				continue
			}
			if o, dup := given[n.vlan]; dup {
				return nil, vlanTaken(n, fmt.Sprintf("%s gives it too", o.field))
			}
			given[n.vlan] = n
			fixed = append(fixed, n.vlan)
			out = append(out, persistence.VLANAllocation{DatacenterID: dc, VLAN: n.vlan, InstanceNetID: nets[n.net].UUID})
		}
		if len(fixed) > 0 {
			taken, err := s.TakenVLANs(ctx, dc, fixed)
			if err != nil {
				return nil, err
			}
			if len(taken) > 0 {
				return nil, vlanTaken(given[taken[0]], "another network has it, or a deleted instance's WAN link still holds it until its DELETE has run")
			}
		}
		if len(auto) == 0 {
			continue
		}
		lo, hi := auto[0].lo, auto[0].hi
		// The VLANs given in this request are not free either.
		free, err := s.FreeVLANs(ctx, dc, lo, hi, len(auto)+len(fixed))
		if err != nil {
			return nil, err
		}
		free = slices.DeleteFunc(free, func(v int) bool { _, ok := given[v]; return ok })
		if len(free) < len(auto) {
			return nil, wimro.Errorf(wimro.ECONFLICT, "datacenter %s: %d VLAN(s) needed, %d free in its range %d-%d (config.vlan_range)",
				auto[0].dc.Name, len(auto), len(free), lo, hi)
		}
		for i, n := range auto {
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

// vlanTaken is the 409 of a network given a VLAN its datacenter has
// taken.
func vlanTaken(n vlanNeed, why string) error {
	return &wimro.Error{Code: wimro.ECONFLICT, Field: n.field + ".encapsulation_id",
		Message: fmt.Sprintf("%s.encapsulation_id: VLAN %d of datacenter %s is taken (%s)", n.field, n.vlan, n.dc.Name, why)}
}

// linkVLANs names, in each allocation, the WAN link its network is part
// of (the link of the network's sce_net_id), which holds the VLAN until
// its DELETE has run.
func linkVLANs(vlans []persistence.VLANAllocation, nets []wimro.InstanceNet, links []wimro.WANLink) {
	bySce := map[string]*string{}
	for i := range links {
		if links[i].SceNetID != nil {
			bySce[*links[i].SceNetID] = &links[i].UUID
		}
	}
	sce := map[string]string{}
	for _, n := range nets {
		if n.SceNetID != nil {
			sce[n.UUID] = *n.SceNetID
		}
	}
	for i, v := range vlans {
		if id, ok := sce[v.InstanceNetID]; ok {
			vlans[i].LinkID = bySce[id]
		}
	}
}
