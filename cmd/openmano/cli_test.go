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

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
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
	// An account the controller refuses: the default table says why.
	om.ok("wim-create", "wanbad", "http://failing-"+uuid.NewString(), "--type", "failing")
	if code, out, errs := om.run("hunter2\n", "wim-account-create", "wanbad", "--user", "admin", "--password-stdin"); code != 0 || strings.Contains(out+errs, "hunter2") {
		t.Fatalf("wim-account-create --password-stdin: exit %d\n%s\n%s", code, out, errs)
	}
	eventually.Until(t, time.Minute, "wim-list shows why wanbad's account is in ERROR", func() (bool, string) {
		out := om.ok("wim-list")
		return regexp.MustCompile(`(?m)^[0-9a-f-]{36} +wanbad +ERROR +\S+ +\S.*$`).MatchString(out) &&
			regexp.MustCompile(`(?m)^UUID +NAME +STATUS +AGE +MESSAGE$`).MatchString(out), out
	})
	if out := om.ok("wim-list", "-o", "wide"); !regexp.MustCompile(`(?m)^[0-9a-f-]{36} +wan1 +ACTIVE +\S+ +\S+ +fake +http://fake-`).MatchString(out) {
		t.Fatalf("wim-list -o wide: %q", out)
	}
	if out := om.ok("wim-edit", "wan1", "--file", "{description: edited}", "-f", "-v"); !strings.Contains(out, "Description: edited") {
		t.Fatalf("wim-edit: %q", out)
	}
	if out := om.ok("wim-account-edit", "wan1", "--user", "admin2"); !strings.Contains(out, "t0") {
		t.Fatalf("wim-account-edit: %q", out)
	}
	if out := om.ok("wim-list", "wan1", "-v"); !regexp.MustCompile(`\n  Type: +fake\n`).MatchString(out) {
		t.Fatalf("wim-list wan1: %q", out)
	}
	// The cluster: one process, the leader, owning the accounts (wan1's,
	// wanbad's) once their leases are taken.
	eventually.Until(t, time.Minute, "cluster-list shows the account owned", func() (bool, string) {
		_, out, _ := om.run("", "cluster-list")
		return strings.Contains(out, "coordinator none") && strings.Contains(out, "2 accounts") &&
			strings.Contains(out, "owned by this process: 2 accounts"), out
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
	// Rows like every other create, datacenters by name.
	if out := om.ok("wim-port-mapping-create", "wan1", pm); !regexp.MustCompile(`(?m)^DATACENTER +SWITCH_DPID +PORT +SERVICE_ENDPOINT_ID\n` +
		`dcA +00:00:00:00:00:00:00:01 +1 +ep-a\ndcB +00:00:00:00:00:00:00:02 +1 +ep-b\n$`).MatchString(out) {
		t.Fatalf("wim-port-mapping-create: %q", out)
	}
	// wim-list NAME: type, URL, the account and the mappings.
	if out := om.ok("wim-list", "wan1"); !regexp.MustCompile(`Type: +fake\n  URL: +http://fake-`).MatchString(out) ||
		!regexp.MustCompile(`Account: +t0 \([0-9a-f-]{36}\), user admin2, ACTIVE\n`).MatchString(out) ||
		!regexp.MustCompile(`Port mappings:\n +DATACENTER .*\n +dcA +00:00:00:00:00:00:00:01 +1 +ep-a\n`).MatchString(out) {
		t.Fatalf("wim-list wan1: %q", out)
	}
	// Mappings exist now: a declined prompt changes nothing, -f replaces them.
	if code, _, errs := om.run("n\n", "wim-port-mapping-create", "wan1", pm); code != exitAborted || !strings.Contains(errs, "already contains a port mapping. Overwrite? (y/N)?") {
		t.Fatalf("declined overwrite: exit %d, %q", code, errs)
	}
	om.ok("wim-port-mapping-create", "wan1", pm, "-f")
	// OPENMANO_WIM is the default WIM.
	if out := om.with("OPENMANO_WIM=wan1").ok("wim-port-mapping-list"); strings.Count(out, "\n") != 3 || !strings.Contains(out, "ep-b") {
		t.Fatalf("wim-port-mapping-list: %q", out)
	}
	if out := om.with("OPENMANO_WIM=wan1").ok("wim-port-mapping-list", "-o", "yaml"); strings.Count(out, "wan_service_endpoint_id:") != 2 {
		t.Fatalf("wim-port-mapping-list -o yaml: %q", out)
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
	if out := om.ok("__complete", "instance-scenario-delete", ""); !strings.HasPrefix(out, "ns1\n:4\n") {
		t.Fatalf("__complete instance-scenario-delete: %q", out)
	}
	// Networks and datacenters by name: a WAN link names the networks it joins.
	if out := om.ok("instance-scenario-list", "ns1"); !regexp.MustCompile(`(?m)^  net +[0-9a-f-]{36} +data-a +dcA +ACTIVE$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^  wan_link +[0-9a-f-]{36} +data-a,data-b +ACTIVE$`).MatchString(out) {
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
	// Names complete from the server: tenants, the tenant's WIMs.
	if out := base.ok("__complete", "tenant-delete", ""); !strings.HasPrefix(out, "t0\n:4\n") {
		t.Fatalf("__complete tenant-delete: %q", out)
	}
	if out := om.ok("__complete", "wim-list", "wa"); !strings.HasPrefix(out, "wan1\nwanbad\n:4\n") && !strings.HasPrefix(out, "wanbad\nwan1\n:4\n") {
		t.Fatalf("__complete wim-list wa: %q", out)
	}
	// The scripts complete the binary as it is named.
	renamed := filepath.Join(t.TempDir(), "om2")
	if err := os.Link(cliBin, renamed); err != nil {
		t.Fatal(err)
	}
	out = openmano{t: t, bin: renamed, env: base.env}.ok("completion", "bash")
	if !strings.Contains(out, "__start_om2()") || !strings.Contains(out, "complete -o default -F __start_om2 om2") || strings.Contains(out, "__start_openmano") {
		t.Fatalf("completion bash of om2: %.300q", out)
	}
	// version: the client's and the server's.
	if out := base.ok("version"); !regexp.MustCompile(`^Client: openmano \(wimro\) \S+\nServer: wimd \S+ \(http://`).MatchString(out) {
		t.Fatalf("version: %q", out)
	}
	if v := base.json("version"); v["server"] == nil || v["client"] == nil {
		t.Fatalf("version -o json: %v", v)
	}
}

// datacenter creates and attaches datacenter dc, whose WAN exit is port
// 1 of switch 00:...:0n.
func (o openmano) datacenter(dc string, n int) {
	o.t.Helper()
	o.ok("datacenter-create", dc, "http://"+dc+".example:5000", "--config",
		fmt.Sprintf(`{external_connections: [{vim_external_port: {switch: "00:00:00:00:00:00:00:0%d", port: "1"}}]}`, n))
	o.ok("datacenter-attach", dc)
}

// clientOnWimd starts a wimd (a throwaway database, a fixed secret key,
// status polls every 100 ms, env added) with args, and returns the
// openmano client on it, with tenant t0 current (not created).
func clientOnWimd(t *testing.T, env []string, args ...string) openmano {
	t.Helper()
	wimdBin, cliBin := buildBinaries(t)
	addr := startWimd(t, wimdBin, append([]string{
		"WIMRO_DATABASE_URL=" + pgtest.URL(t),
		"WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"WIMRO_STATUS_REFRESH=100ms",
	}, env...), append([]string{"--data-dir", t.TempDir()}, args...)...)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return openmano{t: t, bin: cliBin, env: []string{"OPENMANO_HOST=" + host, "OPENMANO_PORT=" + port, "OPENMANO_TENANT=t0", "OPENMANO_WIM=", "WIMRO_API_TOKEN="}}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.TrimLeft(text, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// -w follows the event streams of the running actions: the instance
// list prints an instance's row again when its links change (BUILD, then
// ACTIVE), action-list an action's row when its counters move, and each
// ends once the actions settled.
func TestWatchThroughCLI(t *testing.T) {
	t.Parallel()
	om := clientOnWimd(t, []string{"WIMRO_DEV_CONNECTORS=true"})
	om.ok("tenant-create", "t0")
	dir := t.TempDir()
	var maps []string
	for i, dc := range []string{"dcA", "dcB"} {
		om.datacenter(dc, i+1)
		maps = append(maps, fmt.Sprintf("- {datacenter_name: %s, pop_wan_mappings: [{pop_switch_dpid: \"00:00:00:00:00:00:00:0%d\", pop_switch_port: \"1\", wan_service_endpoint_id: ep-%d}]}", dc, i+1, i))
	}
	pm := filepath.Join(dir, "pm.yaml")
	writeFile(t, pm, strings.Join(maps, "\n")+"\n")
	om.ok("wim-create", "wan1", "http://fake-"+uuid.NewString(), "--type", "fake")
	// Each service stays BUILD for 50 status polls (5 s): the action is
	// still running when the watches start.
	om.ok("wim-account-create", "wan1", "--config", "{build_polls: 50}")
	om.ok("wim-port-mapping-create", "wan1", pm)
	instance := func(name string) string {
		f := filepath.Join(dir, name+".yaml")
		vld := uuid.NewString()
		writeFile(t, f, fmt.Sprintf("instance:\n  name: %s\n  networks:\n  - {sce_net_id: %s, name: %s-a, datacenter: dcA, status: ACTIVE}\n  - {sce_net_id: %s, name: %s-b, datacenter: dcB, status: ACTIVE}\n",
			name, vld, name, vld, name))
		return f
	}

	// Both watches start while ns1's CREATE runs, and end when it settles.
	om.ok("instance-scenario-create", instance("ns1"))
	actions := make(chan string, 1)
	go func() { actions <- om.ok("action-list", "ns1", "-w") }()
	out := om.ok("instance-scenario-list", "-w")
	t.Logf("instance-scenario-list -w:\n%s", out)
	if !regexp.MustCompile(`^UUID +NAME +STATUS +AGE\n[0-9a-f-]{36} +ns1 +BUILD +\S+\n[0-9a-f-]{36} +ns1 +ACTIVE +\S+\n$`).MatchString(out) {
		t.Fatalf("instance-scenario-list -w: %q", out)
	}
	out = <-actions
	t.Logf("action-list -w:\n%s", out)
	// A CREATE task counts as done once its service is made, while its
	// link is still BUILD: the row is printed again when the action
	// settles (its AGE moved).
	if !regexp.MustCompile(`(?s)^UUID +DESCRIPTION +PROGRESS +AGE\n[0-9a-f-]{36} +CREATE +done=[01] tasks=1 failed=0 +\S+\n.*[0-9a-f-]{36} +CREATE +done=1 tasks=1 failed=0 +\S+\n$`).MatchString(out) ||
		strings.Count(out, "CREATE") < 2 {
		t.Fatalf("action-list -w: %q", out)
	}
	// Nothing running: the list, and the watch ends at once.
	if out := om.ok("action-list", "ns1", "--watch"); strings.Count(out, "\n") != 2 {
		t.Fatalf("action-list --watch of a settled action: %q", out)
	}
}
