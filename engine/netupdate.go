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
// the workers of the WAN links of its VLD (UpdateNetworkEdit, without the
// EDIT's instance action).
func (e *Engine) UpdateNetwork(ctx context.Context, tenantRef, instanceRef, netRef string, u NetworkUpdate) (wimro.InstanceNet, error) {
	n, _, err := e.UpdateNetworkEdit(ctx, tenantRef, instanceRef, netRef, u)
	return n, err
}

// UpdateNetworkEdit records a network's new status or encapsulation and
// wakes the workers of the WAN links of its VLD. A CREATE waits for its
// networks to be ACTIVE with run_after in the future, so a status change
// also makes the waiting CREATEs of the VLD's links due at once. A change
// of where or how a link reaches the network (encapsulation, VLAN, PoP
// port, vim_info such as the physical network) queues an EDIT of each of
// the VLD's links in the same transaction (queueEdits), so that it
// reaches the controller; the EDIT's instance action is returned ("" when
// none was queued) for the client to follow.
func (e *Engine) UpdateNetworkEdit(ctx context.Context, tenantRef, instanceRef, netRef string, u NetworkUpdate) (wimro.InstanceNet, string, error) {
	var (
		out    wimro.InstanceNet
		editID string
	)
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		editID = ""
		t, inst, err := tenantInstance(ctx, s, tenantRef, instanceRef)
		if err != nil {
			return err
		}
		n, err := s.GetInstanceNet(ctx, inst.UUID, netRef)
		if err != nil {
			return err
		}
		oldStatus, oldEncapsulation, oldEndpoint := n.Status, encapsulationOf(n), endpointOf(n)
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
			if err := e.moveVLAN(ctx, s, n, "network.encapsulation_id"); err != nil {
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
		if endpointOf(n) != oldEndpoint {
			if editID, _, err = queueEdits(ctx, s, t.UUID, inst.UUID, links, nil); err != nil {
				return err
			}
		}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return out, editID, err
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
