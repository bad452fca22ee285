package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/internal/testkit/consultest"
	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// vplsPath is the ONOS config key that holds every VPLS: the one shared
// object two wimd processes read-modify-write.
const vplsPath = "/onos/v1/network/configuration/apps/org.onosproject.vpls/vpls"

// lostUpdates watches every VPLS list posted to the emulator: while
// services are only being created, a list that lacks a VPLS the
// controller already holds would overwrite another writer's service.
type lostUpdates struct {
	emu  *onosemu.Emulator
	mu   sync.Mutex
	lost []string
}

func (l *lostUpdates) beforeWrite(w onosemu.Write) {
	if w.Method != http.MethodPost || w.Path != vplsPath {
		return
	}
	var posted struct {
		VPLSList []struct {
			Name string `json:"name"`
		} `json:"vplsList"`
	}
	if err := json.Unmarshal(w.Body, &posted); err != nil {
		return // the emulator refuses it
	}
	keep := map[string]bool{}
	for _, v := range posted.VPLSList {
		keep[v.Name] = true
	}
	have, _ := l.emu.ConfiguredVPLSs()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range have.VPLSs {
		if !keep[v.Name] {
			l.lost = append(l.lost, v.Name)
		}
	}
}

// TestTwoProcessesShareONOS runs two wimd processes on one database and
// one ONOS controller, both serving two accounts whose links they race to
// claim — each process driving the accounts it holds the lease of (they
// split them through Consul). Every change of ONOS's single VPLS list is a
// read-modify-write,
// so only the PostgreSQL advisory lock wimd gives its connectors keeps one
// process from overwriting the other's VPLSs. The test checks that both
// processes wrote, that no posted list ever dropped an existing VPLS, and
// that every link's VPLS is there at the end (and gone after the delete).
func TestTwoProcessesShareONOS(t *testing.T) {
	t.Parallel()
	bin := buildWimd(t)
	watch := &lostUpdates{}
	emu := onosemu.New(onosemu.Options{User: "onos", Password: "rocks", BeforeWrite: watch.beforeWrite})
	watch.emu = emu
	emu.Delay(15 * time.Millisecond) // widen the read-modify-write windows
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)

	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "WIMRO_LOG_LEVEL=debug"}
	agent := consultest.Start(t)
	args := func(id string) []string {
		return []string{"--data-dir", t.TempDir(), "--parallel", "2", "--status-refresh", "200ms", "--instance-id", id,
			"--coordinator", "consul", "--consul", agent.Addr(), "--session-ttl", "2s", "--leader-soak", "300ms", "--assignment-soak", "100ms"}
	}
	a := startWimd(t, bin, env, args("A")...)
	b := startWimd(t, bin, env, args("B")...)

	mappings := twoDatacenters(a.caller(t), func(i int, dc string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": "ep-" + dc,
			"wan_service_mapping_info": map[string]any{"mapping_type": "onos-port", "switch_dpid": fmt.Sprintf("of:%016x", i+1), "switch_port": i + 1}}
	})
	a.call(t, "POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "onos", "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": mappings}}})
	// Accounts until each process owns one: the two tenants whose links
	// the two processes will write at the same time.
	ownerOf := map[string]string{} // process -> a tenant it owns
	for i := 0; len(ownerOf) < 2; i++ {
		if i == 20 {
			t.Fatalf("20 accounts and still not one on each process: %v", ownerOf)
		}
		tn := fmt.Sprintf("t%d", i)
		a.call(t, "POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": tn}})
		for _, dc := range []string{"dcA", "dcB"} {
			a.call(t, "POST", "/openmano/"+tn+"/datacenters/"+dc, nil)
		}
		acct := a.call(t, "POST", "/openmano/"+tn+"/wims/wan1", map[string]any{"wim_account": map[string]any{"user": "onos", "password": "rocks"}})
		id := acct["wim_account"].(map[string]any)["uuid"].(string)
		var owner string
		poll(t, "account "+tn+" owned", func() (bool, string) {
			for name, p := range map[string]*process{"A": a, "B": b} {
				st := p.call(t, "GET", "/cluster", nil)
				owned, _ := st["owned"].([]any)
				for _, o := range owned {
					if o == id {
						owner = name
						return true, name
					}
				}
			}
			return false, "nobody"
		})
		if _, seen := ownerOf[owner]; !seen {
			ownerOf[owner] = tn
		}
	}
	tenants := []string{ownerOf["A"], ownerOf["B"]}

	const vlds = 16
	type instance struct{ tenant, id, action string }
	var instances []instance
	for k, tn := range tenants {
		var nets []any
		for i := range vlds {
			vld := uuid.NewString()
			for _, dc := range []string{"dcA", "dcB"} {
				nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100 + 20*k + i})
			}
		}
		// Half the instances through each process: both get notified.
		p := []*process{a, b}[k]
		inst := p.call(t, "POST", "/openmano/"+tn+"/instances", map[string]any{"instance": map[string]any{"name": "ns", "networks": nets}})
		instances = append(instances, instance{tn, inst["uuid"].(string), inst["action_id"].(string)})
	}
	const links = 2 * vlds

	waitDone := func(what string, actionOf func(instance) string) {
		t.Helper()
		for _, in := range instances {
			path := fmt.Sprintf("/openmano/%s/instances/%s/action/%s", in.tenant, in.id, actionOf(in))
			poll(t, what+" of "+in.tenant, func() (bool, string) {
				act := a.call(t, "GET", path, nil)["actions"].([]any)[0].(map[string]any)
				tasks, _ := act["vim_wim_actions"].([]any)
				var st []string
				all := len(tasks) == vlds
				for _, x := range tasks {
					m := x.(map[string]any)
					st = append(st, fmt.Sprint(m["status"], " ", m["error_msg"]))
					all = all && m["status"] == "DONE"
				}
				return all, strings.Join(st, "; ")
			})
		}
	}
	waitDone("every CREATE done", func(in instance) string { return in.action })
	poll(t, "every VPLS in the VPLS application", func() (bool, string) {
		return len(emu.AppVPLSs()) == links, fmt.Sprintf("%d of %d", len(emu.AppVPLSs()), links)
	})
	for _, in := range instances {
		for _, l := range a.call(t, "GET", fmt.Sprintf("/openmano/%s/instances/%s/wan_links", in.tenant, in.id), nil)["wan_links"].([]any) {
			m := l.(map[string]any)
			if _, ok := emu.AppVPLSs()["wimro-"+m["uuid"].(string)]; !ok {
				t.Fatalf("link %s has no VPLS on the controller", m["uuid"])
			}
		}
	}
	watch.mu.Lock()
	lost := watch.lost
	watch.mu.Unlock()
	if len(lost) > 0 {
		t.Fatalf("posted VPLS lists dropped existing VPLSs %v: the processes' read-modify-writes interleaved", lost)
	}
	for name, p := range map[string]*process{"A": a, "B": b} {
		if !strings.Contains(p.log.String(), "onos VPLS in place") {
			t.Fatalf("process %s wrote no VPLS: the test did not exercise two writers\n%s", name, p.log.String())
		}
	}

	deletes := map[string]string{}
	for k, in := range instances {
		deletes[in.id] = []*process{b, a}[k].call(t, "DELETE", "/openmano/"+in.tenant+"/instances/"+in.id, nil)["action_id"].(string)
	}
	waitDone("every DELETE done", func(in instance) string { return deletes[in.id] })
	if left := emu.AppVPLSs(); len(left) != 0 {
		t.Fatalf("VPLSs left after the deletes: %v", left)
	}
	if ifs := emu.Interfaces(); len(ifs) != 0 {
		t.Fatalf("interfaces left after the deletes: %+v", ifs)
	}
}
