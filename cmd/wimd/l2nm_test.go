package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/builtin"
	"github.com/wimro/wimro/connectors/l2nm"
	l2nmemu "github.com/wimro/wimro/internal/testkit/emulators/l2nm"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// l2nmServer starts an L2NM emulator asking user/password, and fails t
// at cleanup when yanglint refused any body wimd sent to it (or an answer
// of the emulator's): every body of these tests passes strict validation.
func l2nmServer(t *testing.T, opts l2nmemu.Options) (*l2nmemu.Emulator, string) {
	t.Helper()
	opts.User, opts.Password = "nso", "s3cret"
	emu := l2nmemu.New(opts)
	srv := httptest.NewServer(emu)
	t.Cleanup(func() {
		srv.Close()
		if f := emu.LintFailures(); len(f) > 0 {
			t.Errorf("yanglint refused %d of %d documents:\n%s", len(f), emu.Linted(), strings.Join(f, "\n"))
		}
		emu.Close()
	})
	return emu, srv.URL
}

// l2nmMapping is the wan_service_mapping_info of datacenter dc's PE port.
func l2nmMapping(dc int) map[string]any {
	return map[string]any{"mapping_type": "l2nm", "ne-id": fmt.Sprintf("pe-%d", dc+1), "interface-id": fmt.Sprintf("GigabitEthernet0/0/0/%d", dc)}
}

// cvlans are the cvlan-ids a JSON document holds, sorted.
func cvlans(doc string) []string {
	var out []string
	for _, m := range cvlanRE.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

var cvlanRE = regexp.MustCompile(`"cvlan-id":(\d+)`)

// TestE2EL2NM: two ELINEs over l2nm to ACTIVE (one asking a bandwidth,
// which the controller holds as each access's cir), one's VLAN changed
// through the API (an EDIT: the controller then holds both services, that
// one on the new VLAN, and reconcile finds no drift), deleted, the
// controller left with nothing.
func TestE2EL2NM(t *testing.T) {
	t.Parallel()
	emu, url := l2nmServer(t, l2nmemu.Options{BuildPolls: 1})
	runE2E(t, e2eCase{wimType: l2nm.Type, url: url, user: "nso", password: "s3cret",
		mappingInfo: l2nmMapping,
		services:    func() int { return len(emu.Services()) },
		qos:         map[string]any{"bandwidth": 250.0},
		qosStored: func() string {
			var got []int
			for _, id := range emu.Services() {
				got = append(got, l2nm.BandwidthOf(emu.Service(id)))
			}
			slices.Sort(got)
			if !slices.Equal(got, []int{0, 250}) {
				return fmt.Sprintf("bandwidths %v (Mbit/s), want [0 250]", got)
			}
			return ""
		},
		edited: func() string {
			var vlans []string
			for _, id := range emu.Services() {
				b, _ := json.Marshal(emu.Service(id))
				vlans = append(vlans, strings.Join(cvlans(string(b)), ","))
			}
			slices.Sort(vlans)
			// The network edited is the instance's dcB network that
			// editVLAN finds first: of either VLD (100/101 or 110/111).
			first, second := []string{"100,121", "110,111"}, []string{"100,101", "110,121"}
			if !slices.Equal(vlans, first) && !slices.Equal(vlans, second) {
				return fmt.Sprintf("the services' cvlan-ids %v, want %v or %v", vlans, first, second)
			}
			return ""
		}})
	if n := emu.Linted(); n == 0 {
		t.Fatal("yanglint checked nothing")
	}
}

// TestL2NMELAN: through the built wimd, a network of an instance present
// in three datacenters becomes ONE vpls vpn-service holding the three
// accesses (one vpn-node per PE) on the l2nm controller, ACTIVE; drift
// reconcile finds the controller as wimd recorded it. A VLAN change of
// one network through the API is an EDIT, DONE, after which the
// controller holds the same one vpls on the new VLAN and reconcile
// finds no drift; once the connector edits the ELAN behind wimd's back,
// reconcile reports the mismatch. The delete leaves nothing. Every body
// is valid L2NM (l2nmServer).
func TestL2NMELAN(t *testing.T) {
	t.Parallel()
	emu, url := l2nmServer(t, l2nmemu.Options{BuildPolls: 1})
	bins := wimdtest.Build(t, "wimd")
	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DATA_DIR=" + t.TempDir(), "WIMRO_API_TOKEN=tok-1"}
	addr := wimdtest.Start(t, bins[0], env, "serve", "--listen", "127.0.0.1:0", "--status-refresh", "100ms", "--reconcile-interval", "0")
	a := api{t: t, addr: addr, token: "tok-1"}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	var mappings []any
	dcs := []string{"dcA", "dcB", "dcC"}
	for i, dc := range dcs {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		a.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
		mappings = append(mappings, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
			"pop_switch_dpid": dpid, "pop_switch_port": "1", "wan_service_endpoint_id": fmt.Sprintf("ep-%d", i), "wan_service_mapping_info": l2nmMapping(i)}}})
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": l2nm.Type, "wim_url": url,
		"config": map[string]any{"wim_port_mapping": mappings}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1", "user": "nso", "password": "s3cret"}})

	// A port mapping without the PE's interface is refused when written.
	status, raw := a.send("POST", "/openmano/t0/wims/wan1/port_mapping", map[string]any{"wim_port_mapping": []any{map[string]any{"datacenter_name": "dcA",
		"pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": "00:00:00:00:00:00:00:09", "pop_switch_port": "9", "wan_service_endpoint_id": "ep-9",
			"wan_service_mapping_info": map[string]any{"mapping_type": "l2nm", "ne-id": "pe-9"}}}}}})
	if status != 400 || !strings.Contains(raw, `has no \"interface-id\"`) {
		t.Fatalf("a port mapping without interface-id: %d %s, want 400 naming it", status, raw)
	}

	vld := uuid.NewString()
	var nets []any
	for i, dc := range dcs {
		nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 700 + i})
	}
	inst, _ := a.activeInstanceOf("t0", 1, map[string]any{"instance": map[string]any{"name": "elan", "networks": nets}})
	ids := emu.Services()
	if len(ids) != 1 {
		t.Fatalf("the controller holds %v, want one vpn-service", ids)
	}
	svc := emu.Service(ids[0])
	b, _ := json.Marshal(svc)
	for _, want := range []string{`"vpn-type":"ietf-vpn-common:vpls"`, `"ne-id":"pe-1"`, `"ne-id":"pe-2"`, `"ne-id":"pe-3"`, `"cvlan-id":700`, `"cvlan-id":701`, `"cvlan-id":702`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the vpn-service holds no %s: %s", want, b)
		}
	}
	links := a.call("GET", "/openmano/t0/instances/"+inst+"/wan_links", nil)["wan_links"].([]any)
	if len(links) != 1 || links[0].(map[string]any)["wim_internal_id"] != ids[0] {
		t.Fatalf("wan_links %v, want one link of service %s", links, ids[0])
	}

	a.apiNoDrift("after the create")

	// The orchestrator moves dcB's network to VLAN 711: wimd's EDIT
	// brings the one ELAN in line, its three accesses kept.
	a.editVLAN(inst, "dcB", 711)
	eventually.Until(t, 30*time.Second, "one vpls on VLANs 700, 702 and 711", func() (bool, string) {
		left := emu.Services()
		if len(left) != 1 {
			return false, fmt.Sprint(left)
		}
		b, _ := json.Marshal(emu.Service(left[0]))
		return strings.Contains(string(b), `"vpn-type":"ietf-vpn-common:vpls"`) && strings.Join(cvlans(string(b)), ",") == "700,702,711", string(b)
	})
	links = a.call("GET", "/openmano/t0/instances/"+inst+"/wan_links", nil)["wan_links"].([]any)
	if now := emu.Services(); len(links) != 1 || links[0].(map[string]any)["wim_internal_id"] != now[0] {
		t.Fatalf("after the edit wan_links %v, want one link of service %v", links, now)
	}
	a.apiNoDrift("after the edit")

	// The connector edits the ELAN behind wimd's back, to VLANs 720..722:
	// reconcile reads the controller's accesses back as endpoints and
	// reports the mismatch with what wimd recorded (the check above can fail).
	r := connectors.NewRegistry()
	builtin.Register(r)
	var points []connectors.ConnectionPoint
	for i := range dcs {
		points = append(points, connectors.ConnectionPoint{ServiceEndpointID: fmt.Sprintf("ep-%d", i), Encapsulation: connectors.EncapDot1Q, VLAN: 720 + i, MappingInfo: l2nmMapping(i)})
	}
	conn, err := r.New(connectors.Config{Type: l2nm.Type, URL: url, User: "nso", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	now := emu.Services()[0]
	if _, err := conn.EditService(t.Context(), now, nil, connectors.Request{Type: connectors.ServiceELAN, Points: points}); err != nil {
		t.Fatalf("EditService: %v", err)
	}
	raw2, _ := json.Marshal(a.call("POST", "/openmano/reconcile?account=acct1", nil))
	for _, want := range []string{`"kind":"mismatch"`, `"ep-0/vlan=720"`, `"ep-2/vlan=722"`, `"ep-1/vlan=711"`} {
		if !strings.Contains(string(raw2), want) {
			t.Fatalf("reconcile after the edit behind wimd's back: %s, want it to hold %s", raw2, want)
		}
	}

	del := a.call("DELETE", "/openmano/t0/instances/"+inst, nil)
	a.waitAction(fmt.Sprintf("/openmano/t0/instances/%s/action/%s", inst, del["action_id"]), 1)
	eventually.Until(t, 30*time.Second, "the controller empty", func() (bool, string) {
		left := emu.Services()
		return len(left) == 0, fmt.Sprint(left)
	})
}
