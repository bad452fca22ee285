package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// netIn returns the uuid of the network of instance inst (tenant t0) in
// datacenter dc (a name).
func netIn(t *testing.T, call func(method, path string, body any) map[string]any, inst, dc string) string {
	t.Helper()
	id := call("GET", "/openmano/t0/datacenters/"+dc, nil)["datacenter"].(map[string]any)["uuid"]
	for _, n := range call("GET", "/openmano/t0/instances/"+inst, nil)["networks"].([]any) {
		if m := n.(map[string]any); m["datacenter_id"] == id {
			return m["uuid"].(string)
		}
	}
	t.Fatalf("instance %s has no network in %s", inst, dc)
	return ""
}

// editVLAN changes the VLAN of instance inst's network in datacenter dc
// (tenant t0) through the openmano API, as an orchestrator reports one,
// waits until the action it answers is DONE, holding the EDIT of that
// network's link, and every link ACTIVE again; it returns the action's id.
func (c api) editVLAN(inst, dc string, vlan int) string {
	c.t.Helper()
	t := c.t.(*testing.T)
	base := "/openmano/t0/instances/" + inst
	net := netIn(t, c.call, inst, dc)
	var vld, link any
	for _, n := range c.call("GET", base, nil)["networks"].([]any) {
		if m := n.(map[string]any); m["uuid"] == net {
			vld = m["sce_net_id"]
		}
	}
	for _, l := range c.call("GET", base+"/wan_links", nil)["wan_links"].([]any) {
		if m := l.(map[string]any); m["sce_net_id"] == vld {
			link = m["uuid"]
		}
	}
	ans := c.call("PUT", base+"/networks/"+net, map[string]any{"network": map[string]any{"encapsulation_id": vlan}})
	edit, _ := ans["action_id"].(string)
	if edit == "" {
		t.Fatalf("a VLAN change of an ACTIVE link answered no action: %v", ans)
	}
	act := c.waitAction(base+"/action/"+edit, 1)
	if task := act["vim_wim_actions"].([]any)[0].(map[string]any); task["action"] != "EDIT" || link == nil || task["item_id"] != link {
		t.Fatalf("the change's task is %v of %v, want the EDIT of link %v (of VLD %v)", task["action"], task["item_id"], link, vld)
	}
	eventually.Until(t, 60*time.Second, "links ACTIVE after the EDIT", func() (bool, string) {
		var st []any
		ok := true
		for _, l := range c.call("GET", base+"/wan_links", nil)["wan_links"].([]any) {
			m := l.(map[string]any)
			st = append(st, m["status"], m["error_msg"])
			ok = ok && m["status"] == "ACTIVE"
		}
		return ok, fmt.Sprint(st)
	})
	return edit
}

// apiNoDrift fails t unless reconcile through the API (every account)
// finds the controllers as wimd recorded them.
func (c api) apiNoDrift(what string) {
	c.t.Helper()
	var rep struct{ Reconcile engine.DriftReport }
	raw, _ := json.Marshal(c.call("POST", "/openmano/reconcile", nil))
	if err := json.Unmarshal(raw, &rep); err != nil || len(rep.Reconcile.Accounts) == 0 || len(driftOf(rep.Reconcile)) != 0 {
		c.t.Fatalf("reconcile %s: %s (%v), want no drift", what, raw, err)
	}
}

// TestEditVLANOfActiveLink (issue 38), per listing connector and a fake
// that replaces (no edit) both ways: a VLAN change reported on a network
// of an ACTIVE link answers the EDIT's instance action, which ends DONE;
// the controller then holds exactly one service, on the new VLAN, the
// link is ACTIVE again and reconcile finds no drift.
func TestEditVLANOfActiveLink(t *testing.T) {
	t.Parallel()
	cases := driftCases(t)
	for _, cfg := range []map[string]any{{"edit": false}, {"edit": false, "make_before_break": false}} {
		c := cases[0] // fake
		c.name, c.wimConfig, c.url = fmt.Sprintf("fake %v", cfg), cfg, c.url+"-"+fmt.Sprint(len(cases))
		t.Cleanup(fake.ControllerFor(c.url).Reset)
		cases = append(cases, c)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := setupDrift(t, c)
			inst, _ := d.api.activeInstance("t0", 1)
			start := time.Now()
			edit := d.api.editVLAN(inst, "dcB", 111)
			// The event stream shows the edit, as --wait follows it.
			events := d.api.readStream(fmt.Sprintf("/openmano/t0/instances/%s/action/%s/events", inst, edit), nil)
			if last := events[len(events)-1]; !strings.Contains(fmt.Sprint(events), "EDIT") || last.name != "done" ||
				fmt.Sprint(last.data["links_by_status"]) != "map[ACTIVE:1]" {
				t.Fatalf("the EDIT's events: %v, want its changes and done with the link ACTIVE", events)
			}
			want := []string{"ep-0/vlan=100", "ep-1/vlan=111"}
			eventually.Until(t, 30*time.Second, "one service on the new VLAN, the link ACTIVE", func() (bool, string) {
				list, err := d.conn.ListServices(t.Context())
				if err != nil {
					return false, err.Error()
				}
				l := d.links(inst)[0]
				// Without the port mappings (this connector has none) a
				// listing may not name endpoints: reconcile, below,
				// compares them through wimd's.
				return len(list) == 1 && (list[0].Endpoints == nil || slices.Equal(list[0].Endpoints, want)) &&
						l["status"] == "ACTIVE" && l["wim_internal_id"] == list[0].ID,
					fmt.Sprintf("services %+v; link %v %v %v", list, l["status"], l["error_msg"], l["wim_internal_id"])
			})
			// An upper bound (it includes the test's own reads and waits).
			t.Logf("the controller held the edit, the link ACTIVE, %v after the PUT", time.Since(start).Round(time.Millisecond))
			if code, rep := d.reconcile(t); code != 0 || len(driftOf(rep)) != 0 {
				t.Fatalf("reconcile after the edit: exit %d, drift %+v; want 0 and none", code, driftOf(rep))
			}
		})
	}
}

// TestEditReplaceKilledMidway (issue 38): the built wimd replaces a
// service (a fake without edit, make-before-break, its controller in a
// state file) and is killed (SIGKILL) once the new service is made and
// before the old one is deleted. A second wimd takes the EDIT over when
// its claim expires: the controller ends with exactly one service, the
// new one on the new VLAN, named by the link, and reconcile finds no
// drift.
func TestEditReplaceKilledMidway(t *testing.T) {
	t.Parallel()
	bin := buildWimd(t)
	dataDir := t.TempDir()
	state := filepath.Join(dataDir, "controller.json")
	url := pgtest.URL(t)
	env := []string{"WIMRO_DATABASE_URL=" + url, "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_LOG_LEVEL=debug", "WIMRO_DEV_CONNECTORS=true", "WIMRO_DATA_DIR=" + dataDir}
	args := []string{"--claim-lease", "2s", "--status-refresh", "200ms"}

	a := startWimd(t, bin, env, args...)
	a.fakeWAN(t, []string{"t0"}, map[string]any{"edit": false, "latency_ms": 400, "state_file": state})
	inst := a.createInstance(t, "t0", 1)
	pool := connect(t, url)
	waitFinished(t, pool, 90*time.Second)
	if n := services(state); n != 1 {
		t.Fatalf("%d services after the CREATE, want 1", n)
	}
	ans := a.call(t, "PUT", "/openmano/t0/instances/"+inst.id+"/networks/"+netIn(t, a.caller(t), inst.id, "dcB"),
		map[string]any{"network": map[string]any{"encapsulation_id": 111}})
	if ans["action_id"] == nil {
		t.Fatalf("the VLAN change answered no action: %v", ans)
	}
	poll(t, "the new service made beside the old one", func() (bool, string) {
		n := services(state)
		return n == 2, fmt.Sprint(n)
	})
	a.kill9(t)
	if n := services(state); n != 2 {
		t.Fatalf("%d services when wimd was killed, want the old and the new one: the test proves nothing", n)
	}

	b := startWimd(t, bin, env, args...)
	waitFinished(t, pool, 90*time.Second)
	links := b.call(t, "GET", "/openmano/t0/instances/"+inst.id+"/wan_links", nil)["wan_links"].([]any)
	link := links[0].(map[string]any)
	svcs, err := fake.ReadStateFile(state)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := link["wim_info"].(map[string]any)
	if len(svcs) != 1 || svcs[0].ID != link["wim_internal_id"] || svcs[0].Key != info["service_key"] || svcs[0].Key == link["uuid"] {
		t.Fatalf("the controller holds %+v; the link names %v (key %v): want one service, the replacing one, named by the link", svcs, link["wim_internal_id"], info["service_key"])
	}
	if want := []string{"ep-dcA/vlan=100", "ep-dcB/vlan=111"}; !slices.Equal(svcs[0].Endpoints, want) {
		t.Fatalf("the service's endpoints are %v, want %v", svcs[0].Endpoints, want)
	}
	if link["status"] != "ACTIVE" {
		t.Fatalf("link %v (%v), want ACTIVE", link["status"], link["error_msg"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := exec.CommandContext(ctx, bin, "reconcile", "-o", "json")
	rec.Env = append(os.Environ(), env...)
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("wimd reconcile after the recovery: %v (exit %d: drift), want exit 0\n%s", err, exitDrift, out)
	}
}

// setupScale serves wimd with tenant t0, datacenters dcA, dcB and dcC
// (endpoints ep-0..ep-2), and a fake WIM (with wimConfig) mapped to all
// three, t0's account on it; it returns the API and the controller.
func setupScale(t *testing.T, wimConfig map[string]any) (api, *fake.Controller) {
	t.Helper()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	b.env["WIMRO_DATA_DIR"] = t.TempDir()
	addr, stop := b.serve(t, "--status-refresh", "100ms", "--reconcile-interval", "0")
	t.Cleanup(func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	})
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	var mappings []any
	for i, dc := range []string{"dcA", "dcB", "dcC"} {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		a.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
		m := map[string]any{"pop_switch_dpid": dpid, "pop_switch_port": "1"}
		maps.Copy(m, fakeEndpoint(i, dc))
		mappings = append(mappings, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{m}})
	}
	url := "http://fake-" + uuid.NewString()
	ctrl := fake.ControllerFor(url)
	t.Cleanup(ctrl.Reset)
	cfg := map[string]any{"wim_port_mapping": mappings}
	maps.Copy(cfg, wimConfig)
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "fake", "wim_url": url, "config": cfg}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1"}})
	return a, ctrl
}

// endpointsOf are the endpoints of the controller's services.
func endpointsOf(ctrl *fake.Controller) [][]string {
	var out [][]string
	for _, s := range ctrl.Services() {
		out = append(out, s.Endpoints)
	}
	return out
}

// TestScaleOutAndIn (issue 38): a network of an existing VLD added in a
// third datacenter grows the VLD's ACTIVE link into a multipoint service
// through an EDIT (API: POST .../networks), removing it shrinks the link
// back (DELETE .../networks/{net}), and removing another leaves one
// datacenter: the link and its service go. A WIM whose type makes no
// ELAN refuses the growth with a 400 naming the network and its types.
func TestScaleOutAndIn(t *testing.T) {
	t.Parallel()
	t.Run("multipoint", func(t *testing.T) {
		t.Parallel()
		a, ctrl := setupScale(t, nil)
		inst, _ := a.activeInstance("t0", 1)
		base := "/openmano/t0/instances/" + inst
		link := a.call("GET", base+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)
		step := func(what string, ans map[string]any, want [][]string) {
			t.Helper()
			id, _ := ans["action_id"].(string)
			if id == "" {
				t.Fatalf("%s answered no action: %v", what, ans)
			}
			a.waitAction(base+"/action/"+id, 1)
			eventually.Until(t, 30*time.Second, what+": the controller's services", func() (bool, string) {
				got := endpointsOf(ctrl)
				return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
			})
		}
		ans := a.call("POST", base+"/networks", map[string]any{"network": map[string]any{"sce_net_id": link["sce_net_id"], "datacenter": "dcC",
			"status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 102}})
		netC := ans["network"].(map[string]any)["uuid"].(string)
		step("scale out to dcC", ans, [][]string{{"ep-0/vlan=100", "ep-1/vlan=101", "ep-2/vlan=102"}})
		if svc := ctrl.Services()[0]; svc.Info["service_type"] != string(connectors.ServiceELAN) {
			t.Errorf("the grown service is %v, want an ELAN", svc.Info["service_type"])
		}
		step("scale in from dcC", a.call("DELETE", base+"/networks/"+netC, nil), [][]string{{"ep-0/vlan=100", "ep-1/vlan=101"}})
		step("scale in to one datacenter", a.call("DELETE", base+"/networks/"+netIn(t, a.call, inst, "dcB"), nil), nil)
		if links := a.call("GET", base+"/wan_links", nil)["wan_links"].([]any); len(links) != 0 {
			t.Fatalf("WAN links left with one datacenter: %v", links)
		}
	})
	t.Run("no multipoint", func(t *testing.T) {
		t.Parallel()
		a, _ := setupScale(t, map[string]any{"multipoint": false})
		inst, _ := a.activeInstance("t0", 1)
		base := "/openmano/t0/instances/" + inst
		link := a.call("GET", base+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)
		status, raw := a.send("POST", base+"/networks", map[string]any{"network": map[string]any{"sce_net_id": link["sce_net_id"], "datacenter": "dcC",
			"status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 102}})
		if status != 400 || !strings.Contains(raw, `"network"`) || !strings.Contains(raw, "makes ELINE only") {
			t.Fatalf("growth past two datacenters on a WIM without ELAN: %d %s, want 400 naming network and the WIM's types", status, raw)
		}
		if nets := a.call("GET", base, nil)["networks"].([]any); len(nets) != 2 {
			t.Fatalf("the refused network was written: %d networks", len(nets))
		}
	})
}
