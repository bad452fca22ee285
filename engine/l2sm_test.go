package engine_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
)

// setupL2SM: tenant t0 with WIM wan1 over dcA and dcB (endpoints ep-dcA,
// ep-dcB) and WIM wan2 over dcC (ep-dcC), t0's account on both.
func setupL2SM(t *testing.T) *bundle {
	t.Helper()
	b := setup(t)
	b.Tenant(t, "t0")
	for name, dcs := range map[string][]string{"wan1": {"dcA", "dcB"}, "wan2": {"dcC"}} {
		b.WAN(t, testfactory.WAN{WIM: engine.WIMInput{Name: ptr(name), Type: ptr("fake"), URL: ptr("http://fake")}, Tenant: "t0", Datacenters: dcs})
	}
	return b
}

func access(vpn, id, bearer string, vlan int) engine.SiteAccessInput {
	return engine.SiteAccessInput{Field: "site-network-access[0]", NetworkAccessID: id, VPNID: vpn, BearerReference: bearer, VLAN: &vlan}
}

// The access rules of the northbound, in the engine: a vpn-service
// without accesses is kept and listed; both accesses of a vpws must be on
// one WIM (the second is refused naming both, and nothing of it stays);
// an access that is the same point as another (site, bearer and VLAN) is
// refused naming its bearer; a PUT replaces the access with its id and
// leaves the site's other accesses alone.
func TestL2SMAccessRules(t *testing.T) {
	t.Parallel()
	b := setupL2SM(t)
	if _, err := b.Eng.CreateVPNServices(b.Ctx, "t0", []engine.VPNServiceInput{{VPNID: "split"}, {VPNID: "same-site"}, {VPNID: "pending"}, {VPNID: "s1"}, {VPNID: "s2"}}); err != nil {
		t.Fatal(err)
	}
	accessesOf := func(vpn string) []wimro.L2VPNAccess {
		t.Helper()
		v, err := b.Eng.GetVPNService(b.Ctx, "t0", vpn)
		if err != nil {
			t.Fatal(err)
		}
		return v.Accesses
	}
	put := func(site string, a engine.SiteAccessInput, create bool) error {
		t.Helper()
		_, _, err := b.Eng.PutSiteAccesses(b.Ctx, "t0", site, []engine.SiteAccessInput{a}, create)
		return err
	}

	tests := []struct {
		name        string
		first       [2]string // site, bearer
		second      [2]string
		vlans       [2]int
		wantField   string
		wantMessage []string
	}{
		{"bearers on two WIMs", [2]string{"dcA", "ep-dcA"}, [2]string{"dcC", "ep-dcC"}, [2]int{100, 200}, "bearer.bearer-reference",
			[]string{"wan1", "wan2", "one WIM"}},
		{"the same point twice", [2]string{"dcB", "ep-dcB"}, [2]string{"dcB", "ep-dcB"}, [2]int{101, 101}, "site-network-access[0].bearer.bearer-reference",
			[]string{"same-site-1", "VLAN 101", "different bearers or VLANs"}},
	}
	for i, tt := range tests {
		vpn := []string{"split", "same-site"}[i]
		if err := put(tt.first[0], access(vpn, vpn+"-1", tt.first[1], tt.vlans[0]), true); err != nil {
			t.Fatalf("%s: first access: %v", tt.name, err)
		}
		err := put(tt.second[0], access(vpn, vpn+"-2", tt.second[1], tt.vlans[1]), true)
		if wimro.ErrorCode(err) != wimro.EINVALID || wimro.ErrorField(err) != tt.wantField {
			t.Fatalf("%s: second access: %v (field %q), want 400 naming %s", tt.name, err, wimro.ErrorField(err), tt.wantField)
		}
		for _, w := range tt.wantMessage {
			if !strings.Contains(wimro.ErrorMessage(err), w) {
				t.Errorf("%s: %q does not say %q", tt.name, wimro.ErrorMessage(err), w)
			}
		}
		if got := accessesOf(vpn); len(got) != 1 {
			t.Errorf("%s: %d accesses after the refusal, want the first only", tt.name, len(got))
		}
	}

	// A vpn-service without accesses is kept, listed and healthy.
	list, err := b.Eng.ListVPNServices(b.Ctx, "t0")
	if err != nil {
		t.Fatal(err)
	}
	var pending *engine.VPNServiceView
	for i := range list {
		if list[i].VPNID == "pending" {
			pending = &list[i]
		}
	}
	if pending == nil || len(pending.Accesses) != 0 || len(pending.Links) != 0 || pending.Health() != nil {
		t.Errorf("pending vpn-service: %+v, want listed without accesses, links or error", pending)
	}

	// PUT merges by network-access-id.
	for _, a := range []struct{ vpn, id string }{{"s1", "a1"}, {"s2", "a2"}} {
		if err := put("dcA", access(a.vpn, a.id, "ep-dcA", 300), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("dcA", access("s1", "a1", "ep-dcA", 301), true); wimro.ErrorCode(err) != wimro.ECONFLICT {
		t.Errorf("POST of an existing access id: %v, want 409", err)
	}
	if err := put("dcA", access("s1", "a1", "ep-dcA", 302), false); err != nil {
		t.Fatal(err)
	}
	if got := accessesOf("s1"); len(got) != 1 || got[0].VLAN == nil || *got[0].VLAN != 302 {
		t.Errorf("s1 after the PUT: %+v, want a1 with VLAN 302", got)
	}
	if got := accessesOf("s2"); len(got) != 1 || got[0].NetworkAccessID != "a2" {
		t.Errorf("s2 after a PUT of s1's access at the same site: %+v, want a2 kept", got)
	}
	if err := put("dcA", access("s2", "a1", "ep-dcA", 303), false); wimro.ErrorCode(err) != wimro.ECONFLICT {
		t.Errorf("PUT moving s1's access to s2: %v, want 409", err)
	}
}

// Two accesses of one vpn-service at one site are two points of its WAN
// link: two networks of its VLD in that datacenter (the openmano API
// shows both), one link joining them. Deleting one access drops the link
// of a vpws and shrinks the ELAN of a vpls; the access is then 404.
func TestL2SMOneSite(t *testing.T) {
	t.Parallel()
	b := setupL2SM(t)
	dcName := map[string]string{}
	for _, name := range []string{"dcA", "dcB"} {
		d, err := b.db.GetDatacenter(b.ctx, name, "")
		if err != nil {
			t.Fatal(err)
		}
		dcName[d.UUID] = name
	}
	type point struct {
		site, id, bearer string
		vlan             int
	}
	tests := []struct {
		name, typ  string
		points     []point
		delete     point // one access to delete
		multipoint bool
		left       int // networks of the link left after the delete (0: no link)
	}{
		{"vpws, two VLANs of one bearer", "vpws", []point{{"dcB", "w1", "ep-dcB", 11}, {"dcB", "w2", "ep-dcB", 12}},
			point{site: "dcB", id: "w2"}, false, 0},
		{"vpls, two accesses at dcA and one at dcB", "vpls", []point{{"dcA", "l1", "ep-dcA", 21}, {"dcA", "l2", "ep-dcA", 22}, {"dcB", "l3", "ep-dcB", 23}},
			point{site: "dcA", id: "l1"}, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vpn := "one-site-" + tt.typ
			if _, err := b.Eng.CreateVPNServices(b.Ctx, "t0", []engine.VPNServiceInput{{VPNID: vpn, SvcType: tt.typ}}); err != nil {
				t.Fatal(err)
			}
			var made int
			for _, p := range tt.points {
				acts, _, err := b.Eng.PutSiteAccesses(b.Ctx, "t0", p.site, []engine.SiteAccessInput{access(vpn, p.id, p.bearer, p.vlan)}, true)
				if err != nil {
					t.Fatalf("access %s at %s: %v", p.id, p.site, err)
				}
				made += len(acts)
			}
			if made == 0 {
				t.Fatal("no WAN link was made")
			}
			inst, err := b.Eng.GetInstance(b.Ctx, "t0", vpn)
			if err != nil {
				t.Fatal(err)
			}
			ends := func(v engine.InstanceView) []string {
				var out []string
				for _, n := range v.Networks {
					vlan := 0
					if n.EncapsulationID != nil {
						vlan = *n.EncapsulationID
					}
					out = append(out, fmt.Sprintf("%s %s vlan %d", *n.OsmID, dcName[n.DatacenterID], vlan))
				}
				sort.Strings(out)
				return out
			}
			var want []string
			for _, p := range tt.points {
				want = append(want, fmt.Sprintf("%s %s vlan %d", p.id, p.site, p.vlan))
			}
			sort.Strings(want)
			if got := ends(inst); !slices.Equal(got, want) {
				t.Errorf("networks %v, want one per access %v", got, want)
			}
			if len(inst.WANLinks) != 1 || inst.WANLinks[0].Multipoint != tt.multipoint {
				t.Fatalf("WAN links %+v, want one, multipoint %v", inst.WANLinks, tt.multipoint)
			}
			first := inst.WANLinks[0].UUID

			acts, err := b.Eng.DeleteSiteAccess(b.Ctx, "t0", tt.delete.site, tt.delete.id)
			if err != nil {
				t.Fatal(err)
			}
			if inst, err = b.Eng.GetInstance(b.Ctx, "t0", vpn); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.left == 0 && (len(inst.WANLinks) != 0 || len(inst.Networks) != 0 || len(acts) != 0):
				t.Errorf("after deleting %s: links %+v, networks %v, actions %v; want none", tt.delete.id, inst.WANLinks, ends(inst), acts)
			case tt.left > 0 && (len(inst.WANLinks) != 1 || inst.WANLinks[0].UUID == first || !inst.WANLinks[0].Multipoint ||
				len(inst.Networks) != tt.left || len(acts) != 1):
				t.Errorf("after deleting %s: links %+v, networks %v, actions %v; want a new multipoint link over %d", tt.delete.id, inst.WANLinks, ends(inst), acts, tt.left)
			}
			// The dropped or replaced link's DELETE is queued.
			ias, err := b.Eng.ListInstanceActions(b.Ctx, "t0", inst.UUID)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(ias, func(a wimro.InstanceAction) bool { return a.Description == "DELETE" && a.Tasks == 1 }) {
				t.Errorf("instance actions %+v, want the old link's DELETE", ias)
			}
			v, err := b.Eng.GetVPNService(b.Ctx, "t0", vpn)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Accesses) != len(tt.points)-1 {
				t.Errorf("%d accesses left, want %d", len(v.Accesses), len(tt.points)-1)
			}
			if _, err := b.Eng.DeleteSiteAccess(b.Ctx, "t0", tt.delete.site, tt.delete.id); wimro.ErrorCode(err) != wimro.ENOTFOUND {
				t.Errorf("deleting %s again: %v, want 404", tt.delete.id, err)
			}
		})
	}
	if _, err := b.Eng.DeleteSiteAccess(b.Ctx, "t0", "dcZ", "w1"); wimro.ErrorCode(err) != wimro.ENOTFOUND || !strings.Contains(wimro.ErrorMessage(err), "dcZ") {
		t.Errorf("an access at an unknown site: %v, want 404 naming it", err)
	}
}

// A VLAN the access's datacenter has taken (network_status_source none:
// wimro holds its VLANs) is refused naming the access and its cvlan-id,
// the fields the client sent, not the instance's networks behind them.
func TestL2SMVLANTaken(t *testing.T) {
	t.Parallel()
	b := setupL2SM(t)
	if _, err := b.Eng.UpdateDatacenter(b.Ctx, "dcA", engine.DatacenterInput{Config: map[string]any{"network_status_source": engine.NetSourceNone}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Eng.CreateVPNServices(b.Ctx, "t0", []engine.VPNServiceInput{{VPNID: "x"}, {VPNID: "y"}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		vpn, site, id, bearer string
		vlan                  int
	}{{"x", "dcA", "x1", "ep-dcA", 301}, {"x", "dcB", "x2", "ep-dcB", 302}, {"y", "dcA", "y1", "ep-dcA", 301}} {
		if _, _, err := b.Eng.PutSiteAccesses(b.Ctx, "t0", p.site, []engine.SiteAccessInput{access(p.vpn, p.id, p.bearer, p.vlan)}, true); err != nil {
			t.Fatalf("access %s: %v", p.id, err)
		}
	}
	_, _, err := b.Eng.PutSiteAccesses(b.Ctx, "t0", "dcB", []engine.SiteAccessInput{access("y", "y2", "ep-dcB", 303)}, true)
	const field = "site-network-access.connection.tagged-interface.dot1q-vlan-tagged.cvlan-id"
	if wimro.ErrorCode(err) != wimro.ECONFLICT || wimro.ErrorField(err) != field ||
		!strings.Contains(wimro.ErrorMessage(err), "site-network-access y1's cvlan-id: VLAN 301 of datacenter dcA is taken") ||
		strings.Contains(wimro.ErrorMessage(err), "instance.networks") {
		t.Errorf("y's link over x's VLAN: %v (field %q), want 409 naming y1's cvlan-id (%s)", err, wimro.ErrorField(err), field)
	}
}
