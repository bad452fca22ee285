package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
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
	v, emu := startL3NMVPN(t)
	a, id := v.a, v.id
	// A mapping without ne-id is refused when written, naming the key.
	bad := []any{map[string]any{"datacenter_name": "dcA", "pop_wan_mappings": []any{map[string]any{
		"pop_switch_dpid": "00:00:00:00:00:00:00:01", "pop_switch_port": "2", "wan_service_endpoint_id": "ep-x",
		"wan_service_mapping_info": map[string]any{"mapping_type": "l3nm", "interface-id": "ge-0/0/1"}}}}}
	if status, raw := a.send("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "bad", "type": "l3nm", "wim_url": v.url,
		"config": map[string]any{"wim_port_mapping": bad}}}); status != 400 || !strings.Contains(raw, "ne-id") {
		t.Fatalf("a WIM whose mapping has no ne-id: %d %s, want 400 naming ne-id", status, raw)
	}
	svc, _ := emu.Service(v.vpn)
	dcs := []string{"dcA", "dcB", "dcC"}
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
	noDrift(t, v.env, "--account", "acct1")

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
	noDrift(t, v.env, "--account", "acct1")
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
