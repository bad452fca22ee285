package httpapi

import (
	"context"
	"net/http"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

type cancelBody struct {
	Cancel *engine.OverrideInput `json:"cancel" openapi:"required"`
}

type abandonBody struct {
	Abandon *engine.OverrideInput `json:"abandon" openapi:"required"`
}

// overrideRoutes are the operator's way out of a dead controller: cancel
// tasks that never reached it, abandon DELETE tasks with force (see
// engine/override.go). Each is audited and shows in the instance
// action's events.
func (a *api) overrideRoutes() []Route {
	tags := []string{"instances"}
	base := "/openmano/{tenant_id}/instances/{instance_id}/action/{action_id}"
	return []Route{
		{Method: "POST", Pattern: base + "/cancel",
			Summary: "Cancel unfinished tasks of an instance action that never reached the controller (all of cancel.task_index, or every unfinished task, or none: " +
				"409 names each task that reached the controller or is running). They become CANCELLED, nothing is left on the controller; recorded with who, when and cancel.reason",
			Tags: tags, Request: cancelBody{}, Response: engine.OverrideResult{}, Handler: a.cancelActions},
		{Method: "POST", Pattern: base + "/abandon",
			Summary: "Abandon unfinished DELETE tasks of an instance action (abandon.force=true required): wimro stops trying to delete their services, which may remain on the controller " +
				"and are recorded as abandoned (reconcile lists them as kind abandoned). The tasks become ABANDONED and no longer block deleting the account or WIM; recorded with who, when and abandon.reason",
			Tags: tags, Request: abandonBody{}, Response: engine.OverrideResult{}, Handler: a.abandonActions},
	}
}

// overrideInputs is what either override route decodes: each route's
// document (cancelBody, abandonBody) names its one key.
type overrideInputs struct {
	Cancel  *engine.OverrideInput `json:"cancel"`
	Abandon *engine.OverrideInput `json:"abandon"`
}

func (a *api) cancelActions(w http.ResponseWriter, r *http.Request) {
	a.override(w, r, "cancel", a.eng.CancelActions)
}

func (a *api) abandonActions(w http.ResponseWriter, r *http.Request) {
	a.override(w, r, "abandon", a.eng.AbandonActions)
}

// override decodes the body's kind key and runs the override on the
// action of the path, as the caller's identity.
func (a *api) override(w http.ResponseWriter, r *http.Request, kind string,
	run func(ctx context.Context, tenantRef, instanceID, actionID, actor string, in engine.OverrideInput) (engine.OverrideResult, error)) {
	var body overrideInputs
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	in := body.Cancel
	if kind == "abandon" {
		in = body.Abandon
	}
	if in == nil {
		a.srv.Error(w, r, wimro.FieldErrorf(kind, "%s is required", kind))
		return
	}
	res, err := run(r.Context(), param(r, "tenant_id"), param(r, "instance_id"), param(r, "action_id"), a.srv.actor(r), *in)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, res, warnings)
}

// actor is who makes an authenticated request, for audit records: the
// API token's id (its id= in the token file, else "token:" and the first
// 12 hex digits of its SHA-256: which token, never the token), or
// "operator" when the API takes no token. Call it only behind auth.
func (s *Server) actor(r *http.Request) string {
	if id := tokenID(r); id != "" {
		return id
	}
	return engine.ActorOperator
}
