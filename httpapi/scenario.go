package httpapi

import (
	"net/http"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// scenarioRow is a scenario as openmano lists it.
type scenarioRow struct {
	UUID        string  `json:"uuid"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
	TenantID    string  `json:"tenant_id"`
	OsmID       *string `json:"osm_id"`
	Public      bool    `json:"public"`
	// CreatedAt and ModifiedAt are in openmano's form, 2006-01-02T15:04:05 (UTC).
	CreatedAt  string `json:"created_at"`
	ModifiedAt string `json:"modified_at"`
}

// scenarioOut is a scenario with its VNFs (kept, never deployed) and
// networks, as openmano shows one.
type scenarioOut struct {
	scenarioRow
	VNFs []map[string]any `json:"vnfs" openapi:"required"`
	Nets []sceNetOut      `json:"nets" openapi:"required"`
}

type sceNetOut struct {
	UUID        string  `json:"uuid"`
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	Description *string `json:"description"`
	External    bool    `json:"external"`
	OsmID       *string `json:"osm_id"`
	CreatedAt   string  `json:"created_at"`
}

type scenarioResponse struct {
	Scenario scenarioOut `json:"scenario"`
}

type scenarioListResponse struct {
	Scenarios []scenarioRow `json:"scenarios" openapi:"required"`
}

type nsdResponse struct {
	NSD []scenarioOut `json:"nsd" openapi:"required"`
}

// scenarioDescriptor is an openmano scenario descriptor (v0.1, v0.2 or
// v0.3), or OSM's NSD catalogue on the v3 route.
type scenarioDescriptor map[string]any

type scenarioEditBody struct {
	Scenario *engine.ScenarioEdit `json:"scenario" openapi:"required"`
}

func (a *api) scenarioRoutes() []Route {
	tags := []string{"scenarios"}
	base := "/openmano/{tenant_id}/scenarios"
	return []Route{
		{Method: "GET", Pattern: base, Summary: "List the scenarios a tenant sees (its own and the public ones; all with any)", Tags: tags,
			Response: scenarioListResponse{}, Handler: a.listScenarios},
		{Method: "POST", Pattern: base, Summary: "Add a scenario from an openmano scenario descriptor: its networks are kept, its VNFs listed but never deployed", Tags: tags,
			Request: scenarioDescriptor{}, Response: scenarioResponse{}, Handler: a.createScenario},
		{Method: "POST", Pattern: "/openmano/v3/{tenant_id}/nsd", Summary: "Add one scenario per NSD of OSM's NSD catalogue: the VLDs are its networks", Tags: tags,
			Request: scenarioDescriptor{}, Response: nsdResponse{}, Handler: a.createNSDs},
		{Method: "GET", Pattern: base + "/{scenario_id}", Summary: "Show a scenario with its networks", Tags: tags, Response: scenarioResponse{}, Handler: a.getScenario},
		{Method: "PUT", Pattern: base + "/{scenario_id}", Summary: "Edit a scenario's name, description, osm_id or public flag", Tags: tags,
			Request: scenarioEditBody{}, Response: scenarioResponse{}, Handler: a.updateScenario},
		{Method: "DELETE", Pattern: base + "/{scenario_id}", Summary: "Delete a scenario (not while an instance of it exists)", Tags: tags, Response: result{}, Handler: a.deleteScenario},
	}
}

func rowOf(sc wimro.Scenario) scenarioRow {
	return scenarioRow{UUID: sc.UUID, Name: sc.Name, Description: sc.Description, TenantID: sc.TenantID, OsmID: sc.OsmID, Public: sc.Public,
		CreatedAt: v6Time(sc.CreatedAt), ModifiedAt: v6Time(sc.ModifiedAt)}
}

func scenarioOf(v engine.ScenarioView) scenarioOut {
	out := scenarioOut{scenarioRow: rowOf(v.Scenario), VNFs: v.VNFs, Nets: make([]sceNetOut, len(v.Nets))}
	if out.VNFs == nil {
		out.VNFs = []map[string]any{}
	}
	for i, n := range v.Nets {
		out.Nets[i] = sceNetOut{UUID: n.UUID, Name: n.Name, Type: n.Type, Description: n.Description, External: n.External, OsmID: n.OsmID, CreatedAt: v6Time(n.CreatedAt)}
	}
	return out
}

func (a *api) listScenarios(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListScenarios(r.Context(), param(r, "tenant_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	out := scenarioListResponse{Scenarios: make([]scenarioRow, len(list))}
	for i, sc := range list {
		out.Scenarios[i] = rowOf(sc)
	}
	Respond(w, r, http.StatusOK, out)
}

// decodeDescriptor reads a descriptor body (what names it, for the
// error of a body that is no object).
func decodeDescriptor(r *http.Request, what string) (map[string]any, error) {
	var doc map[string]any
	if err := Decode(r, &doc, false); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, wimro.FieldErrorf("(body)", "the body must be an object: %s", what)
	}
	return doc, nil
}

func (a *api) createScenario(w http.ResponseWriter, r *http.Request) {
	doc, err := decodeDescriptor(r, "a scenario descriptor")
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	v, err := a.eng.CreateScenario(r.Context(), param(r, "tenant_id"), doc)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, scenarioResponse{Scenario: scenarioOf(v)})
}

func (a *api) createNSDs(w http.ResponseWriter, r *http.Request) {
	doc, err := decodeDescriptor(r, "a scenario descriptor")
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	list, err := a.eng.CreateNSDs(r.Context(), param(r, "tenant_id"), doc)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	out := nsdResponse{NSD: make([]scenarioOut, len(list))}
	for i, v := range list {
		out.NSD[i] = scenarioOf(v)
	}
	Respond(w, r, http.StatusOK, out)
}

func (a *api) getScenario(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.GetScenario(r.Context(), param(r, "tenant_id"), param(r, "scenario_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, scenarioResponse{Scenario: scenarioOf(v)})
}

func (a *api) updateScenario(w http.ResponseWriter, r *http.Request) {
	var body scenarioEditBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.Scenario == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("scenario", "scenario is required"))
		return
	}
	v, err := a.eng.UpdateScenario(r.Context(), param(r, "tenant_id"), param(r, "scenario_id"), *body.Scenario)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, scenarioResponse{Scenario: scenarioOf(v)}, warnings)
}

func (a *api) deleteScenario(w http.ResponseWriter, r *http.Request) {
	msg, err := a.eng.DeleteScenario(r.Context(), param(r, "tenant_id"), param(r, "scenario_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, result{Result: msg})
}
