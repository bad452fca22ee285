package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// Without a cluster (--coordinator none): /readyz is 200 once the
// accounts are handed to the workers, and /cluster shows this process as
// leader and only member, assigned every account and owning (holding the
// PostgreSQL lease of) each one.
func TestClusterStatusWithoutCoordinator(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_API_TOKEN"] = "tok"
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--instance-id", "wimd-a")
	defer stop()
	c := api{t: t, addr: addr, token: "tok"}

	eventually.Until(t, time.Minute, "readyz 200", func() (bool, string) {
		code, body := get(t, "http://"+addr+"/readyz")
		return code == http.StatusOK, body
	})
	if code, _ := get(t, "http://"+addr+"/cluster"); code != http.StatusUnauthorized {
		t.Fatalf("/cluster without the token = %d", code)
	}

	c.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	c.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "fake", "wim_url": "http://fake-cluster"}})
	acct := c.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "a0"}})
	acctView, _ := acct["wim_account"].(map[string]any)
	id, _ := acctView["uuid"].(string)
	if id == "" {
		raw, _ := json.Marshal(acct)
		t.Fatalf("account answer without uuid: %s", raw)
	}

	var st wimro.ClusterStatus
	eventually.Until(t, time.Minute, "the account owned", func() (bool, string) {
		raw, _ := json.Marshal(c.call("GET", "/cluster", nil))
		st = wimro.ClusterStatus{}
		json.Unmarshal(raw, &st)
		return slices.Contains(st.Owned, id), string(raw)
	})
	if st.Coordinator != "none" || st.InstanceID != "wimd-a" || st.Leader != "wimd-a" ||
		len(st.Members) != 1 || st.Members[0].ID != "wimd-a" || st.Members[0].Address != addr ||
		!slices.Equal(st.Assignments["wimd-a"], []string{id}) {
		t.Fatalf("cluster = %+v", st)
	}
	if !strings.Contains(b.stderr.String(), "instance_id=wimd-a") {
		t.Fatalf("the serving line does not name the instance:\n%s", b.stderr.String())
	}
}
