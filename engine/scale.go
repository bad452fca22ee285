package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/persistence"
)

// AddNetwork adds a network of an existing VLD (in.SceNetID) of an
// instance in another datacenter: a scale out, as OSM's scaling adds a
// VNF in a new VIM. The VLD's WAN link grows to reach it: an EDIT of the
// link, queued in the same transaction, whose instance action is
// returned. Past two datacenters the link is a multipoint (ELAN) service,
// refused with a 400 naming the network and what the link's WIM's type
// makes when it makes none. A VLD without a WAN link (one datacenter) is
// refused: it has no service to grow.
func (e *Engine) AddNetwork(ctx context.Context, tenantRef, instanceRef string, in NetworkInput) (wimro.InstanceNet, string, error) {
	var (
		out    wimro.InstanceNet
		editID string
	)
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, inst, err := tenantInstance(ctx, s, tenantRef, instanceRef)
		if err != nil {
			return err
		}
		if in.SceNetID == "" {
			return wimro.FieldErrorf("network.sce_net_id", "network.sce_net_id is required: the VLD the network belongs to")
		}
		if in.Datacenter == "" {
			return wimro.FieldErrorf("network.datacenter", "network.datacenter is required")
		}
		d, err := s.GetDatacenter(ctx, in.Datacenter, t.UUID)
		if wimro.ErrorCode(err) == wimro.ENOTFOUND {
			return &wimro.Error{Code: wimro.EINVALID, Field: "network.datacenter", Err: err,
				Message: fmt.Sprintf("network.datacenter: %q is not a datacenter attached to tenant %s", wimro.CleanText(in.Datacenter, 80), t.Name)}
		}
		if err != nil {
			return err
		}
		nets, err := s.ListNetsOfGroup(ctx, inst.UUID, in.SceNetID)
		if err != nil {
			return err
		}
		if len(nets) == 0 {
			return wimro.FieldErrorf("network.sce_net_id", "network.sce_net_id: instance %s has no network of VLD %s", inst.Name, wimro.CleanText(in.SceNetID, 80))
		}
		if slices.ContainsFunc(nets, func(n wimro.InstanceNet) bool { return n.DatacenterID == d.UUID }) {
			return &wimro.Error{Code: wimro.ECONFLICT, Field: "network.datacenter",
				Message: fmt.Sprintf("network.datacenter: VLD %s of instance %s has a network in datacenter %s already", in.SceNetID, inst.Name, d.Name)}
		}
		links, err := s.ListWANLinksOfGroup(ctx, inst.UUID, in.SceNetID)
		if err != nil {
			return err
		}
		if len(links) == 0 || links[0].WIMID == nil {
			return wimro.FieldErrorf("network.sce_net_id", "network.sce_net_id: VLD %s of instance %s has no WAN link to grow (it is in one datacenter): scale out adds a datacenter to a VLD that spans datacenters",
				in.SceNetID, inst.Name)
		}
		link := links[0]
		w, err := s.GetWIM(ctx, *link.WIMID)
		if err != nil {
			return err
		}
		if err := e.checkGrowth(ctx, s, w, d, in, len(nets)+1); err != nil {
			return err
		}
		row, err := netRow("network", in)
		if err != nil {
			return err
		}
		if row.UUID == "" {
			row.UUID = uuid.NewString()
		}
		row.InstanceID, row.DatacenterID = inst.UUID, d.UUID
		source, _, _, err := netSource(d.Config)
		if err != nil {
			return err
		}
		if source == NetSourceNone && in.Status == "" {
			row.Status = wimro.NetActive // nobody will report it: it is up once created
		}
		created, err := s.CreateInstanceNets(ctx, []wimro.InstanceNet{row})
		if err != nil {
			return err
		}
		out = created[0]
		if source == NetSourceNone {
			if err := e.moveVLAN(ctx, s, out, "network.encapsulation_id"); err != nil {
				return err
			}
		}
		if err := retype(ctx, s, link, len(nets)+1); err != nil {
			return err
		}
		var accounts []string
		if editID, accounts, err = queueEdits(ctx, s, t.UUID, inst.UUID, links, nil); err != nil {
			return err
		}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return out, editID, err
}

// checkGrowth refuses, naming the network, a link grown to n datacenters
// that its WIM cannot carry: no port mapping at the new datacenter d, or
// a multipoint service its type does not make.
func (e *Engine) checkGrowth(ctx context.Context, s *persistence.Store, w wimro.WIM, d wimro.Datacenter, in NetworkInput, n int) error {
	mappings, err := s.PortMappingsOfWIM(ctx, w.UUID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(mappings, func(m wimro.PortMapping) bool { return m.DatacenterID == d.UUID }) {
		return wimro.FieldErrorf("network.datacenter", "network.datacenter: WIM %s, which carries the WAN link of VLD %s, has no port mapping at datacenter %s",
			w.Name, in.SceNetID, d.Name)
	}
	caps, ok := e.capabilitiesOf(w)
	if !ok || n <= 2 || caps.Makes(connectors.ServiceELAN) {
		return nil
	}
	made := make([]string, len(caps.Services))
	for i, t := range caps.Services {
		made[i] = string(t)
	}
	return wimro.FieldErrorf("network", "network: the WAN link of VLD %s would join %d datacenters, a multipoint (ELAN) service, and WIM %s (type %s) makes %s only",
		in.SceNetID, n, w.Name, w.Type, strings.Join(made, ", "))
}

// RemoveNetwork removes a network of an instance: a scale in. The WAN
// link of its VLD shrinks by an EDIT (an ELAN over two datacenters again
// is an ELINE, unless made multipoint), queued in the same transaction;
// with fewer than two datacenters left the link goes: its DELETE is
// queued and its row deleted, as an instance delete does. It returns the
// instance action of the EDIT or DELETE ("" when none was queued).
func (e *Engine) RemoveNetwork(ctx context.Context, tenantRef, instanceRef, netRef string) (string, error) {
	var actionID string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, inst, err := tenantInstance(ctx, s, tenantRef, instanceRef)
		if err != nil {
			return err
		}
		n, err := s.GetInstanceNet(ctx, inst.UUID, netRef)
		if err != nil {
			return err
		}
		if err := s.DeleteInstanceNet(ctx, n.UUID); err != nil {
			return err
		}
		if n.SceNetID == nil {
			return nil
		}
		links, err := s.ListWANLinksOfGroup(ctx, inst.UUID, *n.SceNetID)
		if err != nil || len(links) == 0 {
			return err
		}
		left, err := s.ListNetsOfGroup(ctx, inst.UUID, *n.SceNetID)
		if err != nil {
			return err
		}
		var accounts []string
		if len(left) >= 2 {
			for _, l := range links {
				if err := retype(ctx, s, l, len(left)); err != nil {
					return err
				}
			}
			actionID, accounts, err = queueEdits(ctx, s, t.UUID, inst.UUID, links, nil)
		} else {
			var ia wimro.InstanceAction
			ia, accounts, err = queueDeletesOf(ctx, s, t, inst, links)
			actionID = ia.UUID
		}
		if err != nil {
			return err
		}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return actionID, err
}

// queueDeletesOf queues the DELETE of links of inst, one instance action
// "DELETE" for them, each action carrying a copy of its link, and deletes
// the link rows; it returns the instance action and the accounts to wake.
func queueDeletesOf(ctx context.Context, s *persistence.Store, t wimro.Tenant, inst wimro.Instance, links []wimro.WANLink) (wimro.InstanceAction, []string, error) {
	ia, accounts, err := queueDeleteActions(ctx, s, t, inst, links)
	if err != nil {
		return ia, nil, err
	}
	for _, l := range links {
		if err := s.DeleteWANLink(ctx, l.UUID); err != nil {
			return ia, nil, err
		}
	}
	return ia, accounts, nil
}

// retype records the service type of a layer-2 link grown or shrunk to n
// datacenters: an ELAN past two (or when made multipoint), else an ELINE.
// An L3VPN stays one whatever its number of sites.
func retype(ctx context.Context, s *persistence.Store, l wimro.WANLink, n int) error {
	if l.ServiceType == string(connectors.ServiceL3VPN) {
		return nil
	}
	typ := connectors.ServiceTypeFor(n)
	if l.Multipoint {
		typ = connectors.ServiceELAN
	}
	if l.ServiceType == string(typ) {
		return nil
	}
	return s.SetWANLinkServiceType(ctx, l.UUID, string(typ))
}
