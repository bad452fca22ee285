package httpapi_test

import (
	"regexp"
	"strings"
	"testing"
)

var routeParam = regexp.MustCompile(`\{([^}]+)\}`)

// Issue 14 point 7: every route under /openmano/{tenant_id}/ that names
// another tenant's thing answers 404 to tenant1 and changes nothing; the
// lists of tenant1 show none of tenant0's things. The routes come from
// the server's own table (/openapi.json), so a new route is walked too.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	inst, action, net := ids["instance_id"], ids["action_id"], ids["net_id"]
	ids["scenario_id"] = b.call("POST", "/openmano/tenant0/scenarios", map[string]any{"schema_version": 2, "scenario": map[string]any{
		"name": "sc0", "networks": map[string]any{"net0": map[string]any{"interfaces": []any{}}}}}, 200).str("scenario", "uuid")
	ids["vnf_id"] = b.call("POST", "/openmano/tenant0/vnfs", map[string]any{"vnf": map[string]any{
		"name": "vnf0", "VNFC": []any{map[string]any{"name": "vm0"}}}}, 200).str("vnf", "uuid")
	// What the vim routes name at the VIM (wimro has none: every one is
	// refused, after the datacenter lookup that makes them 404 here).
	for _, k := range []string{"name", "network_id", "port_id", "netmap_id"} {
		ids[k] = "x0"
	}
	ids["item"] = "networks"
	b.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "tenant1"}}, 200)
	ids["tenant_id"] = "tenant1" // tenant1 asks for tenant0's things
	// Routes that create tenant1's own link to a shared thing (a WIM or a
	// datacenter is global; attaching to it is tenant1's right).
	own := map[string]bool{
		"POST /openmano/{tenant_id}/wims/{wim_id}":               true,
		"POST /openmano/{tenant_id}/datacenters/{datacenter_id}": true,
		// SDN controllers are global records (openmano keeps one list, as
		// it does WIMs and datacenters): no tenant's thing.
		"GET /openmano/{tenant_id}/sdn_controllers/{controller_id}":    true,
		"PUT /openmano/{tenant_id}/sdn_controllers/{controller_id}":    true,
		"DELETE /openmano/{tenant_id}/sdn_controllers/{controller_id}": true,
	}
	bodies := map[string]string{
		"instances":   `{"instance": {"name": "x", "networks": []}}`,
		"networks":    `{"network": {"status": "ACTIVE"}}`,
		"cancel":      `{"cancel": {"reason": "x"}}`,
		"abandon":     `{"abandon": {"reason": "x", "force": true}}`,
		"wims":        `{"wim_account": {"name": "x"}}`,
		"datacenters": `{"datacenter": {"vim_username": "x"}}`,
		"scenarios":   `{"scenario": {"name": "x"}}`,
		"sdn_mapping": `{"sdn_port_mapping": []}`,
		"netmaps":     `{"netmap": {"vim_name": "x"}}`,
		"upload":      `{}`,
		"action":      `{"start": null}`,
		"attach":      `{"port": "1"}`,
		// POST /vim/{datacenter_id}/{item}: what vim-net-create sends.
		"{datacenter_id}": `{"network": {"name": "x"}}`,
		"port_mapping":    `{"wim_port_mapping": [{"datacenter_name": "dcA", "pop_wan_mappings": [{"pop_switch_dpid": "00:00:00:00:00:00:00:0d", "pop_switch_port": 7, "wan_service_endpoint_id": "x"}]}]}`,
	}
	leaks := []string{inst, action, net, "ns1", "wim0", "dcA", "acc0", ids["scenario_id"], "sc0", ids["vnf_id"], "vnf0"}
	paths, _ := b.call("GET", "/openapi.json", nil, 200).json["paths"].(map[string]any)
	walked := 0
	for pattern, item := range paths {
		if !strings.HasPrefix(pattern, "/openmano/{tenant_id}/") {
			continue
		}
		segs := strings.Split(pattern, "/")
		params := routeParam.FindAllStringSubmatch(pattern, -1)
		for method := range item.(map[string]any) {
			method = strings.ToUpper(method)
			key := method + " " + pattern
			path := routeParam.ReplaceAllStringFunc(pattern, func(p string) string { return ids[strings.Trim(p, "{}")] })
			if len(params) == 1 {
				// A list of tenant1's own things: none of tenant0's.
				if method == "GET" {
					r := b.call("GET", path, nil, 200)
					for _, l := range leaks {
						if strings.Contains(r.body, l) {
							t.Errorf("%s shows tenant0's %s: %s", key, l, r.body)
						}
					}
					walked++
				}
				continue
			}
			if own[key] {
				continue
			}
			body := ""
			if method == "POST" || method == "PUT" {
				last := segs[len(segs)-1]
				if strings.HasPrefix(last, "{") {
					last = segs[len(segs)-2]
				}
				if body = bodies[last]; body == "" {
					t.Fatalf("%s: no body for %q in the test", key, last)
				}
			}
			before := b.snapshot()
			r := b.do(method, path, "", body)
			if r.status != 404 {
				t.Errorf("%s as tenant1 = %d, want 404: %s", key, r.status, r.body)
			}
			for _, l := range leaks[:3] {
				if strings.Contains(r.body, l) && !strings.Contains(path, l) {
					t.Errorf("%s answer shows tenant0's %s: %s", key, l, r.body)
				}
			}
			sameSnapshot(t, key+" as tenant1", before, b.snapshot())
			walked++
		}
	}
	if walked < 15 {
		t.Fatalf("walked %d tenant routes, want every one (15 or more)", walked)
	}
	// tenant0 still sees everything it had.
	if r := b.call("GET", "/openmano/tenant0/wims/wim0/port_mapping", nil, 200); !strings.Contains(r.body, "wan-b") {
		t.Fatalf("tenant0's port mappings = %s", r.body)
	}
	// The actions of every instance of tenant1 are none of tenant0's.
	if r := b.call("GET", "/openmano/tenant1/instances/any/action", nil, 200); strings.Contains(r.body, action) {
		t.Fatalf("tenant1's actions show tenant0's: %s", r.body)
	}
	if r := b.do("GET", "/openmano/tenant1/instances/any/action/"+action, "", ""); r.status != 404 {
		t.Fatalf("tenant0's action through tenant1's any = %d: %s", r.status, r.body)
	}
	if r := b.call("GET", "/openmano/tenant0/instances/"+inst+"/action", nil, 200); !strings.Contains(r.body, action) {
		t.Fatalf("tenant0's actions = %s", r.body)
	}
}
