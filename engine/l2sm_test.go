package engine_test

import (
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
// both at one site is refused; a PUT replaces the access with its id and
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
		wantMessage []string
	}{
		{"bearers on two WIMs", [2]string{"dcA", "ep-dcA"}, [2]string{"dcC", "ep-dcC"}, []string{"wan1", "wan2", "one WIM"}},
		{"both accesses at one site", [2]string{"dcB", "ep-dcB"}, [2]string{"dcB", "ep-dcB"}, []string{"one site"}},
	}
	for i, tt := range tests {
		vpn := []string{"split", "same-site"}[i]
		if err := put(tt.first[0], access(vpn, vpn+"-1", tt.first[1], 100+i), true); err != nil {
			t.Fatalf("%s: first access: %v", tt.name, err)
		}
		err := put(tt.second[0], access(vpn, vpn+"-2", tt.second[1], 200+i), true)
		if wimro.ErrorCode(err) != wimro.EINVALID {
			t.Fatalf("%s: second access: %v, want 400", tt.name, err)
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
