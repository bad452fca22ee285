package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro"
)

// auditPage reads the audit trail through GET /openmano/audit with the
// admin token, page by page (limit 7, after the last id).
func auditPage(t *testing.T, base, query string) []wimro.AuditEntry {
	t.Helper()
	var all []wimro.AuditEntry
	after := int64(0)
	for {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/openmano/audit?limit=7&after=%d%s", base, after, query), nil)
		req.Header.Set("Authorization", "Bearer tok-admin-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Audit []wimro.AuditEntry `json:"audit"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /openmano/audit: %d, %v", resp.StatusCode, err)
		}
		all = append(all, page.Audit...)
		if len(page.Audit) < 7 {
			return all
		}
		after = page.Audit[len(page.Audit)-1].ID
	}
}

// Every route that may change something leaves an audit entry with the
// token's id, the client, the route pattern, the path's ids and the
// status, whatever its outcome; a create names what it made. A failed
// authentication on any route leaves one without a token id (and without
// the token presented); a token without the scope one naming its id.
func TestAuditEveryMutatingRoute(t *testing.T) {
	t.Parallel()
	srv, api, _ := scopedServer(t)
	start := time.Now().Add(-time.Minute)
	var routes []string
	for _, rt := range api.ServedRoutes() {
		if rt.Method == http.MethodGet || rt.Public {
			continue
		}
		routes = append(routes, rt.Method+" "+rt.Pattern)
		status, desc := send(t, srv.URL, rt.Method, paramRE.ReplaceAllString(rt.Pattern, "x"), "tok-bare-1")
		if status == http.StatusForbidden || status == http.StatusUnauthorized {
			t.Fatalf("%s %s: %d %s", rt.Method, rt.Pattern, status, desc)
		}
	}
	if len(routes) < 20 {
		t.Fatalf("only %d mutating routes: %v", len(routes), routes)
	}
	// A create, to see its id recorded.
	req, _ := http.NewRequest("POST", srv.URL+"/openmano/tenants", strings.NewReader(`{"tenant": {"name": "audited"}}`))
	req.Header.Set("Authorization", "Bearer tok-nfvo-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Tenant struct {
			UUID string `json:"uuid"`
		} `json:"tenant"`
	}
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || created.Tenant.UUID == "" {
		t.Fatalf("create tenant: %d", resp.StatusCode)
	}
	// A wrong token on a read, a read token on a write.
	if status, _ := send(t, srv.URL, "GET", "/openmano/tenants", "stolen-or-guessed"); status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", status)
	}
	if status, _ := send(t, srv.URL, "DELETE", "/openmano/tenants/"+created.Tenant.UUID, "tok-reader-1"); status != http.StatusForbidden {
		t.Fatalf("read token on a delete: %d", status)
	}

	entries := auditPage(t, srv.URL, "&since="+start.UTC().Format(time.RFC3339))
	found := map[string]wimro.AuditEntry{}
	for _, e := range entries {
		if raw, _ := json.Marshal(e); strings.Contains(string(raw), "tok-") || strings.Contains(string(raw), "stolen") {
			t.Errorf("an audit entry holds a token: %s", raw)
		}
		if e.TokenID == "token:" || e.Client == "" || e.RequestID == "" || e.At.Before(start) {
			t.Errorf("entry %+v: want a token id, client, request id and time", e)
		}
		if _, seen := found[e.Method+" "+e.Route]; !seen { // the table's request came first
			found[e.Method+" "+e.Route] = e
		}
	}
	for _, key := range routes {
		e, ok := found[key]
		if !ok {
			t.Errorf("%s: no audit entry", key)
			continue
		}
		if !strings.HasPrefix(e.TokenID, "token:") || e.Status < 200 || e.Outcome != wimro.AuditOutcome(e.Status) {
			t.Errorf("%s: entry %+v, want the bare token's id and the status", key, e)
		}
		if strings.Contains(key, "{") && !slices.ContainsFunc(e.Objects, func(o string) bool { return strings.HasSuffix(o, "=x") }) {
			t.Errorf("%s: objects %v, want the path's ids", key, e.Objects)
		}
	}
	var create, unauth, forbidden bool
	for _, e := range entries {
		switch {
		case e.Route == "/openmano/tenants" && e.Method == "POST" && e.TokenID == "nfvo" && e.Outcome == wimro.AuditOK:
			create = slices.Contains(e.Objects, "uuid="+created.Tenant.UUID)
		case e.Route == "/openmano/tenants" && e.Method == "GET":
			unauth = e.Status == http.StatusUnauthorized && e.Outcome == wimro.AuditUnauthenticated && e.TokenID == ""
		case e.Route == "/openmano/tenants/{tenant_id}" && e.Method == "DELETE" && e.TokenID == "prometheus":
			forbidden = e.Status == http.StatusForbidden && e.Outcome == wimro.AuditForbidden && slices.Contains(e.Objects, "tenant_id="+created.Tenant.UUID)
		}
	}
	if !create || !unauth || !forbidden {
		t.Errorf("create recorded with its uuid %v, failed authentication %v, forbidden %v; want all", create, unauth, forbidden)
	}
	// Reads are not recorded.
	for _, e := range entries {
		if e.Method == "GET" && e.Status != http.StatusUnauthorized && e.Status != http.StatusForbidden {
			t.Errorf("a read was recorded: %+v", e)
		}
	}
}

// The audit list refuses what it does not know, naming the parameter.
func TestAuditQuery(t *testing.T) {
	t.Parallel()
	srv, _, _ := scopedServer(t)
	for q, field := range map[string]string{"since=yesterday": "since", "after=-1": "after", "limit=0": "limit", "limit=1001": "limit", "tenant=x": "tenant"} {
		req, _ := http.NewRequest("GET", srv.URL+"/openmano/audit?"+q, nil)
		req.Header.Set("Authorization", "Bearer tok-admin-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct {
				Field string `json:"field"`
			} `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || e.Error.Field != field {
			t.Errorf("?%s: %d field %q, want 400 naming %s", q, resp.StatusCode, e.Error.Field, field)
		}
	}
}
