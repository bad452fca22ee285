package main

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	"github.com/wimro/wimro/internal/testkit/eventually"
)

// deletesDone waits until every DELETE instance action of the
// vpn-service's instance (a replaced or dropped WAN link's) is done: the
// controller holds the old service until then, and reconcile would count
// it.
func deletesDone(t *testing.T, a api, vpn string) {
	t.Helper()
	eventually.Until(t, 60*time.Second, "the old links' DELETEs done", func() (bool, string) {
		acts := a.call("GET", "/openmano/t0/instances/"+vpn+"/action", nil)["actions"].([]any)
		for _, x := range acts {
			act := x.(map[string]any)
			if act["description"] == "DELETE" && act["number_done"] != act["number_tasks"] {
				return false, fmt.Sprint(act)
			}
		}
		return true, ""
	})
}

// controllerIs waits until the controller holds exactly want (onosServices'
// form).
func controllerIs(t *testing.T, onos *onosemu.Emulator, what string, want ...string) {
	t.Helper()
	sort.Strings(want)
	eventually.Until(t, 60*time.Second, what, func() (bool, string) {
		got := onosServices(onos)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}

// TestL2SMOneSite: two site-network-accesses of one vpn-service at one
// site (dcA's two exits on wan1, ep-0 and ep-0b). A vpws whose two
// accesses are at dcA is a service between two ports of one datacenter;
// a vpls with two accesses at dcA and one at dcB is an ELAN of three
// points. Each goes through create, GET, a PUT editing one access, a
// DELETE of one access and the DELETE of the service, with the
// controller's state checked after each step, reconcile finding no
// drift, GET bodies valid RFC 8466, and the openmano API (GET instance,
// the CLI's instance list) showing the two networks of the one
// datacenter. An access that is the same point as another (site, bearer,
// VLAN) is a 400 naming its bearer-reference.
func TestL2SMOneSite(t *testing.T) {
	t.Parallel()
	a, onos, env := l2smELANSetup(t)
	osm := osmPlugin{t: t, addr: a.addr, user: "t0", pass: "tok-1"}
	const (
		portA1 = "of:0000000000000001/1"
		portA3 = "of:0000000000000001/3"
		portB1 = "of:0000000000000002/1"
	)
	service := "/vpn-services/vpn-service="
	dcA := a.call("GET", "/openmano/t0/datacenters/dcA", nil)["datacenter"].(map[string]any)["uuid"]
	// wan2's dynpac cannot be reconciled (it cannot list its services).
	noDriftOnWAN1 := func() { t.Helper(); noDrift(t, env, "--account", "acct1") }

	// A vpws between the two exits of dcA.
	vpws, w1, w2 := uuid.NewString(), uuid.NewString(), uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpws, "vpws"))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpws, w1, "ep-0", 301))
	// The same point again (site, bearer and VLAN of w1): refused, and
	// nothing of it stays.
	raw := osm.expect(http.StatusBadRequest, "POST", siteAccesses("dcA"), accessBody(vpws, uuid.NewString(), "ep-0", 301))
	if !strings.Contains(string(raw), `"error-path": "ietf-l2vpn-svc:site-network-access[0].bearer.bearer-reference"`) || !strings.Contains(string(raw), w1) {
		t.Errorf("the same point twice: %s, want a 400 naming the bearer-reference and the access it repeats", raw)
	}
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpws, w2, "ep-0b", 302))
	// The POST waited for the link: the controller has it already.
	if got, want := onosServices(onos), []string{portA1 + " vlan 301 + " + portA3 + " vlan 302"}; !slices.Equal(got, want) {
		t.Fatalf("controller after the second access at dcA: %v, want %v", got, want)
	}
	yangValid(t, osm.expect(http.StatusOK, "GET", service+vpws+"/", nil))
	yangValid(t, osm.expect(http.StatusOK, "GET", "/vpn-services", nil))

	// The openmano API: one instance, two networks in dcA (the accesses),
	// one ACTIVE WAN link, not multipoint.
	inst := a.call("GET", "/openmano/t0/instances/"+vpws, nil)
	var nets []string
	for _, x := range inst["networks"].([]any) {
		n := x.(map[string]any)
		nets = append(nets, fmt.Sprintf("%v@%v vlan %v", n["osm_id"], n["datacenter_id"], n["encapsulation_id"]))
	}
	sort.Strings(nets)
	want := []string{fmt.Sprintf("%s@%s vlan 301", w1, dcA), fmt.Sprintf("%s@%s vlan 302", w2, dcA)}
	sort.Strings(want)
	if !slices.Equal(nets, want) {
		t.Errorf("instance networks %v, want the two accesses in dcA %v", nets, want)
	}
	if links, _ := inst["wan_links"].([]any); len(links) != 1 {
		t.Errorf("instance WAN links %v, want one", inst["wan_links"])
	} else if l := links[0].(map[string]any); l["status"] != "ACTIVE" || l["multipoint"] == true {
		t.Errorf("WAN link %v, want ACTIVE, point to point", l)
	}
	// The CLI: the instance listed; shown with both networks at dcA by
	// their access ids and the link named by them.
	if out := string(openmanoCLI(t, env, a.addr, "instance-scenario-list")); !strings.Contains(out, vpws) {
		t.Errorf("openmano instance-scenario-list:\n%s\nwant the vpn-service's instance", out)
	}
	out := string(openmanoCLI(t, env, a.addr, "instance-scenario-list", vpws))
	for _, re := range []string{`(?m)^  net +\S+ +` + w1 + ` +dcA +ACTIVE$`, `(?m)^  net +\S+ +` + w2 + ` +dcA +ACTIVE$`,
		`(?m)^  wan_link +\S+ +` + strings.Join(sorted(w1, w2), ",") + ` +ACTIVE$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("openmano instance-scenario-list %s:\n%s\nwant a line matching %s", vpws, out, re)
		}
	}
	noDriftOnWAN1()

	// Edit: w2's VLAN becomes 310 (the NBI's replace: a new link).
	osm.expect(http.StatusNoContent, "PUT", siteAccesses("dcA"), accessBody(vpws, w2, "ep-0b", "310"))
	controllerIs(t, onos, "the vpws with w2 on VLAN 310", portA1+" vlan 301 + "+portA3+" vlan 310")
	yangValid(t, osm.expect(http.StatusOK, "GET", service+vpws+"/", nil))
	deletesDone(t, a, vpws)
	noDriftOnWAN1()

	// DELETE of one access: one point left, no service; the vpn-service
	// stays, pending.
	osm.expect(http.StatusNoContent, "DELETE", siteAccesses("dcA")+"site-network-access="+w2, nil)
	controllerIs(t, onos, "the vpws gone with its second access")
	osm.expect(http.StatusNotFound, "DELETE", siteAccesses("dcA")+"site-network-access="+w2, nil)
	yangValid(t, osm.expect(http.StatusOK, "GET", service+vpws+"/", nil))
	if inst := a.call("GET", "/openmano/t0/instances/"+vpws, nil); len(inst["wan_links"].([]any)) != 0 || len(inst["networks"].([]any)) != 0 {
		t.Errorf("instance after deleting an access: %v, want no networks and no WAN link", inst)
	}
	deletesDone(t, a, vpws)
	noDriftOnWAN1()

	// A vpls with two accesses at dcA and one at dcB: an ELAN of three.
	vpls, l1, l2, l3 := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpls, "vpls"))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpls, l1, "ep-0", 401))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpls, l2, "ep-0b", 402))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcB"), accessBody(vpls, l3, "ep-1", 403))
	controllerIs(t, onos, "the vpls one ELAN of three points",
		portA1+" vlan 401 + "+portA3+" vlan 402 + "+portB1+" vlan 403")
	yangValid(t, osm.expect(http.StatusOK, "GET", service+vpls+"/", nil))
	if links, _ := a.call("GET", "/openmano/t0/instances/"+vpls, nil)["wan_links"].([]any); len(links) != 1 ||
		links[0].(map[string]any)["multipoint"] != true || links[0].(map[string]any)["status"] != "ACTIVE" {
		t.Errorf("vpls WAN links %v, want one, multipoint, ACTIVE", links)
	}
	deletesDone(t, a, vpls)
	noDriftOnWAN1()

	// Edit one of dcA's two: l1 moves to VLAN 411.
	osm.expect(http.StatusNoContent, "PUT", siteAccesses("dcA"), accessBody(vpls, l1, "ep-0", 411))
	controllerIs(t, onos, "the ELAN with l1 on VLAN 411", portA1+" vlan 411 + "+portA3+" vlan 402 + "+portB1+" vlan 403")
	deletesDone(t, a, vpls)
	noDriftOnWAN1()

	// DELETE of one of dcA's accesses: an ELAN of the two left.
	osm.expect(http.StatusNoContent, "DELETE", siteAccesses("dcA")+"site-network-access="+l1, nil)
	controllerIs(t, onos, "the ELAN of l2 and l3", portA3+" vlan 402 + "+portB1+" vlan 403")
	yangValid(t, osm.expect(http.StatusOK, "GET", service+vpls+"/", nil))
	deletesDone(t, a, vpls)
	noDriftOnWAN1()

	// DELETE of the services: nothing left anywhere.
	osm.expect(http.StatusNoContent, "DELETE", service+vpls+"/", nil)
	osm.expect(http.StatusNoContent, "DELETE", service+vpws+"/", nil)
	controllerIs(t, onos, "nothing on the controller")
	yangValid(t, osm.expect(http.StatusOK, "GET", "/vpn-services", nil))
	for _, vpn := range []string{vpws, vpls} {
		osm.expect(http.StatusNotFound, "GET", service+vpn+"/", nil)
		if st, raw := a.send("GET", "/openmano/t0/instances/"+vpn, nil); st != http.StatusNotFound {
			t.Errorf("openmano GET of deleted vpn-service %s = %d %s, want 404", vpn, st, raw)
		}
	}
	noDriftOnWAN1()
}

func sorted(s ...string) []string { sort.Strings(s); return s }
