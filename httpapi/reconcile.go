package httpapi

import (
	"net/http"
	"strconv"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

type reconcileResponse struct {
	Reconcile engine.DriftReport `json:"reconcile"`
}

// reconcileRoutes is drift reconcile: one route, POST because fix=true
// deletes services and queues actions (and a report-only run asks every
// controller, which is not a cheap read).
func (a *api) reconcileRoutes() []Route {
	return []Route{
		{Method: "POST", Pattern: "/openmano/reconcile",
			Summary: "Compare the WIM accounts' controllers with the database: orphan services, missing links, mismatched endpoints (fix=true deletes orphans and re-queues missing links)",
			Tags:    []string{"wims"}, Query: []string{"account", "fix"}, Response: reconcileResponse{},
			Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable}, Handler: a.reconcile},
	}
}

func (a *api) reconcile(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := engine.ReconcileOptions{Account: q.Get("account")}
	if v := q.Get("fix"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			a.srv.Error(w, r, wimro.FieldErrorf("fix", "Invalid query string at 'fix=%s' (true or false)", shorten(v, 80)))
			return
		}
		o.Fix = b
	}
	rep, err := a.eng.Reconcile(r.Context(), o)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, reconcileResponse{Reconcile: rep})
}
