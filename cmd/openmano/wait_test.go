package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// --wait through the binaries: exit 0 when the links go ACTIVE (and,
// for a delete, when they are gone), 1 naming the failure when a task
// fails, 1 at --timeout; action-list --wait of a finished action ends at
// once.
func TestWaitThroughCLI(t *testing.T) {
	t.Parallel()
	om := clientOnWimd(t, []string{"WIMRO_DEV_CONNECTORS=true"})
	om.ok("tenant-create", "t0")
	dcs := []string{"dcA", "dcB", "dcC", "dcD"}
	for i, dc := range dcs {
		om.datacenter(dc, i+1)
	}
	dir := t.TempDir()
	// wan1 works (fake, each service BUILD once) between dcA and dcB;
	// wan2 fails every call, between dcC and dcD.
	for w, typ := range []string{"fake", "failing"} {
		wim := fmt.Sprintf("wan%d", w+1)
		pm := filepath.Join(dir, wim+".yaml")
		var maps []string
		for i := 2 * w; i < 2*w+2; i++ {
			maps = append(maps, fmt.Sprintf("- {datacenter_name: %s, pop_wan_mappings: [{pop_switch_dpid: \"00:00:00:00:00:00:00:0%d\", pop_switch_port: \"1\", wan_service_endpoint_id: ep-%d}]}", dcs[i], i+1, i))
		}
		writeFile(t, pm, strings.Join(maps, "\n")+"\n")
		om.ok("wim-create", wim, "http://"+typ+"-"+uuid.NewString(), "--type", typ)
		om.ok("wim-account-create", wim, "--config", "{build_polls: 1}")
		om.ok("wim-port-mapping-create", wim, pm)
	}

	instance := func(name, status, wim string) string {
		pair := dcs[:2]
		if wim == "wan2" {
			pair = dcs[2:]
		}
		var nets []string
		for range 2 {
			vld := uuid.NewString()
			for i, dc := range pair {
				nets = append(nets, fmt.Sprintf("  - {sce_net_id: %s, datacenter: %s, status: %s, encapsulation_type: vlan, encapsulation_id: %d}", vld, dc, status, 100+len(nets)+i))
			}
		}
		f := filepath.Join(dir, name+".yaml")
		writeFile(t, f, fmt.Sprintf("instance:\n  name: %s\n  wim_account: %s\n  networks:\n%s\n", name, wim, strings.Join(nets, "\n")))
		return f
	}

	// Created and ACTIVE: one plain line per event (not a terminal), exit 0.
	code, out, errs := om.run("", "instance-scenario-create", instance("ns1", "ACTIVE", "wan1"), "--wait")
	if code != 0 || !strings.Contains(out, "done: tasks done 2/2, failed 0; links ACTIVE 2/2") || strings.Count(out, "CREATE DONE link") != 2 || strings.Contains(out, "\r") {
		t.Fatalf("create --wait: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	t.Logf("create --wait:\n%s", out)
	id := om.json("instance-scenario-list", "ns1")["uuid"].(string)
	action := om.json("action-list", id)["actions"].([]any)[0].(map[string]any)["uuid"].(string)

	// A finished action: done at once, from the start of its events.
	code, out, errs = om.run("", "action-list", id, action, "--wait")
	if code != 0 || !strings.Contains(out, "CREATE SCHEDULED") || !strings.Contains(out, "done: tasks done 2/2, failed 0; links ACTIVE 2/2") {
		t.Fatalf("action-list --wait: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	// With -o json stdout keeps the answer; the progress goes to stderr.
	code, out, errs = om.run("", "action-list", id, action, "--wait", "-o", "json")
	if code != 0 || !strings.HasPrefix(out, "{") || !strings.Contains(errs, "done: tasks done 2/2") {
		t.Fatalf("action-list --wait -o json: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, _, errs := om.run("", "action-list", id, "--wait"); code != exitUsage || !strings.Contains(errs, "ACTION_ID") {
		t.Fatalf("action-list --wait without an action: exit %d, %q", code, errs)
	}

	// A VLAN changed on a network of an ACTIVE link: --wait follows the
	// EDIT it queued until the link is ACTIVE again.
	net := om.json("instance-scenario-list", "ns1")["networks"].([]any)[1].(map[string]any)["uuid"].(string)
	code, out, errs = om.run("", "instance-net-update", "ns1", net, "--encapsulation-id", "350", "--wait")
	if code != 0 || !strings.Contains(out, "EDIT DONE link") || !strings.Contains(out, "done: tasks done 1/1, failed 0") {
		t.Fatalf("instance-net-update --wait: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	// Deleted: the links are gone, exit 0.
	code, out, errs = om.run("", "instance-scenario-delete", "ns1", "-f", "--wait")
	if code != 0 || strings.Count(out, "DELETE DONE link") != 2 || !strings.Contains(out, "done: tasks done 2/2, failed 0; links deleted 2/2") {
		t.Fatalf("delete --wait: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	// Every task fails on wan2: exit 1, naming the tasks and the reason.
	code, out, errs = om.run("", "instance-scenario-create", instance("ns2", "ACTIVE", "wan2"), "--wait")
	if code != exitServer || !strings.Contains(out, "done: tasks done 0/2, failed 2") || strings.Count(errs, "FAILED") != 2 ||
		!strings.Contains(errs, "every call fails by design") {
		t.Fatalf("failing create --wait: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	t.Logf("failing create --wait: stderr:\n%s", errs)

	// Networks never ACTIVE: the action waits, --timeout ends the wait.
	code, out, errs = om.run("", "instance-scenario-create", instance("ns3", "BUILD", "wan1"), "--wait", "--timeout", "1s")
	if code != exitServer || !strings.Contains(errs, "gave up after --timeout 1s: tasks done 0/2") {
		t.Fatalf("create --wait --timeout: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}

	// A controller refusing every call, retryably (issue 30, point 8):
	// the answer warns that the account is in ERROR, and --wait prints a
	// line per retry (attempt, next try, why) instead of nothing until
	// --timeout. The first attempts run at once; the default back-off
	// (2 s, doubling) leaves the later ones to the timeout.
	om.ok("wim-account-edit", "wan2", "--config", "{kind: retryable, reason: controller refuses connections}")
	code, out, errs = om.run("", "instance-scenario-create", instance("ns4", "ACTIVE", "wan2"), "--wait", "--timeout", "3s")
	if code != exitServer || !strings.Contains(errs, "gave up after --timeout 3s: tasks done 0/2") ||
		!strings.Contains(errs, "warning: WIM account") || !strings.Contains(errs, "is in ERROR") ||
		strings.Count(out, " CREATE retry: attempt 1 failed, next try in ") != 2 || !strings.Contains(out, "controller refuses connections") {
		t.Fatalf("create --wait on a refusing controller: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	t.Logf("create --wait on a refusing controller:\n%s", out)
}
