package persistence

import (
	"context"

	"github.com/wimro/wimro"
)

const tenantCols = `uuid, name, description, created_at, modified_at`

// CreateTenant inserts t; an empty UUID gets a new one.
func (s *Store) CreateTenant(ctx context.Context, t wimro.Tenant) (wimro.Tenant, error) {
	return getOne[wimro.Tenant](ctx, s, "nfvo_tenants", "name="+t.Name,
		`INSERT INTO nfvo_tenants (uuid, name, description) VALUES ($1, $2, $3) RETURNING `+tenantCols,
		newUUID(t.UUID), t.Name, t.Description)
}

// GetTenant finds a tenant by name or uuid.
func (s *Store) GetTenant(ctx context.Context, nameOrUUID string) (wimro.Tenant, error) {
	col, v, crit, err := ref("nfvo_tenants", nameOrUUID)
	if err != nil {
		return wimro.Tenant{}, err
	}
	return getOne[wimro.Tenant](ctx, s, "nfvo_tenants", crit,
		`SELECT `+tenantCols+` FROM nfvo_tenants WHERE `+col+` = $1`, v)
}

// ListTenants returns all tenants by name.
func (s *Store) ListTenants(ctx context.Context) ([]wimro.Tenant, error) {
	return getAll[wimro.Tenant](ctx, s, "nfvo_tenants", `SELECT `+tenantCols+` FROM nfvo_tenants ORDER BY name`)
}

// DeleteTenant deletes a tenant with its finished history: the finished
// tasks of its instance actions, then the instance actions left without
// tasks with their progress and events (explicitly: nothing cascades into the work rows). Its WIM and
// datacenter associations go with it. Instances still owned by it, or
// unfinished actions of its instance actions, make the delete a conflict
// (ConstraintInstanceActionTenant for the actions). Run it inside DB.Tx
// so that a refused delete keeps the history too.
func (s *Store) DeleteTenant(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, "vim_wim_actions", `DELETE FROM vim_wim_actions a USING instance_actions ia
		WHERE a.instance_action_id = ia.uuid AND ia.tenant_id = $1 AND NOT `+unfinishedSQL, id); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "instance_action_progress", `DELETE FROM instance_action_progress p USING instance_actions ia
		WHERE p.instance_action_id = ia.uuid AND ia.tenant_id = $1
		AND NOT EXISTS (SELECT 1 FROM vim_wim_actions a WHERE a.instance_action_id = ia.uuid)`, id); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "instance_actions", `WITH gone AS (
			DELETE FROM instance_actions ia WHERE ia.tenant_id = $1
			AND NOT EXISTS (SELECT 1 FROM vim_wim_actions a WHERE a.instance_action_id = ia.uuid)
			RETURNING ia.uuid)
		DELETE FROM instance_action_events e WHERE e.instance_action_id IN (SELECT uuid FROM gone)`, id); err != nil {
		return err
	}
	n, err := s.exec(ctx, "nfvo_tenants", `DELETE FROM nfvo_tenants WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("nfvo_tenants", "uuid="+id)
	}
	return nil
}

// UpdateTenant writes the name and description of a tenant.
func (s *Store) UpdateTenant(ctx context.Context, t wimro.Tenant) (wimro.Tenant, error) {
	return getOne[wimro.Tenant](ctx, s, "nfvo_tenants", "name="+t.Name,
		`UPDATE nfvo_tenants SET name = $2, description = $3 WHERE uuid = $1 RETURNING `+tenantCols, t.UUID, t.Name, t.Description)
}
