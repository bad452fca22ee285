package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	l3svc "github.com/wimro/wimro/internal/testkit/emulators/ietfl3vpn"
	"github.com/wimro/wimro/internal/testkit/emulators/l3nm"
	"github.com/wimro/wimro/internal/testkit/emulators/rcstore"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// l3VPN is a built wimd serving an ACTIVE L3VPN over a controller's
// emulator: three datacenters on VLANs 200, 201 and 202, dcA and dcB
// routing their prefix via the CE, dcC peering by BGP, 100 Mbit/s.
type l3VPN struct {
	a       api
	url     string   // the emulator's
	env     []string // wimd's, with WIMD_BIN
	id      string   // the instance
	created map[string]any
	link    string
	vpn     string // the vpn-id
}

// startL3VPN serves emu (user admin, password s3cret) and makes the
// L3VPN on it with a WIM of type typ whose datacenter dc maps to
// mapping(dc).
func startL3VPN(t *testing.T, emu http.Handler, typ string, mapping func(dc string) map[string]any, env ...string) l3VPN {
	t.Helper()
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	bins := wimdtest.Build(t, "wimd")
	env = append([]string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DATA_DIR=" + t.TempDir()}, env...)
	addr := wimdtest.Start(t, bins[0], env, "serve", "--listen", "127.0.0.1:0", "--status-refresh", "100ms")
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	var maps, nets []any
	vld := uuid.NewString()
	for i, dc := range []string{"dcA", "dcB", "dcC"} {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		a.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
		maps = append(maps, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
			"pop_switch_dpid": dpid, "pop_switch_port": "1", "wan_service_endpoint_id": "ep-" + dc,
			"wan_service_mapping_info": mapping(dc)}}})
		site := map[string]any{"prefix": fmt.Sprintf("10.%d.0.0/24", i), "pe_address": fmt.Sprintf("192.0.2.%d/30", 4*i+1), "ce_address": fmt.Sprintf("192.0.2.%d", 4*i+2)}
		if dc == "dcC" {
			site["bgp"] = map[string]any{"peer_as": 65002, "peer_address": fmt.Sprintf("192.0.2.%d", 4*i+2)}
		}
		nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 200 + i, "l3": site, "bandwidth": 100})
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": typ, "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": maps}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1", "user": "admin", "password": "s3cret"}})
	id, created := a.activeInstanceOf("t0", 1, map[string]any{"instance": map[string]any{"name": "ns-l3", "networks": nets}})
	link := a.call("GET", "/openmano/t0/instances/"+id+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)
	if link["service_type"] != "L3VPN" {
		t.Fatalf("WAN link %v, want an L3VPN", link)
	}
	v := l3VPN{a: a, url: srv.URL, env: append(env, "WIMD_BIN="+bins[0]), id: id, created: created, link: link["uuid"].(string)}
	v.vpn = "wimro-" + v.link
	return v
}

// startL3NMVPN is startL3VPN over the L3NM emulator.
func startL3NMVPN(t *testing.T, env ...string) (l3VPN, *l3nm.Emulator) {
	t.Helper()
	emu := l3nm.New(l3nm.Options{User: "admin", Password: "s3cret", BuildPolls: 2})
	t.Cleanup(emu.Close)
	v := startL3VPN(t, emu, "l3nm", func(dc string) map[string]any {
		return map[string]any{"mapping_type": "l3nm", "ne-id": "pe-" + dc, "interface-id": "ge-0/0/1"}
	}, env...)
	if _, ok := emu.Service(v.vpn); !ok {
		t.Fatalf("the controller has no vpn-service %s: %v", v.vpn, emu.ServiceIDs())
	}
	return v, emu
}

// linkOf is the L3VPN's WAN link as the API gives it.
func (v l3VPN) linkOf() map[string]any {
	return v.a.call("GET", "/openmano/t0/instances/"+v.id+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)
}

// access is the vpn-network-access of ne-id ne in vpn-service svc (as
// the emulator stores it).
func access(t *testing.T, svc map[string]any, ne string) map[string]any {
	t.Helper()
	for _, n := range svc["vpn-nodes"].(map[string]any)["vpn-node"].([]any) {
		if n.(map[string]any)["ne-id"] == ne {
			return n.(map[string]any)["vpn-network-accesses"].(map[string]any)["vpn-network-access"].([]any)[0].(map[string]any)
		}
	}
	t.Fatalf("vpn-service %v has no vpn-node %s", svc, ne)
	return nil
}

// protocol is the container (static, bgp) of the routing-protocol of an
// access that has one.
func protocol(t *testing.T, acc map[string]any, container string) map[string]any {
	t.Helper()
	for _, p := range acc["routing-protocols"].(map[string]any)["routing-protocol"].([]any) {
		if c, ok := p.(map[string]any)[container].(map[string]any); ok {
			return c
		}
	}
	t.Fatalf("access %v has no %s routing-protocol", acc, container)
	return nil
}

// firstLAN is the first cascaded-lan-prefixes entry of a static
// routing-protocol.
func firstLAN(static map[string]any) map[string]any {
	return static["cascaded-lan-prefixes"].(map[string]any)["ipv4-lan-prefixes"].([]any)[0].(map[string]any)
}

// l3svcAccess is the access of the site of vpn on device in the L3SM
// emulator's tree, and the site's id.
func l3svcAccess(t *testing.T, tree map[string]any, vpn, device string) (map[string]any, string) {
	t.Helper()
	for _, s := range tree["sites"].(map[string]any)["site"].([]any) {
		site := s.(map[string]any)
		acc := site["site-network-accesses"].(map[string]any)["site-network-access"].([]any)[0].(map[string]any)
		if acc["device-reference"] == device && acc["vpn-attachment"].(map[string]any)["vpn-id"] == vpn {
			return acc, site["site-id"].(string)
		}
	}
	t.Fatalf("no site of %s on %s: %v", vpn, device, tree)
	return nil, ""
}

// runReconcile runs the built wimd reconcile with args and returns its
// exit status and output.
func runReconcile(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	var bin string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "WIMD_BIN="); ok {
			bin = v
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"reconcile"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("wimd reconcile: %v\n%s", err, out)
	}
	return 0, string(out)
}

// TestE2EL3VPNDrift (issue 34): an L3VPN over l3nm, and over ietfl3vpn,
// whose sites are changed in the controller's store behind wimd's back
// (dcA's prefix routed via its CE, dcC's BGP peer AS) is a mismatch:
// wimd reconcile exits 3 naming each site and field; --fix's EDIT puts
// wimd's version back on the controller, and reconcile then finds no
// drift.
func TestE2EL3VPNDrift(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (l3VPN, *rcstore.Store)
		// drift changes dcA's routed prefix to 10.7.0.0/24 and dcC's
		// BGP peer AS to 65009 in the store.
		drift func(t *testing.T, s *rcstore.Store, vpn string)
	}{
		{"l3nm", func(t *testing.T) (l3VPN, *rcstore.Store) {
			v, emu := startL3NMVPN(t)
			return v, emu.Store
		}, func(t *testing.T, s *rcstore.Store, vpn string) {
			path := "/vpn-services/vpn-service=" + vpn
			raw, _ := s.Get(path)
			svc := raw.(map[string]any)
			firstLAN(protocol(t, access(t, svc, "pe-dcA"), "static"))["lan"] = "10.7.0.0/24"
			protocol(t, access(t, svc, "pe-dcC"), "bgp")["peer-as"] = 65009
			if err := s.Put(path, svc); err != nil {
				t.Fatal(err)
			}
		}},
		{"ietfl3vpn", func(t *testing.T) (l3VPN, *rcstore.Store) {
			emu := l3svc.New(l3svc.Options{User: "admin", Password: "s3cret"})
			t.Cleanup(emu.Close)
			return startL3VPN(t, emu, "ietfl3vpn", l3svcMapping), emu.Store
		}, func(t *testing.T, s *rcstore.Store, vpn string) {
			tree := s.Tree()
			for _, c := range []struct {
				device string
				change func(acc map[string]any)
			}{
				{"pe-dcA", func(acc map[string]any) { firstLAN(protocol(t, acc, "static"))["lan"] = "10.7.0.0/24" }},
				{"pe-dcC", func(acc map[string]any) { protocol(t, acc, "bgp")["autonomous-system"] = 65009 }},
			} {
				acc, site := l3svcAccess(t, tree, vpn, c.device)
				c.change(acc)
				raw, _ := s.Get("/sites/site=" + site)
				stored := raw.(map[string]any)
				stored["site-network-accesses"] = map[string]any{"site-network-access": []any{acc}}
				if err := s.Put("/sites/site="+site, stored); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, store := tc.start(t)
			noDrift(t, v.env, "--account", "acct1")
			want, _ := json.Marshal(store.Tree())
			tc.drift(t, store, v.vpn)

			code, out := runReconcile(t, v.env, "--account", "acct1")
			for _, line := range []string{
				"site ep-dcA/vlan=200: routes: want [10.0.0.0/24 via 192.0.2.2], the controller has [10.7.0.0/24 via 192.0.2.2]",
				"site ep-dcC/vlan=202: bgp: want AS65002 192.0.2.10, the controller has AS65009 192.0.2.10",
				"0 orphan(s), 0 missing, 1 mismatched",
			} {
				if code != exitDrift || !strings.Contains(out, line) {
					t.Fatalf("wimd reconcile after the sites changed: exit %d, want %d naming %q\n%s", code, exitDrift, line, out)
				}
			}
			if code, out := runReconcile(t, v.env, "--account", "acct1", "--fix"); code != 0 || !strings.Contains(out, "mismatch") {
				t.Fatalf("wimd reconcile --fix: exit %d, want 0 and the mismatch fixed\n%s", code, out)
			}
			eventually.Until(t, 30*time.Second, "the controller holds wimd's version again", func() (bool, string) {
				b, _ := json.Marshal(store.Tree())
				return string(b) == string(want), fmt.Sprintf("%s\nwant\n%s", b, want)
			})
			poll(t, "the link ACTIVE after the EDIT", func() (bool, string) {
				l := v.linkOf()
				return l["status"] == "ACTIVE", fmt.Sprintf("%v %v", l["status"], l["error_msg"])
			})
			noDrift(t, v.env, "--account", "acct1")
			if f := store.LintFailures(); len(f) > 0 {
				t.Fatalf("yanglint refused %q", f)
			}
		})
	}
}

// TestE2EL3VPNDownOverL3NM (issue 34): the links monitor reads an L3VPN's
// oper-status on l3nm: op-down on the controller makes the link DOWN in
// the API, naming it, and a change on the create's event stream; op-up
// again makes it ACTIVE.
func TestE2EL3VPNDownOverL3NM(t *testing.T) {
	t.Parallel()
	v, emu := startL3NMVPN(t, "WIMRO_MONITOR_INTERVAL=300ms")
	emu.SetOperStatus(v.vpn, "op-down")
	v.downThenUp(t, "op-down", func() { emu.SetOperStatus(v.vpn, "op-up") })
}

// downThenUp waits for the link DOWN with an error_msg holding why, runs
// up, waits for it ACTIVE again, and requires the create's event stream
// to have carried both changes.
func (v l3VPN) downThenUp(t *testing.T, why string, up func()) {
	t.Helper()
	poll(t, "the link DOWN", func() (bool, string) {
		l := v.linkOf()
		msg, _ := l["error_msg"].(string)
		return l["status"] == "DOWN" && strings.Contains(msg, why), fmt.Sprintf("%v %q", l["status"], msg)
	})
	up()
	poll(t, "the link ACTIVE again", func() (bool, string) {
		l := v.linkOf()
		return l["status"] == "ACTIVE", fmt.Sprintf("%v %v", l["status"], l["error_msg"])
	})
	events := v.a.readStream(fmt.Sprintf("/openmano/t0/instances/%s/action/%s/events", v.id, v.created["uuid"]), nil)
	var seen []any
	for _, e := range events {
		if e.name == "change" && e.data["wan_link_id"] == v.link {
			seen = append(seen, e.data["link_status"])
		}
	}
	if s := fmt.Sprint(seen); !strings.HasSuffix(s, "ACTIVE DOWN ACTIVE]") || events[len(events)-1].name != "done" {
		t.Fatalf("the create's events for the link: %v, want ... ACTIVE DOWN ACTIVE then done: %v", seen, events)
	}
}

// TestE2EL3VPNDownOverIETFL3VPN (issue 34): L3SM has no operational
// state, so ietfl3vpn's status is existence: a site of the L3VPN removed
// on the controller behind wimd's back makes the link DOWN, naming the
// site; the site back makes it ACTIVE again.
func TestE2EL3VPNDownOverIETFL3VPN(t *testing.T) {
	t.Parallel()
	emu := l3svc.New(l3svc.Options{User: "admin", Password: "s3cret"})
	t.Cleanup(emu.Close)
	v := startL3VPN(t, emu, "ietfl3vpn", l3svcMapping, "WIMRO_MONITOR_INTERVAL=300ms")
	noDrift(t, v.env, "--account", "acct1")
	site := v.vpn + "-1"
	saved, ok := emu.Get("/sites/site=" + site)
	if !ok {
		t.Fatalf("the controller has no site %s: %v", site, emu.Tree())
	}
	if err := emu.Put("/sites/site="+site, nil); err != nil {
		t.Fatal(err)
	}
	v.downThenUp(t, "site "+site+" is missing", func() {
		if err := emu.Put("/sites/site="+site, saved); err != nil {
			t.Fatal(err)
		}
	})
	noDrift(t, v.env, "--account", "acct1")
}

// l3svcMapping is the ietfl3vpn port mapping of datacenter dc: its PE,
// location and bearer (a sub-interface per VLAN).
func l3svcMapping(dc string) map[string]any {
	return map[string]any{"mapping_type": "ietfl3vpn", "device-id": "pe-" + dc, "location-id": dc, "bearer-reference": "pe-" + dc + ":ge-0/0/1.{vlan}"}
}
