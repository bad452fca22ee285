package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/internal/testkit/emulators/l3nm"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// TestE2EL3VPNOverL3NM drives the built wimd against the L3NM emulator,
// which validates every body with yanglint (RFC 9182): an L3VPN over
// three datacenters (one vpn-node per PE, static routes on two sites, BGP
// on the third) reaches ACTIVE once the emulator reports oper-status
// op-up, reconciles without drift; one network's VLAN changed through the
// API is an EDIT, DONE, after which the controller holds the same one
// vpn-service but for that access's VLAN and reconcile finds no drift;
// it is then deleted from the controller.
func TestE2EL3VPNOverL3NM(t *testing.T) {
	t.Parallel()
	emu := l3nm.New(l3nm.Options{User: "admin", Password: "s3cret", BuildPolls: 2})
	t.Cleanup(emu.Close)
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	bins := wimdtest.Build(t, "wimd")
	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DATA_DIR=" + t.TempDir()}
	addr := wimdtest.Start(t, bins[0], env, "serve", "--listen", "127.0.0.1:0", "--status-refresh", "100ms")
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	dcs := []string{"dcA", "dcB", "dcC"}
	var maps []any
	for i, dc := range dcs {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		a.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
		maps = append(maps, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
			"pop_switch_dpid": dpid, "pop_switch_port": "1", "wan_service_endpoint_id": "ep-" + dc,
			"wan_service_mapping_info": map[string]any{"mapping_type": "l3nm", "ne-id": "pe-" + dc, "interface-id": "ge-0/0/1"}}}})
	}
	// A mapping without ne-id is refused when written, naming the key.
	bad := []any{map[string]any{"datacenter_name": "dcA", "pop_wan_mappings": []any{map[string]any{
		"pop_switch_dpid": "00:00:00:00:00:00:00:01", "pop_switch_port": "1", "wan_service_endpoint_id": "ep-x",
		"wan_service_mapping_info": map[string]any{"mapping_type": "l3nm", "interface-id": "ge-0/0/1"}}}}}
	if status, raw := a.send("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "bad", "type": "l3nm", "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": bad}}}); status != 400 || !strings.Contains(raw, "ne-id") {
		t.Fatalf("a WIM whose mapping has no ne-id: %d %s, want 400 naming ne-id", status, raw)
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "l3nm", "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": maps}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1", "user": "admin", "password": "s3cret"}})

	vld := uuid.NewString()
	var nets []any
	for i, dc := range dcs {
		site := map[string]any{"prefix": fmt.Sprintf("10.%d.0.0/24", i), "pe_address": fmt.Sprintf("192.0.2.%d/30", 4*i+1), "ce_address": fmt.Sprintf("192.0.2.%d", 4*i+2)}
		if i == 2 {
			site["bgp"] = map[string]any{"peer_as": 65002, "peer_address": fmt.Sprintf("192.0.2.%d", 4*i+2)}
		}
		nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 200 + i, "l3": site, "bandwidth": 100})
	}
	id, _ := a.activeInstanceOf("t0", 1, map[string]any{"instance": map[string]any{"name": "ns-l3", "networks": nets}})
	link := a.call("GET", "/openmano/t0/instances/"+id, nil)["wan_links"].([]any)[0].(map[string]any)
	if link["service_type"] != "L3VPN" {
		t.Errorf("WAN link %v, want service_type L3VPN", link)
	}
	svc, ok := emu.Service("wimro-" + link["uuid"].(string))
	if !ok {
		t.Fatalf("the controller has no vpn-service wimro-%s: %v", link["uuid"], emu.ServiceIDs())
	}
	nodes, _ := svc["vpn-nodes"].(map[string]any)["vpn-node"].([]any)
	if len(nodes) != 3 {
		t.Fatalf("vpn-service %v: want a vpn-node per PE (3)", svc)
	}
	// Each PE's access: its datacenter's VLAN, the link's bandwidth.
	got := map[any]string{}
	for _, n := range nodes {
		access := n.(map[string]any)["vpn-network-accesses"].(map[string]any)["vpn-network-access"].([]any)[0].(map[string]any)
		vlan := access["connection"].(map[string]any)["encapsulation"].(map[string]any)["dot1q"].(map[string]any)["cvlan-id"]
		got[n.(map[string]any)["ne-id"]] = fmt.Sprint(vlan, " ", access["service"].(map[string]any)["pe-to-ce-bandwidth"])
	}
	for i, dc := range dcs {
		if want := fmt.Sprint(200+i, " 100000000"); got["pe-"+dc] != want {
			t.Errorf("the access of pe-%s: cvlan-id and bandwidth %q, want %q (all: %v)", dc, got["pe-"+dc], want, got)
		}
	}
	noDrift(t, append(env, "WIMD_BIN="+bins[0]), "--account", "acct1")

	// The orchestrator moves dcB's network to VLAN 211: wimd's EDIT
	// leaves the controller one vpn-service, the same but for that
	// access's cvlan-id: sites, routes, BGP and bandwidth intact.
	before, _ := json.Marshal(svc)
	want := strings.Replace(string(before), `"cvlan-id":201`, `"cvlan-id":211`, 1)
	a.editVLAN(id, "dcB", 211)
	eventually.Until(t, 30*time.Second, "one vpn-service, dcB's access on VLAN 211", func() (bool, string) {
		ids := emu.ServiceIDs()
		if len(ids) != 1 {
			return false, fmt.Sprint(ids)
		}
		now, _ := emu.Service(ids[0])
		b, _ := json.Marshal(now)
		return string(b) == want, fmt.Sprintf("%s\nwant\n%s", b, want)
	})
	noDrift(t, append(env, "WIMD_BIN="+bins[0]), "--account", "acct1")
	del := a.call("DELETE", "/openmano/t0/instances/"+id, nil)
	a.waitAction(fmt.Sprintf("/openmano/t0/instances/%s/action/%s", id, del["action_id"]), 1)
	eventually.Until(t, 30*time.Second, "nothing left on the controller", func() (bool, string) {
		ids := emu.ServiceIDs()
		return len(ids) == 0, fmt.Sprint(ids)
	})
	if f := emu.LintFailures(); len(f) > 0 || emu.Linted() == 0 {
		t.Fatalf("yanglint checked %d documents and refused %q; want some, all accepted", emu.Linted(), f)
	}
}
