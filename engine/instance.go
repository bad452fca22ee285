package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

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
		inst, nets, plans, needs, err := e.prepareInstance(ctx, s, t, in)
		if err != nil {
			return err
		}
		if inst, err = s.CreateInstance(ctx, inst); err != nil {
			return err
		}
		nets, links, ia, accounts, err := recordLinks(ctx, s, t, inst, nets, plans, needs)
		if err != nil {
			return err
		}
		warnings, err := accountWarnings(ctx, s, accounts)
		if err != nil {
			return err
		}
		name, err := scenarioName(ctx, s, inst)
		if err != nil {
			return err
		}
		if nets == nil {
			nets = []wimro.InstanceNet{}
		}
		if links == nil {
			links = []wimro.WANLink{}
		}
		out = InstanceView{Instance: inst, Networks: nets, WANLinks: links, ScenarioName: name, ActionID: ia.UUID, Warnings: warnings}
		return s.NotifyAccounts(ctx, accounts...)
	})
	return out, err
}

// recordLinks writes the networks of inst, their WAN links and VLANs, a
// CREATE instance action and one CREATE action per link (what
// prepareInstance planned), and returns them with the accounts to wake
// once the transaction commits.
func recordLinks(ctx context.Context, s *persistence.Store, t wimro.Tenant, inst wimro.Instance, nets []wimro.InstanceNet, plans []PlannedLink, needs []vlanNeed) (
	[]wimro.InstanceNet, []wimro.WANLink, wimro.InstanceAction, []string, error) {
	vlans, err := allocateVLANs(ctx, s, nets, needs)
	if err != nil {
		return nil, nil, wimro.InstanceAction{}, nil, err
	}
	for i := range nets {
		nets[i].InstanceID = inst.UUID
	}
	if nets, err = s.CreateInstanceNets(ctx, nets); err != nil {
		return nil, nil, wimro.InstanceAction{}, nil, err
	}
	links := make([]wimro.WANLink, len(plans))
	for i, p := range plans {
		id := uuid.NewString()
		wim, sce := p.WIMID, p.SceNetID
		links[i] = wimro.WANLink{UUID: id, InstanceID: &inst.UUID, SceNetID: &sce, WIMID: &wim,
			WIMAccountID: p.WIMAccountID, Multipoint: p.Multipoint, ServiceType: p.ServiceType, Related: &id,
			BandwidthMbps: p.Bandwidth, LatencyMs: p.Latency}
	}
	if links, err = s.CreateWANLinks(ctx, links); err != nil {
		return nil, nil, wimro.InstanceAction{}, nil, err
	}
	linkVLANs(vlans, nets, links)
	if err := s.AllocateVLANs(ctx, vlans); err != nil {
		return nil, nil, wimro.InstanceAction{}, nil, err
	}
	ia, err := s.CreateInstanceAction(ctx, wimro.InstanceAction{TenantID: t.UUID, InstanceID: &inst.UUID, Description: "CREATE", Tasks: len(links)})
	if err != nil {
		return nil, nil, wimro.InstanceAction{}, nil, err
	}
	actions := make([]wimro.Action, len(links))
	accounts := make([]string, len(links))
	for i, l := range links {
		acct := l.WIMAccountID
		actions[i] = wimro.Action{InstanceActionID: ia.UUID, TaskIndex: i, WIMAccountID: &acct, Action: wimro.ActionCreate, ItemID: l.UUID}
		accounts[i] = acct
	}
	if _, err := s.CreateActions(ctx, actions); err != nil {
		return nil, nil, wimro.InstanceAction{}, nil, err
	}
	return nets, links, ia, accounts, nil
}

// accountWarnings warns of each account in ERROR (its last credentials
// check failed) that the instance's links were accepted onto: they are
// queued and retried all the same, and an NFVO that was told nothing saw
// only a link in BUILD for minutes while the log had a line per retry.
func accountWarnings(ctx context.Context, s *persistence.Store, accounts []string) ([]string, error) {
	var warnings []string
	seen := map[string]bool{}
	for _, id := range accounts {
		if seen[id] {
			continue
		}
		seen[id] = true
		a, err := s.GetAccount(ctx, id)
		if err != nil {
			return nil, err
		}
		if a.Status != wimro.AccountError {
			continue
		}
		name := a.UUID
		if a.Name != nil {
			name = *a.Name + " (" + a.UUID + ")"
		}
		why := "no reason recorded"
		if a.StatusMsg != nil {
			why = strings.Join(strings.Fields(wimro.CleanText(*a.StatusMsg, 200)), " ") // one line
		}
		warnings = append(warnings, fmt.Sprintf("WIM account %s is in ERROR (its last credentials check failed: %s): "+
			"its WAN links are accepted and will be retried until its controller answers; follow them with the action's events (--wait)", name, why))
	}
	return warnings, nil
}

// GetInstance returns an instance of a tenant with its networks and links.
func (e *Engine) GetInstance(ctx context.Context, tenantRef, ref string) (InstanceView, error) {
	var view InstanceView
	// One snapshot: the instance, its networks and its links are three
	// reads, and a delete committing between them showed the instance
	// with no networks or links.
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		_, inst, err := tenantInstance(ctx, s, tenantRef, ref)
		if err != nil {
			return err
		}
		view, err = e.instanceView(ctx, s, inst)
		return err
	})
	return view, err
}

// tenantInstance reads a tenant and its instance ref (name or uuid).
func tenantInstance(ctx context.Context, s *persistence.Store, tenantRef, ref string) (wimro.Tenant, wimro.Instance, error) {
	t, err := s.GetTenant(ctx, tenantRef)
	if err != nil {
		return wimro.Tenant{}, wimro.Instance{}, err
	}
	inst, err := s.GetInstance(ctx, t.UUID, ref)
	return t, inst, err
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
	name, err := scenarioName(ctx, s, inst)
	return InstanceView{Instance: inst, Networks: nets, WANLinks: links, ScenarioName: name}, err
}

// scenarioName is the name of the instance's scenario, nil when it has
// none or the catalogue does not hold it.
func scenarioName(ctx context.Context, s *persistence.Store, inst wimro.Instance) (*string, error) {
	if inst.ScenarioID == nil {
		return nil, nil
	}
	names, err := s.ScenarioNames(ctx, []string{*inst.ScenarioID})
	if name, ok := names[*inst.ScenarioID]; ok {
		return &name, err
	}
	return nil, err
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
		t, inst, err := tenantInstance(ctx, s, tenantRef, ref)
		if err != nil {
			return err
		}
		ia, msg, err = deleteInstance(ctx, s, t, inst)
		return err
	})
	return ia, msg, err
}

// deleteInstance queues the DELETE of every WAN link of inst and deletes
// it, waking the accounts once the transaction commits.
func deleteInstance(ctx context.Context, s *persistence.Store, t wimro.Tenant, inst wimro.Instance) (wimro.InstanceAction, string, error) {
	ia, accounts, err := queueLinkDeletes(ctx, s, t, inst)
	if err != nil {
		return ia, "", err
	}
	if err := s.DeleteInstance(ctx, inst.UUID); err != nil {
		return ia, "", err
	}
	msg := fmt.Sprintf("action_id=%s instance %s %s deleted", ia.UUID, inst.UUID, inst.Name)
	return ia, msg, s.NotifyAccounts(ctx, accounts...)
}

// queueLinkDeletes records a DELETE instance action for inst and one
// DELETE action per WAN link, each carrying a copy of its link (the row
// goes before the action runs), and returns the accounts to wake.
func queueLinkDeletes(ctx context.Context, s *persistence.Store, t wimro.Tenant, inst wimro.Instance) (wimro.InstanceAction, []string, error) {
	links, err := s.ListWANLinks(ctx, inst.UUID)
	if err != nil {
		return wimro.InstanceAction{}, nil, err
	}
	return queueDeleteActions(ctx, s, t, inst, links)
}

// queueDeleteActions records a DELETE instance action for links of inst
// and one DELETE action per link, each carrying a copy of its link.
func queueDeleteActions(ctx context.Context, s *persistence.Store, t wimro.Tenant, inst wimro.Instance, links []wimro.WANLink) (wimro.InstanceAction, []string, error) {
	ia, err := s.CreateInstanceAction(ctx, wimro.InstanceAction{TenantID: t.UUID, InstanceID: &inst.UUID, Description: "DELETE", Tasks: len(links)})
	if err != nil {
		return ia, nil, err
	}
	actions := make([]wimro.Action, len(links))
	accounts := make([]string, len(links))
	for i, l := range links {
		copyOf, err := toMap(l)
		if err != nil {
			return ia, nil, err
		}
		acct := l.WIMAccountID
		actions[i] = wimro.Action{InstanceActionID: ia.UUID, TaskIndex: i, WIMAccountID: &acct, Action: wimro.ActionDelete,
			ItemID: l.UUID, WIMInternalID: l.WIMInternalID, Extra: map[string]any{"wan_link": copyOf}}
		accounts[i] = acct
	}
	_, err = s.CreateActions(ctx, actions)
	return ia, accounts, err
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
