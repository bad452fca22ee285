package wimro

import "time"

// VNF is an entry of the VNF catalogue (vnfs row): what openmano keeps of
// a VNF descriptor and shows. wimro deploys no VNF: scenarios name them,
// instances never start them.
type VNF struct {
	UUID        string  `json:"uuid" db:"uuid"`
	TenantID    string  `json:"tenant_id" db:"tenant_id"`
	Name        string  `json:"name" db:"name"`
	Description *string `json:"description" db:"description"`
	OsmID       *string `json:"osm_id" db:"osm_id"`
	Public      bool    `json:"public" db:"public"`
	// VNFCs, Nets and ExternalConnections are the descriptor's VNFCs,
	// internal networks and external connections in openmano's answer
	// form (VNFC, nets, external-connections).
	VNFCs               []map[string]any `json:"VNFC" db:"vnfcs"`
	Nets                []map[string]any `json:"nets" db:"nets"`
	ExternalConnections []map[string]any `json:"external-connections" db:"external_connections"`
	CreatedAt           time.Time        `json:"created_at" db:"created_at"`
	ModifiedAt          time.Time        `json:"modified_at" db:"modified_at"`
}

// SDNController is openmano's record of an SDN (OpenFlow) controller
// (sdn_controllers row). wimro drives none: the record is kept and shown,
// and no password is stored.
type SDNController struct {
	UUID        string    `json:"uuid" db:"uuid"`
	Name        string    `json:"name" db:"name"`
	Description *string   `json:"description" db:"description"`
	DPID        string    `json:"dpid" db:"dpid"`
	IP          string    `json:"ip" db:"ip"`
	Port        int       `json:"port" db:"port"`
	Type        string    `json:"type" db:"type"`
	Version     *string   `json:"version" db:"version"`
	User        *string   `json:"user" db:"user"`
	CreatedAt   time.Time `json:"created_at" db:"created_at"`
	ModifiedAt  time.Time `json:"modified_at" db:"modified_at"`
}

// SDNPortMapping is one port of a datacenter's SDN port mapping
// (sdn_port_mappings row): a compute node's PCI address and the switch
// port or MAC it is wired to, on the switch of the controller the
// datacenter's config.sdn-controller names.
type SDNPortMapping struct {
	UUID         string  `json:"uuid" db:"uuid"`
	DatacenterID string  `json:"datacenter_id" db:"datacenter_id"`
	ControllerID string  `json:"ofc_id" db:"controller_id"`
	ComputeNode  string  `json:"compute_node" db:"compute_node"`
	PCI          string  `json:"pci" db:"pci"`
	SwitchPort   *string `json:"switch_port" db:"switch_port"`
	SwitchMAC    *string `json:"switch_mac" db:"switch_mac"`
}
