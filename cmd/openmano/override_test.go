package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	"github.com/wimro/wimro/internal/testkit/eventually"
)

// TestDeadControllerWayOut (issue 30, point 7) through the binaries, with
// an ONOS emulator that can play dead (every connection dropped unanswered):
//   - action-cancel ends the CREATEs of an instance whose networks never
//     came up (they never reached the controller): CANCELLED, links ERROR;
//   - with the controller dead, an instance delete leaves DELETEs
//     retrying, wim-delete is refused, and action-cancel is refused
//     naming why (the service is on the controller: abandon instead);
//   - action-abandon needs --force; with it the DELETE is ABANDONED, the
//     action's events show who and why, reconcile (the controller back)
//     lists the service as kind abandoned, and wim-delete succeeds.
func TestDeadControllerWayOut(t *testing.T) {
	t.Parallel()
	onos := onosemu.New(onosemu.Options{User: "onos", Password: "rocks"})
	var dead atomic.Bool
	ctrl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dead.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
		}
		onos.ServeHTTP(w, r)
	}))
	t.Cleanup(ctrl.Close)

	om := clientOnWimd(t, nil, "--reconcile-interval", "0")
	om.ok("tenant-create", "t0")
	dir := t.TempDir()
	var maps []string
	for i, dc := range []string{"dcA", "dcB"} {
		om.datacenter(dc, i+1)
		maps = append(maps, fmt.Sprintf("- {datacenter_name: %s, pop_wan_mappings: [{pop_switch_dpid: \"00:00:00:00:00:00:00:0%d\", pop_switch_port: \"1\", "+
			"wan_service_endpoint_id: ep-%d, wan_service_mapping_info: {mapping_type: onos-port, switch_dpid: \"of:%016x\", switch_port: \"1\"}}]}", dc, i+1, i, i+1))
	}
	pm := filepath.Join(dir, "pm.yaml")
	writeFile(t, pm, strings.Join(maps, "\n")+"\n")
	om.ok("wim-create", "wan1", ctrl.URL, "--type", "onos")
	om.ok("wim-account-create", "wan1", "--user", "onos", "--password", "rocks")
	om.ok("wim-port-mapping-create", "wan1", pm)
	instance := func(name, status string, vlan int) string {
		vld := uuid.NewString()
		f := filepath.Join(dir, name+".yaml")
		writeFile(t, f, fmt.Sprintf("instance:\n  name: %s\n  networks:\n"+
			"  - {sce_net_id: %s, datacenter: dcA, status: %s, encapsulation_type: vlan, encapsulation_id: %d}\n"+
			"  - {sce_net_id: %s, datacenter: dcB, status: %s, encapsulation_type: vlan, encapsulation_id: %d}\n", name, vld, status, vlan, vld, status, vlan))
		return f
	}
	ids := func(name string) (inst, action string) {
		inst = om.json("instance-scenario-list", name)["uuid"].(string)
		list := om.json("action-list", inst)["actions"].([]any)
		return inst, list[len(list)-1].(map[string]any)["uuid"].(string)
	}
	// override runs action-cancel or action-abandon until no worker runs
	// the task at that moment (a run holds it for a moment), and returns
	// the last exit status and output.
	override := func(args ...string) (int, string, string) {
		t.Helper()
		var code int
		var out, errs string
		eventually.Until(t, 60*time.Second, "no run in the way of "+args[0], func() (bool, string) {
			code, out, errs = om.run("", args...)
			return !strings.Contains(errs, "is running right now"), errs
		})
		return code, out, errs
	}

	// ns1 ACTIVE on the controller; ns2's networks never come up, so its
	// CREATEs wait and never reach the controller: they are cancelled.
	if code, out, errs := om.run("", "instance-scenario-create", instance("ns1", "ACTIVE", 100), "--wait"); code != 0 {
		t.Fatalf("create ns1 --wait: exit %d\n%s\n%s", code, out, errs)
	}
	om.ok("instance-scenario-create", instance("ns2", "BUILD", 200))
	ns2, create2 := ids("ns2")
	if code, _, errs := om.run("", "action-cancel", ns2, create2); code != exitUsage || !strings.Contains(errs, "--reason") {
		t.Errorf("action-cancel without --reason: exit %d, %q; want %d naming --reason", code, errs, exitUsage)
	}
	code, out, errs := override("action-cancel", ns2, create2, "--reason", "the NFVO gave up on ns2")
	if code != 0 || !strings.Contains(out, "1 task(s) of instance action "+create2+" cancelled by operator") || !strings.Contains(out, "cancel by operator") {
		t.Fatalf("action-cancel of a CREATE that never reached the controller: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	task := om.json("action-list", ns2, create2)["actions"].([]any)[0].(map[string]any)["vim_wim_actions"].([]any)[0].(map[string]any)
	if task["status"] != "CANCELLED" || !strings.Contains(fmt.Sprint(task["error_msg"]), "cancelled by operator: the NFVO gave up on ns2") {
		t.Errorf("the cancelled task: %v %v", task["status"], task["error_msg"])
	}
	link := om.json("instance-scenario-list", "ns2")["wan_links"].([]any)[0].(map[string]any)
	if link["status"] != "ERROR" || !strings.Contains(fmt.Sprint(link["error_msg"]), "its CREATE was cancelled by operator") {
		t.Errorf("the cancelled CREATE's link: %v %v, want ERROR saying why", link["status"], link["error_msg"])
	}
	// ns2 goes while the controller answers: nothing of it is there.
	if code, out, errs := om.run("", "instance-scenario-delete", "ns2", "-f", "--wait"); code != 0 {
		t.Fatalf("delete ns2 --wait: exit %d\n%s\n%s", code, out, errs)
	}

	// The controller dies; ns1's DELETE retries for ever and blocks wim-delete.
	dead.Store(true)
	deleted := om.json("instance-scenario-delete", "ns1", "-f")
	ns1, del1 := deleted["instance_id"].(string), deleted["action_id"].(string)
	if code, _, errs := om.run("", "wim-delete", "wan1", "-f"); code != exitServer || !strings.Contains(errs, "unfinished") {
		t.Errorf("wim-delete with a DELETE retrying: exit %d, %q; want %d (unfinished actions)", code, errs, exitServer)
	}
	code, _, errs = override("action-cancel", ns1, del1, "--reason", "controller gone")
	if code != exitServer || !strings.Contains(errs, "abandon it with force instead") {
		t.Errorf("action-cancel of a DELETE whose service is on the controller: exit %d, %q; want %d saying to abandon it", code, errs, exitServer)
	}
	if code, _, errs := om.run("", "action-abandon", ns1, del1, "--reason", "controller decommissioned"); code != exitUsage || !strings.Contains(errs, "--force") {
		t.Errorf("action-abandon without --force: exit %d, %q; want %d naming --force", code, errs, exitUsage)
	}
	code, out, errs = override("action-abandon", ns1, del1, "--force", "--reason", "controller decommissioned")
	if code != 0 || !strings.Contains(out, "1 DELETE task(s) of instance action "+del1+" abandoned by operator") || !strings.Contains(out, "left on WIM wan1 ("+ctrl.URL+")") {
		t.Fatalf("action-abandon --force: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	// The action settled; its events say who ended the task and why.
	code, out, errs = om.run("", "action-list", ns1, del1, "--wait", "--timeout", "30s")
	if !strings.Contains(out+errs, "DELETE ABANDONED") || !strings.Contains(out+errs, "abandoned by operator: controller decommissioned") {
		t.Errorf("action-list --wait of the abandoned DELETE: exit %d, no ABANDONED event naming who and why\nstdout: %s\nstderr: %s", code, out, errs)
	}

	// The controller is back: the service is a known leftover, not an orphan.
	dead.Store(false)
	var rep struct {
		Reconcile struct {
			Accounts []struct {
				Drift []struct {
					Kind      string         `json:"kind"`
					WANLinkID string         `json:"wan_link_id"`
					Fixed     bool           `json:"fixed"`
					Abandoned map[string]any `json:"abandoned"`
				} `json:"drift"`
			} `json:"accounts"`
		} `json:"reconcile"`
	}
	for _, args := range [][]string{{"reconcile"}, {"reconcile", "--fix"}} {
		raw := om.ok(append(args, "-o", "json")...)
		if err := json.Unmarshal([]byte(raw), &rep); err != nil {
			t.Fatal(err)
		}
		drift := rep.Reconcile.Accounts[0].Drift
		if len(drift) != 1 || drift[0].Kind != "abandoned" || drift[0].Fixed || drift[0].Abandoned["actor"] != "operator" ||
			drift[0].Abandoned["reason"] != "controller decommissioned" {
			t.Errorf("openmano %v: drift %+v, want the abandoned service, left alone", args, drift)
		}
	}
	if len(onos.AppVPLSs()) != 1 {
		t.Errorf("the controller holds %d VPLS, want the abandoned one", len(onos.AppVPLSs()))
	}
	if code, out, errs := om.run("", "wim-delete", "wan1", "-f"); code != 0 {
		t.Errorf("wim-delete after the abandon: exit %d\n%s\n%s", code, out, errs)
	}
}
