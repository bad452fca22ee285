package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// Issue 30, point 7: the cancel and abandon routes record who asked (the
// API token's identity, never the token), refuse bad input naming the
// field and answer 409 naming why a task cannot be ended; the events of
// the instance action show the override.
func TestOverrideRoutes(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	b := setup(t, token)
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	r := b.call("POST", "/openmano/tenant0/instances", instanceBody("ns1"), 200)
	id, create := r.str("uuid"), r.str("action_id")
	base := "/openmano/tenant0/instances/" + id + "/action/" + create

	wantError(t, b.do("POST", base+"/cancel", "", `{"cancel": {}}`), 400, "cancel.reason")
	wantError(t, b.do("POST", base+"/cancel", "", `{}`), 400, "cancel")
	wantError(t, b.do("POST", base+"/cancel", "", `{"cancel": {"reason": "x", "task_index": 7}}`), 404, "no task 7")
	wantError(t, b.do("POST", base+"/abandon", "", `{"abandon": {"reason": "x"}}`), 400, "abandon.force")
	wantError(t, b.do("POST", base+"/abandon", "", `{"abandon": {"reason": "x", "force": true, "task_index": 0}}`), 409, "only a DELETE is abandoned")
	wantError(t, b.do("POST", "/openmano/tenant0/instances/"+id+"/action/00000000-0000-4000-8000-000000000000/cancel", "", `{"cancel": {"reason": "x"}}`), 404, "No record")

	r = b.call("POST", base+"/cancel", map[string]any{"cancel": map[string]any{"reason": "not needed any more"}}, 200)
	sum := sha256.Sum256([]byte(token))
	if want := "token:" + hex.EncodeToString(sum[:])[:12]; r.str("overrides", 0, "actor") != want || r.str("overrides", 0, "reason") != "not needed any more" {
		t.Errorf("cancel = %s, want actor %s and the reason", r.body, want)
	}
	if r.str("actions", 0) != "" || get(r.json, "overrides", 0, "task_index") != 0.0 {
		t.Errorf("cancel = %s", r.body)
	}
	r = b.call("GET", base, nil, 200)
	if r.str("actions", 0, "vim_wim_actions", 0, "status") != "CANCELLED" || get(r.json, "actions", 0, "number_failed") != 1.0 {
		t.Errorf("the action after cancel = %s", r.body)
	}
	wantError(t, b.do("POST", base+"/cancel", "", `{"cancel": {"reason": "again"}}`), 409, "nothing to cancel")
}
