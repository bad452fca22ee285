package httpapi_test

import (
	"strings"
	"testing"
)

// The rest of OSM's openmano commands (issue 32): the VNF catalogue, the
// vim-* commands (refused: wimro has no VIM) and the SDN controller
// records. Each request is sent as OSM's client sends it (roclient v8.0.4:
// JSON with Accept and content-type application/json for VNFs and SDN
// controllers, YAML for vim-*-create; openmanoclient v6.0.4: YAML with
// Accept application/yaml), and each answer is checked for the fields the
// client reads.

// vnfV1 is a VNF descriptor of openmano's v0.1 form, as vnf-create reads
// it from a file and sends it.
const vnfV1 = `{"vnf": {"name": "cirros", "description": "a cirros VNF", "external-connections": [
	{"name": "eth0", "type": "mgmt", "VNFC": "cirros-VM", "local_iface_name": "eth0", "description": "mgmt"}],
	"internal-connections": [{"name": "inner", "description": "inner net", "type": "bridge",
	"elements": [{"VNFC": "cirros-VM", "local_iface_name": "eth1"}]}],
	"VNFC": [{"name": "cirros-VM", "description": "the VM", "VNFC image": "/images/cirros.qcow2"}]}}`

// vnfdV3 is OSM's VNFD catalogue, as vnf-create sends it to the v3 route.
const vnfdV3 = `{"vnfd:vnfd-catalog": {"vnfd:vnfd": [{"id": "hackfest-vnf", "name": "hackfest", "description": "two VDUs",
	"mgmt-interface": {"cp": "mgmt"}, "connection-point": [{"name": "mgmt"}, {"name": "data"}],
	"vdu": [{"id": "vdu1", "name": "vdu1", "image": "ubuntu", "interface": [
		{"name": "eth0", "type": "EXTERNAL", "external-connection-point-ref": "mgmt", "virtual-interface": {"type": "VIRTIO"}},
		{"name": "eth1", "type": "INTERNAL", "internal-connection-point-ref": "vdu1-int"}]},
		{"id": "vdu2", "image": "ubuntu", "interface": [
		{"name": "eth0", "external-connection-point-ref": "data", "virtual-interface": {"vpci": "0000:00:0a.0", "bandwidth": 1000}}]}],
	"internal-vld": [{"id": "int", "name": "internal", "type": "ELAN"}]}]}}`

// osmJSON sends body as roclient does for VNFs and SDN controllers.
func (b *bundle) osmJSON(method, path, body string) response {
	b.t.Helper()
	return b.doHeaders(method, path, body, map[string]string{"Accept": "application/json", "Content-Type": "application/json"})
}

// osmYAML sends body as openmanoclient does (and roclient's YAML posts).
func (b *bundle) osmYAML(method, path, body string) response {
	b.t.Helper()
	r := b.doHeaders(method, path, body, map[string]string{"Accept": "application/yaml", "Content-Type": "application/yaml"})
	if r.status == 200 && (strings.HasPrefix(strings.TrimSpace(r.body), "{") || !strings.Contains(r.header.Get("Content-Type"), "yaml")) {
		b.t.Fatalf("%s %s: a YAML client got %s: %s", method, path, r.header.Get("Content-Type"), r.body)
	}
	return r
}

// TestVNFCatalogue (issue 32 remaining, point 1): vnf-create (openmano's
// v0.1 descriptor, and OSM's VNFD on /v3), vnf-list, vnf-list NAME and
// vnf-delete answer the fields OSM's client prints; a scenario names its
// VNFs from the catalogue (an unknown one is 404 naming it, an NSD's
// unknown vnfd-id-ref a 400), and a VNF a scenario names is not deleted.
func TestVNFCatalogue(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	r := b.osmJSON("POST", "/openmano/tenant0/vnfs", vnfV1)
	if r.status != 200 || r.str("vnf", "uuid") == "" || r.str("vnf", "name") != "cirros" {
		t.Fatalf("vnf-create = %d %s", r.status, r.body)
	}
	vnf := r.str("vnf", "uuid")
	if r.str("vnf", "VNFC", 0, "name") != "cirros-VM" || r.str("vnf", "nets", 0, "name") != "inner" ||
		r.str("vnf", "external-connections", 0, "external_name") != "eth0" || r.str("vnf", "external-connections", 0, "vm_name") != "cirros-VM" ||
		r.str("vnf", "external-connections", 0, "internal_name") != "eth0" || len(r.str("vnf", "created_at")) != len("2006-01-02T15:04:05") {
		t.Fatalf("vnf-create answer lacks what vnf-list NAME prints: %s", r.body)
	}
	// openmanoclient's create_vnf: the same descriptor in YAML.
	y := b.osmYAML("POST", "/openmano/tenant0/vnfs", "vnf:\n  name: cirros2\n  VNFC:\n  - {name: vm1, description: one}\n")
	if y.status != 200 || !strings.Contains(y.body, "name: cirros2") {
		t.Fatalf("create_vnf (YAML) = %d %s", y.status, y.body)
	}
	r = b.osmJSON("POST", "/openmano/v3/tenant0/vnfd", vnfdV3)
	if r.status != 200 || r.str("vnfd", 0, "osm_id") != "hackfest-vnf" || r.str("vnfd", 0, "name") != "hackfest" ||
		r.str("vnfd", 0, "VNFC", 1, "name") != "vdu2" || r.str("vnfd", 0, "external-connections", 0, "type") != "mgmt" ||
		r.str("vnfd", 0, "external-connections", 1, "vpci") != "0000:00:0a.0" || r.str("vnfd", 0, "nets", 0, "type") != "bridge" {
		t.Fatalf("vnf-create (VNFD) = %d %s", r.status, r.body)
	}
	list := b.call("GET", "/openmano/tenant0/vnfs", nil, 200)
	if n := len(get(list.json, "vnfs").([]any)); n != 3 {
		t.Fatalf("vnf-list: %d VNFs, want 3: %s", n, list.body)
	}
	for _, k := range []string{"uuid", "name", "osm_id", "created_at"} {
		if list.str("vnfs", 0, k) == "" {
			t.Fatalf("vnf-list: the first VNF has no %s: %s", k, list.body)
		}
	}
	show := b.call("GET", "/openmano/tenant0/vnfs/"+vnf, nil, 200)
	if show.str("vnf", "name") != "cirros" || show.str("vnf", "description") != "a cirros VNF" {
		t.Fatalf("vnf-list cirros = %s", show.body)
	}
	wantError(t, b.do("GET", "/openmano/tenant0/vnfs/nosuch", "", ""), 404, "nosuch")

	// A scenario names its VNFs of the catalogue, by name or vnf_id.
	wantError(t, b.do("POST", "/openmano/tenant0/scenarios", "application/yaml", "schema_version: 2\nscenario:\n  name: s0\n  vnfs: {v1: {vnf_name: nosuch}}\n  networks: {}\n"),
		404, `scenario.vnfs.v1: no VNF with name "nosuch"`)
	r = b.do("POST", "/openmano/tenant0/scenarios", "application/yaml", "schema_version: 2\nscenario:\n  name: s1\n  vnfs: {v1: {vnf_name: cirros}, v2: {vnf_id: "+vnf+"}}\n  networks: {}\n")
	if r.status != 200 || r.str("scenario", "vnfs", 0, "vnf_id") != vnf || r.str("scenario", "vnfs", 1, "vnf_id") != vnf {
		t.Fatalf("scenario naming cirros = %d %s", r.status, r.body)
	}
	wantError(t, b.do("POST", "/openmano/tenant0/scenarios", "", `{"scenario": {"name": "s2", "vnfs": {"v1": {}}}}`), 400, "vnf_id or vnf_name")
	// The v0.1 topology names its VNFs by "VNF model".
	r = b.do("POST", "/openmano/tenant0/scenarios", "", `{"name": "s3", "topology": {"nodes": {"v1": {"type": "VNF", "VNF model": "cirros2"}, "n": {"type": "network"}}, "connections": {}}}`)
	if r.status != 200 || r.str("scenario", "vnfs", 0, "vnf_id") == "" {
		t.Fatalf("v0.1 scenario naming cirros2 = %d %s", r.status, r.body)
	}
	nsd := `{"nsd:nsd-catalog": {"nsd:nsd": [{"id": "ns", "constituent-vnfd": [{"member-vnf-index": 1, "vnfd-id-ref": "%s"}], "vld": [{"id": "wan"}]}]}}`
	wantError(t, b.do("POST", "/openmano/v3/tenant0/nsd", "", strings.Replace(nsd, "%s", "nosuch", 1)), 400, "vnfd-id-ref")
	if r := b.do("POST", "/openmano/v3/tenant0/nsd", "", strings.Replace(nsd, "%s", "hackfest-vnf", 1)); r.status != 200 || r.str("nsd", 0, "vnfs", 0, "vnf_id") == "" {
		t.Fatalf("NSD naming hackfest-vnf = %d %s", r.status, r.body)
	}

	// vnf-delete: refused while a scenario names the VNF.
	wantError(t, b.do("DELETE", "/openmano/tenant0/vnfs/"+vnf, "", ""), 409, "s1")
	b.call("DELETE", "/openmano/tenant0/scenarios/s1", nil, 200)
	r = b.osmJSON("DELETE", "/openmano/tenant0/vnfs/"+vnf, "")
	if r.status != 200 || !strings.Contains(r.str("result"), vnf) {
		t.Fatalf("vnf-delete = %d %s", r.status, r.body)
	}
	wantError(t, b.do("GET", "/openmano/tenant0/vnfs/"+vnf, "", ""), 404, vnf)
}

// TestVNFDescriptorErrors: a VNF descriptor wimro cannot read is a 400
// naming the field, and nothing is kept.
func TestVNFDescriptorErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	tests := []struct{ name, path, body, field string }{
		{"no vnf", "/openmano/tenant0/vnfs", `{"name": "x"}`, "vnf"},
		{"no VNFC", "/openmano/tenant0/vnfs", `{"vnf": {"name": "x"}}`, "vnf.VNFC"},
		{"a connection to no VNFC", "/openmano/tenant0/vnfs", `{"vnf": {"name": "x", "VNFC": [{"name": "vm"}], "external-connections": [{"name": "e", "VNFC": "other"}]}}`,
			"vnf.external-connections[0].VNFC"},
		{"a bad schema_version", "/openmano/tenant0/vnfs", `{"schema_version": "3", "vnf": {"name": "x", "VNFC": [{"name": "vm"}]}}`, "schema_version"},
		{"a VNFD without id", "/openmano/v3/tenant0/vnfd", `{"vnfd-catalog": {"vnfd": [{"name": "x"}]}}`, "vnfd-catalog.vnfd[0].id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.t = t
			r := b.do("POST", tt.path, "", tt.body)
			wantError(t, r, 400, tt.field)
			if r.str("error", "field") != tt.field {
				t.Fatalf("field %q, want %q", r.str("error", "field"), tt.field)
			}
		})
	}
	if r := b.call("GET", "/openmano/tenant0/vnfs", nil, 200); len(get(r.json, "vnfs").([]any)) != 0 {
		t.Fatalf("VNFs kept from bad descriptors: %s", r.body)
	}
}

// TestVIMCommandsRefused (issue 32 remaining, point 2): what openmano
// proxies to the datacenter's VIM is a 400 naming why (the datacenter has
// no VIM connector in wimro), in openmano's error body that OSM's client
// prints; an unknown datacenter stays a 404; netmaps, made from the VIM's
// networks, are an empty list. scenario-verify and instance-scenario-action,
// which act on VNFs at the VIMs, are refused the same way.
func TestVIMCommandsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	tests := []struct{ name, method, path, ctype, body string }{
		{"vim-net-list", "GET", "/openmano/tenant0/vim/dcA/networks", "", ""},
		{"vim-net-list NAME", "GET", "/openmano/tenant0/vim/dcA/networks/net1", "", ""},
		{"vim-tenant-list", "GET", "/openmano/tenant0/vim/dcA/tenants", "", ""},
		{"vim-image-list", "GET", "/openmano/tenant0/vim/dcA/images", "", ""},
		{"vim-net-delete", "DELETE", "/openmano/tenant0/vim/dcA/networks/net1", "", ""},
		{"vim-image-delete", "DELETE", "/openmano/tenant0/vim/dcA/images/img1", "", ""},
		{"vim-net-create", "POST", "/openmano/tenant0/vim/dcA/networks", "application/yaml", "---\nnetwork:\n    name: net1\n    type: bridge\n"},
		{"vim-tenant-create", "POST", "/openmano/tenant0/vim/dcA/tenants", "application/yaml", "---\ntenant:\n    name: t1\n"},
		{"vim-net-sdn-attach", "POST", "/openmano/tenant0/vim/dcA/network/net1/attach", "application/json", `{"port": "1", "vlan": 10}`},
		{"vim-net-sdn-detach --all", "DELETE", "/openmano/tenant0/vim/dcA/network/net1/detach", "", ""},
		{"vim-net-sdn-detach --id", "DELETE", "/openmano/tenant0/vim/dcA/network/net1/detach/p1", "", ""},
		{"datacenter-netmap-import", "POST", "/openmano/tenant0/datacenters/dcA/netmaps/upload", "-", ""},
		{"datacenter-netmap-create", "POST", "/openmano/tenant0/datacenters/dcA/netmaps", "application/json", `{"netmap": {"vim_name": "net1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.t = t
			r := b.do(tt.method, tt.path, tt.ctype, tt.body)
			wantError(t, r, 400, "has no VIM connector")
			if !strings.Contains(r.str("error", "description"), "dcA") {
				t.Fatalf("the refusal does not name the datacenter: %s", r.body)
			}
		})
	}
	b.t = t
	wantError(t, b.do("GET", "/openmano/tenant0/vim/nosuch/networks", "", ""), 404, "nosuch")
	wantError(t, b.do("GET", "/openmano/tenant0/vim/dcA/flavors", "", ""), 400, "networks, tenants and images")
	if r := b.call("GET", "/openmano/tenant0/datacenters/dcA/netmaps", nil, 200); len(get(r.json, "netmaps").([]any)) != 0 {
		t.Fatalf("datacenter-netmap-list = %s", r.body)
	}
	if r := b.osmJSON("DELETE", "/openmano/tenant0/datacenters/dcA/netmaps", ""); r.str("result") != "0 netmap deleted" {
		t.Fatalf("datacenter-netmap-delete --all = %s", r.body)
	}
	wantError(t, b.do("GET", "/openmano/tenant0/datacenters/dcA/netmaps/n1", "", ""), 404, "No netmap found")
	wantError(t, b.do("PUT", "/openmano/tenant0/datacenters/dcA/netmaps/n1", "", `{"netmap": {"name": "n2"}}`), 404, "No netmap found")

	// scenario-verify and instance-scenario-action (JSON, content-type
	// only): they act on VNFs at the VIMs, which wimro never deploys.
	b.call("POST", "/openmano/tenant0/scenarios", map[string]any{"scenario": map[string]any{"name": "sc0", "networks": map[string]any{}}}, 200)
	wantError(t, b.doHeaders("POST", "/openmano/tenant0/scenarios/sc0/action", `{"verify": {"instance_name": "scen-verify-return5"}}`,
		map[string]string{"content-type": "application/json"}), 400, "wimro deploys no VNF")
	wantError(t, b.doHeaders("POST", "/openmano/tenant0/instances/"+ids["instance_id"]+"/action", `{"reboot": null, "vms": ["vm1"]}`,
		map[string]string{"content-type": "application/json"}), 400, "wimro deploys no VNF")
	wantError(t, b.do("POST", "/openmano/tenant0/scenarios/nosuch/action", "", `{"verify": {}}`), 404, "nosuch")
}

// TestSDNControllers (issue 32 remaining, point 3): sdn-controller-create,
// -list, -list NAME, -edit and -delete keep openmano's records (the
// password accepted with a warning, never kept or shown); a datacenter's
// SDN port mapping is set, listed and cleared for the controller its
// config.sdn-controller names; a controller a datacenter names is not
// deleted.
func TestSDNControllers(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	r := b.osmJSON("POST", "/openmano/tenant0/sdn_controllers",
		`{"sdn_controller": {"name": "odl", "ip": "10.0.0.1", "port": 8080, "dpid": "00:00:00:00:00:00:00:01", "type": "opendaylight", "description": "lab", "user": "admin", "password": "s3cret"}}`)
	if r.status != 200 || r.str("sdn_controller", "uuid") == "" || r.str("sdn_controller", "name") != "odl" || strings.Contains(r.body, "s3cret") {
		t.Fatalf("sdn-controller-create = %d %s", r.status, r.body)
	}
	if w := strings.Join(r.header.Values("Warning"), " "); !strings.Contains(w, "password is not kept") {
		t.Fatalf("no warning that the password is not kept: %q", w)
	}
	id := r.str("sdn_controller", "uuid")
	list := b.call("GET", "/openmano/tenant0/sdn_controllers", nil, 200)
	if list.str("sdn_controllers", 0, "uuid") != id || list.str("sdn_controllers", 0, "name") != "odl" {
		t.Fatalf("sdn-controller-list = %s", list.body)
	}
	if r := b.call("GET", "/openmano/tenant0/sdn_controllers/"+id, nil, 200); r.str("sdn_controllers", "dpid") != "00:00:00:00:00:00:00:01" || strings.Contains(r.body, "password") {
		t.Fatalf("sdn-controller-list odl = %s", r.body)
	}
	r = b.osmJSON("PUT", "/openmano/tenant0/sdn_controllers/"+id, `{"sdn_controller": {"ip": "10.0.0.2", "port": 8181}}`)
	if r.status != 200 || r.str("sdn_controller", "ip") != "10.0.0.2" || r.str("sdn_controller", "type") != "opendaylight" {
		t.Fatalf("sdn-controller-edit = %d %s", r.status, r.body)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"sdn_controller": {"dpid": "1"}}`, "sdn_controller.dpid"},
		{`{"sdn_controller": {"type": "ryu"}}`, "sdn_controller.type"},
		{`{"sdn_controller": {"ip": "ten"}}`, "sdn_controller.ip"},
	} {
		wantError(t, b.do("PUT", "/openmano/tenant0/sdn_controllers/odl", "", bad.body), 400, bad.field)
	}

	// The port mapping needs the datacenter to name a controller.
	mapping := `{"sdn_port_mapping": [{"compute_node": "node1", "ports": [{"pci": "0000:81:00.0", "switch_port": "port-1"}, {"pci": "0000:81:00.1", "switch_mac": "00:11:22:33:44:55"}]}]}`
	wantError(t, b.osmJSON("GET", "/openmano/tenant0/datacenters/dcA/sdn_mapping", ""), 400, "SDN controller is not defined")
	b.call("PUT", "/openmano/datacenters/dcA", map[string]any{"datacenter": map[string]any{"config": map[string]any{"sdn-controller": id}}}, 200)
	r = b.osmJSON("POST", "/openmano/tenant0/datacenters/dcA/sdn_mapping", mapping)
	if r.status != 200 || len(get(r.json, "sdn_port_mapping").([]any)) != 2 || r.str("sdn_port_mapping", 0, "switch_dpid") != "00:00:00:00:00:00:00:01" || r.str("sdn_port_mapping", 1, "uuid") == "" {
		t.Fatalf("datacenter-sdn-port-mapping-set = %d %s", r.status, r.body)
	}
	r = b.osmJSON("GET", "/openmano/tenant0/datacenters/dcA/sdn_mapping", "")
	if r.str("sdn_port_mapping", "sdn-controller") != id || r.str("sdn_port_mapping", "ports_mapping", 0, "compute_node") != "node1" ||
		r.str("sdn_port_mapping", "ports_mapping", 0, "ports", 1, "switch_mac") != "00:11:22:33:44:55" {
		t.Fatalf("datacenter-sdn-port-mapping-list = %s", r.body)
	}
	wantError(t, b.do("POST", "/openmano/tenant0/datacenters/dcA/sdn_mapping", "", `{"sdn_port_mapping": [{"compute_node": "n", "ports": [{"pci": "0000:81:00.0"}]}]}`),
		400, "switch_port or switch_mac")
	wantError(t, b.do("DELETE", "/openmano/tenant0/sdn_controllers/"+id, "", ""), 409, "in use by datacenter")
	r = b.osmJSON("DELETE", "/openmano/tenant0/datacenters/dcA/sdn_mapping", "")
	if n, _ := get(r.json, "result").(float64); r.status != 200 || n != 2 {
		t.Fatalf("datacenter-sdn-port-mapping-clear = %d %s", r.status, r.body)
	}
	if r := b.osmJSON("GET", "/openmano/tenant0/datacenters/dcA/sdn_mapping", ""); len(get(r.json, "sdn_port_mapping", "ports_mapping").([]any)) != 0 {
		t.Fatalf("after the clear: %s", r.body)
	}
	b.call("PUT", "/openmano/datacenters/dcA", map[string]any{"datacenter": map[string]any{"config": map[string]any{"sdn-controller": nil}}}, 200)
	if r := b.osmJSON("DELETE", "/openmano/tenant0/sdn_controllers/"+id, ""); r.status != 200 || !strings.Contains(r.str("result"), id) {
		t.Fatalf("sdn-controller-delete = %d %s", r.status, r.body)
	}
	if r := b.call("GET", "/openmano/tenant0/sdn_controllers", nil, 200); len(get(r.json, "sdn_controllers").([]any)) != 0 {
		t.Fatalf("after the delete: %s", r.body)
	}
}
