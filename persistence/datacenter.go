package persistence

import (
	"context"

	"github.com/wimro/wimro"
)

const datacenterCols = `d.uuid, d.name, d.description, d.type, d.vim_url, d.vim_url_admin, d.config, d.created_at, d.modified_at`

// CreateDatacenter inserts d; an empty UUID gets a new one.
func (s *Store) CreateDatacenter(ctx context.Context, d wimro.Datacenter) (wimro.Datacenter, error) {
	if d.Type == "" {
		d.Type = "openvim"
	}
	return getOne[wimro.Datacenter](ctx, s, "datacenters", "name="+d.Name,
		`INSERT INTO datacenters AS d (uuid, name, description, type, vim_url, vim_url_admin, config)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+datacenterCols,
		newUUID(d.UUID), d.Name, d.Description, d.Type, d.VimURL, d.VimURLAdmin, d.Config)
}

// GetDatacenter finds a datacenter by name or uuid. With a tenantID, only
// datacenters attached to that tenant match.
func (s *Store) GetDatacenter(ctx context.Context, nameOrUUID, tenantID string) (wimro.Datacenter, error) {
	col, v, crit, err := ref("datacenters", nameOrUUID)
	if err != nil {
		return wimro.Datacenter{}, err
	}
	if tenantID == "" {
		return getOne[wimro.Datacenter](ctx, s, "datacenters", crit,
			`SELECT `+datacenterCols+` FROM datacenters d WHERE d.`+col+` = $1`, v)
	}
	return getOne[wimro.Datacenter](ctx, s, "datacenters", crit+" nfvo_tenant_id="+tenantID,
		`SELECT `+datacenterCols+` FROM datacenters d
		 JOIN tenants_datacenters td ON td.datacenter_id = d.uuid
		 WHERE d.`+col+` = $1 AND td.nfvo_tenant_id = $2`, v, tenantID)
}

// ListDatacenters lists datacenters by name; with a tenantID only those
// attached to it.
func (s *Store) ListDatacenters(ctx context.Context, tenantID string) ([]wimro.Datacenter, error) {
	if tenantID == "" {
		return getAll[wimro.Datacenter](ctx, s, "datacenters", `SELECT `+datacenterCols+` FROM datacenters d ORDER BY d.name`)
	}
	return getAll[wimro.Datacenter](ctx, s, "datacenters",
		`SELECT `+datacenterCols+` FROM datacenters d
		 JOIN tenants_datacenters td ON td.datacenter_id = d.uuid
		 WHERE td.nfvo_tenant_id = $1 ORDER BY d.name`, tenantID)
}

// UpdateDatacenter writes the editable fields of d (name, description,
// type, urls, config) over the row with d.UUID.
func (s *Store) UpdateDatacenter(ctx context.Context, d wimro.Datacenter) (wimro.Datacenter, error) {
	return getOne[wimro.Datacenter](ctx, s, "datacenters", "uuid="+d.UUID,
		`UPDATE datacenters AS d SET name = $2, description = $3, type = $4, vim_url = $5, vim_url_admin = $6, config = $7
		 WHERE d.uuid = $1 RETURNING `+datacenterCols,
		d.UUID, d.Name, d.Description, d.Type, d.VimURL, d.VimURLAdmin, d.Config)
}

// DeleteDatacenter deletes a datacenter and, by cascade, its port mappings
// and tenant associations. Instance networks still in it block the delete.
func (s *Store) DeleteDatacenter(ctx context.Context, id string) error {
	n, err := s.exec(ctx, "datacenters", `DELETE FROM datacenters WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("datacenters", "uuid="+id)
	}
	return nil
}

// AttachDatacenter attaches a datacenter to a tenant. Attaching twice is a
// conflict.
func (s *Store) AttachDatacenter(ctx context.Context, tenantID, datacenterID string) error {
	_, err := s.exec(ctx, "tenants_datacenters",
		`INSERT INTO tenants_datacenters (nfvo_tenant_id, datacenter_id) VALUES ($1, $2)`, tenantID, datacenterID)
	return err
}

// DetachDatacenter removes the association; not attached is not found.
func (s *Store) DetachDatacenter(ctx context.Context, tenantID, datacenterID string) error {
	n, err := s.exec(ctx, "tenants_datacenters",
		`DELETE FROM tenants_datacenters WHERE nfvo_tenant_id = $1 AND datacenter_id = $2`, tenantID, datacenterID)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("tenants_datacenters", "nfvo_tenant_id="+tenantID+" datacenter_id="+datacenterID)
	}
	return nil
}
