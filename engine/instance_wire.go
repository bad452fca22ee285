package engine

import (
	"encoding/json"
	"fmt"

	"github.com/wimro/wimro"
)

// WIMChoice is how an instance (or one of its networks) selects the WIM
// of its WAN links: automatic (absent, null or true), none (false), or a
// given account uuid, or a WIM name or uuid (the tenant's account on it).
type WIMChoice struct {
	Set  bool   // the field was present and not null
	None bool   // false: no WAN link
	Ref  string // account uuid, or WIM name or uuid
}

// UnmarshalJSON accepts true, false, null or a string.
func (c *WIMChoice) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*c = WIMChoice{}
	case bool:
		*c = WIMChoice{Set: true, None: !x}
	case string:
		if x == "" {
			return fmt.Errorf("wim_account: an empty string is not a WIM or account")
		}
		*c = WIMChoice{Set: true, Ref: x}
	default:
		return fmt.Errorf("wim_account: expected true, false, null, or a WIM account uuid / WIM name or uuid")
	}
	return nil
}

// MarshalJSON writes the choice back in its input form.
func (c WIMChoice) MarshalJSON() ([]byte, error) {
	switch {
	case !c.Set:
		return []byte("null"), nil
	case c.None:
		return []byte("false"), nil
	case c.Ref == "":
		return []byte("true"), nil
	}
	return json.Marshal(c.Ref)
}

func (c WIMChoice) auto() bool { return !c.Set || (!c.None && c.Ref == "") }

// NetworkInput is one local network of an instance in one datacenter.
type NetworkInput struct {
	UUID              string         `json:"uuid,omitempty"`
	Name              string         `json:"name,omitempty"` // the VIM network name; also matched by the network routes
	SceNetID          string         `json:"sce_net_id,omitempty"`
	OsmID             string         `json:"osm_id,omitempty"`
	Datacenter        string         `json:"datacenter,omitempty"` // name or uuid; default: the instance's datacenter
	Status            string         `json:"status,omitempty"`
	EncapsulationType string         `json:"encapsulation_type,omitempty"` // none | vlan
	EncapsulationID   *int           `json:"encapsulation_id,omitempty"`   // VLAN id
	PopSwitchDPID     string         `json:"pop_switch_dpid,omitempty"`
	PopSwitchPort     Port           `json:"pop_switch_port,omitempty"`
	PhysicalNetwork   string         `json:"physical_network,omitempty"` // matched by external_connections as provider:physical_network
	VimInfo           map[string]any `json:"vim_info,omitempty"`
	VimNetID          string         `json:"vim_net_id,omitempty"`
	SdnNetID          string         `json:"sdn_net_id,omitempty"`
	WIMAccount        WIMChoice      `json:"wim_account"`
	// Bandwidth (Mbit/s) and Latency (ms) are the QoS of the network's
	// VLD: its WAN link asks them of the controller. The networks of one
	// VLD that carry a key agree on it.
	Bandwidth QoSValue `json:"bandwidth,omitempty"`
	Latency   QoSValue `json:"latency,omitempty"`
	// L3 asks a layer-3 VPN of the network's VLD: this datacenter's
	// site (its prefix, the PE's address on the access link, and how the
	// PE reaches the prefix: ce_address, static_routes or bgp). The
	// networks of one VLD give it all or none; an L3VPN needs a WIM whose
	// connector declares it.
	L3 L3Value `json:"l3,omitempty"`
}

// InstanceInput is the body of an instance create, in wimro's form
// (networks: a list of local networks, each naming its datacenter and
// sce_net_id) or in openmano's (scenario: a scenario of the catalogue;
// networks: a mapping from the scenario's network names to where they go).
type InstanceInput struct {
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
	ScenarioID  string  `json:"scenario_id,omitempty"`
	// Scenario names a scenario of the catalogue (name or uuid): each of
	// its networks is placed in the datacenters instance.networks gives
	// it, by default in instance.datacenter.
	Scenario   string         `json:"scenario,omitempty"`
	Datacenter string         `json:"datacenter,omitempty"`
	WIMAccount WIMChoice      `json:"wim_account"`
	Networks   []NetworkInput `json:"networks"`
	// ScenarioNetworks is openmano's instance.networks, set instead of
	// Networks: where each network of the scenario goes, by its name (the
	// HTTP layer reads either form).
	ScenarioNetworks map[string]ScenarioNetInput `json:"-"`
	// givenEnds marks networks that are each an end the client named (the
	// L2SM northbound's site-network-accesses), not a VIM's network: two
	// of one VLD in one datacenter are two points of its WAN link (two
	// ports, or two VLANs of one port), and a VLD within one VIM still
	// gets its link, since the client asked the WAN to join those ports.
	// The caller makes sure no two ends are the same port and VLAN.
	givenEnds bool
}

// ScenarioNetInput places one network of the scenario: v6's instance
// descriptor, networks.<net>.sites.
type ScenarioNetInput struct {
	Sites      []SiteInput `json:"sites"`
	WIMAccount WIMChoice   `json:"wim_account"`
}

// SiteInput is one datacenter a scenario network is placed in.
type SiteInput struct {
	Datacenter string `json:"datacenter,omitempty"` // name or uuid; default: the instance's datacenter
	// NetmapUse names an existing VIM network to use: it becomes the
	// network's VIM name.
	NetmapUse string `json:"netmap-use,omitempty"`
	// NetmapCreate is the name of the VIM network to create.
	NetmapCreate *string `json:"netmap-create,omitempty"`
	// L3 is the network's site of a layer-3 VPN in this datacenter
	// (NetworkInput.L3).
	L3 L3Value `json:"l3,omitempty"`
}

// PlannedLink is a WAN link the instance needs, with the WIM and account
// chosen for it.
type PlannedLink struct {
	SceNetID      string   `json:"sce_net_id"`
	DatacenterIDs []string `json:"datacenters"`
	Multipoint    bool     `json:"multipoint"`
	WIMID         string   `json:"wim_id"`
	WIMName       string   `json:"wim_name"`
	WIMAccountID  string   `json:"wim_account_id"`
	// ServiceType is what the link is made as: ELINE, ELAN (more than two
	// datacenters) or L3VPN (its networks give l3 sites).
	ServiceType string `json:"service_type"`
	// Bandwidth and Latency are the link's QoS (absent: none).
	Bandwidth *int `json:"bandwidth,omitempty"`
	Latency   *int `json:"latency,omitempty"`
	// WIMs says, for each WIM the tenant is attached to, whether it was
	// chosen and why or why not (an explicit choice: only that WIM).
	WIMs []WIMVerdict `json:"wims"`
}

// InstanceView is an instance with its networks and WAN links.
type InstanceView struct {
	wimro.Instance
	Networks []wimro.InstanceNet `json:"networks"`
	WANLinks []wimro.WANLink     `json:"wan_links"`
	// ScenarioName is the name of the instance's scenario when the
	// catalogue has it.
	ScenarioName *string `json:"-"`
	// ActionID is the instance action that creates it (create response only).
	ActionID string `json:"action_id,omitempty"`
	// Warnings are notes for the create response (an account of the links
	// in ERROR); the HTTP layer places them.
	Warnings []string `json:"-"`
}

var linkStatuses = map[string]bool{}

func init() {
	for _, s := range wimro.NetStatuses {
		linkStatuses[s] = true
	}
}
