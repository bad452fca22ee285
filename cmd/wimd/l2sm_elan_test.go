package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// l2smELANSetup starts a wimd with an API token in front of an ONOS
// emulator (which makes ELANs): tenant t0 with dcA, dcB and dcC attached
// (endpoints ep-0, ep-1, ep-2 of WIM wan1, onos, and ep-0b, a second port
// of wan1 at dcA), and a dynpac WIM wan2,
// which declares ELINE only, mapping endpoint dp-0 at dcA; t0 has an
// account on both.
func l2smELANSetup(t *testing.T) (api, *onosemu.Emulator, []string) {
	bins := wimdtest.Build(t, "wimd", "openmano")
	onos := onosemu.New(onosemu.Options{User: "onos", Password: "rocks"})
	srv := httptest.NewServer(onos)
	t.Cleanup(srv.Close)
	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DATA_DIR=" + t.TempDir(), "WIMRO_API_TOKEN=tok-1"}
	addr := wimdtest.Start(t, bins[0], env, "serve", "--listen", "127.0.0.1:0", "--status-refresh", "100ms", "--l2sm-wait", "20s")
	a := api{t: t, addr: addr, token: "tok-1"}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	var onosMaps, dynpacMaps []any
	for i, dc := range []string{"dcA", "dcB", "dcC"} {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		a.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
		onosPorts := []any{map[string]any{
			"pop_switch_dpid": dpid, "pop_switch_port": "1", "wan_service_endpoint_id": fmt.Sprintf("ep-%d", i),
			"wan_service_mapping_info": map[string]any{"mapping_type": "onos-port", "switch_dpid": fmt.Sprintf("of:%016x", i+1), "switch_port": "1"}}}
		if i == 0 {
			// A second exit of dcA on wan1: two accesses at one site.
			onosPorts = append(onosPorts, map[string]any{
				"pop_switch_dpid": dpid, "pop_switch_port": "3", "wan_service_endpoint_id": "ep-0b",
				"wan_service_mapping_info": map[string]any{"mapping_type": "onos-port", "switch_dpid": "of:0000000000000001", "switch_port": "3"}})
		}
		onosMaps = append(onosMaps, map[string]any{"datacenter_name": dc, "pop_wan_mappings": onosPorts})
		if i == 0 {
			dynpacMaps = append(dynpacMaps, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
				"pop_switch_dpid": dpid, "pop_switch_port": "2", "wan_service_endpoint_id": "dp-0",
				"wan_service_mapping_info": map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": 1}}}})
		}
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "onos", "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": onosMaps}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1", "user": "onos", "password": "rocks"}})
	// wan2 is never reached: its accesses are refused in the request.
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan2", "type": "dynpac", "wim_url": "http://127.0.0.1:9",
		"config": map[string]any{"wim_port_mapping": dynpacMaps}}})
	a.call("POST", "/openmano/t0/wims/wan2", map[string]any{"wim_account": map[string]any{"name": "acct2", "user": "admin", "password": "pw"}})
	return a, onos, append(env, "WIMD_BIN="+bins[0], "OPENMANO_BIN="+bins[1])
}

// TestL2SMELAN: a vpls vpn-service whose accesses span three datacenters
// ends as ONE multipoint service on the controller holding the three
// points (the ELINE made while it had two is replaced), its GET bodies
// valid RFC 8466, no drift, and nothing left after delete; an access of a
// vpls on a WIM whose connector declares no ELAN is refused naming the
// WIM, its type and what it declares.
func TestL2SMELAN(t *testing.T) {
	t.Parallel()
	a, onos, env := l2smELANSetup(t)
	osm := osmPlugin{t: t, addr: a.addr, user: "t0", pass: "tok-1"}
	path := "/vpn-services/vpn-service="

	vpn := uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpls"))
	for i, dc := range []string{"dcA", "dcB", "dcC"} {
		osm.expect(http.StatusCreated, "POST", siteAccesses(dc), accessBody(vpn, uuid.NewString(), fmt.Sprintf("ep-%d", i), 801+i))
	}
	want := "of:0000000000000001/1 vlan 801 + of:0000000000000002/1 vlan 802 + of:0000000000000003/1 vlan 803"
	eventually.Until(t, 60*time.Second, "one ELAN on the controller holding the three points", func() (bool, string) {
		got := onosServices(onos)
		return len(got) == 1 && got[0] == want, fmt.Sprint(got)
	})
	raw := osm.expect(http.StatusOK, "GET", path+vpn+"/", nil)
	yangValid(t, raw)
	if !strings.Contains(string(raw), `"ietf-l2vpn-svc:ldp-l2tp-vpls"`) {
		t.Errorf("GET vpn-service: %s, want vpn-svc-type ldp-l2tp-vpls", raw)
	}
	yangValid(t, osm.expect(http.StatusOK, "GET", "/vpn-services", nil))
	// wimro's own view: one WAN link, multipoint, ACTIVE.
	inst := a.call("GET", "/openmano/t0/instances/"+vpn, nil)
	links, _ := inst["wan_links"].([]any)
	if len(links) != 1 {
		t.Fatalf("instance %s has %d WAN links, want one: %v", vpn, len(links), inst["wan_links"])
	}
	if l, _ := links[0].(map[string]any); l["multipoint"] != true || l["status"] != "ACTIVE" {
		t.Errorf("WAN link: %v, want multipoint ACTIVE", l)
	}
	// wan2's dynpac cannot be reconciled (it cannot list its services).
	noDrift(t, env, "--account", "acct1")
	osm.expect(http.StatusNoContent, "DELETE", path+vpn+"/", nil)
	eventually.Until(t, 60*time.Second, "nothing on the controller", func() (bool, string) {
		got := onosServices(onos)
		return len(got) == 0, fmt.Sprint(got)
	})
	osm.expect(http.StatusNotFound, "GET", path+vpn+"/", nil)

	// A bearer on wan2 (dynpac: ELINE only) cannot join a vpls.
	vpn = uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpls"))
	raw = osm.expect(http.StatusBadRequest, "POST", siteAccesses("dcA"), accessBody(vpn, uuid.NewString(), "dp-0", 901))
	if !strings.Contains(string(raw), "wan2 (type dynpac, declares ELINE)") || !strings.Contains(string(raw), "no ELAN") {
		t.Errorf("vpls access on wan2: %s, want the WIM, its type and its declared services named", raw)
	}
	osm.expect(http.StatusNoContent, "DELETE", path+vpn+"/", nil)
	if got := onosServices(onos); len(got) != 0 {
		t.Errorf("controller after the refused vpls: %v, want nothing", got)
	}
}
