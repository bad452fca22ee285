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
// two or more datacenters with distinct VIMs (or, for given ends, two or
// more ends wherever they are) and do not opt out. It runs
// in O(n log n): one pass into a map, then a sort for a stable order.
func deriveGroups(in InstanceInput, list []NetworkInput, fields []string, nets []wimro.InstanceNet, vimURL func(dcID string) string) ([]group, error) {
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
		if c := list[i].WIMAccount; c.Set {
			f := fields[i] + ".wim_account"
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
		// Datacenters that are the same VIM need no WIM, unless the ends
		// are ports a client asked the WAN to join.
		if (len(vims) < 2 && !(in.givenEnds && len(g.nets) > 1)) || (g.choice.Set && g.choice.None) {
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

// planLinks chooses the service type, WIM and account of every WAN link
// (chooser: what the link needs, then health, then the oldest), and
// refuses in the create request, not in a CREATE action that could only
// fail, a link no WIM can carry, naming the network field that asks
// what the WIMs lack: a datacenter they do not reach, a service type
// (an L3VPN; an ELAN, a link across more than two datacenters) or a QoS
// field (qos, the networks' own) their connector does not declare.
func (e *Engine) planLinks(ctx context.Context, s *persistence.Store, tenant wimro.Tenant, groups []group, nets []wimro.InstanceNet,
	fields []string, qos []netQoS, dcName func(string) string) ([]PlannedLink, error) {
	plans := make([]PlannedLink, 0, len(groups))
	dcIDsOf := make([][]string, len(groups))
	var all []string
	for k, g := range groups {
		dcs := map[string]bool{}
		for _, i := range g.nets {
			if id := nets[i].DatacenterID; !dcs[id] {
				dcs[id] = true
				dcIDsOf[k] = append(dcIDsOf[k], id)
			}
		}
		sort.Strings(dcIDsOf[k])
		all = append(all, dcIDsOf[k]...)
	}
	c, err := e.newChooser(ctx, s, tenant, all, dcName)
	if err != nil {
		return nil, err
	}
	for k, g := range groups {
		q, err := groupQoS(g, qos)
		if err != nil {
			return nil, err
		}
		dcIDs := dcIDsOf[k]
		service, field, err := groupService(g, nets, fields, len(dcIDs))
		if err != nil {
			return nil, err
		}
		n := linkNeed{sceNetID: g.sceNetID, dcIDs: dcIDs, service: service, qos: q, field: field}
		var (
			w        wimro.WIM
			acct     wimro.WIMAccount
			verdicts []WIMVerdict
		)
		if g.choice.auto() {
			w, acct, verdicts, err = c.auto(ctx, n, g.field)
		} else {
			w, acct, verdicts, err = c.explicit(ctx, n, g.choice.Ref, g.field)
		}
		if err != nil {
			return nil, err
		}
		plans = append(plans, PlannedLink{
			SceNetID: g.sceNetID, DatacenterIDs: dcIDs, Multipoint: len(dcIDs) > 2, ServiceType: string(service),
			WIMID: w.UUID, WIMName: w.Name, WIMAccountID: acct.UUID,
			Bandwidth: optInt(q.bandwidth), Latency: optInt(q.latency), WIMs: verdicts,
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

// prepareInstance validates the input, resolves the scenario and the
// datacenters, and plans the WAN links. It writes nothing. needs lists the
// networks wimro must give a VLAN (allocateVLANs).
func (e *Engine) prepareInstance(ctx context.Context, s *persistence.Store, tenant wimro.Tenant, in InstanceInput) (
	inst wimro.Instance, nets []wimro.InstanceNet, plans []PlannedLink, needs []vlanNeed, err error) {
	inst = wimro.Instance{UUID: uuid.NewString(), Name: in.Name, TenantID: tenant.UUID, Description: in.Description}
	if err := checkName("instance.name", in.Name, 255); err != nil {
		return inst, nil, nil, nil, err
	}
	if err := checkDescription("instance.description", in.Description); err != nil {
		return inst, nil, nil, nil, err
	}
	if in.ScenarioID != "" {
		id, ok := wimro.ParseUUID(in.ScenarioID)
		if !ok {
			return inst, nil, nil, nil, wimro.FieldErrorf("instance.scenario_id", "instance.scenario_id must be a uuid")
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
			return inst, nil, nil, nil, err
		}
		inst.DatacenterID = &d.UUID
	}
	list, fields, err := instanceNetworks(ctx, s, tenant, in, &inst)
	if err != nil {
		return inst, nil, nil, nil, err
	}
	nets = make([]wimro.InstanceNet, len(list))
	qos := make([]netQoS, len(list))
	seen := map[string]bool{}
	for i, n := range list {
		field := fields[i]
		row, err := netRow(field, n)
		if err != nil {
			return inst, nil, nil, nil, err
		}
		if qos[i], err = parseNetQoS(field, n); err != nil {
			return inst, nil, nil, nil, err
		}
		if row.L3, err = parseL3(field, n.L3); err != nil {
			return inst, nil, nil, nil, err
		}
		ref := n.Datacenter
		if ref == "" {
			if inst.DatacenterID == nil {
				return inst, nil, nil, nil, wimro.FieldErrorf(field+".datacenter", "%s.datacenter is required (or set instance.datacenter)", field)
			}
			ref = *inst.DatacenterID
		}
		d, err := resolve(field+".datacenter", ref)
		if err != nil {
			return inst, nil, nil, nil, err
		}
		row.DatacenterID = d.UUID
		if row.SceNetID != nil && !in.givenEnds {
			key := *row.SceNetID + "/" + d.UUID
			if seen[key] {
				return inst, nil, nil, nil, wimro.FieldErrorf(field, "%s: sce_net_id %s has two networks in datacenter %s", field, *row.SceNetID, d.Name)
			}
			seen[key] = true
		}
		source, lo, hi, err := netSource(d.Config)
		if err != nil {
			return inst, nil, nil, nil, err
		}
		if source == NetSourceNone {
			// Nobody will report this network: it is up once created.
			if n.Status == "" {
				row.Status = wimro.NetActive
			}
			switch {
			case row.EncapsulationType == nil:
				needs = append(needs, vlanNeed{net: i, field: field, dc: d, lo: lo, hi: hi})
			case *row.EncapsulationType == "vlan":
				needs = append(needs, vlanNeed{net: i, field: field, dc: d, vlan: *row.EncapsulationID, lo: lo, hi: hi})
			}
		}
		if row.UUID == "" {
			row.UUID = uuid.NewString()
		}
		row.InstanceID = inst.UUID
		nets[i] = row
	}
	groups, err := deriveGroups(in, list, fields, nets, func(id string) string { return dcCache[id].VimURL })
	if err != nil {
		return inst, nil, nil, nil, err
	}
	dcName := func(id string) string {
		if d, ok := dcCache[id]; ok && d.Name != "" {
			return d.Name
		}
		return id
	}
	plans, err = e.planLinks(ctx, s, tenant, groups, nets, fields, qos, dcName)
	return inst, nets, plans, needs, err
}

// instanceNetworks returns the local networks of the instance with the
// field each comes from: wimro's list as given, or, from a scenario of
// the catalogue, one network per scenario network and site (by default
// one site, in the instance's datacenter). It sets the instance's
// scenario.
func instanceNetworks(ctx context.Context, s *persistence.Store, tenant wimro.Tenant, in InstanceInput, inst *wimro.Instance) ([]NetworkInput, []string, error) {
	if in.Scenario == "" {
		if in.ScenarioNetworks != nil {
			return nil, nil, wimro.FieldErrorf("instance.scenario", "instance.scenario is required when instance.networks names scenario networks (an object): "+
				"give the scenario's name or uuid, or give instance.networks as a list of local networks")
		}
		return in.Networks, listFields(len(in.Networks)), nil
	}
	if len(in.Networks) > 0 {
		return nil, nil, wimro.FieldErrorf("instance.networks", "instance.networks must be an object keyed by the network names of instance.scenario "+
			"(each with sites: [{datacenter: ...}]), not a list of local networks")
	}
	sc, err := s.GetScenario(ctx, tenant.UUID, in.Scenario)
	if wimro.ErrorCode(err) == wimro.ENOTFOUND {
		return nil, nil, &wimro.Error{Code: wimro.ENOTFOUND, Field: "instance.scenario", Err: err,
			Message: fmt.Sprintf("instance.scenario: no scenario %q in the catalogue of tenant %s", in.Scenario, tenant.Name)}
	}
	if err != nil {
		return nil, nil, err
	}
	if inst.ScenarioID != nil && *inst.ScenarioID != sc.UUID {
		return nil, nil, wimro.FieldErrorf("instance.scenario_id", "instance.scenario_id %s is not instance.scenario %s (%s)", *inst.ScenarioID, sc.Name, sc.UUID)
	}
	inst.ScenarioID = &sc.UUID
	sceNets, err := s.ListSceNets(ctx, sc.UUID)
	if err != nil {
		return nil, nil, err
	}
	// Each key names a network of the scenario by name, osm_id or uuid.
	placed := map[string]string{} // sce net uuid -> key
	for _, key := range sortedNames(anyMap(in.ScenarioNetworks)) {
		found := false
		for _, n := range sceNets {
			if key == n.Name || key == n.UUID || (n.OsmID != nil && key == *n.OsmID) {
				if prev, dup := placed[n.UUID]; dup {
					return nil, nil, wimro.FieldErrorf("instance.networks."+key, "instance.networks.%s and instance.networks.%s name the same network of scenario %s", prev, key, sc.Name)
				}
				placed[n.UUID], found = key, true
				break
			}
		}
		if !found {
			return nil, nil, wimro.FieldErrorf("instance.networks."+key, "instance.networks.%s: scenario %s has no network %q", key, sc.Name, key)
		}
	}
	var (
		list   []NetworkInput
		fields []string
	)
	for _, n := range sceNets {
		key, ok := placed[n.UUID]
		p := in.ScenarioNetworks[key]
		sites := p.Sites
		if !ok || len(sites) == 0 {
			sites = []SiteInput{{}}
		}
		osmID := n.Name
		if n.OsmID != nil {
			osmID = *n.OsmID
		}
		for j, site := range sites {
			field := fmt.Sprintf("instance.networks.%s.sites[%d]", key, j)
			if !ok {
				field = "scenario network " + n.Name
			}
			vimName := site.NetmapUse
			if vimName == "" && site.NetmapCreate != nil {
				vimName = *site.NetmapCreate
			}
			list = append(list, NetworkInput{SceNetID: n.UUID, OsmID: osmID, Name: vimName, Datacenter: site.Datacenter, WIMAccount: p.WIMAccount, L3: site.L3})
			fields = append(fields, field)
		}
	}
	return list, fields, nil
}

// listFields names the networks of wimro's list form.
func listFields(n int) []string {
	fields := make([]string, n)
	for i := range fields {
		fields[i] = fmt.Sprintf("instance.networks[%d]", i)
	}
	return fields
}

func anyMap[V any](m map[string]V) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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
		_, _, plans, _, err = e.prepareInstance(ctx, s, t, in)
		return err
	})
	return plans, err
}
