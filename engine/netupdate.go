package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// NetworkUpdate is what the NFVO reports about a local network. Nil fields
// keep their value.
type NetworkUpdate struct {
	Status            *string        `json:"status"`
	ErrorMsg          *string        `json:"error_msg"`
	EncapsulationType *string        `json:"encapsulation_type"`
	EncapsulationID   *int           `json:"encapsulation_id"`
	PopSwitchDPID     *string        `json:"pop_switch_dpid"`
	PopSwitchPort     *Port          `json:"pop_switch_port"`
	PhysicalNetwork   *string        `json:"physical_network"`
	VimInfo           map[string]any `json:"vim_info"`
	VimNetID          *string        `json:"vim_net_id"`
	SdnNetID          *string        `json:"sdn_net_id"`
}

// UpdateNetwork records a network's new status or encapsulation and wakes
// the workers of the WAN links of its VLD. A CREATE waits for its networks
// to be ACTIVE with run_after in the future, so a status change also makes
// the waiting CREATEs of the VLD's links due at once.
func (e *Engine) UpdateNetwork(ctx context.Context, tenantRef, instanceRef, netRef string, u NetworkUpdate) (wimro.InstanceNet, error) {
	var out wimro.InstanceNet
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		_, inst, err := tenantInstance(ctx, s, tenantRef, instanceRef)
		if err != nil {
			return err
		}
		n, err := s.GetInstanceNet(ctx, inst.UUID, netRef)
		if err != nil {
			return err
		}
		oldStatus, oldEncapsulation := n.Status, encapsulationOf(n)
		if u.Status != nil {
			st := strings.ToUpper(*u.Status)
			if !linkStatuses[st] {
				return wimro.FieldErrorf("network.status", "network.status must be one of %v", wimro.NetStatuses)
			}
			n.Status = st
		}
		if u.ErrorMsg != nil {
			n.ErrorMsg = u.ErrorMsg
		}
		if u.EncapsulationType != nil || u.EncapsulationID != nil {
			typ := ""
			if u.EncapsulationType != nil {
				typ = *u.EncapsulationType
			} else if n.EncapsulationType != nil {
				typ = *n.EncapsulationType
			}
			id := u.EncapsulationID
			if id == nil && typ == "vlan" {
				id = n.EncapsulationID
			}
			if err := applyEncapsulation("network", &n, typ, id); err != nil {
				return err
			}
		}
		if u.PopSwitchDPID != nil {
			if !dpidPattern.MatchString(*u.PopSwitchDPID) {
				return wimro.FieldErrorf("network.pop_switch_dpid", "network.pop_switch_dpid must be colon-separated alphanumeric groups")
			}
			n.PopSwitchDPID = u.PopSwitchDPID
		}
		if u.PopSwitchPort != nil {
			p := string(*u.PopSwitchPort)
			n.PopSwitchPort = &p
		}
		physnet := ""
		if u.PhysicalNetwork != nil {
			physnet = *u.PhysicalNetwork
		}
		base := n.VimInfo
		if u.VimInfo != nil {
			base = mergeConfig(n.VimInfo, u.VimInfo)
		}
		n.VimInfo = vimInfo(base, physnet, n.EncapsulationType, n.EncapsulationID)
		if n.EncapsulationType != nil && *n.EncapsulationType == "none" {
			delete(n.VimInfo, "encapsulation_id")
		}
		if u.VimNetID != nil {
			n.VimNetID = u.VimNetID
		}
		if u.SdnNetID != nil {
			n.SdnNetID = u.SdnNetID
		}
		if encapsulationOf(n) != oldEncapsulation {
			if err := e.refuseVLANChange(ctx, s, n); err != nil {
				return err
			}
		}
		if out, err = s.UpdateInstanceNet(ctx, n); err != nil {
			return err
		}
		if n.SceNetID == nil {
			return nil
		}
		links, err := s.ListWANLinksOfGroup(ctx, inst.UUID, *n.SceNetID)
		if err != nil {
			return err
		}
		accounts := make([]string, len(links))
		ids := make([]string, len(links))
		for i, l := range links {
			accounts[i], ids[i] = l.WIMAccountID, l.UUID
		}
		if n.Status != oldStatus {
			if _, err := s.MakeLinksDue(ctx, ids); err != nil {
				return err
			}
		}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return out, err
}

// encapsulationOf is a network's encapsulation as one comparable string.
func encapsulationOf(n wimro.InstanceNet) string {
	out := ""
	if n.EncapsulationType != nil {
		out = *n.EncapsulationType
	}
	if n.EncapsulationID != nil {
		out += fmt.Sprintf("/%d", *n.EncapsulationID)
	}
	return out
}

// refuseVLANChange refuses a new encapsulation for a network of a
// datacenter whose networks nobody reports (network_status_source none):
// wimro holds their VLANs (vlan_allocations) until the WAN link's DELETE
// ran, and a VLAN changed behind that record could land on one another
// network holds, or that a controller still carries.
func (e *Engine) refuseVLANChange(ctx context.Context, s *persistence.Store, n wimro.InstanceNet) error {
	d, err := s.GetDatacenter(ctx, n.DatacenterID, "")
	if err != nil {
		return err
	}
	source, _, _, err := netSource(d.Config)
	if err != nil || source != NetSourceNone {
		return err
	}
	return &wimro.Error{Code: wimro.ECONFLICT, Field: "network.encapsulation_id", Message: fmt.Sprintf(
		"network.encapsulation_id: datacenter %s takes its VLANs from wimro (config.network_status_source %s): a network's VLAN is set when its instance is created, and kept until its WAN link is deleted",
		d.Name, NetSourceNone)}
}
