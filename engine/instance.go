package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// WIMChoice is how an instance (or one of its networks) selects the WIM
// of its WAN links: automatic (absent, null or true), none (false), or a
// given account uuid, or a WIM name or uuid (the tenant's account on it).
type WIMChoice struct {
	Set  bool   // the field was present and not null
	None bool   // false: no WAN link
	Ref  string // account uuid, or WIM name or uuid
}

// UnmarshalJSON accepts true, false, null or a string.
func (c *WIMChoice) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*c = WIMChoice{}
	case bool:
		*c = WIMChoice{Set: true, None: !x}
	case string:
		if x == "" {
			return fmt.Errorf("wim_account: an empty string is not a WIM or account")
		}
		*c = WIMChoice{Set: true, Ref: x}
	default:
		return fmt.Errorf("wim_account: expected true, false, null, or a WIM account uuid / WIM name or uuid")
	}
	return nil
}

// MarshalJSON writes the choice back in its input form.
func (c WIMChoice) MarshalJSON() ([]byte, error) {
	switch {
	case !c.Set:
		return []byte("null"), nil
	case c.None:
		return []byte("false"), nil
	case c.Ref == "":
		return []byte("true"), nil
	}
	return json.Marshal(c.Ref)
}

func (c WIMChoice) auto() bool { return !c.Set || (!c.None && c.Ref == "") }

// NetworkInput is one local network of an instance in one datacenter.
type NetworkInput struct {
	UUID              string         `json:"uuid,omitempty"`
	Name              string         `json:"name,omitempty"` // the VIM network name; also matched by the network routes
	SceNetID          string         `json:"sce_net_id,omitempty"`
	OsmID             string         `json:"osm_id,omitempty"`
	Datacenter        string         `json:"datacenter,omitempty"` // name or uuid; default: the instance's datacenter
	Status            string         `json:"status,omitempty"`
	EncapsulationType string         `json:"encapsulation_type,omitempty"` // none | vlan
	EncapsulationID   *int           `json:"encapsulation_id,omitempty"`   // VLAN id
	PopSwitchDPID     string         `json:"pop_switch_dpid,omitempty"`
	PopSwitchPort     Port           `json:"pop_switch_port,omitempty"`
	PhysicalNetwork   string         `json:"physical_network,omitempty"` // matched by external_connections as provider:physical_network
	VimInfo           map[string]any `json:"vim_info,omitempty"`
	VimNetID          string         `json:"vim_net_id,omitempty"`
	SdnNetID          string         `json:"sdn_net_id,omitempty"`
	WIMAccount        WIMChoice      `json:"wim_account"`
}

// InstanceInput is the body of an instance create.
type InstanceInput struct {
	Name        string         `json:"name"`
	Description *string        `json:"description,omitempty"`
	ScenarioID  string         `json:"scenario_id,omitempty"`
	Datacenter  string         `json:"datacenter,omitempty"`
	WIMAccount  WIMChoice      `json:"wim_account"`
	Networks    []NetworkInput `json:"networks"`
}

// PlannedLink is a WAN link the instance needs, with the WIM and account
// chosen for it.
type PlannedLink struct {
	SceNetID      string   `json:"sce_net_id"`
	DatacenterIDs []string `json:"datacenters"`
	Multipoint    bool     `json:"multipoint"`
	WIMID         string   `json:"wim_id"`
	WIMName       string   `json:"wim_name"`
	WIMAccountID  string   `json:"wim_account_id"`
}

// InstanceView is an instance with its networks and WAN links.
type InstanceView struct {
	wimro.Instance
	Networks []wimro.InstanceNet `json:"networks"`
	WANLinks []wimro.WANLink     `json:"wan_links"`
	// ActionID is the instance action that creates it (create response only).
	ActionID string `json:"action_id,omitempty"`
}

var linkStatuses = map[string]bool{}

func init() {
	for _, s := range wimro.NetStatuses {
		linkStatuses[s] = true
	}
}

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
			return row, wimro.FieldErrorf(field+".sce_net_id", "%s.sce_net_id must be a uuid", field)
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

// planLinks chooses the WIM and account of every WAN link.
func planLinks(ctx context.Context, s *persistence.Store, tenant wimro.Tenant, groups []group, nets []wimro.InstanceNet) ([]PlannedLink, error) {
	plans := make([]PlannedLink, 0, len(groups))
	cache := map[string]wimro.WIM{}
	for _, g := range groups {
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
			err  error
		)
		if g.choice.auto() {
			w, err = findCommonWIM(ctx, s, tenant.UUID, dcIDs)
			if err != nil {
				return nil, err
			}
			acct, err = accountFor(ctx, s, w, tenant, g.field)
		} else {
			w, acct, err = chosenAccount(ctx, s, tenant, g.choice.Ref, g.field, cache)
			if err == nil {
				err = checkReach(ctx, s, w, dcIDs, g.field)
			}
		}
		if err != nil {
			return nil, err
		}
		plans = append(plans, PlannedLink{
			SceNetID: g.sceNetID, DatacenterIDs: dcIDs, Multipoint: len(dcIDs) > 2,
			WIMID: w.UUID, WIMName: w.Name, WIMAccountID: acct.UUID,
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
	seen := map[string]bool{}
	for i, n := range in.Networks {
		field := fmt.Sprintf("instance.networks[%d]", i)
		row, err := netRow(field, n)
		if err != nil {
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
	plans, err := planLinks(ctx, s, tenant, groups, nets)
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

// CreateInstance records an NS instance, its networks, its WAN links, an
// instance action and one CREATE action per link, in one transaction, and
// wakes the workers of the accounts involved when it commits. When a link
// cannot be satisfied nothing is written.
func (e *Engine) CreateInstance(ctx context.Context, tenantRef string, in InstanceInput) (InstanceView, error) {
	var out InstanceView
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		inst, nets, plans, err := e.prepareInstance(ctx, s, t, in)
		if err != nil {
			return err
		}
		if inst, err = s.CreateInstance(ctx, inst); err != nil {
			return err
		}
		if nets, err = s.CreateInstanceNets(ctx, nets); err != nil {
			return err
		}
		links := make([]wimro.WANLink, len(plans))
		for i, p := range plans {
			id := uuid.NewString()
			wim, sce := p.WIMID, p.SceNetID
			links[i] = wimro.WANLink{UUID: id, InstanceID: &inst.UUID, SceNetID: &sce, WIMID: &wim,
				WIMAccountID: p.WIMAccountID, Multipoint: p.Multipoint, Related: &id}
		}
		if links, err = s.CreateWANLinks(ctx, links); err != nil {
			return err
		}
		ia, err := s.CreateInstanceAction(ctx, wimro.InstanceAction{TenantID: t.UUID, InstanceID: &inst.UUID, Description: "CREATE", Tasks: len(links)})
		if err != nil {
			return err
		}
		actions := make([]wimro.Action, len(links))
		accounts := make([]string, len(links))
		for i, l := range links {
			acct := l.WIMAccountID
			actions[i] = wimro.Action{InstanceActionID: ia.UUID, TaskIndex: i, WIMAccountID: &acct, Action: wimro.ActionCreate, ItemID: l.UUID}
			accounts[i] = acct
		}
		if _, err := s.CreateActions(ctx, actions); err != nil {
			return err
		}
		out = InstanceView{Instance: inst, Networks: nets, WANLinks: links, ActionID: ia.UUID}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return out, err
}

// GetInstance returns an instance of a tenant with its networks and links.
func (e *Engine) GetInstance(ctx context.Context, tenantRef, ref string) (InstanceView, error) {
	s := &e.db.Store
	t, err := s.GetTenant(ctx, tenantRef)
	if err != nil {
		return InstanceView{}, err
	}
	inst, err := s.GetInstance(ctx, t.UUID, ref)
	if err != nil {
		return InstanceView{}, err
	}
	return e.instanceView(ctx, s, inst)
}

func (e *Engine) instanceView(ctx context.Context, s *persistence.Store, inst wimro.Instance) (InstanceView, error) {
	nets, err := s.ListInstanceNets(ctx, inst.UUID)
	if err != nil {
		return InstanceView{}, err
	}
	links, err := s.ListWANLinks(ctx, inst.UUID)
	if err != nil {
		return InstanceView{}, err
	}
	if nets == nil {
		nets = []wimro.InstanceNet{}
	}
	if links == nil {
		links = []wimro.WANLink{}
	}
	return InstanceView{Instance: inst, Networks: nets, WANLinks: links}, nil
}

// ListInstances lists a tenant's instances.
func (e *Engine) ListInstances(ctx context.Context, tenantRef string) ([]wimro.Instance, error) {
	t, err := e.db.GetTenant(ctx, tenantRef)
	if err != nil {
		return nil, err
	}
	return e.db.ListInstances(ctx, t.UUID)
}

// ListWANLinks lists the WAN links of an instance with their status.
func (e *Engine) ListWANLinks(ctx context.Context, tenantRef, ref string) ([]wimro.WANLink, error) {
	v, err := e.GetInstance(ctx, tenantRef, ref)
	return v.WANLinks, err
}

// DeleteInstance records one DELETE action per WAN link, each carrying a
// copy of its link (the row goes with the instance), and deletes the
// instance, in one transaction. It returns the deletion's instance action.
func (e *Engine) DeleteInstance(ctx context.Context, tenantRef, ref string) (wimro.InstanceAction, string, error) {
	var (
		ia  wimro.InstanceAction
		msg string
	)
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		inst, err := s.GetInstance(ctx, t.UUID, ref)
		if err != nil {
			return err
		}
		links, err := s.ListWANLinks(ctx, inst.UUID)
		if err != nil {
			return err
		}
		if ia, err = s.CreateInstanceAction(ctx, wimro.InstanceAction{TenantID: t.UUID, InstanceID: &inst.UUID, Description: "DELETE", Tasks: len(links)}); err != nil {
			return err
		}
		actions := make([]wimro.Action, len(links))
		accounts := make([]string, len(links))
		for i, l := range links {
			copyOf, err := toMap(l)
			if err != nil {
				return err
			}
			acct := l.WIMAccountID
			actions[i] = wimro.Action{InstanceActionID: ia.UUID, TaskIndex: i, WIMAccountID: &acct, Action: wimro.ActionDelete,
				ItemID: l.UUID, WIMInternalID: l.WIMInternalID, Extra: map[string]any{"wan_link": copyOf}}
			accounts[i] = acct
		}
		if _, err := s.CreateActions(ctx, actions); err != nil {
			return err
		}
		if err := s.DeleteInstance(ctx, inst.UUID); err != nil {
			return err
		}
		msg = fmt.Sprintf("action_id=%s instance %s %s deleted", ia.UUID, inst.UUID, inst.Name)
		return s.NotifyAccounts(ctx, accounts...)
	})
	return ia, msg, err
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

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
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		inst, err := s.GetInstance(ctx, t.UUID, instanceRef)
		if err != nil {
			return err
		}
		n, err := s.GetInstanceNet(ctx, inst.UUID, netRef)
		if err != nil {
			return err
		}
		oldStatus := n.Status
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

// InstanceActionView is an instance action, with its tasks when one action
// is asked for.
type InstanceActionView struct {
	wimro.InstanceAction
	WIMActions []wimro.Action `json:"vim_wim_actions,omitempty"`
	// VimActions repeats Tasks under openmano's older name.
	VimActions []wimro.Action `json:"vim_actions,omitempty"`
}

// ListInstanceActions lists the actions of an instance (the instance may
// be deleted already: its actions outlive it).
func (e *Engine) ListInstanceActions(ctx context.Context, tenantRef, instanceID string) ([]wimro.InstanceAction, error) {
	t, err := e.db.GetTenant(ctx, tenantRef)
	if err != nil {
		return nil, err
	}
	id, err := e.instanceID(ctx, t, instanceID)
	if err != nil {
		return nil, err
	}
	_, lookupErr := e.db.GetInstance(ctx, t.UUID, id)
	list, err := e.db.ListInstanceActions(ctx, id)
	if err != nil {
		return nil, err
	}
	// The instance may be gone (its actions outlive it), so the id alone
	// proves nothing: keep only the tenant's own actions.
	own := list[:0]
	for _, ia := range list {
		if ia.TenantID == t.UUID {
			own = append(own, ia)
		}
	}
	if len(own) == 0 && lookupErr != nil {
		// Neither the tenant's instance nor any of its history: the same
		// answer whether the id is unknown or another tenant's.
		return nil, wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: instances - `uuid=%s`", instanceID)
	}
	return own, nil
}

// GetInstanceAction returns one instance action with its tasks and
// progress counters.
func (e *Engine) GetInstanceAction(ctx context.Context, tenantRef, instanceID, actionID string) (InstanceActionView, error) {
	t, err := e.db.GetTenant(ctx, tenantRef)
	if err != nil {
		return InstanceActionView{}, err
	}
	id, err := e.instanceID(ctx, t, instanceID)
	if err != nil {
		return InstanceActionView{}, err
	}
	ia, err := e.db.GetInstanceAction(ctx, id, actionID)
	if err != nil {
		return InstanceActionView{}, err
	}
	if ia.TenantID != t.UUID {
		return InstanceActionView{}, wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: instance_actions - `uuid=%s`", actionID)
	}
	tasks, err := e.db.ListActionsOfInstanceAction(ctx, ia.UUID)
	if err != nil {
		return InstanceActionView{}, err
	}
	if tasks == nil {
		tasks = []wimro.Action{}
	}
	return InstanceActionView{InstanceAction: ia, WIMActions: tasks, VimActions: tasks}, nil
}

// instanceID resolves an instance of the tenant; a uuid of a deleted
// instance is accepted so its DELETE action stays visible.
func (e *Engine) instanceID(ctx context.Context, t wimro.Tenant, ref string) (string, error) {
	inst, err := e.db.GetInstance(ctx, t.UUID, ref)
	if err == nil {
		return inst.UUID, nil
	}
	if id, ok := wimro.ParseUUID(ref); ok && wimro.ErrorCode(err) == wimro.ENOTFOUND {
		return id, nil
	}
	return "", err
}
