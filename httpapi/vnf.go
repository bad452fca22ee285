package httpapi

import (
	"net/http"

	"github.com/wimro/wimro"
)

// vnfRow is a VNF as openmano lists it.
type vnfRow struct {
	UUID        string  `json:"uuid"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	TenantID    string  `json:"tenant_id"`
	OsmID       *string `json:"osm_id"`
	Public      bool    `json:"public"`
	// CreatedAt is in openmano's form, 2006-01-02T15:04:05 (UTC).
	CreatedAt string `json:"created_at"`
}

// vnfOut is a VNF as openmano shows one: its VNFCs, internal networks and
// external connections. wimro keeps VNFs, never deploys them.
type vnfOut struct {
	vnfRow
	VNFC                []map[string]any `json:"VNFC" openapi:"required"`
	Nets                []map[string]any `json:"nets" openapi:"required"`
	ExternalConnections []map[string]any `json:"external-connections" openapi:"required"`
}

type vnfResponse struct {
	VNF vnfOut `json:"vnf"`
}

type vnfListResponse struct {
	VNFs []vnfRow `json:"vnfs" openapi:"required"`
}

type vnfdResponse struct {
	VNFD []vnfOut `json:"vnfd" openapi:"required"`
}

// vnfDescriptor is an openmano VNF descriptor (v0.1 or v0.2), or OSM's
// VNFD catalogue on the v3 route.
type vnfDescriptor map[string]any

func (a *api) vnfRoutes() []Route {
	tags := []string{"vnfs"}
	base := "/openmano/{tenant_id}/vnfs"
	return []Route{
		{Method: "GET", Pattern: base, Summary: "List the VNFs a tenant sees (its own and the public ones; all with any)", Tags: tags,
			Scope: ScopeRead, Response: vnfListResponse{}, Handler: a.listVNFs},
		{Method: "POST", Pattern: base, Summary: "Add a VNF to the catalogue from an openmano VNF descriptor (kept for scenarios to name, never deployed)", Tags: tags,
			Scope: ScopeWrite, Request: vnfDescriptor{}, Response: vnfResponse{}, Handler: a.createVNF},
		{Method: "POST", Pattern: "/openmano/v3/{tenant_id}/vnfd", Summary: "Add one VNF per VNFD of OSM's VNFD catalogue", Tags: tags,
			Scope: ScopeWrite, Request: vnfDescriptor{}, Response: vnfdResponse{}, Handler: a.createVNFDs},
		{Method: "GET", Pattern: base + "/{vnf_id}", Summary: "Show a VNF with its VNFCs, internal networks and external connections", Tags: tags,
			Scope: ScopeRead, Response: vnfResponse{}, Handler: a.getVNF},
		{Method: "DELETE", Pattern: base + "/{vnf_id}", Summary: "Delete a VNF (not while a scenario names it)", Tags: tags,
			Scope: ScopeWrite, Response: result{}, Handler: a.deleteVNF},
	}
}

func vnfRowOf(v wimro.VNF) vnfRow {
	return vnfRow{UUID: v.UUID, Name: v.Name, Description: v.Description, TenantID: v.TenantID, OsmID: v.OsmID, Public: v.Public, CreatedAt: v6Time(v.CreatedAt)}
}

func vnfOf(v wimro.VNF) vnfOut {
	out := vnfOut{vnfRow: vnfRowOf(v), VNFC: v.VNFCs, Nets: v.Nets, ExternalConnections: v.ExternalConnections}
	for _, l := range []*[]map[string]any{&out.VNFC, &out.Nets, &out.ExternalConnections} {
		if *l == nil {
			*l = []map[string]any{}
		}
	}
	return out
}

func (a *api) listVNFs(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListVNFs(r.Context(), param(r, "tenant_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	out := vnfListResponse{VNFs: make([]vnfRow, len(list))}
	for i, v := range list {
		out.VNFs[i] = vnfRowOf(v)
	}
	Respond(w, r, http.StatusOK, out)
}

func (a *api) createVNF(w http.ResponseWriter, r *http.Request) {
	doc, err := decodeDescriptor(r, "a VNF descriptor")
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	v, err := a.eng.CreateVNF(r.Context(), param(r, "tenant_id"), doc)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, vnfResponse{VNF: vnfOf(v)})
}

func (a *api) createVNFDs(w http.ResponseWriter, r *http.Request) {
	doc, err := decodeDescriptor(r, "a VNF descriptor")
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	list, err := a.eng.CreateVNFDs(r.Context(), param(r, "tenant_id"), doc)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	out := vnfdResponse{VNFD: make([]vnfOut, len(list))}
	for i, v := range list {
		out.VNFD[i] = vnfOf(v)
	}
	Respond(w, r, http.StatusOK, out)
}

func (a *api) getVNF(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.GetVNF(r.Context(), param(r, "tenant_id"), param(r, "vnf_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, vnfResponse{VNF: vnfOf(v)})
}

func (a *api) deleteVNF(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeleteVNF(r.Context(), param(r, "tenant_id"), param(r, "vnf_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: "VNF " + msg + " deleted"})
}
