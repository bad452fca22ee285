package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// TestE2EL3VPNAndELAN drives the built wimd with its dev fake connector
// (which makes L3VPNs and ELANs, its controller kept in a state file the
// test reads): the dry run, by the API and the CLI, says the L3VPN goes
// to the fake WIM and why the older dynpac WIM (ELINE only) was not
// chosen; an L3VPN over two datacenters reaches ACTIVE with each point's
// L3 site on the controller, reconciles without drift and is deleted;
// an ELAN over three datacenters likewise; an explicit choice of the
// dynpac WIM for an L3VPN is a 400 naming why.
func TestE2EL3VPNAndELAN(t *testing.T) {
	t.Parallel()
	bins := wimdtest.Build(t, "wimd", "openmano")
	dataDir := t.TempDir()
	state := filepath.Join(dataDir, "controller.json")
	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DATA_DIR=" + dataDir, "WIMRO_DEV_CONNECTORS=true"}
	addr := wimdtest.Start(t, bins[0], env, "serve", "--listen", "127.0.0.1:0", "--status-refresh", "100ms")
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	var fakeMaps, dynpacMaps []any
	for i, dc := range []string{"dcA", "dcB", "dcC"} {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		a.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
		fakeMaps = append(fakeMaps, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
			"pop_switch_dpid": dpid, "pop_switch_port": "1", "wan_service_endpoint_id": "ep-" + dc, "wan_service_mapping_info": map[string]any{"mapping_type": "fake"}}}})
		dynpacMaps = append(dynpacMaps, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
			"pop_switch_dpid": dpid, "pop_switch_port": "2", "wan_service_endpoint_id": "dp-" + dc,
			"wan_service_mapping_info": map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": i + 1}}}})
	}
	// wan0 (dynpac, ELINE only) is the older: never reached, it is passed
	// over for what it does not make.
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan0", "type": "dynpac", "wim_url": "http://127.0.0.1:9",
		"config": map[string]any{"wim_port_mapping": dynpacMaps}}})
	a.call("POST", "/openmano/t0/wims/wan0", map[string]any{"wim_account": map[string]any{"name": "acct0", "user": "admin", "password": "pw"}})
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "fake", "wim_url": "http://fake-" + uuid.NewString(),
		"config": map[string]any{"wim_port_mapping": fakeMaps, "state_file": state}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1"}})

	// One VLD across dcs; with l3, each network gives its site.
	body := func(l3 bool, dcs ...string) map[string]any {
		vld := uuid.NewString()
		var nets []any
		for i, dc := range dcs {
			n := map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 200 + i}
			if l3 {
				n["l3"] = map[string]any{"prefix": fmt.Sprintf("10.%d.0.0/24", i), "pe_address": fmt.Sprintf("192.0.2.%d/30", 4*i+1),
					"bgp": map[string]any{"peer_as": 65000 + i, "peer_address": fmt.Sprintf("192.0.2.%d", 4*i+2)}}
			}
			nets = append(nets, n)
		}
		return map[string]any{"instance": map[string]any{"name": "ns-" + vld[:8], "networks": nets}}
	}
	controller := func() []map[string]any {
		services, err := fake.ReadStateFile(state)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out := make([]map[string]any, len(services))
		for i, s := range services {
			out[i] = s.Info
		}
		return out
	}

	l3 := body(true, "dcA", "dcB")
	plan := a.call("POST", "/openmano/t0/instances?dry_run=true", l3)["plan"].(map[string]any)["wan_links"].([]any)
	if len(plan) != 1 {
		t.Fatalf("dry run: %v, want one link", plan)
	}
	p := plan[0].(map[string]any)
	wims, _ := p["wims"].([]any)
	if p["service_type"] != "L3VPN" || p["wim_name"] != "wan1" || len(wims) != 2 ||
		wims[0].(map[string]any)["reason"] != "does not make L3VPN (type dynpac makes ELINE)" || wims[1].(map[string]any)["chosen"] != true {
		t.Fatalf("dry run: %v, want an L3VPN on wan1 and wan0 passed over for it", p)
	}
	file := filepath.Join(t.TempDir(), "instance.json")
	raw, _ := json.Marshal(l3)
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(addr, ":")
	cli := exec.CommandContext(t.Context(), bins[1], "instance-scenario-create", file, "--dry-run")
	cli.Env = append(os.Environ(), "OPENMANO_HOST="+host, "OPENMANO_PORT="+port, "OPENMANO_TENANT=t0")
	out, err := cli.CombinedOutput()
	if err != nil || !strings.Contains(string(out), " L3VPN  wan1 ") || !strings.Contains(string(out), "wan0:") ||
		!strings.Contains(string(out), "does not make L3VPN (type dynpac makes ELINE)") {
		t.Fatalf("openmano instance-scenario-create --dry-run: %v\n%s", err, out)
	}

	// An explicit choice of wan0 for it is refused, naming why.
	explicit := body(true, "dcA", "dcB")
	explicit["instance"].(map[string]any)["wim_account"] = "wan0"
	if status, raw := a.send("POST", "/openmano/t0/instances", explicit); status != 400 ||
		!strings.Contains(raw, "instance.wim_account") || !strings.Contains(raw, "does not make L3VPN") {
		t.Fatalf("L3VPN on wan0: %d %s, want a 400 naming instance.wim_account and why", status, raw)
	}

	for _, c := range []struct {
		name   string
		body   map[string]any
		typ    string
		points int
		l3     bool
	}{
		{"an L3VPN over two datacenters", l3, "L3VPN", 2, true},
		{"an ELAN over three datacenters", body(false, "dcA", "dcB", "dcC"), "ELAN", 3, false},
	} {
		id, _ := a.activeInstanceOf("t0", 1, c.body)
		inst := a.call("GET", "/openmano/t0/instances/"+id, nil)
		link := inst["wan_links"].([]any)[0].(map[string]any)
		if link["service_type"] != c.typ || link["wim_id"] == nil {
			t.Errorf("%s: WAN link %v, want service_type %s", c.name, link, c.typ)
		}
		services := controller()
		if len(services) != 1 || services[0]["service_type"] != c.typ || services[0]["service_key"] != link["uuid"] {
			t.Fatalf("%s: controller holds %v, want one %s for link %s", c.name, services, c.typ, link["uuid"])
		}
		points, _ := services[0]["connection_points"].([]any)
		if len(points) != c.points {
			t.Fatalf("%s: %d points on the controller, want %d: %v", c.name, len(points), c.points, points)
		}
		for _, pt := range points {
			site, _ := pt.(map[string]any)["l3"].(map[string]any)
			if c.l3 != (site != nil) || (c.l3 && (site["prefix"] == nil || site["bgp"] == nil)) {
				t.Errorf("%s: point %v, want an l3 site: %v", c.name, pt, c.l3)
			}
		}
		noDrift(t, append(env, "WIMD_BIN="+bins[0]), "--account", "acct1")
		del := a.call("DELETE", "/openmano/t0/instances/"+id, nil)
		a.waitAction(fmt.Sprintf("/openmano/t0/instances/%s/action/%s", id, del["action_id"]), 1)
		eventually.Until(t, 30*time.Second, c.name+": nothing left on the controller", func() (bool, string) {
			s := controller()
			return len(s) == 0, fmt.Sprint(s)
		})
	}
}
