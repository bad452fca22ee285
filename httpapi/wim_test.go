package httpapi_test

import (
	"strings"
	"testing"
)

func TestWIMRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()

	// #3 create answered with the WIM and its grouped mappings.
	r := b.call("GET", "/openmano/any/wims/wim0", nil, 200)
	wimID := r.str("wim", "uuid")
	if got := get(r.json, "wim", "config", "wim_port_mapping"); len(got.([]any)) != 2 {
		t.Fatalf("mappings = %v", got)
	}
	if ep := r.body; !strings.Contains(ep, "dpid-port:6af9cfa2f22fb0c545129949fff64d2dda3f8a85") {
		t.Fatalf("derived endpoint id missing: %s", ep)
	}

	// #6 attach tenant0 through an account; the password never comes back.
	r = b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{"user": "admin", "password": "s3cr3t!"}}, 200)
	if r.str("wim_account", "name") != "tenant0" || r.str("wim_account", "password") != "********" || r.str("wim_account", "wim", "uuid") != wimID {
		t.Fatalf("account = %s", r.body)
	}
	if strings.Contains(r.body, "s3cr3t!") {
		t.Fatal("password in the response")
	}

	// #1 list, by tenant and for any; field selection and filters.
	r = b.call("GET", "/openmano/tenant0/wims", nil, 200)
	if l, _ := get(r.json, "wims").([]any); len(l) != 1 || r.str("wims", 0, "name") != "wim0" || r.str("wims", 0, "wim_url") == "" {
		t.Fatalf("list = %s", r.body)
	}
	r = b.call("GET", "/openmano/any/wims?field=name&type=fake", nil, 200)
	if w, _ := get(r.json, "wims", 0).(map[string]any); len(w) != 1 || w["name"] != "wim0" {
		t.Fatalf("projected list = %s", r.body)
	}
	r = b.call("GET", "/openmano/any/wims?name=other", nil, 200)
	if l, _ := get(r.json, "wims").([]any); len(l) != 0 {
		t.Fatalf("filtered list = %s", r.body)
	}
	wantError(t, b.do("GET", "/openmano/any/wims?password=x", "", ""), 400, "Invalid query string at 'password=x'")
	wantError(t, b.do("GET", "/openmano/any/wims?field=config", "", ""), 400, "Invalid query string at 'field=config'")
	wantError(t, b.do("GET", "/openmano/any/wims?limit=abc", "", ""), 400, "limit")

	// #2 show, with the tenant's account nested.
	r = b.call("GET", "/openmano/tenant0/wims/"+wimID, nil, 200)
	if r.str("wim", "wim_account", "user") != "admin" || r.str("wim", "wim_account", "password") != "********" {
		t.Fatalf("show = %s", r.body)
	}
	wantError(t, b.do("GET", "/openmano/tenant0/wims/nope", "", ""), 404, "No record was found in the database")
	wantError(t, b.do("GET", "/openmano/nobody/wims/wim0", "", ""), 404, "No record was found in the database")

	// #7 edit the account without a password: it is kept (masked).
	r = b.call("PUT", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{"name": "renamed", "user": "root"}}, 200)
	if r.str("wim_account", "name") != "renamed" || r.str("wim_account", "user") != "root" || r.str("wim_account", "password") != "********" {
		t.Fatalf("edit = %s", r.body)
	}
	r = b.call("PUT", "/openmano/any/wims/wim0", map[string]any{"wim_account": map[string]any{"config": map[string]any{"x": 888}}}, 200)
	if l, _ := get(r.json, "wim_accounts").([]any); len(l) != 1 || get(r.json, "wim_accounts", 0, "config", "x") != 888.0 {
		t.Fatalf("edit any = %s", r.body)
	}

	// #4 edit the WIM: rename; a new wim_port_mapping replaces the old.
	r = b.call("PUT", "/openmano/wims/wim0", map[string]any{"wim": map[string]any{"name": "wim1", "config": map[string]any{"wim_port_mapping": []any{
		map[string]any{"datacenter_name": "dcA", "pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": "00:00:00:00:00:00:00:0c", "pop_switch_port": 2, "wan_service_endpoint_id": "new"}}}}}}}, 200)
	if r.str("wim", "name") != "wim1" || len(get(r.json, "wim", "config", "wim_port_mapping").([]any)) != 1 {
		t.Fatalf("edit wim = %s", r.body)
	}

	// #9-#11 port mappings.
	r = b.call("GET", "/openmano/any/wims/wim1/port_mapping", nil, 200)
	if l, _ := get(r.json, "wim_port_mapping").([]any); len(l) != 1 {
		t.Fatalf("mappings = %s", r.body)
	}
	r = b.call("POST", "/openmano/tenant0/wims/wim1/port_mapping", map[string]any{"wim_port_mapping": []any{
		map[string]any{"datacenter_name": "dcB", "pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": "00:00:00:00:00:00:00:0b", "pop_switch_port": 1, "wan_service_endpoint_id": "b2"}}}}}, 200)
	if r.str("wim_port_mapping", 0, "wim_name") != "wim1" {
		t.Fatalf("created mappings = %s", r.body)
	}
	// The same again: a conflict naming the mapping.
	wantError(t, b.do("POST", "/openmano/tenant0/wims/wim1/port_mapping", "", r.body), 409, "wim_port_mapping[0].pop_wan_mappings[0]")
	// Unknown keys are refused on this route, naming the key.
	wantError(t, b.do("POST", "/openmano/tenant0/wims/wim1/port_mapping", "", `{"wim_port_mapping": [{"datacenter_name": "dcB", "pop_wan_mappings": [], "colour": "red"}]}`), 400, "colour")
	r = b.call("DELETE", "/openmano/any/wims/wim1/port_mapping", nil, 200)
	if !strings.Contains(r.str("result"), "deleted") {
		t.Fatalf("delete mappings = %s", r.body)
	}
	wantError(t, b.do("DELETE", "/openmano/any/wims/nope/port_mapping", "", ""), 404, "No record")
	wantError(t, b.do("GET", "/openmano/any/wims/nope/port_mapping", "", ""), 404, "No record")

	// #8 detach, then #5 delete.
	r = b.call("DELETE", "/openmano/tenant0/wims/wim1", nil, 200)
	if !strings.Contains(r.str("result"), "account `renamed` deleted") {
		t.Fatalf("detach = %s", r.body)
	}
	wantError(t, b.do("DELETE", "/openmano/tenant0/wims/wim1", "", ""), 404, "No record")
	r = b.call("DELETE", "/openmano/wims/wim1", nil, 200)
	if !strings.Contains(r.str("result"), "deleted") {
		t.Fatalf("delete = %s", r.body)
	}
	wantError(t, b.do("GET", "/openmano/any/wims/wim1", "", ""), 404, "No record")
	wantError(t, b.do("DELETE", "/openmano/wims/wim1", "", ""), 404, "No record")
}

func TestWIMErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		contains                        string
	}{
		{"bad json", "POST", "/openmano/wims", "", `{"wim": `, 400, "Invalid json format"},
		{"bad yaml", "POST", "/openmano/wims", "application/yaml", "wim: [", 400, "Invalid yaml format"},
		{"unsupported type", "POST", "/openmano/wims", "text/plain", "x", 415, "not supported"},
		{"xml", "POST", "/openmano/wims", "application/xml", "<wim/>", 415, "application/json"},
		{"no wim", "POST", "/openmano/wims", "", `{}`, 400, "wim is required"},
		{"wrong type of field", "POST", "/openmano/wims", "", `{"wim": {"name": 5}}`, 400, "wim.name"},
		{"missing name", "POST", "/openmano/wims", "", `{"wim": {"type": "fake", "wim_url": "http://x"}}`, 400, "wim.name"},
		{"bad wim type", "POST", "/openmano/wims", "", `{"wim": {"name": "w", "type": "cisco", "wim_url": "http://x"}}`, 400, "wim.type"},
		{"duplicate name", "POST", "/openmano/wims", "", `{"wim": {"name": "wim0", "type": "fake", "wim_url": "http://x"}}`, 409, "already in use"},
		{"unknown tenant on attach", "POST", "/openmano/nobody/wims/wim0", "", `{"wim_account": {}}`, 404, "No record was found"},
		{"unknown wim on attach", "POST", "/openmano/tenant0/wims/nowim", "", `{"wim_account": {}}`, 404, "No record was found"},
		{"no account body", "POST", "/openmano/tenant0/wims/wim0", "", `{}`, 400, "wim_account"},
		{"edit with nothing attached", "PUT", "/openmano/tenant0/wims/wim0", "", `{"wim_account": {"user": "x"}}`, 404, "No record"},
		{"unknown route", "GET", "/openmano/nothing/here/at/all/x", "", "", 404, ""},
		{"method not allowed", "PATCH", "/openmano/wims", "", "", 405, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, b.do(c.method, c.path, c.ctype, c.body), c.status, c.contains)
		})
	}

	// YAML both ways: an OSM LCM client sends and accepts YAML.
	r := b.do("POST", "/openmano/wims", "application/yaml", "wim:\n  name: yamlwim\n  type: fake\n  wim_url: http://y\n  wim_password: stale-lcm-key\n")
	if r.status != 200 || r.str("wim", "name") != "yamlwim" {
		t.Fatalf("yaml create = %d %s", r.status, r.body)
	}

	// Attach twice: conflict naming both; re-using an account with other
	// credentials: conflict naming the fields.
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{"user": "u", "password": "p"}}, 200)
	wantError(t, b.do("POST", "/openmano/tenant0/wims/wim0", "", `{"wim_account": {}}`), 409, "There is already a wim account attaching the given wim and tenant")
	b.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "tenant1"}}, 200)
	wantError(t, b.do("POST", "/openmano/tenant1/wims/wim0", "", `{"wim_account": {"name": "tenant0", "user": "v", "password": "q"}}`), 409, "Differing fields: user, password")
}

// A WIM that WAN links use cannot be deleted: 409 and nothing deleted.
func TestDeleteWIMInUse(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	b.call("POST", "/openmano/tenant0/instances", instanceBody("ns1"), 200)
	wantError(t, b.do("DELETE", "/openmano/wims/wim0", "", ""), 409, "")
	wantError(t, b.do("DELETE", "/openmano/tenant0/wims/wim0", "", ""), 409, "")
	b.call("GET", "/openmano/tenant0/wims/wim0", nil, 200)
}
