package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// The VNF, SDN controller and vim-* commands through the openmano binary
// against a real wimd: VNFs and SDN controller records are created,
// listed, shown and deleted as OSM's CLI prints them; vim-* commands
// print wimd's refusal (no VIM connector) on stderr with exit 1.
func TestCatalogueThroughCLI(t *testing.T) {
	t.Parallel()
	wimdBin, cliBin := buildBinaries(t)
	addr := startWimd(t, wimdBin, []string{
		"WIMRO_DATABASE_URL=" + pgtest.URL(t),
		"WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	}, "--data-dir", t.TempDir())
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	om := openmano{t: t, bin: cliBin, env: []string{"OPENMANO_HOST=" + host, "OPENMANO_PORT=" + port, "OPENMANO_TENANT=t0", "OPENMANO_DATACENTER="}}
	om.ok("tenant-create", "t0")
	om.ok("datacenter-create", "dcA", "http://dcA.example:5000")
	om.ok("datacenter-attach", "dcA")

	dir := t.TempDir()
	vnfFile := filepath.Join(dir, "vnf.yaml")
	if err := os.WriteFile(vnfFile, []byte("vnf:\n  name: cirros\n  description: a VNF\n  VNFC:\n  - {name: vm}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^[0-9a-f-]{36}\s+cirros\b`)
	if out := om.ok("vnf-create", vnfFile); !row.MatchString(out) {
		t.Fatalf("vnf-create: %q", out)
	}
	if out := om.ok("vnf-list"); !row.MatchString(out) {
		t.Fatalf("vnf-list: %q", out)
	}
	if v := om.json("vnf-list", "cirros")["vnf"].(map[string]any); v["name"] != "cirros" || len(v["VNFC"].([]any)) != 1 {
		t.Fatalf("vnf-list cirros: %v", v)
	}
	if out := om.ok("vnf-delete", "cirros", "-f"); !strings.Contains(out, "cirros deleted") {
		t.Fatalf("vnf-delete: %q", out)
	}

	ctl := regexp.MustCompile(`(?m)^[0-9a-f-]{36}\s+odl\b`)
	if out := om.ok("sdn-controller-create", "odl", "--ip", "10.0.0.1", "--port", "8080", "--dpid", "00:00:00:00:00:00:00:01", "--type", "onos", "--passwd", "s3cret"); !ctl.MatchString(out) {
		t.Fatalf("sdn-controller-create: %q", out)
	}
	if code, _, errs := om.run("", "sdn-controller-create", "odl2", "--ip", "10.0.0.1"); code != exitUsage || !strings.Contains(errs, "--port, --dpid, --type") {
		t.Fatalf("sdn-controller-create without --port: exit %d, %q", code, errs)
	}
	if out := om.ok("sdn-controller-list"); !ctl.MatchString(out) {
		t.Fatalf("sdn-controller-list: %q", out)
	}
	om.ok("sdn-controller-edit", "odl", "--ip", "10.0.0.2", "-f")
	if c := om.json("sdn-controller-list", "odl")["sdn_controllers"].(map[string]any); c["ip"] != "10.0.0.2" || c["password"] != nil {
		t.Fatalf("sdn-controller-list odl: %v", c)
	}
	om.ok("datacenter-create", "dcS", "http://dcS.example:5000", "--config", "{sdn-controller: odl}")
	om.ok("datacenter-attach", "dcS")
	mapping := filepath.Join(dir, "map.yaml")
	if err := os.WriteFile(mapping, []byte("- compute_node: n1\n  ports: [{pci: '0000:81:00.0', switch_port: p1}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	om.ok("datacenter-sdn-port-mapping-set", "dcS", mapping, "-f")
	if out := om.ok("datacenter-sdn-port-mapping-list", "dcS"); !strings.Contains(out, "compute_node: n1") || !strings.Contains(out, "switch_port: p1") {
		t.Fatalf("datacenter-sdn-port-mapping-list: %q", out)
	}
	if out := om.ok("datacenter-sdn-port-mapping-clear", "dcS", "-f"); out != "1 port(s) deleted\n" {
		t.Fatalf("datacenter-sdn-port-mapping-clear: %q", out)
	}
	if code, _, errs := om.run("", "sdn-controller-delete", "odl", "-f"); code != exitServer || !strings.Contains(errs, "in use by datacenter") {
		t.Fatalf("sdn-controller-delete in use: exit %d, %q", code, errs)
	}

	for _, args := range [][]string{
		{"vim-net-list", "--datacenter", "dcA"},
		{"vim-net-list", "net1", "--datacenter", "dcA"},
		{"vim-net-create", "--name", "n1", "--datacenter", "dcA"},
		{"vim-tenant-delete", "t1", "--datacenter", "dcA"},
		{"vim-image-list", "--datacenter", "dcA"},
	} {
		if code, _, errs := om.run("", args...); code != exitServer || !strings.Contains(errs, "has no VIM connector") {
			t.Fatalf("openmano %v: exit %d, %q", args, code, errs)
		}
	}
	if code, _, errs := om.run("", "vim-net-list"); code != exitCLI || !strings.Contains(errs, "OPENMANO_DATACENTER") {
		t.Fatalf("vim-net-list without a datacenter: exit %d, %q", code, errs)
	}
}
