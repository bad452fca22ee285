package wimro

import "time"

// Scenario is an entry of the scenario catalogue (scenarios row): the
// network part of an openmano scenario descriptor. Its VNFs are kept as
// the descriptor gave them, never deployed.
type Scenario struct {
	UUID        string           `json:"uuid" db:"uuid"`
	TenantID    string           `json:"tenant_id" db:"tenant_id"`
	Name        string           `json:"name" db:"name"`
	Description *string          `json:"description" db:"description"`
	OsmID       *string          `json:"osm_id" db:"osm_id"`
	Public      bool             `json:"public" db:"public"`
	VNFs        []map[string]any `json:"vnfs" db:"vnfs"`
	CreatedAt   time.Time        `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time        `json:"modified_at" db:"modified_at"`
}

// SceNet is a named network of a scenario (sce_nets row). An instance of
// the scenario places it in one or more datacenters; placed in two with
// distinct VIMs it becomes a WAN link.
type SceNet struct {
	UUID        string    `json:"uuid" db:"uuid"`
	ScenarioID  string    `json:"scenario_id" db:"scenario_id"`
	Name        string    `json:"name" db:"name"`
	Type        string    `json:"type" db:"type"`
	Description *string   `json:"description" db:"description"`
	External    bool      `json:"external" db:"external"`
	OsmID       *string   `json:"osm_id" db:"osm_id"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time `json:"modified_at" db:"modified_at"`
}
