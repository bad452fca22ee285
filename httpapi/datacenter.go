package httpapi

import (
	"net/http"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

type datacenterBody struct {
	Datacenter *engine.DatacenterInput `json:"datacenter" openapi:"required"`
}

type datacenterResponse struct {
	Datacenter wimro.Datacenter `json:"datacenter"`
}

type datacenterListResponse struct {
	Datacenters []wimro.Datacenter `json:"datacenters" openapi:"required"`
}

func (a *api) datacenterRoutes() []Route {
	tags := []string{"datacenters"}
	return []Route{
		{Method: "POST", Pattern: "/openmano/datacenters", Summary: "Register a datacenter (config.external_connections holds its WAN exit rules)", Tags: tags,
			Request: datacenterBody{}, Response: datacenterResponse{}, Handler: a.createDatacenter},
		{Method: "PUT", Pattern: "/openmano/datacenters/{datacenter_id}", Summary: "Edit a datacenter; config is merged", Tags: tags,
			Request: datacenterBody{}, Response: datacenterResponse{}, Handler: a.updateDatacenter},
		{Method: "DELETE", Pattern: "/openmano/datacenters/{datacenter_id}", Summary: "Delete a datacenter and its port mappings", Tags: tags,
			Response: result{}, Handler: a.deleteDatacenter},
		{Method: "GET", Pattern: "/openmano/{tenant_id}/datacenters", Summary: "List the datacenters of a tenant (all with any)", Tags: tags,
			Response: datacenterListResponse{}, Handler: a.listDatacenters},
		{Method: "GET", Pattern: "/openmano/{tenant_id}/datacenters/{datacenter_id}", Summary: "Show a datacenter", Tags: tags,
			Response: datacenterResponse{}, Handler: a.getDatacenter},
		{Method: "POST", Pattern: "/openmano/{tenant_id}/datacenters/{datacenter_id}", Summary: "Attach a datacenter to a tenant", Tags: tags,
			Response: datacenterResponse{}, Handler: a.attachDatacenter},
		{Method: "PUT", Pattern: "/openmano/{tenant_id}/datacenters/{datacenter_id}", Summary: "Edit the tenant's VIM credentials on a datacenter (openmano's datacenter-edit-vim-tenant): wimro keeps none, so nothing changes", Tags: tags,
			Request: vimTenantBody{}, Response: datacenterResponse{}, Handler: a.editVIMTenant},
		{Method: "DELETE", Pattern: "/openmano/{tenant_id}/datacenters/{datacenter_id}", Summary: "Detach a datacenter from a tenant", Tags: tags,
			Response: result{}, Handler: a.detachDatacenter},
	}
}

func (a *api) decodeDatacenter(w http.ResponseWriter, r *http.Request) (engine.DatacenterInput, []string, bool) {
	var body datacenterBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return engine.DatacenterInput{}, nil, false
	}
	if body.Datacenter == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("datacenter", "datacenter is required"))
		return engine.DatacenterInput{}, nil, false
	}
	return *body.Datacenter, warnings, true
}

func (a *api) createDatacenter(w http.ResponseWriter, r *http.Request) {
	in, warnings, ok := a.decodeDatacenter(w, r)
	if !ok {
		return
	}
	d, err := a.eng.CreateDatacenter(r.Context(), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, datacenterResponse{Datacenter: d}, warnings)
}

func (a *api) updateDatacenter(w http.ResponseWriter, r *http.Request) {
	in, warnings, ok := a.decodeDatacenter(w, r)
	if !ok {
		return
	}
	d, err := a.eng.UpdateDatacenter(r.Context(), param(r, "datacenter_id"), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, datacenterResponse{Datacenter: d}, warnings)
}

func (a *api) deleteDatacenter(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeleteDatacenter(r.Context(), param(r, "datacenter_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}

func (a *api) listDatacenters(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListDatacenters(r.Context(), param(r, "tenant_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if list == nil {
		list = []wimro.Datacenter{}
	}
	Respond(w, r, http.StatusOK, datacenterListResponse{Datacenters: list})
}

func (a *api) getDatacenter(w http.ResponseWriter, r *http.Request) {
	d, err := a.eng.GetDatacenter(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, datacenterResponse{Datacenter: d})
}

func (a *api) attachDatacenter(w http.ResponseWriter, r *http.Request) {
	// openmano's attach body carries VIM credentials, which wimro has no use
	// for: any body is accepted and ignored.
	d, err := a.eng.AttachDatacenter(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, datacenterResponse{Datacenter: d})
}

// vimTenantBody is openmano's VIM credentials of a tenant on a
// datacenter; wimro reads none of it (secrets are neither kept nor
// logged).
type vimTenantBody struct {
	Datacenter map[string]any `json:"datacenter"`
}

func (a *api) editVIMTenant(w http.ResponseWriter, r *http.Request) {
	var body vimTenantBody
	if r.ContentLength != 0 {
		if err := Decode(r, &body, false); err != nil {
			a.srv.Error(w, r, err)
			return
		}
	}
	d, err := a.eng.EditVIMTenant(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, datacenterResponse{Datacenter: d})
}

func (a *api) detachDatacenter(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DetachDatacenter(r.Context(), param(r, "tenant_id"), param(r, "datacenter_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}
