package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// WIMInput is the body of a WIM create or edit. On create name, type and
// wim_url are required; on edit nil fields keep their value. config is
// merged on edit (null removes a key); config.wim_port_mapping, when given,
// is not stored in config: it creates (on edit: replaces) the WIM's port
// mappings in the same transaction.
type WIMInput struct {
	Name        *string        `json:"name"`
	Description *string        `json:"description"`
	Type        *string        `json:"type"`
	URL         *string        `json:"wim_url"`
	Config      map[string]any `json:"config"`
	// User and Password are taken and dropped: OSM's LCM sends the
	// account's credentials in the WIM body too (its wim-create copies
	// the whole NBI record), then again in the account body, where they
	// belong. openmano stripped them as well.
	User     *string `json:"user"`
	Password *Secret `json:"password"`
}

// WIMView is a WIM as the API shows it: config carries the grouped port
// mappings, and a tenant's view carries that tenant's account.
type WIMView struct {
	wimro.WIM
	WIMAccount *AccountView `json:"wim_account,omitempty"`
}

// popMappings takes wim_port_mapping out of config. Returns nil when absent.
func popMappings(config map[string]any) (map[string]any, []PortMappingInput, bool, error) {
	raw, ok := config["wim_port_mapping"]
	if !ok {
		return config, nil, false, nil
	}
	rest := make(map[string]any, len(config))
	for k, v := range config {
		if k != "wim_port_mapping" {
			rest[k] = v
		}
	}
	if raw == nil {
		return rest, nil, false, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, false, wimro.FieldErrorf("wim.config.wim_port_mapping", "wim.config.wim_port_mapping: %v", err)
	}
	var list []PortMappingInput
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, nil, false, wimro.FieldErrorf("wim.config.wim_port_mapping", "wim.config.wim_port_mapping must be a list of {datacenter_name, pop_wan_mappings}: %v", err)
	}
	return rest, list, true, nil
}

func (in WIMInput) apply(w *wimro.WIM) error {
	if err := refuseSealed("wim.", in.URL, in.Config); err != nil {
		return err
	}
	if in.Name != nil {
		w.Name = *in.Name
	}
	if in.Description != nil {
		w.Description = in.Description
	}
	if in.Type != nil {
		w.Type = *in.Type
	}
	if in.URL != nil {
		w.URL = cleanURL(*in.URL)
	}
	if err := checkName("wim.name", w.Name, 255); err != nil {
		return err
	}
	if err := checkDescription("wim.description", w.Description); err != nil {
		return err
	}
	// Which types exist is the connector registry's to say (the engine's
	// ConnectorCheck); here only that there is one.
	if w.Type == "" {
		return wimro.FieldErrorf("wim.type", "wim.type is required: the kind of WAN controller, which picks the connector")
	}
	return checkURL("wim.wim_url", w.URL)
}

// CreateWIM registers a WIM and, from config.wim_port_mapping, its port
// mappings: all in one transaction.
func (e *Engine) CreateWIM(ctx context.Context, in WIMInput) (WIMView, error) {
	config, mappings, hasMappings, err := popMappings(in.Config)
	if err != nil {
		return WIMView{}, err
	}
	w := wimro.WIM{Config: mergeConfig(nil, config)}
	if in.Config != nil && w.Config == nil {
		w.Config = map[string]any{}
	}
	if err := in.apply(&w); err != nil {
		return WIMView{}, err
	}
	if err := e.checkType(w.Type); err != nil {
		return WIMView{}, err
	}
	if err := e.checkAddress(ctx, w); err != nil {
		return WIMView{}, err
	}
	if err := e.checkConnector(w, nil, "", "wim.config"); err != nil {
		return WIMView{}, err
	}
	if err := e.sealWIM(&w); err != nil {
		return WIMView{}, err
	}
	var out WIMView
	err = e.db.Tx(ctx, func(s *persistence.Store) error {
		created, err := s.CreateWIM(ctx, w)
		if err != nil {
			return err
		}
		if hasMappings && len(mappings) > 0 {
			if _, err := e.createMappings(ctx, s, "wim.config.wim_port_mapping", created, "", mappings); err != nil {
				return err
			}
		}
		out, err = e.wimView(ctx, s, created)
		return err
	})
	return out, err
}

// wimView adds the grouped port mappings to config.
func (e *Engine) wimView(ctx context.Context, s *persistence.Store, w wimro.WIM) (WIMView, error) {
	groups, err := e.wimMappings(ctx, s, w.UUID)
	if err != nil {
		return WIMView{}, err
	}
	cfg := make(map[string]any, len(w.Config)+1)
	for k, v := range w.Config {
		cfg[k] = v
	}
	cfg["wim_port_mapping"] = groups
	w.Config = cfg
	return WIMView{WIM: maskWIM(w)}, nil
}

// GetWIM returns a WIM by name or uuid. With a tenant (not "any") the WIM
// must be attached to it, and the view carries the tenant's account.
func (e *Engine) GetWIM(ctx context.Context, tenantRef, wimRef string) (WIMView, error) {
	var view WIMView
	// One snapshot: the WIM, the tenant's account and the port mappings
	// are several reads, and a delete committing between them showed the
	// WIM without its mappings.
	err := e.db.Snapshot(ctx, func(s *persistence.Store) error {
		t, err := e.tenantFilter(ctx, s, tenantRef)
		if err != nil {
			return err
		}
		w, err := s.GetWIM(ctx, wimRef)
		if err != nil {
			return err
		}
		var acct *AccountView
		if t != nil {
			att, err := s.ListAttachedAccounts(ctx, w.UUID, t.UUID)
			if err != nil {
				return err
			}
			if len(att) == 0 {
				return wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: wims - `uuid=%s nfvo_tenant_id=%s` (the WIM is not attached to the tenant)", w.UUID, t.UUID)
			}
			v := accountView(att[0].Account)
			acct = &v
		}
		view, err = e.wimView(ctx, s, w)
		view.WIMAccount = acct
		return err
	})
	return view, err
}

// WIMListFields are the columns a WIM list may show and filter on.
var WIMListFields = persistence.WIMListColumns()

// ListWIMs lists the WIMs attached to a tenant, or all with "any".
func (e *Engine) ListWIMs(ctx context.Context, tenantRef string, equal map[string]*string, limit int) ([]wimro.WIM, error) {
	t, err := e.tenantFilter(ctx, &e.db.Store, tenantRef)
	if err != nil {
		return nil, err
	}
	list, err := e.db.ListWIMs(ctx, persistence.WIMFilter{TenantID: tenantID(t), Equal: equal, Limit: limit})
	for i := range list {
		list[i] = maskWIM(list[i])
	}
	return list, err
}

// UpdateWIM edits a WIM. A non-empty config.wim_port_mapping replaces all
// its port mappings in the same transaction. Every account of the WIM has
// its connector rebuilt (openmano forgot to on url/type changes).
func (e *Engine) UpdateWIM(ctx context.Context, wimRef string, in WIMInput) (WIMView, error) {
	config, mappings, _, err := popMappings(in.Config)
	if err != nil {
		return WIMView{}, err
	}
	// edit applies in to the WIM read from s (locked when lock) and lists
	// its accounts: what the connector check needs.
	edit := func(s *persistence.Store, lock bool) (wimro.WIM, []wimro.WIMAccount, error) {
		w, err := s.GetWIM(ctx, wimRef)
		if err != nil {
			return w, nil, err
		}
		if lock {
			if w, err = s.GetWIMForUpdate(ctx, w.UUID); err != nil {
				return w, nil, err
			}
		}
		stored := w
		if config != nil {
			w.Config = mergeConfig(w.Config, config)
		}
		if err := in.apply(&w); err != nil {
			return w, nil, err
		}
		if err := e.checkType(w.Type); err != nil {
			return w, nil, err
		}
		// Secrets sent back masked, as they were shown, stay as stored.
		w.URL, w.Config = secret.KeepURL(w.URL, stored.URL), secret.KeepConfig(w.Config, stored.Config)
		if e.conns == nil {
			return w, nil, nil
		}
		accts, err := s.ListAccountsOfWIM(ctx, w.UUID)
		return w, accts, err
	}
	// A new URL (or type) is checked against the controller address
	// policy, outside the transaction: it may ask DNS.
	if in.URL != nil || in.Type != nil {
		w, _, err := edit(&e.db.Store, false)
		if err != nil {
			return WIMView{}, err
		}
		if err := e.checkAddress(ctx, w); err != nil {
			return WIMView{}, err
		}
	}
	// Check the connector settings before the transaction: building a
	// connector may read files (ca_file), and no file I/O may hold the
	// WIM's row lock. The transaction makes sure it writes what was checked.
	var checked connectorSettings
	if e.conns != nil {
		w, accts, err := edit(&e.db.Store, false)
		if err != nil {
			return WIMView{}, err
		}
		if err := e.checkWIMAccounts(w, accts); err != nil {
			return WIMView{}, err
		}
		checked = e.settingsOf(w, accts)
	}
	var out WIMView
	err = e.db.Tx(ctx, func(s *persistence.Store) error {
		w, accts, err := edit(s, true)
		if err != nil {
			return err
		}
		if e.conns != nil && !checked.equal(e.settingsOf(w, accts)) {
			return errChangedWhileChecked("WIM " + w.UUID)
		}
		if err := e.sealWIM(&w); err != nil {
			return err
		}
		updated, err := s.UpdateWIM(ctx, w)
		if err != nil {
			return err
		}
		if len(mappings) > 0 {
			if _, err := s.DeletePortMappings(ctx, w.UUID); err != nil {
				return err
			}
			if _, err := e.createMappings(ctx, s, "wim.config.wim_port_mapping", updated, "", mappings); err != nil {
				return err
			}
		}
		if err := s.NotifyWIMAccounts(ctx, w.UUID); err != nil {
			return err
		}
		out, err = e.wimView(ctx, s, updated)
		return err
	})
	return out, err
}

// DeleteWIM deletes a WIM with its accounts, associations and port
// mappings (the finished actions of its accounts stay as history). WAN
// links that still use it, or unfinished actions of its accounts, make it
// a conflict and nothing is deleted.
func (e *Engine) DeleteWIM(ctx context.Context, wimRef string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		w, err := s.GetWIM(ctx, wimRef)
		if err != nil {
			return err
		}
		accts, err := s.ListAccountsOfWIM(ctx, w.UUID)
		if err != nil {
			return err
		}
		ids := make([]string, len(accts))
		for i, a := range accts {
			ids[i] = a.UUID
		}
		if err := checkIdle(ctx, s, ids...); err != nil {
			return err
		}
		// Notify now: the accounts are gone after the delete.
		if err := s.NotifyAccounts(ctx, ids...); err != nil {
			return err
		}
		if err := s.DeleteWIM(ctx, w.UUID); err != nil {
			what := fmt.Sprintf("WIM %s (%s)", w.Name, w.UUID)
			if busy := persistence.ReferencedKey(err); persistence.Constraint(err) == persistence.ConstraintActionAccount {
				for _, a := range accts {
					if a.UUID == busy {
						what += fmt.Sprintf(": its WIM account `%s` (%s)", accountName(a), a.UUID)
					}
				}
			}
			return accountDeleteConflict(err, what)
		}
		msg = fmt.Sprintf("wim '%s %s' deleted", w.UUID, w.Name)
		return nil
	})
	return msg, err
}

// checkWIMAccounts checks an edited WIM's connector settings alone and
// with the config of each of its accounts, so that an edit cannot leave
// an account with a connector that cannot be built.
func (e *Engine) checkWIMAccounts(w wimro.WIM, accts []wimro.WIMAccount) error {
	if err := e.checkConnector(w, nil, "", "wim.config"); err != nil {
		return err
	}
	for _, a := range accts {
		if err := e.checkConnector(w, a.Config, fmt.Sprintf("with the config of WIM account %s: ", a.UUID), "wim.config"); err != nil {
			return err
		}
	}
	return nil
}
