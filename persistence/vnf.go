package persistence

import (
	"context"

	"github.com/wimro/wimro"
)

const vnfCols = `v.uuid, v.tenant_id, v.name, v.description, v.osm_id, v.public, v.vnfcs, v.nets, v.external_connections, v.created_at, v.modified_at`

// CreateVNF inserts a VNF of the catalogue; an empty UUID gets a new one.
func (s *Store) CreateVNF(ctx context.Context, v wimro.VNF) (wimro.VNF, error) {
	for _, l := range []*[]map[string]any{&v.VNFCs, &v.Nets, &v.ExternalConnections} {
		if *l == nil {
			*l = []map[string]any{}
		}
	}
	return getOne[wimro.VNF](ctx, s, "vnfs", "name="+v.Name,
		`INSERT INTO vnfs AS v (uuid, tenant_id, name, description, osm_id, public, vnfcs, nets, external_connections)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+vnfCols,
		newUUID(v.UUID), v.TenantID, v.Name, v.Description, v.OsmID, v.Public, v.VNFCs, v.Nets, v.ExternalConnections)
}

// GetVNF finds a VNF by name or uuid among those a tenant sees (its own
// and the public ones); tenantID "" means any tenant's.
func (s *Store) GetVNF(ctx context.Context, tenantID, nameOrUUID string) (wimro.VNF, error) {
	col, v, crit, err := ref("vnfs", nameOrUUID)
	if err != nil {
		return wimro.VNF{}, err
	}
	return getOne[wimro.VNF](ctx, s, "vnfs", crit,
		`SELECT `+vnfCols+` FROM vnfs v WHERE v.`+col+` = $1 AND ($2 = '' OR v.tenant_id::text = $2 OR v.public)`, v, tenantID)
}

// FindVNFs lists the VNFs a tenant sees whose column col ("uuid", "name"
// or "osm_id") is value; ownOnly leaves out other tenants' public ones.
func (s *Store) FindVNFs(ctx context.Context, tenantID, col, value string, ownOnly bool) ([]wimro.VNF, error) {
	switch col {
	case "uuid", "name", "osm_id":
	default:
		return nil, wimro.Errorf(wimro.EINTERNAL, "vnfs: no lookup by %s", col)
	}
	if col == "uuid" {
		id, ok := wimro.ParseUUID(value)
		if !ok {
			return []wimro.VNF{}, nil
		}
		value = id
	}
	return getAll[wimro.VNF](ctx, s, "vnfs",
		`SELECT `+vnfCols+` FROM vnfs v WHERE v.`+col+`::text = $1 AND ($2 = '' OR v.tenant_id::text = $2 OR (v.public AND NOT $3))
		 ORDER BY v.created_at, v.uuid`, value, tenantID, ownOnly)
}

// ListVNFs lists the VNFs a tenant sees, oldest first; tenantID "" lists
// all.
func (s *Store) ListVNFs(ctx context.Context, tenantID string) ([]wimro.VNF, error) {
	return getAll[wimro.VNF](ctx, s, "vnfs",
		`SELECT `+vnfCols+` FROM vnfs v WHERE $1 = '' OR v.tenant_id::text = $1 OR v.public ORDER BY v.created_at, v.uuid`, tenantID)
}

// VNFScenarios lists the names of the scenarios that name a VNF.
func (s *Store) VNFScenarios(ctx context.Context, vnfID string) ([]string, error) {
	type row struct {
		Name string `db:"name"`
	}
	rows, err := getAll[row](ctx, s, "scenarios",
		`SELECT name FROM scenarios WHERE vnfs @> jsonb_build_array(jsonb_build_object('vnf_id', $1::text)) ORDER BY created_at, uuid`, vnfID)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Name
	}
	return out, err
}

// DeleteVNF deletes a VNF of the catalogue.
func (s *Store) DeleteVNF(ctx context.Context, id string) error {
	n, err := s.exec(ctx, "vnfs", `DELETE FROM vnfs WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("vnfs", "uuid="+id)
	}
	return nil
}
