package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	l2smemu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// TestMonitorFindsServiceRemoved runs the wimd binary with
// --monitor-interval 300ms against the IETF L2VPN emulator: once the
// instance's link is ACTIVE, its vpn-service is removed on the controller
// behind wimd's back; the link goes DOWN in GET .../wan_links (status,
// error_msg naming reconcile --fix, status_since moved), the log says so
// at WARN, /metrics counts the transition and the link DOWN, and the
// instance action's event stream has it; then reconcile --fix re-creates
// the service and the link is ACTIVE again. wimd then stops cleanly.
func TestMonitorFindsServiceRemoved(t *testing.T) {
	t.Parallel()
	sites := []string{"dc-a", "dc-b"}
	emu := l2smemu.New(l2smemu.Options{Sites: []l2smemu.Site{{ID: sites[0]}, {ID: sites[1]}}, User: "admin", Password: "s3cret"})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)

	p := startWimd(t, buildWimd(t), []string{
		"WIMRO_DATABASE_URL=" + pgtest.URL(t),
		"WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"WIMRO_MONITOR_INTERVAL=300ms",
	}, "--data-dir", t.TempDir(), "--status-refresh", "100ms")
	a := api{t: t, addr: p.addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	mappings := twoDatacenters(a.call, func(i int, _ string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i),
			"wan_service_mapping_info": map[string]any{"mapping_type": "l2sm-site", "site-id": sites[i], "device-id": sites[i] + "-pe"}}
	})
	for _, dc := range []string{"dcA", "dcB"} {
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "ietfl2vpn", "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": mappings}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"user": "admin", "password": "s3cret"}})

	id, created := a.activeInstance("t0", 1)
	linkOf := func() map[string]any {
		return a.call("GET", "/openmano/t0/instances/"+id+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)
	}
	before := linkOf()
	vpn, _ := before["wim_internal_id"].(string)
	sinceBefore, err := time.Parse(time.RFC3339Nano, before["status_since"].(string))
	if err != nil || vpn == "" {
		t.Fatalf("the ACTIVE link: %v (%v)", before, err)
	}

	// Behind wimd's back: the attachments, then the vpn-service.
	for _, acc := range emu.Accesses() {
		if !emu.RemoveAccess(acc.Site, acc.ID) {
			t.Fatalf("remove %+v", acc)
		}
	}
	req, _ := http.NewRequest("DELETE", srv.URL+l2smemu.Root+"/vpn-services/vpn-service="+vpn, nil)
	req.SetBasicAuth("admin", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || len(emu.ServiceIDs()) != 0 {
		t.Fatalf("DELETE of the vpn-service on the emulator: %d, %d left", resp.StatusCode, len(emu.ServiceIDs()))
	}

	var down map[string]any
	poll(t, "the link DOWN", func() (bool, string) {
		down = linkOf()
		msg, _ := down["error_msg"].(string)
		return down["status"] == "DOWN" && strings.Contains(msg, "no longer has service "+vpn) && strings.Contains(msg, "wimd reconcile --fix"),
			fmt.Sprintf("%v %q", down["status"], msg)
	})
	if since, err := time.Parse(time.RFC3339Nano, down["status_since"].(string)); err != nil || !since.After(sinceBefore) {
		t.Fatalf("status_since %v (%v), was %v", down["status_since"], err, sinceBefore)
	}
	poll(t, "the transition in /metrics", func() (bool, string) {
		_, body := a.send("GET", "/metrics", nil)
		for _, want := range []string{`wimro_wan_link_transitions_total{from="ACTIVE",service_type="ELINE",to="DOWN"} 1`, `wimro_wan_links_by_status{service_type="ELINE",status="DOWN"} 1`} {
			if !strings.Contains(body, want+"\n") {
				return false, "no " + want
			}
		}
		return true, ""
	})
	if log := p.log.String(); !strings.Contains(log, `level=WARN msg="WAN link is no longer ACTIVE"`) || !strings.Contains(log, "wan_link_id="+down["uuid"].(string)) {
		t.Fatalf("no WARN line for the link:\n%s", lastLines(log, 30))
	}

	// The link's history carries the transition: the stream of the
	// instance action that made it replays it before done.
	events := a.readStream(fmt.Sprintf("/openmano/t0/instances/%s/action/%s/events", id, created["uuid"]), nil)
	var sawDown bool
	for _, e := range events {
		sawDown = sawDown || (e.name == "change" && e.data["link_status"] == "DOWN" && e.data["wan_link_id"] == down["uuid"])
	}
	if !sawDown || events[len(events)-1].name != "done" {
		t.Fatalf("the create's events lack the DOWN transition or done: %v", events)
	}

	// reconcile --fix (through the API) re-queues the missing link as a
	// CREATE: the controller has the service again and the link is ACTIVE.
	rep := a.call("POST", "/openmano/reconcile?fix=true", nil)
	drift := rep["reconcile"].(map[string]any)["accounts"].([]any)[0].(map[string]any)["drift"].([]any)
	if len(drift) != 1 || drift[0].(map[string]any)["kind"] != "missing" || drift[0].(map[string]any)["fixed"] != true {
		t.Fatalf("reconcile --fix: %v", rep)
	}
	poll(t, "the link ACTIVE again", func() (bool, string) {
		l := linkOf()
		return l["status"] == "ACTIVE" && len(emu.ServiceIDs()) == 1, fmt.Sprintf("%v %v, %d services", l["status"], l["error_msg"], len(emu.ServiceIDs()))
	})
	p.stop(t, syscall.SIGTERM)
}
