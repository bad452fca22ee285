package engine

import (
	"context"
	"fmt"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// TenantInput is the body of a tenant create.
type TenantInput struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// CreateTenant creates an NFVO tenant.
func (e *Engine) CreateTenant(ctx context.Context, in TenantInput) (wimro.Tenant, error) {
	if err := checkName("tenant.name", in.Name, 255); err != nil {
		return wimro.Tenant{}, err
	}
	if err := checkDescription("tenant.description", in.Description); err != nil {
		return wimro.Tenant{}, err
	}
	return e.db.CreateTenant(ctx, wimro.Tenant{Name: in.Name, Description: in.Description})
}

// TenantEdit is the body of a tenant edit: nil fields keep their value.
type TenantEdit struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

// UpdateTenant edits the name or description of a tenant.
func (e *Engine) UpdateTenant(ctx context.Context, ref string, in TenantEdit) (wimro.Tenant, error) {
	var out wimro.Tenant
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, ref)
		if err != nil {
			return err
		}
		if in.Name != nil {
			t.Name = *in.Name
		}
		if in.Description != nil {
			t.Description = in.Description
		}
		if err := checkName("tenant.name", t.Name, 255); err != nil {
			return err
		}
		if err := checkDescription("tenant.description", t.Description); err != nil {
			return err
		}
		out, err = s.UpdateTenant(ctx, t)
		return err
	})
	return out, err
}

// GetTenant finds a tenant by name or uuid.
func (e *Engine) GetTenant(ctx context.Context, ref string) (wimro.Tenant, error) {
	return e.db.GetTenant(ctx, ref)
}

// ListTenants lists every tenant.
func (e *Engine) ListTenants(ctx context.Context) ([]wimro.Tenant, error) {
	return e.db.ListTenants(ctx)
}

// DeleteTenant deletes a tenant and detaches it from its WIMs and
// datacenters. Accounts that served only this tenant are deleted too, so
// no lease is held for nobody. A tenant with NS instances, or with
// unfinished actions (whatever their account: a pending DELETE on an
// account shared with another tenant must still run), is a conflict and
// nothing is deleted. The finished history of its instance actions is
// deleted with it.
func (e *Engine) DeleteTenant(ctx context.Context, ref string) (string, error) {
	var msg string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		t, err := s.GetTenant(ctx, ref)
		if err != nil {
			return err
		}
		u, err := s.UnfinishedActionsOfTenant(ctx, t.UUID, maxListed)
		if err != nil {
			return err
		}
		if err := unfinishedConflict(u, fmt.Sprintf("Tenant `%s` (%s) still has", t.Name, t.UUID)); err != nil {
			return err
		}
		orphans, err := s.AccountsOnlyServing(ctx, t.UUID)
		if err != nil {
			return err
		}
		if err := checkIdle(ctx, s, orphans...); err != nil {
			return err
		}
		if err := s.DeleteTenant(ctx, t.UUID); err != nil {
			if c := persistence.Constraint(err); c == persistence.ConstraintInstanceActionTenant || c == persistence.ConstraintActionInstanceAction {
				return scheduledMeanwhile(err, fmt.Sprintf("Tenant `%s` (%s)", t.Name, t.UUID))
			}
			return err
		}
		for _, id := range orphans {
			if err := s.DeleteAccount(ctx, id); err != nil {
				return accountDeleteConflict(err, fmt.Sprintf("WIM account %s (it served only tenant `%s`)", id, t.Name))
			}
		}
		if err := s.NotifyAccounts(ctx, orphans...); err != nil {
			return err
		}
		msg = fmt.Sprintf("tenant %s %s deleted", t.UUID, t.Name)
		return nil
	})
	return msg, err
}

// tenantFilter resolves a tenant path segment: "any" (or "") means no
// tenant; anything else must name an existing tenant.
func (e *Engine) tenantFilter(ctx context.Context, s *persistence.Store, ref string) (*wimro.Tenant, error) {
	if ref == "" || ref == AnyTenant {
		return nil, nil
	}
	t, err := s.GetTenant(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &t, nil
}
