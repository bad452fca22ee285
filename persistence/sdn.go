package persistence

import (
	"context"

	"github.com/wimro/wimro"
)

const sdnControllerCols = `c.uuid, c.name, c.description, c.dpid, c.ip, c.port, c.type, c.version, c."user", c.created_at, c.modified_at`

// CreateSDNController inserts an SDN controller record.
func (s *Store) CreateSDNController(ctx context.Context, c wimro.SDNController) (wimro.SDNController, error) {
	return getOne[wimro.SDNController](ctx, s, "sdn_controllers", "name="+c.Name,
		`INSERT INTO sdn_controllers AS c (uuid, name, description, dpid, ip, port, type, version, "user")
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+sdnControllerCols,
		newUUID(c.UUID), c.Name, c.Description, c.DPID, c.IP, c.Port, c.Type, c.Version, c.User)
}

// GetSDNController finds an SDN controller by name or uuid.
func (s *Store) GetSDNController(ctx context.Context, nameOrUUID string) (wimro.SDNController, error) {
	col, v, crit, err := ref("sdn_controllers", nameOrUUID)
	if err != nil {
		return wimro.SDNController{}, err
	}
	return getOne[wimro.SDNController](ctx, s, "sdn_controllers", crit,
		`SELECT `+sdnControllerCols+` FROM sdn_controllers c WHERE c.`+col+` = $1`, v)
}

// ListSDNControllers lists the SDN controllers, oldest first.
func (s *Store) ListSDNControllers(ctx context.Context) ([]wimro.SDNController, error) {
	return getAll[wimro.SDNController](ctx, s, "sdn_controllers",
		`SELECT `+sdnControllerCols+` FROM sdn_controllers c ORDER BY c.created_at, c.uuid`)
}

// UpdateSDNController writes every field of an SDN controller record.
func (s *Store) UpdateSDNController(ctx context.Context, c wimro.SDNController) (wimro.SDNController, error) {
	return getOne[wimro.SDNController](ctx, s, "sdn_controllers", "uuid="+c.UUID,
		`UPDATE sdn_controllers AS c SET name = $2, description = $3, dpid = $4, ip = $5, port = $6, type = $7, version = $8, "user" = $9
		 WHERE c.uuid = $1 RETURNING `+sdnControllerCols,
		c.UUID, c.Name, c.Description, c.DPID, c.IP, c.Port, c.Type, c.Version, c.User)
}

// DeleteSDNController deletes an SDN controller record (and the port
// mappings kept for it).
func (s *Store) DeleteSDNController(ctx context.Context, id string) error {
	n, err := s.exec(ctx, "sdn_controllers", `DELETE FROM sdn_controllers WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("sdn_controllers", "uuid="+id)
	}
	return nil
}

const sdnPortMappingCols = `m.uuid, m.datacenter_id, m.controller_id, m.compute_node, m.pci, m.switch_port, m.switch_mac`

// SetSDNPortMappings replaces a datacenter's SDN port mapping.
func (s *Store) SetSDNPortMappings(ctx context.Context, datacenterID string, maps []wimro.SDNPortMapping) ([]wimro.SDNPortMapping, error) {
	if _, err := s.ClearSDNPortMappings(ctx, datacenterID); err != nil || len(maps) == 0 {
		return []wimro.SDNPortMapping{}, err
	}
	return batchOne[wimro.SDNPortMapping](ctx, s, "sdn_port_mappings", maps,
		`INSERT INTO sdn_port_mappings AS m (uuid, datacenter_id, controller_id, compute_node, pci, switch_port, switch_mac)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+sdnPortMappingCols,
		func(m wimro.SDNPortMapping) []any {
			return []any{newUUID(m.UUID), datacenterID, m.ControllerID, m.ComputeNode, m.PCI, m.SwitchPort, m.SwitchMAC}
		})
}

// ListSDNPortMappings lists a datacenter's SDN port mapping by compute
// node, in the order it was set.
func (s *Store) ListSDNPortMappings(ctx context.Context, datacenterID string) ([]wimro.SDNPortMapping, error) {
	return getAll[wimro.SDNPortMapping](ctx, s, "sdn_port_mappings",
		`SELECT `+sdnPortMappingCols+` FROM sdn_port_mappings m WHERE m.datacenter_id = $1 ORDER BY m.compute_node, m.created_at, m.pci`, datacenterID)
}

// ClearSDNPortMappings deletes a datacenter's SDN port mapping and says
// how many ports it held.
func (s *Store) ClearSDNPortMappings(ctx context.Context, datacenterID string) (int64, error) {
	return s.exec(ctx, "sdn_port_mappings", `DELETE FROM sdn_port_mappings WHERE datacenter_id = $1`, datacenterID)
}
