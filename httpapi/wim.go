package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

type wimBody struct {
	WIM *engine.WIMInput `json:"wim" openapi:"required"`
}

type wimResponse struct {
	WIM engine.WIMView `json:"wim"`
}

type wimListResponse struct {
	WIMs []map[string]any `json:"wims" openapi:"required"`
}

type accountBody struct {
	Account *engine.AccountInput `json:"wim_account" openapi:"required"`
}

type accountResponse struct {
	Account engine.AccountFull `json:"wim_account"`
}

type accountShortResponse struct {
	Account engine.AccountShort `json:"wim_account"`
}

type accountsShortResponse struct {
	Accounts []engine.AccountShort `json:"wim_accounts"`
}

type portMappingBody struct {
	Mappings []engine.PortMappingInput `json:"wim_port_mapping"`
}

type portMappingGroups struct {
	Mappings []engine.PortMappingGroup `json:"wim_port_mapping"`
}

// wimListDefault is what a WIM list shows without field=.
var wimListDefault = []string{"uuid", "name", "wim_url", "type", "created_at"}

func (a *api) wimRoutes() []Route {
	tags := []string{"wims"}
	return []Route{
		{Method: "GET", Pattern: "/openmano/{tenant_id}/wims", Summary: "List the WIMs of a tenant (or all with tenant any)", Tags: tags,
			Query: append([]string{"field", "limit"}, engine.WIMListFields...), Response: wimListResponse{}, Handler: a.listWIMs},
		{Method: "GET", Pattern: "/openmano/{tenant_id}/wims/{wim_id}", Summary: "Show a WIM with its port mappings (and the tenant's account)", Tags: tags,
			Response: wimResponse{}, Handler: a.getWIM},
		{Method: "POST", Pattern: "/openmano/wims", Summary: "Create a WIM, optionally with config.wim_port_mapping", Tags: tags,
			Request: wimBody{}, Response: wimResponse{}, Handler: a.createWIM},
		{Method: "PUT", Pattern: "/openmano/wims/{wim_id}", Summary: "Edit a WIM; a non-empty config.wim_port_mapping replaces its port mappings", Tags: tags,
			Request: wimBody{}, Response: wimResponse{}, Handler: a.updateWIM},
		{Method: "DELETE", Pattern: "/openmano/wims/{wim_id}", Summary: "Delete a WIM with its accounts and port mappings", Tags: tags,
			Response: result{}, Handler: a.deleteWIM},
		{Method: "POST", Pattern: "/openmano/{tenant_id}/wims/{wim_id}", Summary: "Attach a tenant to a WIM through an account", Tags: tags,
			Request: accountBody{}, Response: accountResponse{}, Handler: a.createAccount},
		{Method: "PUT", Pattern: "/openmano/{tenant_id}/wims/{wim_id}", Summary: "Edit the account(s) attaching the WIM to the tenant (all with any)", Tags: tags,
			Request: accountBody{}, Response: accountShortResponse{}, AlsoResponse: accountsShortResponse{}, Handler: a.updateAccounts},
		{Method: "DELETE", Pattern: "/openmano/{tenant_id}/wims/{wim_id}", Summary: "Detach the tenant (all with any) from the WIM", Tags: tags,
			Response: result{}, Handler: a.deleteAccounts},
		{Method: "POST", Pattern: "/openmano/{tenant_id}/wims/{wim_id}/port_mapping", Summary: "Add port mappings to a WIM", Tags: tags,
			Request: portMappingBody{}, Response: portMappingBody{}, Handler: a.createPortMappings},
		{Method: "GET", Pattern: "/openmano/{tenant_id}/wims/{wim_id}/port_mapping", Summary: "List the port mappings of a WIM, grouped by datacenter", Tags: tags,
			Response: portMappingGroups{}, Handler: a.getPortMappings},
		{Method: "DELETE", Pattern: "/openmano/{tenant_id}/wims/{wim_id}/port_mapping", Summary: "Delete every port mapping of a WIM", Tags: tags,
			Response: result{}, Handler: a.deletePortMappings},
	}
}

// project keeps the listed JSON fields of v.
func project(v any, fields []string) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f] = all[f]
	}
	return out, nil
}

func (a *api) listWIMs(w http.ResponseWriter, r *http.Request) {
	q, err := ParseListQuery(r.URL.Query(), engine.WIMListFields)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	list, err := a.eng.ListWIMs(r.Context(), param(r, "tenant_id"), q.Equal, q.Limit)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	fields := q.Fields
	if len(fields) == 0 {
		fields = wimListDefault
	}
	out := wimListResponse{WIMs: make([]map[string]any, 0, len(list))}
	for _, v := range list {
		m, err := project(v, fields)
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		out.WIMs = append(out.WIMs, m)
	}
	Respond(w, r, http.StatusOK, out)
}

func (a *api) getWIM(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.GetWIM(r.Context(), param(r, "tenant_id"), param(r, "wim_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, wimResponse{WIM: v})
}

// wimTyped are the parts of a WIM's free-form config that the engine
// decodes into a type: their unknown keys are warned about too.
var wimTyped = map[string]reflect.Type{"wim.config.wim_port_mapping": reflect.TypeFor[[]engine.PortMappingInput]()}

func (a *api) decodeWIM(w http.ResponseWriter, r *http.Request) (engine.WIMInput, []string, bool) {
	var body wimBody
	warnings, err := decodeWarn(r, &body, wimTyped)
	if err != nil {
		a.srv.Error(w, r, err)
		return engine.WIMInput{}, nil, false
	}
	if body.WIM == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("wim", "wim is required"))
		return engine.WIMInput{}, nil, false
	}
	return *body.WIM, warnings, true
}

func (a *api) createWIM(w http.ResponseWriter, r *http.Request) {
	in, warnings, ok := a.decodeWIM(w, r)
	if !ok {
		return
	}
	v, err := a.eng.CreateWIM(r.Context(), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, wimResponse{WIM: v}, warnings)
}

func (a *api) updateWIM(w http.ResponseWriter, r *http.Request) {
	in, warnings, ok := a.decodeWIM(w, r)
	if !ok {
		return
	}
	v, err := a.eng.UpdateWIM(r.Context(), param(r, "wim_id"), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, wimResponse{WIM: v}, warnings)
}

func (a *api) deleteWIM(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeleteWIM(r.Context(), param(r, "wim_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}

func (a *api) decodeAccount(w http.ResponseWriter, r *http.Request) (engine.AccountInput, []string, bool) {
	var body accountBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return engine.AccountInput{}, nil, false
	}
	if body.Account == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("wim_account", "wim_account is required (it may be empty: {\"wim_account\": {}})"))
		return engine.AccountInput{}, nil, false
	}
	return *body.Account, warnings, true
}

func (a *api) createAccount(w http.ResponseWriter, r *http.Request) {
	in, warnings, ok := a.decodeAccount(w, r)
	if !ok {
		return
	}
	v, err := a.eng.CreateAccount(r.Context(), param(r, "tenant_id"), param(r, "wim_id"), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, accountResponse{Account: v}, warnings)
}

func (a *api) updateAccounts(w http.ResponseWriter, r *http.Request) {
	in, warnings, ok := a.decodeAccount(w, r)
	if !ok {
		return
	}
	tenant := param(r, "tenant_id")
	list, err := a.eng.UpdateAccounts(r.Context(), tenant, param(r, "wim_id"), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if tenant != engine.AnyTenant && len(list) == 1 {
		respondWarned(w, r, http.StatusOK, accountShortResponse{Account: list[0]}, warnings)
		return
	}
	respondWarned(w, r, http.StatusOK, accountsShortResponse{Accounts: list}, warnings)
}

func (a *api) deleteAccounts(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeleteAccounts(r.Context(), param(r, "tenant_id"), param(r, "wim_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}

func (a *api) createPortMappings(w http.ResponseWriter, r *http.Request) {
	var body portMappingBody
	// Unknown keys are an error here, as in openmano (where they broke the
	// insert); wan_service_mapping_info stays free-form.
	if err := Decode(r, &body, true); err != nil {
		a.srv.Error(w, r, err)
		return
	}
	out, err := a.eng.CreatePortMappings(r.Context(), param(r, "tenant_id"), param(r, "wim_id"), body.Mappings)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, portMappingBody{Mappings: out})
}

func (a *api) getPortMappings(w http.ResponseWriter, r *http.Request) {
	out, err := a.eng.GetPortMappings(r.Context(), param(r, "tenant_id"), param(r, "wim_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, portMappingGroups{Mappings: out})
}

func (a *api) deletePortMappings(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeletePortMappings(r.Context(), param(r, "tenant_id"), param(r, "wim_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}
