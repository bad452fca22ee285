package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// The shapes of openmano v6 (OSM release SIX's RO) that OSM's own clients
// read: the openmano CLI, the openmanoclient library and LCM's ROclient.

// v6Time is openmano's timestamp form ("2006-01-02T15:04:05", no zone):
// UTC here.
func v6Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05") }

// instanceInput is the instance of an instance create: the engine's input,
// with instance.networks read in either of its two forms.
type instanceInput struct {
	engine.InstanceInput
	Networks instanceNetworks `json:"networks"`
}

func (in instanceInput) engine() engine.InstanceInput {
	out := in.InstanceInput
	out.Networks, out.ScenarioNetworks = in.Networks.list, in.Networks.sites
	return out
}

// instanceNetworks is instance.networks: a list of local networks
// (wimro's form) or an object keyed by the scenario's network names
// (openmano's: {<net>: {sites: [{datacenter: <dc>}, ...]}}).
type instanceNetworks struct {
	list  []engine.NetworkInput
	sites map[string]engine.ScenarioNetInput // non-nil: openmano's form
}

var errNetworksShape = wimro.FieldErrorf("instance.networks", "instance.networks must be a list of local networks (each with its datacenter), "+
	"or an object whose keys are network names of instance.scenario, each with sites: [{datacenter: ...}]")

// UnmarshalJSON reads a list or an object; anything else is an error in
// words naming the two forms.
func (n *instanceNetworks) UnmarshalJSON(b []byte) error {
	*n = instanceNetworks{}
	switch t := strings.TrimSpace(string(b)); {
	case t == "null":
		return nil
	case strings.HasPrefix(t, "["):
		return json.Unmarshal(b, &n.list)
	case strings.HasPrefix(t, "{"):
		n.sites = map[string]engine.ScenarioNetInput{}
		return json.Unmarshal(b, &n.sites)
	}
	return errNetworksShape
}

// MarshalJSON writes the form that was read.
func (n instanceNetworks) MarshalJSON() ([]byte, error) {
	if n.sites != nil {
		return json.Marshal(n.sites)
	}
	if n.list == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(n.list)
}

// WalkType is the type the document of instance.networks is read into,
// for the warnings of unknown keys.
func (instanceNetworks) WalkType(doc any) reflect.Type {
	if _, ok := doc.(map[string]any); ok {
		return reflect.TypeFor[map[string]engine.ScenarioNetInput]()
	}
	return reflect.TypeFor[[]engine.NetworkInput]()
}

// osmInstance is v6's instance answer, flat (uuid at the top: OSM's
// clients read it there), with wimro's networks, WAN links and creating
// action beside v6's keys. wimro deploys no VNF: vnfs is empty.
type osmInstance struct {
	UUID         string  `json:"uuid"`
	Name         string  `json:"name"`
	Description  *string `json:"description"`
	TenantID     string  `json:"tenant_id"`
	ScenarioID   *string `json:"scenario_id"`
	ScenarioName *string `json:"scenario_name"`
	DatacenterID *string `json:"datacenter_id"`
	// CreatedAt and ModifiedAt are in openmano's form, 2006-01-02T15:04:05 (UTC).
	CreatedAt       string              `json:"created_at"`
	ModifiedAt      string              `json:"modified_at"`
	Nets            []osmInstanceNet    `json:"nets" openapi:"required"`
	VNFs            []map[string]any    `json:"vnfs" openapi:"required"`
	SFPs            []map[string]any    `json:"sfps" openapi:"required"`
	SFs             []map[string]any    `json:"sfs" openapi:"required"`
	SFIs            []map[string]any    `json:"sfis" openapi:"required"`
	Classifications []map[string]any    `json:"classifications" openapi:"required"`
	Networks        []wimro.InstanceNet `json:"networks" openapi:"required"`
	WANLinks        []wimro.WANLink     `json:"wan_links" openapi:"required"`
	// ActionID is the instance action that creates it (create answer only).
	ActionID string `json:"action_id,omitempty"`
}

// osmInstanceNet is a local network as v6 lists it under nets.
type osmInstanceNet struct {
	UUID         string         `json:"uuid"`
	VimNetID     *string        `json:"vim_net_id"`
	VimName      *string        `json:"vim_name"`
	Status       string         `json:"status"`
	ErrorMsg     *string        `json:"error_msg"`
	VimInfo      map[string]any `json:"vim_info"`
	Created      bool           `json:"created"`
	SceNetID     *string        `json:"sce_net_id"`
	NsNetOsmID   *string        `json:"ns_net_osm_id"`
	DatacenterID string         `json:"datacenter_id"`
	SdnNetID     *string        `json:"sdn_net_id"`
	Related      *string        `json:"related"`
}

func flatInstance(v engine.InstanceView) osmInstance {
	out := osmInstance{UUID: v.UUID, Name: v.Name, Description: v.Description, TenantID: v.TenantID,
		ScenarioID: v.ScenarioID, ScenarioName: v.ScenarioName, DatacenterID: v.DatacenterID,
		CreatedAt: v6Time(v.CreatedAt), ModifiedAt: v6Time(v.ModifiedAt),
		Nets: make([]osmInstanceNet, len(v.Networks)), VNFs: []map[string]any{}, SFPs: []map[string]any{},
		SFs: []map[string]any{}, SFIs: []map[string]any{}, Classifications: []map[string]any{},
		Networks: v.Networks, WANLinks: v.WANLinks, ActionID: v.ActionID}
	for i, n := range v.Networks {
		// Every network is the instance's own (created with it).
		out.Nets[i] = osmInstanceNet{UUID: n.UUID, VimNetID: n.VimNetID, VimName: n.VimName, Status: n.Status, ErrorMsg: n.ErrorMsg,
			VimInfo: n.VimInfo, Created: true, SceNetID: n.SceNetID, NsNetOsmID: n.OsmID, DatacenterID: n.DatacenterID,
			SdnNetID: n.SdnNetID, Related: n.Related}
	}
	if out.Networks == nil {
		out.Networks = []wimro.InstanceNet{}
	}
	if out.WANLinks == nil {
		out.WANLinks = []wimro.WANLink{}
	}
	return out
}
