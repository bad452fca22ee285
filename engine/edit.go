package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// queueEdits queues an EDIT action of each of links (WAN links of one
// instance) whose service must change, one instance action "EDIT" for
// them all, in the caller's transaction (the one that wrote the change).
// A link gets none when a run already queued will read the change: its
// unclaimed SCHEDULED CREATE or EDIT (persistence.LinksWithPendingRun),
// so that several changes before an EDIT runs are one edit to the latest
// state. A deleted link gets none. extra is each action's extra (nil:
// none). It returns the instance action ("" when nothing was queued) and
// the accounts to wake once the transaction commits.
func queueEdits(ctx context.Context, s *persistence.Store, tenantID, instanceID string, links []wimro.WANLink, extra map[string]any) (string, []string, error) {
	var ids []string
	for _, l := range links {
		if l.Status != wimro.LinkDeleted {
			ids = append(ids, l.UUID)
		}
	}
	pending, err := s.LinksWithPendingRun(ctx, ids)
	if err != nil {
		return "", nil, err
	}
	var todo []wimro.WANLink
	var accounts []string
	for _, l := range links {
		if l.Status == wimro.LinkDeleted {
			continue
		}
		accounts = append(accounts, l.WIMAccountID) // woken either way: a pending run may wait for a network
		if !pending[l.UUID] {
			todo = append(todo, l)
		}
	}
	if len(todo) == 0 {
		return "", accounts, nil
	}
	ia, err := s.CreateInstanceAction(ctx, wimro.InstanceAction{TenantID: tenantID, InstanceID: &instanceID, Description: wimro.ActionEdit, Tasks: len(todo)})
	if err != nil {
		return "", nil, err
	}
	acts := make([]wimro.Action, len(todo))
	for i, l := range todo {
		acct := l.WIMAccountID
		acts[i] = wimro.Action{InstanceActionID: ia.UUID, TaskIndex: i, WIMAccountID: &acct, Action: wimro.ActionEdit, ItemID: l.UUID, Extra: extra}
	}
	if _, err := s.CreateActions(ctx, acts); err != nil {
		return "", nil, err
	}
	return ia.UUID, accounts, nil
}

// endpointOf is what of a network decides where and how its WAN link's
// service reaches it (encapsulation, VLAN, PoP port, and the vim_info the
// datacenter's external_connections rules match, physical network
// included), as one comparable text: a change of it is an EDIT of the
// link.
func endpointOf(n wimro.InstanceNet) string {
	b, _ := json.Marshal([]any{n.EncapsulationType, n.EncapsulationID, n.PopSwitchDPID, n.PopSwitchPort, n.VimInfo})
	return string(b)
}

// moveVLAN gives network n, of a datacenter whose VLANs wimro allocates
// (network_status_source none), its new VLAN: refused 409 naming field
// when the datacenter has it taken, else the network's allocation moves
// to it (the EDIT queued with the change moves the service). The old VLAN
// is free once its allocation is dropped, like a deleted network's whose
// link has no DELETE. A datacenter of another source is left alone.
func (e *Engine) moveVLAN(ctx context.Context, s *persistence.Store, n wimro.InstanceNet, field string) error {
	d, err := s.GetDatacenter(ctx, n.DatacenterID, "")
	if err != nil {
		return err
	}
	source, _, _, err := netSource(d.Config)
	if err != nil || source != NetSourceNone {
		return err
	}
	if n.EncapsulationID == nil || n.EncapsulationType == nil || *n.EncapsulationType != "vlan" {
		return &wimro.Error{Code: wimro.EINVALID, Field: field, Message: fmt.Sprintf(
			"%s: datacenter %s takes its VLANs from wimro (config.network_status_source %s): its networks are VLANs", field, d.Name, NetSourceNone)}
	}
	if err := s.LockVLANs(ctx, d.UUID); err != nil {
		return err
	}
	taken, err := s.TakenVLANs(ctx, d.UUID, []int{*n.EncapsulationID})
	if err != nil {
		return err
	}
	if len(taken) > 0 {
		return &wimro.Error{Code: wimro.ECONFLICT, Field: field, Message: fmt.Sprintf(
			"%s: VLAN %d of datacenter %s is taken (another network has it, or a deleted instance's WAN link still holds it until its DELETE has run)",
			field, *n.EncapsulationID, d.Name)}
	}
	var linkID *string
	if n.SceNetID != nil {
		links, err := s.ListWANLinksOfGroup(ctx, n.InstanceID, *n.SceNetID)
		if err != nil {
			return err
		}
		if len(links) > 0 {
			linkID = &links[0].UUID
		}
	}
	return s.MoveNetVLAN(ctx, n.UUID, d.UUID, *n.EncapsulationID, linkID)
}

// editVPNLink brings the networks of an L2SM vpn-service's instance in
// line with want, in place, and queues the EDIT of its link, when want
// keeps the link's datacenters and WIM (an access's VLAN or bearer
// changed): the controller's service is edited or replaced by the EDIT,
// and the VLANs of the datacenters whose VLANs wimro allocates move only
// where they changed (a new link would take the unchanged ends' VLANs
// again, which the old link holds until its DELETE has run: 409). ok is
// false, and nothing written, when want needs another link (other
// datacenters or another WIM).
func (e *Engine) editVPNLink(ctx context.Context, s *persistence.Store, t wimro.Tenant, inst wimro.Instance, nets []wimro.InstanceNet, link wimro.WANLink, want []NetworkInput) (string, []string, bool, error) {
	if len(nets) != len(want) || link.WIMID == nil {
		return "", nil, false, nil
	}
	// Each network is one access (its osm_id), two of them possibly at
	// one datacenter: an access is edited where it is, on the same WIM.
	type end struct{ dc, access string }
	byEnd := make(map[end]*wimro.InstanceNet, len(nets))
	for i := range nets {
		var access string
		if nets[i].OsmID != nil {
			access = *nets[i].OsmID
		}
		byEnd[end{nets[i].DatacenterID, access}] = &nets[i]
	}
	for _, w := range want {
		if byEnd[end{w.Datacenter, w.OsmID}] == nil || w.WIMAccount.Ref != *link.WIMID {
			return "", nil, false, nil
		}
	}
	for _, w := range want {
		n := byEnd[end{w.Datacenter, w.OsmID}]
		old := endpointOf(*n)
		typ, dpid, port := w.EncapsulationType, w.PopSwitchDPID, string(w.PopSwitchPort)
		n.EncapsulationType, n.EncapsulationID, n.PopSwitchDPID, n.PopSwitchPort = &typ, w.EncapsulationID, &dpid, &port
		if n.VimInfo == nil {
			n.VimInfo = map[string]any{}
		}
		n.VimInfo["encapsulation_type"] = typ
		delete(n.VimInfo, "encapsulation_id")
		if w.EncapsulationID != nil {
			n.VimInfo["encapsulation_id"] = *w.EncapsulationID
		}
		if endpointOf(*n) == old {
			continue
		}
		if typ == "vlan" {
			if err := e.moveVLAN(ctx, s, *n, "site-network-access.connection.tagged-interface.dot1q-vlan-tagged.cvlan-id"); err != nil {
				return "", nil, false, err
			}
		}
		if _, err := s.UpdateInstanceNet(ctx, *n); err != nil {
			return "", nil, false, err
		}
	}
	id, accounts, err := queueEdits(ctx, s, t.UUID, inst.UUID, []wimro.WANLink{link}, nil)
	return id, accounts, true, err
}
