package httpapi

import (
	"net/http"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// sdnControllerOut is an SDN controller record as openmano shows it; no
// password is kept, so none is shown.
type sdnControllerOut struct {
	UUID        string  `json:"uuid"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	DPID        string  `json:"dpid"`
	IP          string  `json:"ip"`
	Port        int     `json:"port"`
	Type        string  `json:"type"`
	Version     *string `json:"version"`
	User        *string `json:"user"`
	// CreatedAt is in openmano's form, 2006-01-02T15:04:05 (UTC).
	CreatedAt string `json:"created_at"`
}

type sdnControllerBody struct {
	SDNController *engine.SDNControllerInput `json:"sdn_controller" openapi:"required"`
}

type sdnControllerResponse struct {
	SDNController sdnControllerOut `json:"sdn_controller"`
}

type sdnControllerListResponse struct {
	SDNControllers []sdnControllerOut `json:"sdn_controllers" openapi:"required"`
}

// sdnControllerShowResponse is openmano's answer to showing one
// controller: the controller under the plural key, as openmano v6 answers
// (its CLI reads the one key's value, list or object).
type sdnControllerShowResponse struct {
	SDNControllers sdnControllerOut `json:"sdn_controllers"`
}

type sdnPortMappingBody struct {
	SDNPortMapping []engine.SDNPortMappingInput `json:"sdn_port_mapping" openapi:"required"`
}

// sdnPortMappingRow is one port of a mapping as openmano answers a set.
type sdnPortMappingRow struct {
	UUID        string  `json:"uuid"`
	OfcID       string  `json:"ofc_id"`
	Region      string  `json:"region"`
	ComputeNode string  `json:"compute_node"`
	PCI         string  `json:"pci"`
	SwitchDPID  string  `json:"switch_dpid"`
	SwitchPort  *string `json:"switch_port"`
	SwitchMAC   *string `json:"switch_mac"`
}

type sdnPortMappingSetResponse struct {
	SDNPortMapping []sdnPortMappingRow `json:"sdn_port_mapping" openapi:"required"`
}

type sdnPortMappingResponse struct {
	SDNPortMapping engine.SDNPortMappingView `json:"sdn_port_mapping"`
}

// countResult is openmano's answer to clearing a port mapping: the
// number of ports deleted.
type countResult struct {
	Result int64 `json:"result"`
}

// passwordNotKept is the warning of a controller body with a password.
const passwordNotKept = "sdn_controller.password is not kept: wimro drives no OpenFlow controller"

func (a *api) sdnRoutes() []Route {
	tags := []string{"sdn"}
	base := "/openmano/{tenant_id}/sdn_controllers"
	mapping := "/openmano/{tenant_id}/datacenters/{datacenter_id}/sdn_mapping"
	return []Route{
		{Method: "GET", Pattern: base, Summary: "List the SDN (OpenFlow) controller records", Tags: tags, Scope: ScopeRead,
			Response: sdnControllerListResponse{}, Handler: a.listSDNControllers},
		{Method: "POST", Pattern: base, Summary: "Record an SDN controller (kept and shown; wimro drives no OpenFlow controller and keeps no password)", Tags: tags, Scope: ScopeWrite,
			Request: sdnControllerBody{}, Response: sdnControllerResponse{}, Handler: a.createSDNController},
		{Method: "GET", Pattern: base + "/{controller_id}", Summary: "Show an SDN controller record (under sdn_controllers, as openmano answers)", Tags: tags, Scope: ScopeRead,
			Response: sdnControllerShowResponse{}, Handler: a.getSDNController},
		{Method: "PUT", Pattern: base + "/{controller_id}", Summary: "Edit an SDN controller record", Tags: tags, Scope: ScopeWrite,
			Request: sdnControllerBody{}, Response: sdnControllerResponse{}, Handler: a.updateSDNController},
		{Method: "DELETE", Pattern: base + "/{controller_id}", Summary: "Delete an SDN controller record (not while a datacenter's config.sdn-controller names it)", Tags: tags, Scope: ScopeWrite,
			Response: result{}, Handler: a.deleteSDNController},
		{Method: "POST", Pattern: mapping, Summary: "Set a datacenter's SDN port mapping, for the controller its config.sdn-controller names", Tags: tags, Scope: ScopeWrite,
			Request: sdnPortMappingBody{}, Response: sdnPortMappingSetResponse{}, Handler: a.setSDNPortMapping},
		{Method: "GET", Pattern: mapping, Summary: "Show a datacenter's SDN port mapping", Tags: tags, Scope: ScopeRead,
			Response: sdnPortMappingResponse{}, Handler: a.getSDNPortMapping},
		{Method: "DELETE", Pattern: mapping, Summary: "Clear a datacenter's SDN port mapping: the answer is the number of ports deleted", Tags: tags, Scope: ScopeWrite,
			Response: countResult{}, Handler: a.clearSDNPortMapping},
	}
}

func sdnControllerOf(c wimro.SDNController) sdnControllerOut {
	return sdnControllerOut{UUID: c.UUID, Name: c.Name, Description: c.Description, DPID: c.DPID, IP: c.IP, Port: c.Port,
		Type: c.Type, Version: c.Version, User: c.User, CreatedAt: v6Time(c.CreatedAt)}
}

func (a *api) listSDNControllers(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListSDNControllers(r.Context(), param(r, "tenant_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	out := sdnControllerListResponse{SDNControllers: make([]sdnControllerOut, len(list))}
	for i, c := range list {
		out.SDNControllers[i] = sdnControllerOf(c)
	}
	Respond(w, r, http.StatusOK, out)
}

// decodeSDNController reads a controller body; a password in it is
// answered with a warning.
func decodeSDNController(r *http.Request) (engine.SDNControllerInput, []string, error) {
	var body sdnControllerBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		return engine.SDNControllerInput{}, nil, err
	}
	if body.SDNController == nil {
		return engine.SDNControllerInput{}, nil, wimro.FieldErrorf("sdn_controller", "sdn_controller is required")
	}
	if body.SDNController.Password != nil {
		warnings = append(warnings, passwordNotKept)
	}
	return *body.SDNController, warnings, nil
}

func (a *api) createSDNController(w http.ResponseWriter, r *http.Request) {
	in, warnings, err := decodeSDNController(r)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	c, err := a.eng.CreateSDNController(r.Context(), param(r, "tenant_id"), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, sdnControllerResponse{SDNController: sdnControllerOf(c)}, warnings)
}

func (a *api) getSDNController(w http.ResponseWriter, r *http.Request) {
	c, err := a.eng.GetSDNController(r.Context(), param(r, "tenant_id"), param(r, "controller_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, sdnControllerShowResponse{SDNControllers: sdnControllerOf(c)})
}

func (a *api) updateSDNController(w http.ResponseWriter, r *http.Request) {
	in, warnings, err := decodeSDNController(r)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	c, err := a.eng.UpdateSDNController(r.Context(), param(r, "tenant_id"), param(r, "controller_id"), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, sdnControllerResponse{SDNController: sdnControllerOf(c)}, warnings)
}

func (a *api) deleteSDNController(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeleteSDNController(r.Context(), param(r, "tenant_id"), param(r, "controller_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}

func (a *api) setSDNPortMapping(w http.ResponseWriter, r *http.Request) {
	var body sdnPortMappingBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.SDNPortMapping == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("sdn_port_mapping", "sdn_port_mapping is required: a list of compute nodes with their ports"))
		return
	}
	v, err := a.eng.SetSDNPortMapping(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"), body.SDNPortMapping)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	out := sdnPortMappingSetResponse{SDNPortMapping: []sdnPortMappingRow{}}
	for _, m := range v.Rows() {
		out.SDNPortMapping = append(out.SDNPortMapping, sdnPortMappingRow{UUID: m.UUID, OfcID: m.ControllerID, Region: m.DatacenterID, ComputeNode: m.ComputeNode,
			PCI: m.PCI, SwitchDPID: v.DPID, SwitchPort: m.SwitchPort, SwitchMAC: m.SwitchMAC})
	}
	respondWarned(w, r, http.StatusOK, out, warnings)
}

func (a *api) getSDNPortMapping(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.GetSDNPortMapping(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, sdnPortMappingResponse{SDNPortMapping: v})
}

func (a *api) clearSDNPortMapping(w http.ResponseWriter, r *http.Request) {
	n, err := a.eng.ClearSDNPortMapping(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, countResult{Result: n})
}
