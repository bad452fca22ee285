package engine_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

func toAny(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func groups(t *testing.T, v engine.WIMView) []engine.PortMappingGroup {
	t.Helper()
	g, ok := v.Config["wim_port_mapping"].([]engine.PortMappingGroup)
	if !ok {
		t.Fatalf("config.wim_port_mapping = %T", v.Config["wim_port_mapping"])
	}
	return g
}

func TestCreateWIMWithPortMappings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dcA, dcB := b.Datacenter(t, "dcA"), b.Datacenter(t, "dcB")
	w := b.WIM(t, "wan1", testfactory.Mapping("dcA", 1), testfactory.Mapping(dcB.UUID, 2))

	g := groups(t, w)
	if len(g) != 2 {
		t.Fatalf("%d groups, want 2", len(g))
	}
	byDC := map[string]engine.PortMappingGroup{}
	for _, x := range g {
		byDC[x.DatacenterID] = x
	}
	// The endpoint id is derived exactly as OSM does (a vector OSM RO computed).
	if got := byDC[dcA.UUID].PopWANMappings[0].WANServiceEndpointID; got != "dpid-port:6af9cfa2f22fb0c545129949fff64d2dda3f8a85" {
		t.Fatalf("derived endpoint id = %q", got)
	}
	if got := byDC[dcB.UUID].PopWANMappings[0].PopSwitchPort; got != "2" {
		t.Fatalf("pop_switch_port = %q", got)
	}
	if w.URL != "http://wan1.example" || w.Type != "fake" {
		t.Fatalf("wim = %+v", w.WIM)
	}
	got, err := b.eng.GetWIM(b.ctx, "any", "wan1")
	if err != nil || len(groups(t, got)) != 2 {
		t.Fatalf("GetWIM = %+v, %v", got, err)
	}
}

func TestCreateWIMIsAtomic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Datacenter(t, "dcA")
	_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{
		Name: ptr("wan1"), Type: ptr("fake"), URL: ptr("http://x"),
		Config: map[string]any{"wim_port_mapping": toAny([]engine.PortMappingInput{testfactory.Mapping("dcA", 1), testfactory.Mapping("nowhere", 2)})},
	})
	wantCode(t, err, wimro.ENOTFOUND)
	_, err = b.eng.GetWIM(b.ctx, "any", "wan1")
	wantCode(t, err, wimro.ENOTFOUND)
	if rows, _ := b.db.ListPortMappings(b.ctx, persistence.PortMappingFilter{}); len(rows) != 0 {
		t.Fatalf("%d mappings left behind", len(rows))
	}
}

func TestWIMValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name  string
		in    engine.WIMInput
		field string
	}{
		{"no name", engine.WIMInput{Type: ptr("fake"), URL: ptr("http://x")}, "wim.name"},
		{"bad name", engine.WIMInput{Name: ptr("a;b"), Type: ptr("fake"), URL: ptr("http://x")}, "wim.name"},
		{"no type", engine.WIMInput{Name: ptr("w"), URL: ptr("http://x")}, "wim.type"},
		{"bad type", engine.WIMInput{Name: ptr("w"), Type: ptr("cisco"), URL: ptr("http://x")}, "wim.type"},
		{"no url", engine.WIMInput{Name: ptr("w"), Type: ptr("fake")}, "wim.wim_url"},
		{"relative url", engine.WIMInput{Name: ptr("w"), Type: ptr("fake"), URL: ptr("host:80")}, "wim.wim_url"},
		{"quote in description", engine.WIMInput{Name: ptr("w"), Type: ptr("fake"), URL: ptr("http://x"), Description: ptr(`it's`)}, "wim.description"},
		{"mapping not a list", engine.WIMInput{Name: ptr("w"), Type: ptr("fake"), URL: ptr("http://x"), Config: map[string]any{"wim_port_mapping": "x"}}, "wim.config.wim_port_mapping"},
		{"mapping without type", engine.WIMInput{Name: ptr("w"), Type: ptr("fake"), URL: ptr("http://x"), Config: map[string]any{"wim_port_mapping": []any{
			map[string]any{"datacenter_name": "dc", "pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": "00:01", "pop_switch_port": 1, "wan_service_mapping_info": map[string]any{}}}},
		}}}, "wim.config.wim_port_mapping[0].pop_wan_mappings[0].wan_service_mapping_info.mapping_type"},
		{"bad dpid", engine.WIMInput{Name: ptr("w"), Type: ptr("fake"), URL: ptr("http://x"), Config: map[string]any{"wim_port_mapping": []any{
			map[string]any{"datacenter_name": "dc", "pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": "00::01", "pop_switch_port": 1, "wan_service_endpoint_id": "e"}}},
		}}}, "wim.config.wim_port_mapping[0].pop_wan_mappings[0].pop_switch_dpid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := b.eng.CreateWIM(b.ctx, c.in)
			wantField(t, err, c.field)
		})
	}
	// The registry is the one list of types: odl, once listed in a copy,
	// has no connector; create and edit say which types there are.
	_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("w"), Type: ptr("odl"), URL: ptr("http://x")})
	wantField(t, err, "wim.type")
	const list = "use one of dynpac, failing, fake, ietfl2vpn, ietfl3vpn, l2nm, l3nm, onos, onos_vpls, tapi"
	if !strings.Contains(err.Error(), list) {
		t.Fatalf("create odl: %v, want it to say %q", err, list)
	}
	b.WIM(t, "dup")
	_, err = b.eng.UpdateWIM(b.ctx, "dup", engine.WIMInput{Type: ptr("odl")})
	wantField(t, err, "wim.type")
	if !strings.Contains(err.Error(), list) {
		t.Fatalf("edit to odl: %v, want it to say %q", err, list)
	}
	_, err = b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("dup"), Type: ptr("fake"), URL: ptr("http://x")})
	wantCode(t, err, wimro.ECONFLICT)
}

func TestUpdateWIM(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Datacenter(t, "dcA")
	b.Datacenter(t, "dcB")
	w, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("wan1"), Type: ptr("fake"), URL: ptr("http://x"),
		Config: map[string]any{"keep": "yes", "drop": 1, "wim_port_mapping": toAny([]engine.PortMappingInput{testfactory.Mapping("dcA", 1), testfactory.Mapping("dcB", 2)})}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Config["keep"] != "yes" {
		t.Fatalf("other config keys are kept: %v", w.Config)
	}

	up, err := b.eng.UpdateWIM(b.ctx, w.UUID, engine.WIMInput{Name: ptr("wan1b"), URL: ptr(" http://y/ "),
		Config: map[string]any{"drop": nil, "new": true}})
	if err != nil {
		t.Fatal(err)
	}
	if up.Name != "wan1b" || up.URL != "http://y" || up.Type != "fake" || up.Config["keep"] != "yes" || up.Config["new"] != true || up.Config["drop"] != nil {
		t.Fatalf("UpdateWIM = %+v", up.WIM)
	}
	if len(groups(t, up)) != 2 {
		t.Fatal("mappings changed by an edit without wim_port_mapping")
	}

	// A non-empty wim_port_mapping replaces every mapping.
	up, err = b.eng.UpdateWIM(b.ctx, "wan1b", engine.WIMInput{Config: map[string]any{"wim_port_mapping": toAny([]engine.PortMappingInput{testfactory.Mapping("dcA", 7)})}})
	if err != nil {
		t.Fatal(err)
	}
	if g := groups(t, up); len(g) != 1 || len(g[0].PopWANMappings) != 1 {
		t.Fatalf("replaced mappings = %+v", g)
	}
	// A failing replacement leaves the old mappings in place.
	_, err = b.eng.UpdateWIM(b.ctx, "wan1b", engine.WIMInput{Name: ptr("renamed"), Config: map[string]any{"wim_port_mapping": toAny([]engine.PortMappingInput{testfactory.Mapping("nowhere", 7)})}})
	wantCode(t, err, wimro.ENOTFOUND)
	got, _ := b.eng.GetWIM(b.ctx, "any", "wan1b")
	if got.Name != "wan1b" || len(groups(t, got)) != 1 {
		t.Fatalf("failed edit changed the WIM: %+v", got)
	}
	_, err = b.eng.UpdateWIM(b.ctx, "wan1b", engine.WIMInput{Type: ptr("bogus")})
	wantField(t, err, "wim.type")
	_, err = b.eng.UpdateWIM(b.ctx, "nope", engine.WIMInput{Name: ptr("x")})
	wantCode(t, err, wimro.ENOTFOUND)
}

func TestDeleteWIM(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := b.Tenant(t, "t0"), b.Tenant(t, "t1")
	b.Datacenter(t, "dcA", t0, t1)
	w := b.WIM(t, "wan1", testfactory.Mapping("dcA", 1))
	b.Account(t, "t0", "wan1", engine.AccountInput{})
	b.Account(t, "t1", "wan1", engine.AccountInput{})

	msg, err := b.eng.DeleteWIM(b.ctx, "wan1")
	if err != nil || !strings.Contains(msg, "deleted") || !strings.Contains(msg, w.UUID) {
		t.Fatalf("DeleteWIM = %q, %v", msg, err)
	}
	if accts, _ := b.db.ListAccounts(b.ctx); len(accts) != 0 {
		t.Fatalf("%d accounts left", len(accts))
	}
	_, err = b.eng.DeleteWIM(b.ctx, "wan1")
	wantCode(t, err, wimro.ENOTFOUND)
	_ = t1
}

// A WIM that WAN links use cannot be deleted; nothing is half deleted.
func TestDeleteWIMBlockedByWANLink(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := b.Tenant(t, "t0")
	b.Datacenter(t, "dcA", t0)
	w := b.WIM(t, "wan1", testfactory.Mapping("dcA", 1))
	a := b.Account(t, "t0", "wan1", engine.AccountInput{User: ptr("u")})
	inst := uuid.NewString()
	pool := b.db.Pool()
	if _, err := pool.Exec(b.ctx, `INSERT INTO instance_scenarios (uuid, name, tenant_id) VALUES ($1, 'ns', $2)`, inst, t0.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(b.ctx, `INSERT INTO instance_wim_nets (uuid, instance_scenario_id, wim_id, wim_account_id) VALUES ($1, $2, $3, $4)`, uuid.NewString(), inst, w.UUID, a.UUID); err != nil {
		t.Fatal(err)
	}
	_, err := b.eng.DeleteWIM(b.ctx, "wan1")
	wantCode(t, err, wimro.ECONFLICT)
	if !strings.Contains(wimro.ErrorMessage(err), "still used by WAN links") {
		t.Fatalf("message = %q", wimro.ErrorMessage(err))
	}
	_, err = b.eng.DeleteAccounts(b.ctx, "t0", "wan1")
	wantCode(t, err, wimro.ECONFLICT)
	if att, _ := b.db.ListAttachedAccounts(b.ctx, w.UUID, ""); len(att) != 1 {
		t.Fatal("association lost by a refused delete")
	}
	if _, err := b.eng.GetWIM(b.ctx, "t0", "wan1"); err != nil {
		t.Fatalf("WIM lost by a refused delete: %v", err)
	}
}

func TestPortMappings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := b.Tenant(t, "t0")
	b.Datacenter(t, "dcA", t0)
	b.Datacenter(t, "dcB")
	w := b.WIM(t, "wan1")

	// A tenant sees only the WIMs it is attached to.
	_, err := b.eng.CreatePortMappings(b.ctx, "t0", "wan1", []engine.PortMappingInput{testfactory.Mapping("dcA", 1)})
	wantCode(t, err, wimro.ENOTFOUND)
	if _, err := b.eng.CreateAccount(b.ctx, "t0", "wan1", engine.AccountInput{}); err != nil {
		t.Fatal(err)
	}
	// Datacenter names resolve among the tenant's datacenters.
	_, err = b.eng.CreatePortMappings(b.ctx, "t0", "wan1", []engine.PortMappingInput{testfactory.Mapping("dcB", 1)})
	wantCode(t, err, wimro.ENOTFOUND)
	out, err := b.eng.CreatePortMappings(b.ctx, "t0", "wan1", []engine.PortMappingInput{testfactory.Mapping("dcA", 1)})
	if err != nil || len(out) != 1 || out[0].WIMName != "wan1" || out[0].PopWANMappings[0].WANServiceEndpointID == "" {
		t.Fatalf("CreatePortMappings = %+v, %v", out, err)
	}
	// "any" resolves among all datacenters.
	if _, err := b.eng.CreatePortMappings(b.ctx, "any", w.UUID, []engine.PortMappingInput{testfactory.Mapping("dcB", 2)}); err != nil {
		t.Fatal(err)
	}
	// Adding the same mapping again is a conflict naming the mapping; nothing
	// of the request is written.
	_, err = b.eng.CreatePortMappings(b.ctx, "any", "wan1", []engine.PortMappingInput{testfactory.Mapping("dcB", 3), testfactory.Mapping("dcA", 1)})
	wantCode(t, err, wimro.ECONFLICT)
	if !strings.Contains(wimro.ErrorMessage(err), "wim_port_mapping[1]") {
		t.Fatalf("message = %q", wimro.ErrorMessage(err))
	}
	g, err := b.eng.GetPortMappings(b.ctx, engine.AnyTenant, "wan1")
	if err != nil || len(g) != 2 {
		t.Fatalf("GetPortMappings = %+v, %v", g, err)
	}
	_, err = b.eng.GetPortMappings(b.ctx, engine.AnyTenant, "nope")
	wantCode(t, err, wimro.ENOTFOUND)
	_, err = b.eng.CreatePortMappings(b.ctx, "any", "wan1", nil)
	wantField(t, err, "wim_port_mapping")

	msg, err := b.eng.DeletePortMappings(b.ctx, engine.AnyTenant, "wan1")
	if err != nil || msg != "port mapping for wim "+w.UUID+" deleted." {
		t.Fatalf("DeletePortMappings = %q, %v", msg, err)
	}
	if g, _ := b.eng.GetPortMappings(b.ctx, engine.AnyTenant, "wan1"); len(g) != 0 {
		t.Fatalf("left %+v", g)
	}
	_, err = b.eng.DeletePortMappings(b.ctx, engine.AnyTenant, "nope")
	wantCode(t, err, wimro.ENOTFOUND)
	b.Tenant(t, "t1")
	_, err = b.eng.GetPortMappings(b.ctx, "t1", "wan1")
	wantCode(t, err, wimro.ENOTFOUND)
	_, err = b.eng.DeletePortMappings(b.ctx, "t1", "wan1")
	wantCode(t, err, wimro.ENOTFOUND)
}

func TestFindCommonWIM(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := b.Tenant(t, "t0"), b.Tenant(t, "t1")
	dc0, dc1, dc2 := b.Datacenter(t, "dc0", t0), b.Datacenter(t, "dc1", t0), b.Datacenter(t, "dc2", t0)
	b.WIM(t, "wim0", testfactory.Mapping("dc0", 1), testfactory.Mapping("dc1", 2))
	b.Account(t, "t0", "wim0", engine.AccountInput{})

	w, err := b.eng.FindCommonWIM(b.ctx, t0.UUID, []string{dc0.UUID, dc1.UUID})
	if err != nil || w.Name != "wim0" {
		t.Fatalf("FindCommonWIM = %+v, %v", w, err)
	}
	_, err = b.eng.FindCommonWIM(b.ctx, t0.UUID, []string{dc0.UUID, dc1.UUID, dc2.UUID})
	wantCode(t, err, wimro.ENOTFOUND)
	if !strings.Contains(wimro.ErrorMessage(err), "No WIM that is able to connect the given datacenters was found") {
		t.Fatalf("message = %q", wimro.ErrorMessage(err))
	}
	_, err = b.eng.FindCommonWIM(b.ctx, t1.UUID, []string{dc0.UUID, dc1.UUID})
	wantCode(t, err, wimro.ENOTFOUND)

	a, err := b.eng.FindSuitableAccount(b.ctx, t0.UUID, []string{dc0.UUID, dc1.UUID})
	if err != nil || *a.Name != "t0" {
		t.Fatalf("FindSuitableAccount = %+v, %v", a, err)
	}
}

// A WIM is read in one snapshot: while it is deleted, a read shows it
// whole (the tenant's account, its port mappings) or not at all, and so
// does a read of its port mappings alone. Read in several statements, a
// delete committing between them showed the WIM without its mappings.
func TestWIMReadIsOneState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Tenant(t, "t0")
	for i := range 20 {
		name := fmt.Sprintf("wan%d", i)
		b.WAN(t, testfactory.WAN{WIM: engine.WIMInput{Name: &name, Type: ptr("fake"), URL: ptr("http://fake")}, Tenant: "t0",
			Datacenters: []string{name + "-a", name + "-b"}})
		readWhileDeleted(t, func() error {
			v, err := b.Eng.GetWIM(b.Ctx, "t0", name)
			if err != nil {
				return err
			}
			if g, _ := v.Config["wim_port_mapping"].([]engine.PortMappingGroup); len(g) != 2 || v.WIMAccount == nil {
				return fmt.Errorf("WIM %d: %d port mapping groups, account shown: %t", i, len(g), v.WIMAccount != nil)
			}
			// The port mappings alone (GET .../port_mapping).
			g, err := b.Eng.GetPortMappings(b.Ctx, "t0", name)
			if err == nil && len(g) != 2 {
				return fmt.Errorf("WIM %d: %d port mapping groups alone", i, len(g))
			}
			return err
		}, func() error {
			_, err := b.Eng.DeleteWIM(b.Ctx, name)
			return err
		})
	}
}
