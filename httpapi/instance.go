package httpapi

import (
	"net/http"
	"strconv"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

type instanceBody struct {
	Instance *instanceInput `json:"instance" openapi:"required"`
	// SchemaVersion is openmano's descriptor version ("0.1"), accepted
	// and unused.
	SchemaVersion any `json:"schema_version,omitempty"`
}

type instancePlanResponse struct {
	Plan struct {
		WANLinks []engine.PlannedLink `json:"wan_links" openapi:"required"`
	} `json:"plan"`
}

type instanceListResponse struct {
	Instances []wimro.Instance `json:"instances" openapi:"required"`
}

type instanceDeleteResponse struct {
	Result   string `json:"result"`
	ActionID string `json:"action_id"`
	// InstanceID finds the action once the instance (and its name) is gone.
	InstanceID string `json:"instance_id"`
}

type networkBody struct {
	Network *engine.NetworkUpdate `json:"network" openapi:"required"`
}

type networkAddBody struct {
	Network *engine.NetworkInput `json:"network" openapi:"required"`
}

type networkDeleteResponse struct {
	Result string `json:"result"`
	// ActionID is the instance action of the EDIT (the link shrinks) or
	// DELETE (fewer than two datacenters left) the removal queued; absent
	// when it queued none.
	ActionID string `json:"action_id,omitempty"`
}

type networkResponse struct {
	Network wimro.InstanceNet `json:"network"`
	// ActionID is the instance action of the EDIT the change queued (its
	// WAN links' services change too), absent when it queued none; its
	// event stream follows the edit.
	ActionID string `json:"action_id,omitempty"`
}

type wanLinksResponse struct {
	WANLinks []wimro.WANLink `json:"wan_links"`
}

type actionsResponse struct {
	Actions []wimro.InstanceAction `json:"actions" openapi:"required"`
}

type actionResponse struct {
	Actions []engine.InstanceActionView `json:"actions" openapi:"required"`
}

func (a *api) instanceRoutes() []Route {
	tags := []string{"instances"}
	base := "/openmano/{tenant_id}/instances"
	return []Route{
		{Method: "GET", Pattern: base, Summary: "List the NS instances of a tenant", Tags: tags, Response: instanceListResponse{}, Handler: a.listInstances},
		{Method: "POST", Pattern: base, Summary: "Create an NS instance: its networks, WAN links and CREATE actions (dry_run=true: only plan, with each link's type and why each WIM was chosen or not)", Tags: tags,
			Query: []string{"dry_run"}, Request: instanceBody{}, Response: osmInstance{}, AlsoResponse: instancePlanResponse{}, Handler: a.createInstance},
		{Method: "GET", Pattern: base + "/{instance_id}", Summary: "Show an NS instance with its networks and WAN links", Tags: tags, Response: osmInstance{}, Handler: a.getInstance},
		{Method: "DELETE", Pattern: base + "/{instance_id}", Summary: "Delete an NS instance: DELETE actions for its WAN links", Tags: tags, Response: instanceDeleteResponse{}, Handler: a.deleteInstance},
		{Method: "PUT", Pattern: base + "/{instance_id}/networks/{net_id}", Summary: "Report a local network's status or encapsulation (wakes the workers)", Tags: tags,
			Request: networkBody{}, Response: networkResponse{}, Handler: a.updateNetwork},
		{Method: "POST", Pattern: base + "/{instance_id}/networks", Summary: "Scale out: add a network of an existing VLD in another datacenter (its WAN link grows by an EDIT, into a multipoint service past two datacenters)", Tags: tags,
			Request: networkAddBody{}, Response: networkResponse{}, Handler: a.addNetwork},
		{Method: "DELETE", Pattern: base + "/{instance_id}/networks/{net_id}", Summary: "Scale in: remove a network (its WAN link shrinks by an EDIT, or is deleted below two datacenters)", Tags: tags,
			Response: networkDeleteResponse{}, Handler: a.removeNetwork},
		{Method: "GET", Pattern: base + "/{instance_id}/wan_links", Summary: "List the WAN links of an instance with their status", Tags: tags, Response: wanLinksResponse{}, Handler: a.listWANLinks},
		{Method: "GET", Pattern: base + "/{instance_id}/action", Summary: "List the instance actions of an instance (instance any: of every instance of the tenant)", Tags: tags, Response: actionsResponse{}, Handler: a.listActions},
		{Method: "GET", Pattern: base + "/{instance_id}/action/{action_id}", Summary: "Show an instance action with its progress counters and tasks (instance any: whatever its instance)", Tags: tags, Response: actionResponse{}, Handler: a.getAction},
	}
}

func (a *api) listInstances(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListInstances(r.Context(), param(r, "tenant_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if list == nil {
		list = []wimro.Instance{}
	}
	Respond(w, r, http.StatusOK, instanceListResponse{Instances: list})
}

func (a *api) createInstance(w http.ResponseWriter, r *http.Request) {
	dryRun := false
	if v := r.URL.Query().Get("dry_run"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			a.srv.Error(w, r, wimro.FieldErrorf("dry_run", "Invalid query string at 'dry_run=%s'", v))
			return
		}
		dryRun = b
	}
	var body instanceBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.Instance == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("instance", "instance is required"))
		return
	}
	in := body.Instance.engine()
	if dryRun {
		plan, err := a.eng.PlanInstance(r.Context(), param(r, "tenant_id"), in)
		if err != nil {
			a.srv.Error(w, r, err)
			return
		}
		var out instancePlanResponse
		out.Plan.WANLinks = plan
		if out.Plan.WANLinks == nil {
			out.Plan.WANLinks = []engine.PlannedLink{}
		}
		respondWarned(w, r, http.StatusOK, out, warnings)
		return
	}
	v, err := a.eng.CreateInstance(r.Context(), param(r, "tenant_id"), in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, flatInstance(v), append(warnings, v.Warnings...))
}

func (a *api) getInstance(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.GetInstance(r.Context(), param(r, "tenant_id"), param(r, "instance_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, flatInstance(v))
}

func (a *api) deleteInstance(w http.ResponseWriter, r *http.Request) {
	ia, msg, err := a.eng.DeleteInstance(r.Context(), param(r, "tenant_id"), param(r, "instance_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, instanceDeleteResponse{Result: msg, ActionID: ia.UUID, InstanceID: deref(ia.InstanceID)})
}

func (a *api) updateNetwork(w http.ResponseWriter, r *http.Request) {
	changeNetwork(a, w, r, func(u engine.NetworkUpdate) (wimro.InstanceNet, string, error) {
		return a.eng.UpdateNetworkEdit(r.Context(), param(r, "tenant_id"), param(r, "instance_id"), param(r, "net_id"), u)
	})
}

// changeNetwork decodes a {"network": ...} body of type T, required, has
// change apply it, and answers the network with the instance action the
// change queued.
func changeNetwork[T any](a *api, w http.ResponseWriter, r *http.Request, change func(T) (wimro.InstanceNet, string, error)) {
	var body struct {
		Network *T `json:"network"`
	}
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.Network == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("network", "network is required"))
		return
	}
	n, actionID, err := change(*body.Network)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, networkResponse{Network: n, ActionID: actionID}, warnings)
}

func (a *api) addNetwork(w http.ResponseWriter, r *http.Request) {
	changeNetwork(a, w, r, func(in engine.NetworkInput) (wimro.InstanceNet, string, error) {
		return a.eng.AddNetwork(r.Context(), param(r, "tenant_id"), param(r, "instance_id"), in)
	})
}

func (a *api) removeNetwork(w http.ResponseWriter, r *http.Request) {
	id, err := a.eng.RemoveNetwork(r.Context(), param(r, "tenant_id"), param(r, "instance_id"), param(r, "net_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, networkDeleteResponse{Result: "network " + param(r, "net_id") + " removed", ActionID: id})
}

func (a *api) listWANLinks(w http.ResponseWriter, r *http.Request) {
	links, err := a.eng.ListWANLinks(r.Context(), param(r, "tenant_id"), param(r, "instance_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, wanLinksResponse{WANLinks: links})
}

func (a *api) listActions(w http.ResponseWriter, r *http.Request) {
	list, err := a.eng.ListInstanceActions(r.Context(), param(r, "tenant_id"), param(r, "instance_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if list == nil {
		list = []wimro.InstanceAction{}
	}
	Respond(w, r, http.StatusOK, actionsResponse{Actions: list})
}

func (a *api) getAction(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.GetInstanceAction(r.Context(), param(r, "tenant_id"), param(r, "instance_id"), param(r, "action_id"))
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, actionResponse{Actions: []engine.InstanceActionView{v}})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
