package httpapi

import (
	"net/http"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

type tenantBody struct {
	Tenant *engine.TenantInput `json:"tenant" openapi:"required"`
}

type tenantResponse struct {
	Tenant wimro.Tenant `json:"tenant"`
}

type tenantEditBody struct {
	Tenant *engine.TenantEdit `json:"tenant" openapi:"required"`
}

type tenantListResponse struct {
	Tenants []wimro.Tenant `json:"tenants" openapi:"required"`
}

func (a *api) tenantRoutes() []Route {
	tags := []string{"tenants"}
	return []Route{
		{Method: "GET", Pattern: "/openmano/tenants", Summary: "List NFVO tenants", Tags: tags, Response: tenantListResponse{}, Handler: a.listTenants},
		{Method: "POST", Pattern: "/openmano/tenants", Summary: "Create an NFVO tenant", Tags: tags, Request: tenantBody{}, Response: tenantResponse{}, Handler: a.createTenant},
		{Method: "GET", Pattern: "/openmano/tenants/{tenant_id}", Summary: "Show a tenant", Tags: tags, Response: tenantResponse{}, Handler: a.getTenant},
		{Method: "PUT", Pattern: "/openmano/tenants/{tenant_id}", Summary: "Edit a tenant's name or description", Tags: tags, Request: tenantEditBody{}, Response: tenantResponse{}, Handler: a.updateTenant},
		{Method: "DELETE", Pattern: "/openmano/tenants/{tenant_id}", Summary: "Delete a tenant (and accounts that served only it)", Tags: tags, Response: result{}, Handler: a.deleteTenant},
	}
}

func (a *api) listTenants(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListTenants(r.Context())
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if list == nil {
		list = []wimro.Tenant{}
	}
	Respond(w, r, http.StatusOK, tenantListResponse{Tenants: list})
}

func (a *api) createTenant(w http.ResponseWriter, r *http.Request) {
	var body tenantBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.Tenant == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("tenant", "tenant is required"))
		return
	}
	t, err := a.eng.CreateTenant(r.Context(), *body.Tenant)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, tenantResponse{Tenant: t}, warnings)
}

func (a *api) getTenant(w http.ResponseWriter, r *http.Request) {
	t, err := a.eng.GetTenant(r.Context(), param(r, "tenant_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, tenantResponse{Tenant: t})
}

func (a *api) deleteTenant(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeleteTenant(r.Context(), param(r, "tenant_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}

func (a *api) updateTenant(w http.ResponseWriter, r *http.Request) {
	var body tenantEditBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.Tenant == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("tenant", "tenant is required"))
		return
	}
	t, err := a.eng.UpdateTenant(r.Context(), param(r, "tenant_id"), *body.Tenant)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, tenantResponse{Tenant: t}, warnings)
}
