package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

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

func (a *api) cancelActions(w http.ResponseWriter, r *http.Request) {
	var body cancelBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.Cancel == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("cancel", "cancel is required"))
		return
	}
	res, err := a.eng.CancelActions(r.Context(), param(r, "tenant_id"), param(r, "instance_id"), param(r, "action_id"), a.srv.actor(r), *body.Cancel)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, res, warnings)
}

func (a *api) abandonActions(w http.ResponseWriter, r *http.Request) {
	var body abandonBody
	warnings, err := decodeWarn(r, &body, nil)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	if body.Abandon == nil {
		a.srv.Error(w, r, wimro.FieldErrorf("abandon", "abandon is required"))
		return
	}
	res, err := a.eng.AbandonActions(r.Context(), param(r, "tenant_id"), param(r, "instance_id"), param(r, "action_id"), a.srv.actor(r), *body.Abandon)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	respondWarned(w, r, http.StatusOK, res, warnings)
}

// actor is who makes an authenticated request, for audit records: the
// API token's identity, "token:" and the first 12 hex digits of its
// SHA-256 (which token of the file, never the token), or "operator" when
// the API takes no token. Call it only behind auth.
func (s *Server) actor(r *http.Request) string {
	if !s.authEnabled() {
		return engine.ActorOperator
	}
	_, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return "token:" + hex.EncodeToString(sum[:])[:12]
}
