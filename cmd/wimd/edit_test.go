package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wimro/wimro/connectors/fake"
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
			link := d.links(inst)[0]
			ans := d.api.call("PUT", "/openmano/t0/instances/"+inst+"/networks/"+netIn(t, d.api.call, inst, "dcB"),
				map[string]any{"network": map[string]any{"encapsulation_id": 111}})
			edit, _ := ans["action_id"].(string)
			if edit == "" {
				t.Fatalf("a VLAN change of an ACTIVE link answered no action: %v", ans)
			}
			act := d.api.waitAction(fmt.Sprintf("/openmano/t0/instances/%s/action/%s", inst, edit), 1)
			if task := act["vim_wim_actions"].([]any)[0].(map[string]any); task["action"] != "EDIT" || task["item_id"] != link["uuid"] {
				t.Fatalf("the change's task is %v of %v, want the EDIT of link %v", task["action"], task["item_id"], link["uuid"])
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
