package persistence

import (
	"context"

	"github.com/wimro/wimro"
)

const scenarioCols = `sc.uuid, sc.tenant_id, sc.name, sc.description, sc.osm_id, sc.public, sc.vnfs, sc.created_at, sc.modified_at`

const sceNetCols = `sn.uuid, sn.scenario_id, sn.name, sn.type, sn.description, sn.external, sn.osm_id, sn.created_at, sn.modified_at`

// CreateScenario inserts a scenario and its networks; empty UUIDs get new
// ones.
func (s *Store) CreateScenario(ctx context.Context, sc wimro.Scenario, nets []wimro.SceNet) (wimro.Scenario, []wimro.SceNet, error) {
	if sc.VNFs == nil {
		sc.VNFs = []map[string]any{}
	}
	out, err := getOne[wimro.Scenario](ctx, s, "scenarios", "name="+sc.Name,
		`INSERT INTO scenarios AS sc (uuid, tenant_id, name, description, osm_id, public, vnfs)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+scenarioCols,
		newUUID(sc.UUID), sc.TenantID, sc.Name, sc.Description, sc.OsmID, sc.Public, sc.VNFs)
	if err != nil || len(nets) == 0 {
		return out, []wimro.SceNet{}, err
	}
	for i := range nets {
		nets[i].ScenarioID = out.UUID
	}
	created, err := batchOne[wimro.SceNet](ctx, s, "sce_nets", nets,
		`INSERT INTO sce_nets AS sn (uuid, scenario_id, name, type, description, external, osm_id)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+sceNetCols,
		func(n wimro.SceNet) []any {
			return []any{newUUID(n.UUID), n.ScenarioID, n.Name, n.Type, n.Description, n.External, n.OsmID}
		})
	return out, created, err
}

// GetScenario finds a scenario by name or uuid among those a tenant sees
// (its own and the public ones); tenantID "" means any tenant's.
func (s *Store) GetScenario(ctx context.Context, tenantID, nameOrUUID string) (wimro.Scenario, error) {
	col, v, crit, err := ref("scenarios", nameOrUUID)
	if err != nil {
		return wimro.Scenario{}, err
	}
	return getOne[wimro.Scenario](ctx, s, "scenarios", crit,
		`SELECT `+scenarioCols+` FROM scenarios sc WHERE sc.`+col+` = $1 AND ($2 = '' OR sc.tenant_id::text = $2 OR sc.public)`, v, tenantID)
}

// ListScenarios lists the scenarios a tenant sees, oldest first; tenantID
// "" lists all.
func (s *Store) ListScenarios(ctx context.Context, tenantID string) ([]wimro.Scenario, error) {
	return getAll[wimro.Scenario](ctx, s, "scenarios",
		`SELECT `+scenarioCols+` FROM scenarios sc WHERE $1 = '' OR sc.tenant_id::text = $1 OR sc.public ORDER BY sc.created_at, sc.uuid`, tenantID)
}

// ListSceNets lists the networks of a scenario in the descriptor's order.
func (s *Store) ListSceNets(ctx context.Context, scenarioID string) ([]wimro.SceNet, error) {
	return getAll[wimro.SceNet](ctx, s, "sce_nets",
		`SELECT `+sceNetCols+` FROM sce_nets sn WHERE sn.scenario_id = $1 ORDER BY sn.created_at, sn.name`, scenarioID)
}

// ScenarioNames maps the uuids of scenarios to their names (those of
// ids not in the catalogue are absent).
func (s *Store) ScenarioNames(ctx context.Context, ids []string) (map[string]string, error) {
	type row struct {
		UUID string `db:"uuid"`
		Name string `db:"name"`
	}
	rows, err := getAll[row](ctx, s, "scenarios", `SELECT uuid, name FROM scenarios WHERE uuid = ANY($1::uuid[])`, ids)
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.UUID] = r.Name
	}
	return out, err
}

// UpdateScenario writes the name, description, osm_id and public flag of
// a scenario.
func (s *Store) UpdateScenario(ctx context.Context, sc wimro.Scenario) (wimro.Scenario, error) {
	return getOne[wimro.Scenario](ctx, s, "scenarios", "uuid="+sc.UUID,
		`UPDATE scenarios AS sc SET name = $2, description = $3, osm_id = $4, public = $5 WHERE sc.uuid = $1 RETURNING `+scenarioCols,
		sc.UUID, sc.Name, sc.Description, sc.OsmID, sc.Public)
}

// ScenarioInstances counts the instances created from a scenario.
func (s *Store) ScenarioInstances(ctx context.Context, id string) (int, error) {
	var n int
	err := s.q.QueryRow(ctx, `SELECT count(*) FROM instance_scenarios WHERE scenario_id = $1`, id).Scan(&n)
	return n, mapError(err)
}

// DeleteScenario deletes a scenario and its networks.
func (s *Store) DeleteScenario(ctx context.Context, id string) error {
	n, err := s.exec(ctx, "scenarios", `DELETE FROM scenarios WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("scenarios", "uuid="+id)
	}
	return nil
}
