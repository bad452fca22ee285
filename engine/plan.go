package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// netRow validates one network input and builds its row; the datacenter is
// resolved by the caller.
func netRow(field string, n NetworkInput) (wimro.InstanceNet, error) {
	row := wimro.InstanceNet{UUID: n.UUID, Status: strings.ToUpper(n.Status)}
	if row.UUID != "" {
		id, ok := wimro.ParseUUID(row.UUID)
		if !ok {
			return row, wimro.FieldErrorf(field+".uuid", "%s.uuid must be a uuid", field)
		}
		row.UUID = id
	}
	if n.SceNetID != "" {
		id, ok := wimro.ParseUUID(n.SceNetID)
		if !ok {
			return row, wimro.FieldErrorf(field+".sce_net_id", "%s.sce_net_id must be a uuid: the id of the scenario's network (the VLD) "+
				"this local network belongs to; networks with the same sce_net_id in different datacenters are joined by one WAN link", field)
		}
		row.SceNetID = &id
	}
	if row.Status == "" {
		row.Status = wimro.NetBuild
	}
	if !linkStatuses[row.Status] {
		return row, wimro.FieldErrorf(field+".status", "%s.status must be one of %v", field, wimro.NetStatuses)
	}
	if err := applyEncapsulation(field, &row, n.EncapsulationType, n.EncapsulationID); err != nil {
		return row, err
	}
	if (n.PopSwitchDPID == "") != (n.PopSwitchPort == "") {
		return row, wimro.FieldErrorf(field+".pop_switch_port", "%s: pop_switch_dpid and pop_switch_port go together", field)
	}
	if n.PopSwitchDPID != "" {
		if !dpidPattern.MatchString(n.PopSwitchDPID) {
			return row, wimro.FieldErrorf(field+".pop_switch_dpid", "%s.pop_switch_dpid must be colon-separated alphanumeric groups", field)
		}
		d, p := n.PopSwitchDPID, string(n.PopSwitchPort)
		row.PopSwitchDPID, row.PopSwitchPort = &d, &p
	}
	row.VimInfo = vimInfo(n.VimInfo, n.PhysicalNetwork, row.EncapsulationType, row.EncapsulationID)
	row.OsmID = optional(n.OsmID)
	row.VimName = optional(n.Name)
	row.VimNetID = optional(n.VimNetID)
	row.SdnNetID = optional(n.SdnNetID)
	return row, nil
}

func applyEncapsulation(field string, row *wimro.InstanceNet, typ string, id *int) error {
	switch typ {
	case "":
		if id != nil {
			typ = "vlan"
		} else {
			return nil
		}
	case "none", "vlan":
	default:
		return wimro.FieldErrorf(field+".encapsulation_type", "%s.encapsulation_type must be none or vlan", field)
	}
	if typ == "vlan" && (id == nil || *id < 1 || *id > 4094) {
		return wimro.FieldErrorf(field+".encapsulation_id", "%s.encapsulation_id must be a VLAN id from 1 to 4094 for vlan encapsulation", field)
	}
	if typ == "none" {
		id = nil
	}
	row.EncapsulationType, row.EncapsulationID = &typ, id
	return nil
}

// vimInfo merges what the NFVO reported into the keys the datacenter rules
// match on (the names OpenStack's VIM connector used in OSM).
func vimInfo(base map[string]any, physnet string, encType *string, encID *int) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	if physnet != "" {
		out["provider:physical_network"] = physnet
	}
	if encType != nil {
		out["encapsulation_type"] = *encType
	}
	if encID != nil {
		out["encapsulation_id"] = *encID
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// group is the networks of one VLD.
type group struct {
	sceNetID string
	nets     []int // indexes into the instance's networks
	choice   WIMChoice
	field    string
}

// deriveGroups groups the networks by sce_net_id (networks without one are
// VNF-internal and never span datacenters) and keeps the groups that touch
// two or more datacenters with distinct VIMs and do not opt out. It runs
// in O(n log n): one pass into a map, then a sort for a stable order.
func deriveGroups(in InstanceInput, nets []wimro.InstanceNet, vimURL func(dcID string) string) ([]group, error) {
	bySce := map[string]*group{}
	for i, n := range nets {
		if n.SceNetID == nil {
			continue
		}
		g := bySce[*n.SceNetID]
		if g == nil {
			g = &group{sceNetID: *n.SceNetID, choice: in.WIMAccount, field: "instance.wim_account"}
			bySce[*n.SceNetID] = g
		}
		g.nets = append(g.nets, i)
		if c := in.Networks[i].WIMAccount; c.Set {
			f := fmt.Sprintf("instance.networks[%d].wim_account", i)
			if g.field != "instance.wim_account" && !sameChoice(g.choice, c) {
				return nil, wimro.FieldErrorf(f, "%s disagrees with %s for sce_net_id %s", f, g.field, g.sceNetID)
			}
			g.choice, g.field = c, f
		}
	}
	out := make([]group, 0, len(bySce))
	for _, g := range bySce {
		vims := map[string]bool{}
		for _, i := range g.nets {
			vims[vimURL(nets[i].DatacenterID)] = true
		}
		// Datacenters that are the same VIM need no WIM.
		if len(vims) < 2 || (g.choice.Set && g.choice.None) {
			continue
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].sceNetID < out[j].sceNetID })
	return out, nil
}

func sameChoice(a, b WIMChoice) bool {
	return a.auto() == b.auto() && a.None == b.None && a.Ref == b.Ref
}

// planLinks chooses the WIM and account of every WAN link, and refuses a
// link whose QoS (from qos, the networks' own) the chosen WIM cannot
// honour (checkQoS): in the create request, not in a CREATE action that
// could only fail.
func planLinks(ctx context.Context, s *persistence.Store, tenant wimro.Tenant, groups []group, nets []wimro.InstanceNet,
	qos []netQoS, checkQoS func(wimro.WIM, linkQoS) error) ([]PlannedLink, error) {
	plans := make([]PlannedLink, 0, len(groups))
	cache := map[string]wimro.WIM{}
	for _, g := range groups {
		q, err := groupQoS(g, qos)
		if err != nil {
			return nil, err
		}
		dcs := map[string]bool{}
		var dcIDs []string
		for _, i := range g.nets {
			if id := nets[i].DatacenterID; !dcs[id] {
				dcs[id] = true
				dcIDs = append(dcIDs, id)
			}
		}
		sort.Strings(dcIDs)
		var (
			w    wimro.WIM
			acct wimro.WIMAccount
		)
		if g.choice.auto() {
			w, err = findCommonWIMFor(ctx, s, tenant.UUID, dcIDs, func(w wimro.WIM) error { return checkQoS(w, q) })
			if err != nil {
				return nil, err
			}
			acct, err = accountFor(ctx, s, w, tenant, g.field)
		} else {
			w, acct, err = chosenAccount(ctx, s, tenant, g.choice.Ref, g.field, cache)
			if err == nil {
				err = checkReach(ctx, s, w, dcIDs, g.field)
			}
			if err == nil {
				err = checkQoS(w, q)
			}
		}
		if err != nil {
			return nil, err
		}
		plans = append(plans, PlannedLink{
			SceNetID: g.sceNetID, DatacenterIDs: dcIDs, Multipoint: len(dcIDs) > 2,
			WIMID: w.UUID, WIMName: w.Name, WIMAccountID: acct.UUID,
			Bandwidth: optInt(q.bandwidth), Latency: optInt(q.latency),
		})
	}
	return plans, nil
}

func accountFor(ctx context.Context, s *persistence.Store, w wimro.WIM, t wimro.Tenant, field string) (wimro.WIMAccount, error) {
	att, err := s.ListAttachedAccounts(ctx, w.UUID, t.UUID)
	if err != nil {
		return wimro.WIMAccount{}, err
	}
	if len(att) == 0 {
		return wimro.WIMAccount{}, &wimro.Error{Code: wimro.ENOTFOUND, Field: field,
			Message: fmt.Sprintf("%s: WIM %s is not attached to tenant %s", field, w.Name, t.Name)}
	}
	return att[0].Account, nil
}

// chosenAccount resolves a manual choice: an account uuid attached to the
// tenant, else a WIM name or uuid and the tenant's account on it.
func chosenAccount(ctx context.Context, s *persistence.Store, t wimro.Tenant, ref, field string, cache map[string]wimro.WIM) (wimro.WIM, wimro.WIMAccount, error) {
	if id, ok := wimro.ParseUUID(ref); ok {
		if a, err := s.GetAccount(ctx, id); err == nil {
			assocs, err := s.ListAssociationsOfAccount(ctx, a.UUID)
			if err != nil {
				return wimro.WIM{}, wimro.WIMAccount{}, err
			}
			for _, as := range assocs {
				if as.TenantID == t.UUID {
					w, err := s.GetWIM(ctx, a.WIMID)
					return w, a, err
				}
			}
			return wimro.WIM{}, wimro.WIMAccount{}, &wimro.Error{Code: wimro.ENOTFOUND, Field: field,
				Message: fmt.Sprintf("%s: WIM account %s is not attached to tenant %s", field, id, t.Name)}
		} else if wimro.ErrorCode(err) != wimro.ENOTFOUND {
			return wimro.WIM{}, wimro.WIMAccount{}, err
		}
	}
	w, ok := cache[ref]
	if !ok {
		var err error
		if w, err = s.GetWIM(ctx, ref); err != nil {
			if wimro.ErrorCode(err) == wimro.ENOTFOUND {
				return wimro.WIM{}, wimro.WIMAccount{}, &wimro.Error{Code: wimro.ENOTFOUND, Field: field,
					Message: fmt.Sprintf("%s: no WIM account or WIM %q", field, ref)}
			}
			return wimro.WIM{}, wimro.WIMAccount{}, err
		}
		cache[ref] = w
	}
	a, err := accountFor(ctx, s, w, t, field)
	return w, a, err
}

// checkReach refuses a chosen WIM that has no port mapping in one of the
// datacenters: its CREATE could only fail later.
func checkReach(ctx context.Context, s *persistence.Store, w wimro.WIM, dcIDs []string, field string) error {
	rows, err := s.ListPortMappings(ctx, persistence.PortMappingFilter{WIMIDs: []string{w.UUID}, DatacenterIDs: dcIDs})
	if err != nil {
		return err
	}
	reached := map[string]bool{}
	for _, r := range rows {
		reached[r.DatacenterID] = true
	}
	var missing []string
	for _, id := range dcIDs {
		if !reached[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return wimro.FieldErrorf(field, "%s: WIM %s has no port mapping in datacenter(s) %s", field, w.Name, strings.Join(missing, ", "))
	}
	return nil
}

// prepareInstance validates the input, resolves datacenters, and plans the
// WAN links. It writes nothing.
func (e *Engine) prepareInstance(ctx context.Context, s *persistence.Store, tenant wimro.Tenant, in InstanceInput) (wimro.Instance, []wimro.InstanceNet, []PlannedLink, error) {
	inst := wimro.Instance{UUID: uuid.NewString(), Name: in.Name, TenantID: tenant.UUID, Description: in.Description}
	if err := checkName("instance.name", in.Name, 255); err != nil {
		return inst, nil, nil, err
	}
	if err := checkDescription("instance.description", in.Description); err != nil {
		return inst, nil, nil, err
	}
	if in.ScenarioID != "" {
		id, ok := wimro.ParseUUID(in.ScenarioID)
		if !ok {
			return inst, nil, nil, wimro.FieldErrorf("instance.scenario_id", "instance.scenario_id must be a uuid")
		}
		inst.ScenarioID = &id
	}
	dcCache := map[string]wimro.Datacenter{}
	resolve := func(field, ref string) (wimro.Datacenter, error) {
		if d, ok := dcCache[ref]; ok {
			return d, nil
		}
		d, err := s.GetDatacenter(ctx, ref, tenant.UUID)
		if err != nil {
			if wimro.ErrorCode(err) == wimro.ENOTFOUND {
				return d, &wimro.Error{Code: wimro.ENOTFOUND, Field: field, Err: err,
					Message: fmt.Sprintf("%s: datacenter %q is not attached to tenant %s", field, ref, tenant.Name)}
			}
			return d, err
		}
		dcCache[ref], dcCache[d.UUID] = d, d
		return d, nil
	}
	if in.Datacenter != "" {
		d, err := resolve("instance.datacenter", in.Datacenter)
		if err != nil {
			return inst, nil, nil, err
		}
		inst.DatacenterID = &d.UUID
	}
	nets := make([]wimro.InstanceNet, len(in.Networks))
	qos := make([]netQoS, len(in.Networks))
	seen := map[string]bool{}
	for i, n := range in.Networks {
		field := fmt.Sprintf("instance.networks[%d]", i)
		row, err := netRow(field, n)
		if err != nil {
			return inst, nil, nil, err
		}
		if qos[i], err = parseNetQoS(field, n); err != nil {
			return inst, nil, nil, err
		}
		ref := n.Datacenter
		if ref == "" {
			if inst.DatacenterID == nil {
				return inst, nil, nil, wimro.FieldErrorf(field+".datacenter", "%s.datacenter is required (or set instance.datacenter)", field)
			}
			ref = *inst.DatacenterID
		}
		d, err := resolve(field+".datacenter", ref)
		if err != nil {
			return inst, nil, nil, err
		}
		row.DatacenterID = d.UUID
		if row.SceNetID != nil {
			key := *row.SceNetID + "/" + d.UUID
			if seen[key] {
				return inst, nil, nil, wimro.FieldErrorf(field, "%s: sce_net_id %s has two networks in datacenter %s", field, *row.SceNetID, d.Name)
			}
			seen[key] = true
		}
		if row.UUID == "" {
			row.UUID = uuid.NewString()
		}
		row.InstanceID = inst.UUID
		nets[i] = row
	}
	groups, err := deriveGroups(in, nets, func(id string) string { return dcCache[id].VimURL })
	if err != nil {
		return inst, nil, nil, err
	}
	plans, err := planLinks(ctx, s, tenant, groups, nets, qos, e.checkQoS)
	return inst, nets, plans, err
}

// PlanInstance returns the WAN links, WIMs and accounts that creating the
// instance would use, without writing anything (dry run).
func (e *Engine) PlanInstance(ctx context.Context, tenantRef string, in InstanceInput) ([]PlannedLink, error) {
	var plans []PlannedLink
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		_, _, plans, err = e.prepareInstance(ctx, s, t, in)
		return err
	})
	return plans, err
}
