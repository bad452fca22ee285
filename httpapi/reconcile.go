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
			Summary: "Compare the WIM accounts' controllers with the database: orphan services (no link or unfinished action of any account knows their key), missing links, mismatched endpoints, abandoned services (fix=true deletes orphans and re-queues missing links; abandoned services only with delete_abandoned=true too)",
			Tags:    []string{"wims"}, Query: []string{"account", "fix", "delete_abandoned"}, Response: reconcileResponse{},
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
	if v := q.Get("delete_abandoned"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			a.srv.Error(w, r, wimro.FieldErrorf("delete_abandoned", "Invalid query string at 'delete_abandoned=%s' (true or false)", shorten(v, 80)))
			return
		}
		if b && !o.Fix {
			a.srv.Error(w, r, wimro.FieldErrorf("delete_abandoned", "delete_abandoned=true needs fix=true"))
			return
		}
		o.DeleteAbandoned = b
	}
	rep, err := a.eng.Reconcile(r.Context(), o)
	if err != nil {
		a.srv.Error(w, r, err)
		return
	}
	Respond(w, r, http.StatusOK, reconcileResponse{Reconcile: rep})
}
