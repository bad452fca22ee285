package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/internal/eventually"
	"github.com/wimro/wimro/internal/pgtest"
	"github.com/wimro/wimro/internal/wimdtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// buildBinaries compiles wimd and this openmano into a temporary folder.
func buildBinaries(t *testing.T) (wimd, openmano string) {
	bins := wimdtest.Build(t, "wimd", "openmano")
	return bins[0], bins[1]
}

// startWimd runs "wimd serve" on a free port and returns the address it
// serves on; the process is killed when the test ends.
func startWimd(t *testing.T, bin string, env []string, args ...string) string {
	return wimdtest.Start(t, bin, env, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
}

// openmano runs the client binary with a fixed environment.
type openmano struct {
	t   *testing.T
	bin string
	env []string
}

func (o openmano) run(stdin string, args ...string) (code int, stdout, stderr string) {
	o.t.Helper()
	cmd := exec.Command(o.bin, args...)
	cmd.Env = append(os.Environ(), o.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		o.t.Fatalf("openmano %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// ok runs a command that must succeed and returns its stdout.
func (o openmano) ok(args ...string) string {
	o.t.Helper()
	code, out, errs := o.run("", args...)
	if code != 0 {
		o.t.Fatalf("openmano %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// json runs a command with -o json and decodes its answer.
func (o openmano) json(args ...string) map[string]any {
	o.t.Helper()
	out := o.ok(append(args, "-o", "json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		o.t.Fatalf("openmano %v -o json: %v\n%s", args, err, out)
	}
	return m
}

func (o openmano) with(kv ...string) openmano {
	o.env = append(append([]string(nil), o.env...), kv...)
	return o
}

// The whole WIM flow through the openmano binary against a real wimd:
// tenant, two datacenters, a fake WIM with an account and port mappings,
// an instance whose VLD spans both datacenters, its CREATE action run to
// completion, and its deletion.
func TestEndToEndThroughCLI(t *testing.T) {
	t.Parallel()
	wimdBin, cliBin := buildBinaries(t)
	const token = "e2e-token-0123456789"
	addr := startWimd(t, wimdBin, []string{
		"WIMRO_DATABASE_URL=" + pgtest.URL(t),
		"WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"WIMRO_API_TOKEN=" + token,
		"WIMRO_STATUS_REFRESH=200ms",
		"WIMRO_DEV_CONNECTORS=true",
	}, "--data-dir", t.TempDir())
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	base := openmano{t: t, bin: cliBin, env: []string{
		"OPENMANO_HOST=" + host, "OPENMANO_PORT=" + port, "OPENMANO_TENANT=", "OPENMANO_WIM=", "WIMRO_API_TOKEN=" + token,
	}}

	// Without the token the server refuses, and the CLI says so.
	if code, _, errs := base.with("WIMRO_API_TOKEN=").run("", "tenant-list"); code != exitServer || !strings.Contains(errs, "bearer token") {
		t.Fatalf("no token: exit %d, %q", code, errs)
	}
	// A tenant-scoped command without OPENMANO_TENANT.
	if code, _, errs := base.run("", "wim-list"); code != exitCLI || !strings.Contains(errs, "OPENMANO_TENANT") {
		t.Fatalf("no tenant: exit %d, %q", code, errs)
	}

	out := base.ok("tenant-create", "t0", "--description", "e2e tenant")
	if !regexp.MustCompile(`^[0-9a-f-]{36}\s+t0\n$`).MatchString(out) {
		t.Fatalf("tenant-create: %q", out)
	}
	om := base.with("OPENMANO_TENANT=t0")

	for i, dc := range []string{"dcA", "dcB"} {
		cfg := fmt.Sprintf(`{external_connections: [{vim_external_port: {switch: "00:00:00:00:00:00:00:0%d", port: "1"}}]}`, i+1)
		if out := om.ok("datacenter-create", dc, "http://"+dc+".example:5000", "--config", cfg); !strings.Contains(out, dc) {
			t.Fatalf("datacenter-create: %q", out)
		}
		if out := om.ok("datacenter-attach", dc); !strings.Contains(out, dc) {
			t.Fatalf("datacenter-attach: %q", out)
		}
	}
	dcs := om.json("datacenter-list")["datacenters"].([]any)
	if len(dcs) != 2 {
		t.Fatalf("datacenter-list: %v", dcs)
	}

	if out := om.ok("wim-create", "wan1", "http://fake-"+uuid.NewString(), "--type", "fake", "--description", "e2e WIM"); !strings.Contains(out, "wan1") {
		t.Fatalf("wim-create: %q", out)
	}
	// The account: -d shows the exchange with the password and token masked.
	code, out, errs := om.run("", "wim-account-create", "wan1", "--user", "admin", "--password", "pw-e2e-secret", "-d")
	if code != 0 || !strings.Contains(out, "t0") {
		t.Fatalf("wim-account-create: exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(errs, "pw-e2e-secret") || strings.Contains(errs, token) || !strings.Contains(errs, "Bearer ********") {
		t.Fatalf("debug output leaks a secret:\n%s", errs)
	}
	// The account's status, from the credentials check of the fake
	// connector when the account was written.
	if out := om.ok("wim-list"); !strings.Contains(out, "wan1") || !strings.Contains(out, "ACTIVE") {
		t.Fatalf("wim-list: %q", out)
	}
	if out := om.ok("wim-edit", "wan1", "--file", "{description: edited}", "-f", "-v"); !strings.Contains(out, "Description: edited") {
		t.Fatalf("wim-edit: %q", out)
	}
	if out := om.ok("wim-account-edit", "wan1", "--user", "admin2"); !strings.Contains(out, "t0") {
		t.Fatalf("wim-account-edit: %q", out)
	}
	if out := om.ok("wim-list", "wan1", "-v"); !strings.Contains(out, "Type: fake") {
		t.Fatalf("wim-list wan1: %q", out)
	}
	// The cluster: one process, the leader, owning the account once its
	// lease is taken.
	eventually.Until(t, time.Minute, "cluster-list shows the account owned", func() (bool, string) {
		_, out, _ := om.run("", "cluster-list")
		return strings.Contains(out, "coordinator none") && strings.Contains(out, "1 accounts") &&
			strings.Contains(out, "owned by this process: 1 accounts"), out
	})
	if cl := om.json("cluster-list"); cl["coordinator"] != "none" || cl["leader"] != cl["instance_id"] {
		t.Fatalf("cluster-list -o json: %v", cl)
	}

	dir := t.TempDir()
	pm := filepath.Join(dir, "port-mapping.yaml")
	writeFile(t, pm, `
- datacenter_name: dcA
  pop_wan_mappings:
  - pop_switch_dpid: "00:00:00:00:00:00:00:01"
    pop_switch_port: "1"
    wan_service_endpoint_id: ep-a
- datacenter_name: dcB
  pop_wan_mappings:
  - pop_switch_dpid: "00:00:00:00:00:00:00:02"
    pop_switch_port: "1"
    wan_service_endpoint_id: ep-b
`)
	if out := om.ok("wim-port-mapping-create", "wan1", pm); !strings.Contains(out, "ep-a") || !strings.Contains(out, "ep-b") {
		t.Fatalf("wim-port-mapping-create: %q", out)
	}
	// Mappings exist now: a declined prompt changes nothing, -f replaces them.
	if code, _, errs := om.run("n\n", "wim-port-mapping-create", "wan1", pm); code != exitAborted || !strings.Contains(errs, "already contains a port mapping. Overwrite? (y/N)?") {
		t.Fatalf("declined overwrite: exit %d, %q", code, errs)
	}
	om.ok("wim-port-mapping-create", "wan1", pm, "-f")
	// OPENMANO_WIM is the default WIM.
	if out := om.with("OPENMANO_WIM=wan1").ok("wim-port-mapping-list"); strings.Count(out, "wan_service_endpoint_id:") != 2 {
		t.Fatalf("wim-port-mapping-list: %q", out)
	}

	inst := filepath.Join(dir, "instance.yaml")
	vld := uuid.NewString()
	writeFile(t, inst, `
instance:
  name: ns1
  networks:
  - {sce_net_id: `+vld+`, name: data-a, datacenter: dcA, status: ACTIVE, encapsulation_type: vlan, encapsulation_id: 100}
  - {sce_net_id: `+vld+`, name: data-b, datacenter: dcB, status: ACTIVE, encapsulation_type: vlan, encapsulation_id: 101}
`)
	if out := om.ok("instance-scenario-create", inst, "--dry-run"); !strings.Contains(out, vld) || !strings.Contains(out, "wan1") {
		t.Fatalf("dry run: %q", out)
	}
	created := om.json("instance-scenario-create", inst)
	instID, actionID := created["uuid"].(string), created["action_id"].(string)
	if links := created["wan_links"].([]any); len(links) != 1 || actionID == "" {
		t.Fatalf("instance: %v", created)
	}

	// Poll the action through the CLI until every task is done.
	var action map[string]any
	deadline := time.Now().Add(90 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		action = om.json("action-list", instID, actionID)["actions"].([]any)[0].(map[string]any)
		if action["number_tasks"].(float64) > 0 && action["number_done"] == action["number_tasks"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("action not done: %v", action)
		}
		<-tick.C
	}
	if action["number_failed"] != 0.0 {
		t.Fatalf("failed tasks: %v", action)
	}
	n := int(action["number_tasks"].(float64))
	if out := om.ok("action-list", instID); !strings.Contains(out, actionID) || !strings.Contains(out, fmt.Sprintf("done=%d tasks=%d failed=0", n, n)) {
		t.Fatalf("action-list: %q", out)
	}
	if out := om.ok("action-list", instID, actionID); !strings.Contains(out, "task 0   CREATE  instance_wim_nets") {
		t.Fatalf("action-list with id: %q", out)
	}
	if out := om.ok("instance-scenario-list"); !strings.Contains(out, instID) || !strings.Contains(out, "ns1") {
		t.Fatalf("instance-scenario-list: %q", out)
	}
	if out := om.ok("instance-scenario-list", "ns1"); !strings.Contains(out, "wan_link") {
		t.Fatalf("instance-scenario-list ns1: %q", out)
	}
	if out := om.ok("instance-net-update", "ns1", "data-a", "--status", "ACTIVE"); !strings.Contains(out, "ACTIVE") {
		t.Fatalf("instance-net-update: %q", out)
	}

	// Deletion: a declined prompt keeps it, -f deletes it.
	if code, _, _ := om.run("", "instance-scenario-delete", "ns1"); code != exitAborted {
		t.Fatalf("declined delete: exit %d", code)
	}
	if out := om.ok("instance-scenario-delete", "ns1", "-f"); !strings.Contains(out, "action ") {
		t.Fatalf("instance-scenario-delete: %q", out)
	}
	if list := om.json("instance-scenario-list")["instances"].([]any); len(list) != 0 {
		t.Fatalf("instances left: %v", list)
	}

	// A server error: exit 1 and the server's description on stderr.
	code, out, errs = om.run("", "wim-delete", "no-such-wim", "-f")
	if code != exitServer || out != "" || !strings.Contains(errs, "No record was found") {
		t.Fatalf("wim-delete unknown: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// With -o json the error is a document on stderr.
	code, _, errs = om.run("", "wim-delete", "no-such-wim", "-f", "-o", "json")
	var doc struct{ Error errorDoc }
	if err := json.Unmarshal([]byte(errs), &doc); err != nil || code != exitServer || doc.Error.Code != 404 ||
		doc.Error.ExitStatus != exitServer || !strings.Contains(doc.Error.Description, "No record was found") {
		t.Fatalf("wim-delete unknown -o json: exit %d, stderr %q (%v)", code, errs, err)
	}
	// A tab-indented YAML file is read as JSON, and the error says so.
	tabbed := filepath.Join(dir, "tabbed.yaml")
	writeFile(t, tabbed, "instance:\n\tname: ns2\n")
	if code, _, errs := om.run("", "instance-scenario-create", tabbed); code != exitCLI ||
		!strings.Contains(errs, "contains a tab, so it was read as JSON") || !strings.Contains(errs, "replace the tabs with spaces") {
		t.Fatalf("tabbed file: exit %d, %q", code, errs)
	}
	// Completion scripts.
	if out := base.ok("completion", "bash"); !strings.Contains(out, "__openmano_") || !strings.Contains(out, "__complete") {
		t.Fatalf("completion bash: %.200q", out)
	}
	if out := base.ok("__complete", "wim-port"); !strings.Contains(out, "wim-port-mapping-create") {
		t.Fatalf("__complete wim-port: %q", out)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.TrimLeft(text, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}
