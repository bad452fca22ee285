package httpapi

import (
	"context"
	"net/http"

	"github.com/wimro/wimro"
)

// What openmano proxies to a datacenter's VIM (vim-net-*, vim-tenant-*,
// vim-image-*, vim-net-sdn-*, and netmaps, which are read from the VIM's
// networks) is refused with 400 naming why: wimro keeps no VIM connector.
// The datacenter is looked up first, so an unknown one stays a 404.
// So are the scenario actions (deploy, reserve, verify) and the instance
// actions (start, reboot, console, ...): they act on VNFs at the VIMs, and
// wimro deploys none. Netmaps are kept records in openmano; as none can be made without a VIM,
// wimro's list of them is empty and reads and deletes answer so.

type netmapListResponse struct {
	Netmaps []map[string]any `json:"netmaps" openapi:"required"`
}

// vimItems are the VIM items openmano's vim routes know.
var vimItems = map[string]bool{"networks": true, "tenants": true, "images": true}

func (a *api) vimRoutes() []Route {
	tags := []string{"vim"}
	vim := "/openmano/{tenant_id}/vim/{datacenter_id}"
	netmaps := "/openmano/{tenant_id}/datacenters/{datacenter_id}/netmaps"
	refuse := func(what string) http.HandlerFunc { return a.noVIM(what) }
	bad := []int{http.StatusBadRequest}
	return []Route{
		{Method: "GET", Pattern: vim + "/{item}", Summary: "List a VIM's networks, tenants or images: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeRead,
			Response: map[string]any{}, Errors: bad, Handler: refuse("list the VIM's items")},
		{Method: "GET", Pattern: vim + "/{item}/{name}", Summary: "Show a VIM's network, tenant or image: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeRead,
			Response: map[string]any{}, Errors: bad, Handler: refuse("read the VIM's item")},
		{Method: "DELETE", Pattern: vim + "/{item}/{name}", Summary: "Delete a VIM's network, tenant or image: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeWrite,
			Response: result{}, Errors: bad, Handler: refuse("delete at the VIM")},
		{Method: "POST", Pattern: vim + "/{item}", Summary: "Create a network or tenant at a VIM: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeWrite,
			Request: map[string]any{}, Response: map[string]any{}, Errors: bad, Handler: refuse("create at the VIM")},
		{Method: "POST", Pattern: vim + "/network/{network_id}/attach", Summary: "Attach an SDN port to a VIM network: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeWrite,
			Request: map[string]any{}, Response: result{}, Errors: bad, Handler: refuse("attach an SDN port to the VIM network")},
		{Method: "DELETE", Pattern: vim + "/network/{network_id}/detach", Summary: "Detach the SDN ports of a VIM network: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeWrite,
			Response: result{}, Errors: bad, Handler: refuse("detach the SDN ports of the VIM network")},
		{Method: "DELETE", Pattern: vim + "/network/{network_id}/detach/{port_id}", Summary: "Detach an SDN port of a VIM network: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeWrite,
			Response: result{}, Errors: bad, Handler: refuse("detach the SDN port of the VIM network")},

		{Method: "POST", Pattern: "/openmano/{tenant_id}/scenarios/{scenario_id}/action", Summary: "Deploy, reserve or verify a scenario at the VIMs: refused, wimro deploys no VNF", Tags: tags, Scope: ScopeWrite,
			Request: map[string]any{}, Response: result{}, Errors: bad, Handler: a.refuse(a.eng.RefuseScenarioAction, "scenario_id")},
		{Method: "POST", Pattern: "/openmano/{tenant_id}/instances/{instance_id}/action", Summary: "Act on an instance's VMs (start, reboot, console, ...): refused, wimro deploys no VNF", Tags: tags, Scope: ScopeWrite,
			Request: map[string]any{}, Response: result{}, Errors: bad, Handler: a.refuse(a.eng.RefuseInstanceAction, "instance_id")},

		{Method: "GET", Pattern: netmaps, Summary: "List a datacenter's netmaps: always empty (netmaps are made from the VIM's networks)", Tags: tags, Scope: ScopeRead,
			Response: netmapListResponse{}, Handler: a.listNetmaps},
		{Method: "GET", Pattern: netmaps + "/{netmap_id}", Summary: "Show a netmap: none exists", Tags: tags, Scope: ScopeRead,
			Response: map[string]any{}, Handler: a.noNetmap},
		{Method: "DELETE", Pattern: netmaps, Summary: "Delete every netmap of a datacenter: none exists", Tags: tags, Scope: ScopeWrite,
			Response: result{}, Handler: a.deleteNetmaps},
		{Method: "DELETE", Pattern: netmaps + "/{netmap_id}", Summary: "Delete a netmap: none exists", Tags: tags, Scope: ScopeWrite,
			Response: result{}, Handler: a.noNetmap},
		{Method: "PUT", Pattern: netmaps + "/{netmap_id}", Summary: "Edit a netmap: none exists", Tags: tags, Scope: ScopeWrite,
			Request: map[string]any{}, Response: map[string]any{}, Handler: a.noNetmap},
		{Method: "POST", Pattern: netmaps, Summary: "Create a netmap from a VIM network: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeWrite,
			Request: map[string]any{}, Response: netmapListResponse{}, Errors: bad, Handler: refuse("create a netmap from the VIM's network")},
		{Method: "POST", Pattern: netmaps + "/upload", Summary: "Import a VIM's networks as netmaps: refused, wimro has no VIM connector", Tags: tags, Scope: ScopeWrite,
			Response: netmapListResponse{}, Errors: bad, Handler: refuse("import the VIM's networks as netmaps")},
	}
}

// noVIM answers a request openmano would send to the datacenter's VIM.
func (a *api) noVIM(what string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The datacenter first, as openmano: an unknown one is a 404
		// whatever the item.
		if _, err := a.eng.GetDatacenter(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id")); err != nil {
			a.srv.Error(w, r, err)
			return
		}
		if item := param(r, "item"); item != "" && !vimItems[item] {
			a.srv.Error(w, r, wimro.FieldErrorf("item", "item %q: a VIM's items are networks, tenants and images", item))
			return
		}
		a.srv.Error(w, r, a.eng.NoVIM(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"), what))
	}
}

// refuse answers with the refusal of an action on the scenario or
// instance the path parameter names.
func (a *api) refuse(refusal func(ctx context.Context, tenantRef, ref string) error, name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := Decode(r, &body, false); err != nil {
			a.srv.Error(w, r, err)
			return
		}
		a.srv.Error(w, r, refusal(r.Context(), param(r, "tenant_id"), param(r, name)))
	}
}

func (a *api) listNetmaps(w http.ResponseWriter, r *http.Request) {
	if _, err := a.eng.GetDatacenter(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id")); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, netmapListResponse{Netmaps: []map[string]any{}})
}

func (a *api) deleteNetmaps(w http.ResponseWriter, r *http.Request) {
	if _, err := a.eng.GetDatacenter(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id")); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: "0 netmap deleted"})
}

func (a *api) noNetmap(w http.ResponseWriter, r *http.Request) {
	if _, err := a.eng.GetDatacenter(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id")); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	a.srv.Error(w, r, wimro.Errorf(wimro.ENOTFOUND, "No netmap found with name or uuid %s: netmaps are made from the VIM's networks, and wimro has no VIM connector", param(r, "netmap_id")))
}
