package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func instanceBody(name string) map[string]any {
	vld := uuid.NewString()
	var nets []any
	for i, dc := range []string{"dcA", "dcB"} {
		nets = append(nets, map[string]any{"name": fmt.Sprintf("%s-net-%d", name, i), "sce_net_id": vld, "datacenter": dc,
			"physical_network": "physnet1", "encapsulation_type": "vlan", "encapsulation_id": 301 + i})
	}
	return map[string]any{"instance": map[string]any{"name": name, "networks": nets}}
}

func TestTenantAndDatacenterRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	r := b.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0", "description": "first"}}, 200)
	tid := r.str("tenant", "uuid")
	r = b.call("GET", "/openmano/tenants", nil, 200)
	if r.str("tenants", 0, "uuid") != tid {
		t.Fatalf("tenants = %s", r.body)
	}
	b.call("GET", "/openmano/tenants/t0", nil, 200)
	wantError(t, b.do("POST", "/openmano/tenants", "", `{"tenant": {"name": "t0"}}`), 409, "already in use")
	wantError(t, b.do("POST", "/openmano/tenants", "", `{"tenant": {"name": "a;b"}}`), 400, "tenant.name")

	r = b.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": "dc0", "vim_url": "http://dc0/"}}, 200)
	if r.str("datacenter", "vim_url") != "http://dc0" {
		t.Fatalf("datacenter = %s", r.body)
	}
	wantError(t, b.do("POST", "/openmano/datacenters", "", `{"datacenter": {"name": "dc1"}}`), 400, "datacenter.vim_url")
	b.call("PUT", "/openmano/datacenters/dc0", map[string]any{"datacenter": map[string]any{"config": map[string]any{"k": "v"}}}, 200)
	wantError(t, b.do("GET", "/openmano/t0/datacenters/dc0", "", ""), 404, "No record")
	b.call("POST", "/openmano/t0/datacenters/dc0", nil, 200)
	wantError(t, b.do("POST", "/openmano/t0/datacenters/dc0", "", ""), 409, "already attached")
	r = b.call("GET", "/openmano/t0/datacenters", nil, 200)
	if r.str("datacenters", 0, "name") != "dc0" || get(r.json, "datacenters", 0, "config", "k") != "v" {
		t.Fatalf("datacenters = %s", r.body)
	}
	b.call("GET", "/openmano/any/datacenters", nil, 200)
	b.call("DELETE", "/openmano/t0/datacenters/dc0", nil, 200)
	b.call("DELETE", "/openmano/datacenters/dc0", nil, 200)
	wantError(t, b.do("DELETE", "/openmano/datacenters/dc0", "", ""), 404, "No record")
	b.call("DELETE", "/openmano/tenants/t0", nil, 200)
	wantError(t, b.do("GET", "/openmano/tenants/t0", "", ""), 404, "No record")
}

func TestInstanceRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)

	r := b.call("POST", "/openmano/tenant0/instances?dry_run=true", instanceBody("ns1"), 200)
	if l, _ := get(r.json, "plan", "wan_links").([]any); len(l) != 1 || r.str("plan", "wan_links", 0, "wim_name") != "wim0" {
		t.Fatalf("plan = %s", r.body)
	}
	if l, _ := get(b.call("GET", "/openmano/tenant0/instances", nil, 200).json, "instances").([]any); len(l) != 0 {
		t.Fatal("dry run wrote an instance")
	}
	r = b.call("POST", "/openmano/tenant0/instances", instanceBody("ns1"), 200)
	id, actionID := r.str("uuid"), r.str("action_id")
	if l, _ := get(r.json, "wan_links").([]any); len(l) != 1 || actionID == "" {
		t.Fatalf("instance = %s", r.body)
	}
	r = b.call("GET", "/openmano/tenant0/instances/"+id+"/action/"+actionID, nil, 200)
	if get(r.json, "actions", 0, "number_tasks") != 1.0 || get(r.json, "actions", 0, "number_done") != 0.0 || r.str("actions", 0, "vim_wim_actions", 0, "action") != "CREATE" {
		t.Fatalf("action = %s", r.body)
	}
	r = b.call("GET", "/openmano/tenant0/instances/"+id+"/wan_links", nil, 200)
	if r.str("wan_links", 0, "status") != "BUILD" {
		t.Fatalf("links = %s", r.body)
	}
	r = b.call("PUT", "/openmano/tenant0/instances/ns1/networks/ns1-net-0", map[string]any{"network": map[string]any{"status": "ACTIVE"}}, 200)
	if r.str("network", "status") != "ACTIVE" {
		t.Fatalf("network = %s", r.body)
	}
	wantError(t, b.do("PUT", "/openmano/tenant0/instances/ns1/networks/ns1-net-0", "", `{"network": {"encapsulation_id": 5000}}`), 400, "encapsulation_id")
	wantError(t, b.do("POST", "/openmano/tenant0/instances?dry_run=maybe", "", `{}`), 400, "dry_run")
	wantError(t, b.do("POST", "/openmano/tenant0/instances", "", `{"instance": {"name": "x", "wim_account": 5}}`), 400, "wim_account")
	// No common WIM: 404, nothing written.
	b.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": "dcC", "vim_url": "http://dcC"}}, 200)
	b.call("POST", "/openmano/tenant0/datacenters/dcC", nil, 200)
	body := instanceBody("ns2")
	get(body, "instance", "networks", 1).(map[string]any)["datacenter"] = "dcC"
	wantError(t, b.call("POST", "/openmano/tenant0/instances", body, 404), 404, "No WIM that is able to connect the given datacenters was found")

	r = b.call("DELETE", "/openmano/tenant0/instances/ns1", nil, 200)
	delAction := r.str("action_id")
	if !strings.Contains(r.str("result"), "deleted") || delAction == "" {
		t.Fatalf("delete = %s", r.body)
	}
	r = b.call("GET", "/openmano/tenant0/instances/"+id+"/action", nil, 200)
	if l, _ := get(r.json, "actions").([]any); len(l) != 2 {
		t.Fatalf("actions = %s", r.body)
	}
	wantError(t, b.do("GET", "/openmano/tenant0/instances/ns1", "", ""), 404, "No record")
}

// Secrets: passwords never appear in any answer.
func TestPasswordsNeverReturned(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	const pw = "Sup3r-Secret-Value"
	var bodies []string
	bodies = append(bodies, b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{"user": "u", "password": pw}}, 200).body)
	bodies = append(bodies, b.call("PUT", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{"password": pw + "2"}}, 200).body)
	bodies = append(bodies, b.call("PUT", "/openmano/any/wims/wim0", map[string]any{"wim_account": map[string]any{"user": "v"}}, 200).body)
	bodies = append(bodies, b.call("GET", "/openmano/tenant0/wims/wim0", nil, 200).body)
	bodies = append(bodies, b.call("GET", "/openmano/tenant0/wims", nil, 200).body)
	bodies = append(bodies, b.do("POST", "/openmano/tenant0/wims/wim0", "", `{"wim_account": {"name": "tenant0", "password": "`+pw+`"}}`).body)
	for i, body := range bodies {
		if strings.Contains(body, pw) {
			t.Fatalf("response %d carries the password: %s", i, body)
		}
	}
	if !strings.Contains(bodies[0], `"********"`) {
		t.Fatalf("password not shown masked: %s", bodies[0])
	}
	var raw []byte
	if err := b.db.Pool().QueryRow(t.Context(), `SELECT password FROM wim_accounts`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), pw) {
		t.Fatal("password stored in clear")
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, "t0k3n")
	b.call("GET", "/openmano/tenants", nil, 200)
	anon := *b
	anon.tok = ""
	wantError(t, anon.do("GET", "/openmano/tenants", "", ""), 401, "")
	wrong := *b
	wrong.tok = "nope"
	wantError(t, wrong.do("POST", "/openmano/wims", "", `{}`), 401, "")
	if r := anon.do("GET", "/healthz", "", ""); r.status != 200 {
		t.Fatalf("healthz = %d", r.status)
	}
	wantError(t, anon.do("GET", "/openapi.json", "", ""), 401, "")
}
