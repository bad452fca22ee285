package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// OSM's own clients against a running wimd, one exchange per command or
// method: the request as the client sends it (method, path, headers, the
// body in the YAML or JSON the client writes: PyYAML's safe_dump sorts the
// keys, writes flow style for collections of scalars unless told not to)
// and the fields of the answer the client reads, with the error it would
// hit when one is missing. The clients are those of OSM release SIX and
// EIGHT: the openmano CLI (RO-client/osm_roclient/roclient.py), the
// openmanoclient library (osm_ro/openmanoclient.py) and LCM's ROclient
// (osm_lcm/ROclient.py), whose VIM and WIM flows (vim_sdn.py) run last.

// osmClient sends requests as a Python client does.
type osmClient struct {
	t      *testing.T
	addr   string
	tenant string // uuid, once created
}

// Headers of the clients: the CLI's JSON writes, the CLI's YAML writes
// (content-type only), a CLI GET (requests' defaults), and LCM's and
// openmanoclient's (YAML both ways).
var (
	cliJSON = map[string]string{"Accept": "application/json", "content-type": "application/json"}
	cliYAML = map[string]string{"content-type": "application/yaml"}
	cliGet  = map[string]string{}
	lcmYAML = map[string]string{"Accept": "application/yaml", "content-type": "application/yaml"}
)

// send makes one exchange and returns the status, the raw answer and the
// answer decoded as the client decodes it (PyYAML reads JSON too).
func (c *osmClient) send(method, path string, headers map[string]string, body string) (int, string, map[string]any, http.Header) {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://"+c.addr+path, rd)
	req.Header.Set("User-Agent", "python-requests/2.22.0")
	req.Header.Set("Accept", "*/*")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	doc, err := openAPI()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := doc.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
		c.t.Errorf("the answer does not follow the OpenAPI document: %v\nbody: %.2000s", err, raw)
	}
	var out map[string]any
	if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		if err := yaml.Unmarshal(raw, &out); err != nil {
			c.t.Fatalf("%s %s: the answer is neither YAML nor JSON: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, string(raw), out, resp.Header
}

// ok is send of a request the client expects a 200 for.
func (c *osmClient) ok(command, method, path string, headers map[string]string, body string) map[string]any {
	c.t.Helper()
	status, raw, doc, _ := c.send(method, path, headers, body)
	if status != 200 {
		c.t.Fatalf("%s: %s %s = %d: %s", command, method, path, status, raw)
	}
	return doc
}

// one is the value of the answer's one key, as the CLI's _print_verbose
// and LCM's remove_envelop read it: another key beside it (a top-level
// "warnings") made the CLI print the raw dict and LCM lose the uuid.
func one(t *testing.T, command string, doc map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := doc[key].(map[string]any)
	if len(doc) != 1 || !ok {
		t.Fatalf("%s: answer %v, want one key %q holding an object", command, doc, key)
	}
	return v
}

// str reads a string field the client formats ("{:38}".format(x) fails
// on None, and a missing key is a KeyError).
func str(t *testing.T, command string, m map[string]any, key string) string {
	t.Helper()
	s, ok := m[key].(string)
	if !ok {
		t.Fatalf("%s: the client reads %q, a string; the answer has %#v in %v", command, key, m[key], m)
	}
	return s
}

// itemUUID is the CLI's _get_item_uuid: the list of item, the entry named
// name (or with that uuid).
func (c *osmClient) itemUUID(command, path, item, name string) string {
	c.t.Helper()
	doc := c.ok(command, "GET", path, cliGet, "")
	list, ok := doc[item].([]any)
	if !ok {
		c.t.Fatalf("%s: GET %s: no list %q in %v", command, path, item, doc)
	}
	var found []string
	for _, e := range list {
		m := e.(map[string]any)
		if m["uuid"] == name {
			return name
		}
		if str(c.t, command, m, "name") == name {
			found = append(found, str(c.t, command, m, "uuid"))
		}
	}
	if len(found) != 1 {
		c.t.Fatalf("%s: %d %s named %q in %v", command, len(found), item, name, list)
	}
	return found[0]
}

// lcmVersion is LCM's ROclient.get_version: the first word with a dot of
// str(response bytes), up to a dash.
func lcmVersion(body string) string {
	text := "b'" + strings.ReplaceAll(body, "\n", `\n`) + "'"
	for _, w := range strings.Split(text, " ") {
		if strings.Contains(w, ".") {
			v, _, _ := strings.Cut(w, "-")
			return v
		}
	}
	return ""
}

// atLeast is LCM's versiontuple comparison: each dotted part zero-filled
// to 16 characters, compared as strings.
func atLeast(v, least string) bool {
	fill := func(s string) []string {
		parts := strings.Split(s, ".")
		for i, p := range parts {
			parts[i] = strings.Repeat("0", max(0, 16-len(p))) + p
		}
		return parts
	}
	a, b := fill(v), fill(least)
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return len(a) >= len(b)
}

// TestOSMClients drives wimd with the requests of OSM's clients only: the
// CLI's commands from tenant-create to tenant-delete, a scenario and an
// instance of it whose network spans two datacenters that no NFVO reports
// (network_status_source none), up to its WAN link ACTIVE on the
// controller and deleted, then LCM's start check and its VIM and WIM
// account flows.
func TestOSMClients(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--status-refresh", "100ms")
	t.Cleanup(func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	})
	c := &osmClient{t: t, addr: addr}
	wimURL := "http://fake-" + uuid.NewString()
	ctrl := fake.ControllerFor(wimURL)
	t.Cleanup(ctrl.Reset)

	// version: printed as is.
	if status, raw, _, _ := c.send("GET", "/openmano/version", cliJSON, ""); status != 200 || !strings.Contains(raw, "version") {
		t.Fatalf("version = %d %s", status, raw)
	}
	// tenant-create osm --description "OSM tenant"
	tn := one(t, "tenant-create", c.ok("tenant-create", "POST", "/openmano/tenants", cliJSON, `{"tenant": {"name": "osm", "description": "OSM tenant"}}`), "tenant")
	c.tenant = str(t, "tenant-create", tn, "uuid")
	// tenant-list osm: the list, then the tenant (verbose: created_at, description).
	id := c.itemUUID("tenant-list", "/openmano/tenants", "tenants", "osm")
	tn = one(t, "tenant-list osm", c.ok("tenant-list osm", "GET", "/openmano/tenants/"+id, cliGet, ""), "tenant")
	str(t, "tenant-list osm", tn, "created_at")
	// tenant-edit osm FILE (element_edit: the file's tenant, sent as JSON).
	tn = one(t, "tenant-edit", c.ok("tenant-edit", "PUT", "/openmano/tenants/"+id, cliJSON, `{"tenant": {"description": "edited"}}`), "tenant")
	if tn["description"] != "edited" || tn["name"] != "osm" {
		t.Fatalf("tenant-edit: %v", tn)
	}

	// datacenter-create dcX http://dcX --type openstack --config '{...}':
	// vim_url_admin is sent null when --url-admin is not given.
	for i, dc := range []string{"dcA", "dcB"} {
		body := fmt.Sprintf(`{"datacenter": {"name": %q, "vim_url": "http://%s", "type": "openstack", "vim_url_admin": null, "config": `+
			`{"network_status_source": "none", "vlan_range": "3000-3001", "external_connections": [{"condition": {}, `+
			`"vim_external_port": {"switch": "00:00:00:00:00:00:00:0%d", "port": "1"}}]}}}`, dc, dc, i+1)
		str(t, "datacenter-create", one(t, "datacenter-create", c.ok("datacenter-create", "POST", "/openmano/datacenters", cliJSON, body), "datacenter"), "uuid")
	}
	// datacenter-list --all
	c.itemUUID("datacenter-list --all", "/openmano/any/datacenters", "datacenters", "dcA")
	dcs := map[string]string{}
	for _, dc := range []string{"dcA", "dcB"} {
		// datacenter-attach dcX --user u --password p --vim-tenant-name admin
		dcs[dc] = c.itemUUID("datacenter-attach", "/openmano/any/datacenters", "datacenters", dc)
		d := one(t, "datacenter-attach", c.ok("datacenter-attach", "POST", "/openmano/"+c.tenant+"/datacenters/"+dcs[dc], cliJSON,
			`{"datacenter": {"vim_tenant_name": "admin", "vim_username": "u", "vim_password": "p"}}`), "datacenter")
		str(t, "datacenter-attach", d, "uuid")
	}
	// datacenter-edit-vim-tenant dcA --user u2 --password p2
	d := one(t, "datacenter-edit-vim-tenant", c.ok("datacenter-edit-vim-tenant", "PUT", "/openmano/"+c.tenant+"/datacenters/"+dcs["dcA"], cliJSON,
		`{"datacenter": {"vim_username": "u2", "vim_password": "p2"}}`), "datacenter")
	if str(t, "datacenter-edit-vim-tenant", d, "uuid") != dcs["dcA"] {
		t.Fatalf("datacenter-edit-vim-tenant: %v", d)
	}
	// datacenter-edit dcA FILE
	d = one(t, "datacenter-edit", c.ok("datacenter-edit", "PUT", "/openmano/datacenters/"+dcs["dcA"], cliJSON, `{"datacenter": {"description": "site A"}}`), "datacenter")
	if d["description"] != "site A" {
		t.Fatalf("datacenter-edit: %v", d)
	}
	// datacenter-list (the tenant's)
	c.itemUUID("datacenter-list", "/openmano/"+c.tenant+"/datacenters", "datacenters", "dcB")

	// wim-create wan1 URL --type fake --config '{wim_port_mapping: [...]}'
	mapping := `{"datacenter_name": "%s", "pop_wan_mappings": [{"pop_switch_dpid": "00:00:00:00:00:00:00:0%d", "pop_switch_port": "1", ` +
		`"wan_service_endpoint_id": "ep-%d", "wan_service_mapping_info": {"mapping_type": "fake"}}]}`
	w := one(t, "wim-create", c.ok("wim-create", "POST", "/openmano/wims", cliJSON, fmt.Sprintf(`{"wim": {"name": "wan1", "wim_url": %q, "type": "fake", "config": {"wim_port_mapping": [`+
		mapping+`, `+mapping+`]}}}`, wimURL, "dcA", 1, 0, "dcB", 2, 1)), "wim")
	wim := str(t, "wim-create", w, "uuid")
	// wim-list --all
	c.itemUUID("wim-list --all", "/openmano/any/wims", "wims", "wan1")
	// wim-account-create wan1 --account-name acc1 --user u --password p
	a := one(t, "wim-account-create", c.ok("wim-account-create", "POST", "/openmano/"+c.tenant+"/wims/"+wim, cliJSON,
		`{"wim_account": {"name": "acc1", "user": "u", "password": "p"}}`), "wim_account")
	str(t, "wim-account-create", a, "uuid")
	// wim-list (the tenant's), wim-list wan1
	one(t, "wim-list wan1", c.ok("wim-list wan1", "GET", "/openmano/"+c.tenant+"/wims/"+c.itemUUID("wim-list", "/openmano/"+c.tenant+"/wims", "wims", "wan1"), cliGet, ""), "wim")
	// wim-port-mapping-list wan1: printed at verbosity 4 (the whole answer).
	if pm, _ := c.ok("wim-port-mapping-list", "GET", "/openmano/"+c.tenant+"/wims/"+wim+"/port_mapping", cliGet, "")["wim_port_mapping"].([]any); len(pm) != 2 {
		t.Fatalf("wim-port-mapping-list: %v", pm)
	}

	// vnf-create FILE (v0.1): the VNF the scenario names, sent as JSON;
	// vnf-list and vnf-list cirros read these fields.
	vnf := one(t, "vnf-create", c.ok("vnf-create", "POST", "/openmano/"+c.tenant+"/vnfs", cliJSON,
		`{"vnf": {"name": "cirros", "VNFC": [{"name": "vm", "description": "the VM"}], "external-connections": [{"name": "eth0", "VNFC": "vm", "local_iface_name": "eth0"}]}}`), "vnf")
	vnfID := str(t, "vnf-create", vnf, "uuid")
	c.itemUUID("vnf-list", "/openmano/"+c.tenant+"/vnfs", "vnfs", "cirros")
	vnf = one(t, "vnf-list cirros", c.ok("vnf-list cirros", "GET", "/openmano/"+c.tenant+"/vnfs/"+vnfID, cliGet, ""), "vnf")
	for _, k := range []string{"uuid", "name", "osm_id", "created_at"} {
		str(t, "vnf-list cirros", vnf, k)
	}
	for _, k := range []string{"external_name", "vm_name", "internal_name"} {
		str(t, "vnf-list cirros (external-connections)", vnf["external-connections"].([]any)[0].(map[string]any), k)
	}

	// scenario-create FILE (v0.2): the file re-dumped as block YAML.
	scenario := "---\nscenario:\n    description: two sites\n    name: sc1\n    networks:\n        wan:\n            external: false\n" +
		"            interfaces:\n            -   vnf1: eth0\n            -   vnf2: eth0\n            type: bridge\n" +
		"    vnfs:\n        vnf1:\n            vnf_name: cirros\n        vnf2:\n            vnf_name: cirros\nschema_version: 2\n"
	sc := one(t, "scenario-create", c.ok("scenario-create", "POST", "/openmano/"+c.tenant+"/scenarios", cliYAML, scenario), "scenario")
	scID := str(t, "scenario-create", sc, "uuid")
	// scenario-list, scenario-list sc1
	c.itemUUID("scenario-list", "/openmano/"+c.tenant+"/scenarios", "scenarios", "sc1")
	sc = one(t, "scenario-list sc1", c.ok("scenario-list sc1", "GET", "/openmano/"+c.tenant+"/scenarios/"+scID, cliGet, ""), "scenario")
	for _, k := range []string{"uuid", "name", "created_at"} {
		str(t, "scenario-list sc1", sc, k)
	}
	for _, v := range sc["vnfs"].([]any) {
		for _, k := range []string{"vnf_id", "name"} {
			str(t, "scenario-list sc1 (vnfs)", v.(map[string]any), k)
		}
	}
	nets := sc["nets"].([]any)
	if len(nets) != 1 || str(t, "scenario-list sc1 (nets)", nets[0].(map[string]any), "name") != "wan" || nets[0].(map[string]any)["external"] != false {
		t.Fatalf("scenario-list sc1: nets %v", nets)
	}

	// instance-scenario-create FILE --scenario sc1 --datacenter dcA --name ns1:
	// the file places the scenario's net in both datacenters.
	instance := func(name string) string {
		return fmt.Sprintf("---\ninstance:\n    datacenter: %s\n    name: %s\n    networks:\n        wan:\n            sites:\n"+
			"            -   datacenter: dcA\n            -   datacenter: dcB\n    scenario: %s\nschema_version: '0.1'\n", dcs["dcA"], name, scID)
	}
	inst := c.ok("instance-scenario-create", "POST", "/openmano/"+c.tenant+"/instances", cliYAML, instance("ns1"))
	instID := str(t, "instance-scenario-create", inst, "uuid")
	for _, k := range []string{"name", "created_at"} {
		str(t, "instance-scenario-create", inst, k)
	}
	if _, err := time.Parse("2006-01-02T15:04:05", inst["created_at"].(string)); err != nil {
		t.Errorf("created_at is not openmano's form: %v", err)
	}
	// Both networks are ACTIVE at once, each on the first free VLAN of its datacenter.
	for _, n := range inst["networks"].([]any) {
		m := n.(map[string]any)
		if m["status"] != "ACTIVE" || m["encapsulation_id"] != 3000 {
			t.Fatalf("instance-scenario-create: network %v, want ACTIVE on VLAN 3000", m)
		}
	}
	// instance-scenario-list
	c.itemUUID("instance-scenario-list", "/openmano/"+c.tenant+"/instances", "instances", "ns1")
	// instance-scenario-list ns1, until its WAN link is ACTIVE.
	eventually.Until(t, 60*time.Second, "the WAN link ACTIVE", func() (bool, string) {
		inst = c.ok("instance-scenario-list ns1", "GET", "/openmano/"+c.tenant+"/instances/"+instID, cliGet, "")
		links, _ := inst["wan_links"].([]any)
		return len(links) == 1 && links[0].(map[string]any)["status"] == "ACTIVE" && ctrl.Count() == 1, fmt.Sprint(links)
	})
	for _, k := range []string{"uuid", "name", "created_at", "scenario_id", "scenario_name"} {
		str(t, "instance-scenario-list ns1", inst, k)
	}
	if inst["scenario_name"] != "sc1" || len(inst["vnfs"].([]any)) != 0 || len(inst["nets"].([]any)) != 2 {
		t.Fatalf("instance-scenario-list ns1: %v", inst)
	}
	for _, n := range inst["nets"].([]any) {
		m := n.(map[string]any)
		str(t, "instance-scenario-list ns1 (nets)", m, "uuid")
		str(t, "instance-scenario-list ns1 (nets)", m, "status")
		if _, ok := m["created"].(bool); !ok {
			t.Fatalf("instance-scenario-list ns1: nets[].created %v", m)
		}
	}
	// action-list (every instance of the tenant), action-list --id: one key.
	acts := c.ok("action-list", "GET", "/openmano/"+c.tenant+"/instances/any/action", cliGet, "")["actions"].([]any)
	if len(acts) != 1 {
		t.Fatalf("action-list: %v", acts)
	}
	actID := str(t, "action-list", acts[0].(map[string]any), "uuid")
	if act := c.ok("action-list --id", "GET", "/openmano/"+c.tenant+"/instances/any/action/"+actID, cliGet, "")["actions"].([]any); len(act) != 1 {
		t.Fatalf("action-list --id: %v", act)
	}
	// scenario-delete while its instance lives: refused, naming why.
	if status, raw, _, _ := c.send("DELETE", "/openmano/"+c.tenant+"/scenarios/"+scID, cliGet, ""); status != 409 || !strings.Contains(raw, "instance") {
		t.Fatalf("scenario-delete of a used scenario = %d %s", status, raw)
	}
	// instance-scenario-delete ns1 -f: LCM reads the action id in the text.
	del := c.ok("instance-scenario-delete", "DELETE", "/openmano/"+c.tenant+"/instances/"+c.itemUUID("instance-scenario-delete", "/openmano/"+c.tenant+"/instances", "instances", "ns1"), cliGet, "")
	res := str(t, "instance-scenario-delete", del, "result")
	_, after, _ := strings.Cut(res, "action_id=")
	delAct, _, _ := strings.Cut(after, " ")
	eventually.Until(t, 60*time.Second, "the WAN link deleted on the controller", func() (bool, string) {
		act := c.ok("action-list --id", "GET", "/openmano/"+c.tenant+"/instances/any/action/"+delAct, cliGet, "")["actions"].([]any)[0].(map[string]any)
		return act["number_done"] == 1 && ctrl.Count() == 0, fmt.Sprint(act, " services ", ctrl.Count())
	})
	// The link's DELETE is DONE, so its VLANs are free: the next instance gets VLAN 3000 again.
	inst = c.ok("instance-scenario-create", "POST", "/openmano/"+c.tenant+"/instances", cliYAML, instance("ns2"))
	if n := inst["networks"].([]any)[0].(map[string]any); n["encapsulation_id"] != 3000 {
		t.Fatalf("VLAN of the next instance %v, want 3000 (freed)", n["encapsulation_id"])
	}
	res = str(t, "instance-scenario-delete", c.ok("instance-scenario-delete", "DELETE", "/openmano/"+c.tenant+"/instances/"+str(t, "instance-scenario-create", inst, "uuid"), cliGet, ""), "result")
	_, after, _ = strings.Cut(res, "action_id=")
	delAct, _, _ = strings.Cut(after, " ")
	// The account is deleted below only once no DELETE of it is pending.
	eventually.Until(t, 60*time.Second, "ns2's WAN link deleted", func() (bool, string) {
		act := c.ok("action-list --id", "GET", "/openmano/"+c.tenant+"/instances/any/action/"+delAct, cliGet, "")["actions"].([]any)[0].(map[string]any)
		return act["number_done"] == 1, fmt.Sprint(act)
	})

	// An instance naming a scenario that is not there: 404 naming it.
	if status, raw, _, _ := c.send("POST", "/openmano/"+c.tenant+"/instances", cliYAML,
		"---\ninstance:\n    datacenter: dcA\n    name: ns3\n    scenario: nosuch\nschema_version: '0.1'\n"); status != 404 || !strings.Contains(raw, "instance.scenario") || !strings.Contains(raw, "nosuch") {
		t.Fatalf("instance of an unknown scenario = %d %s", status, raw)
	}
	// scenario-delete sc1 -f, wim-account-delete, wim-delete, datacenter-detach, datacenter-delete, tenant-delete: each reads result.
	for _, step := range []struct{ command, path string }{
		{"scenario-delete", "/openmano/" + c.tenant + "/scenarios/" + scID},
		{"vnf-delete", "/openmano/" + c.tenant + "/vnfs/" + vnfID},
		{"wim-account-delete", "/openmano/" + c.tenant + "/wims/" + wim},
		{"wim-delete", "/openmano/wims/" + wim},
		{"datacenter-detach", "/openmano/" + c.tenant + "/datacenters/" + dcs["dcA"]},
		{"datacenter-detach", "/openmano/" + c.tenant + "/datacenters/" + dcs["dcB"]},
		{"datacenter-delete", "/openmano/datacenters/" + dcs["dcA"]},
		{"datacenter-delete", "/openmano/datacenters/" + dcs["dcB"]},
	} {
		str(t, step.command, c.ok(step.command, "DELETE", step.path, cliJSON, ""), "result")
	}

	// LCM starts: its version check.
	status, raw, _, _ := c.send("GET", "/openmano/version", lcmYAML, "")
	if v := lcmVersion(raw); status != 200 || !atLeast(v, "0.6.3") {
		t.Fatalf("LCM reads version %q from %d %q; it needs 0.6.3 or later", v, status, raw)
	}
	// VimLcm.create: the VIM, then the account (LCM attaches by uuid).
	vim := one(t, "VimLcm.create", c.ok("VimLcm.create", "POST", "/openmano/datacenters", lcmYAML,
		"datacenter: {description: a VIM, name: vim1, type: openstack, vim_url: 'http://vim1:5000/v3'}\n"), "datacenter")
	vimID := str(t, "VimLcm.create", vim, "uuid")
	c.ok("VimLcm.create", "GET", "/openmano/any/datacenters/"+vimID, lcmYAML, "")
	c.itemUUID("VimLcm.create", "/openmano/tenants", "tenants", "osm")
	acc := one(t, "VimLcm.create", c.ok("VimLcm.create", "POST", "/openmano/"+c.tenant+"/datacenters/"+vimID, lcmYAML,
		"datacenter: {vim_password: secret, vim_tenant_name: admin, vim_username: admin}\n"), "datacenter")
	str(t, "VimLcm.create", acc, "uuid")
	// WimLcm.create: the WIM body carries the account's user and password too.
	w = one(t, "WimLcm.create", c.ok("WimLcm.create", "POST", "/openmano/wims", lcmYAML,
		fmt.Sprintf("wim: {description: null, name: wim2, password: secret, type: fake, user: admin, wim_url: '%s'}\n", wimURL)), "wim")
	wim2 := str(t, "WimLcm.create", w, "uuid")
	c.ok("WimLcm.create", "GET", "/openmano/any/wims/"+wim2, lcmYAML, "")
	acc = one(t, "WimLcm.create", c.ok("WimLcm.create", "POST", "/openmano/"+c.tenant+"/wims/"+wim2, lcmYAML,
		"wim_account: {name: wim2, password: secret, user: admin}\n"), "wim_account")
	str(t, "WimLcm.create", acc, "uuid")
	// WimLcm.delete and VimLcm.delete: detach (checked by uuid), then delete.
	for _, step := range []struct{ flow, item, id string }{{"WimLcm.delete", "wims", wim2}, {"VimLcm.delete", "datacenters", vimID}} {
		c.ok(step.flow, "GET", "/openmano/"+c.tenant+"/"+step.item+"/"+step.id, lcmYAML, "")
		c.ok(step.flow, "DELETE", "/openmano/"+c.tenant+"/"+step.item+"/"+step.id, lcmYAML, "")
		c.ok(step.flow, "DELETE", "/openmano/"+step.item+"/"+step.id, lcmYAML, "")
	}
	// tenant-delete osm -f
	str(t, "tenant-delete", c.ok("tenant-delete", "DELETE", "/openmano/tenants/"+c.tenant, cliGet, ""), "result")
}
