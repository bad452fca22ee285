package persistence_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

func TestTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := b.tenant(t, "tenant0")
	b.tenant(t, "tenant1")

	for _, ref := range []string{"tenant0", t0.UUID, strings.ToUpper(t0.UUID), strings.ReplaceAll(t0.UUID, "-", "")} {
		got, err := b.db.GetTenant(b.ctx, ref)
		if err != nil {
			t.Fatalf("GetTenant(%q): %v", ref, err)
		}
		if got.UUID != t0.UUID || got.Name != "tenant0" {
			t.Fatalf("GetTenant(%q) = %+v", ref, got)
		}
	}
	list, err := b.db.ListTenants(b.ctx)
	if err != nil || len(list) != 2 || list[0].Name != "tenant0" || list[1].Name != "tenant1" {
		t.Fatalf("ListTenants = %+v, %v", list, err)
	}
	_, err = b.db.CreateTenant(b.ctx, wimro.Tenant{Name: "tenant0"})
	wantCode(t, err, wimro.ECONFLICT)
	if !strings.Contains(wimro.ErrorMessage(err), "already in use") {
		t.Fatalf("duplicate message = %q", wimro.ErrorMessage(err))
	}
	_, err = b.db.GetTenant(b.ctx, "nope")
	wantCode(t, err, wimro.ENOTFOUND)
	if msg := wimro.ErrorMessage(err); !strings.Contains(msg, "No record was found in the database: nfvo_tenants") || !strings.Contains(msg, "name=nope") {
		t.Fatalf("not found message = %q", msg)
	}
	_, err = b.db.GetTenant(b.ctx, "")
	wantCode(t, err, wimro.EINVALID)

	if err := b.db.DeleteTenant(b.ctx, t0.UUID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, b.db.DeleteTenant(b.ctx, t0.UUID), wimro.ENOTFOUND)
}

func TestDatacenters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := b.tenant(t, "t0"), b.tenant(t, "t1")
	dc0 := b.datacenter(t, "dc0", t0)
	dc1 := b.datacenter(t, "dc1")
	if dc0.Type != "openvim" {
		t.Fatalf("default type = %q", dc0.Type)
	}

	if _, err := b.db.GetDatacenter(b.ctx, "dc0", t0.UUID); err != nil {
		t.Fatalf("attached datacenter: %v", err)
	}
	_, err := b.db.GetDatacenter(b.ctx, "dc0", t1.UUID)
	wantCode(t, err, wimro.ENOTFOUND)

	list, err := b.db.ListDatacenters(b.ctx, t0.UUID)
	if err != nil || len(list) != 1 || list[0].UUID != dc0.UUID {
		t.Fatalf("ListDatacenters(t0) = %+v, %v", list, err)
	}
	all, err := b.db.ListDatacenters(b.ctx, "")
	if err != nil || len(all) != 2 {
		t.Fatalf("ListDatacenters() = %+v, %v", all, err)
	}

	wantCode(t, b.db.AttachDatacenter(b.ctx, t0.UUID, dc0.UUID), wimro.ECONFLICT)
	wantCode(t, b.db.AttachDatacenter(b.ctx, t0.UUID, "00000000-0000-0000-0000-000000000000"), wimro.ENOTFOUND)
	if err := b.db.DetachDatacenter(b.ctx, t0.UUID, dc0.UUID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, b.db.DetachDatacenter(b.ctx, t0.UUID, dc0.UUID), wimro.ENOTFOUND)

	dc1.Config = map[string]any{"external_connections": []any{map[string]any{"condition": map[string]any{"provider:physical_network": "physnet1"}}}}
	dc1.Description = ptr("second")
	up, err := b.db.UpdateDatacenter(b.ctx, dc1)
	if err != nil {
		t.Fatal(err)
	}
	if *up.Description != "second" || up.Config["external_connections"] == nil || !up.ModifiedAt.After(dc1.ModifiedAt) && !up.ModifiedAt.Equal(dc1.ModifiedAt) {
		t.Fatalf("UpdateDatacenter = %+v", up)
	}
	_, err = b.db.UpdateDatacenter(b.ctx, wimro.Datacenter{UUID: "00000000-0000-0000-0000-000000000001", Name: "x", Type: "x", VimURL: "x"})
	wantCode(t, err, wimro.ENOTFOUND)

	if err := b.db.DeleteDatacenter(b.ctx, dc1.UUID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, b.db.DeleteDatacenter(b.ctx, dc1.UUID), wimro.ENOTFOUND)
}

func TestWIMs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := b.tenant(t, "t0")
	w0, w1, w2 := b.wim(t, "wim0"), b.wim(t, "wim1"), b.wim(t, "wim2")
	b.attach(t, w0, t0)
	b.attach(t, w2, t0)

	_, err := b.db.CreateWIM(b.ctx, wimro.WIM{Name: "wim0", Type: "fake", URL: "x"})
	wantCode(t, err, wimro.ECONFLICT)
	_, err = b.db.CreateWIM(b.ctx, wimro.WIM{Name: "bad", Type: "nonsense", URL: "x"})
	wantCode(t, err, wimro.EINVALID)

	got, err := b.db.GetWIM(b.ctx, w1.UUID)
	if err != nil || got.Name != "wim1" || got.URL != w1.URL {
		t.Fatalf("GetWIM = %+v, %v", got, err)
	}

	names := func(ws []wimro.WIM) string {
		var s []string
		for _, w := range ws {
			s = append(s, w.Name)
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		name string
		f    persistence.WIMFilter
		want string
	}{
		{"all", persistence.WIMFilter{}, "wim0,wim1,wim2"},
		{"tenant", persistence.WIMFilter{TenantID: t0.UUID}, "wim0,wim2"},
		{"unknown tenant", persistence.WIMFilter{TenantID: "00000000-0000-0000-0000-000000000000"}, ""},
		{"limit", persistence.WIMFilter{Limit: 2}, "wim0,wim1"},
		{"by name", persistence.WIMFilter{Equal: map[string]*string{"name": ptr("wim1")}}, "wim1"},
		{"by uuid", persistence.WIMFilter{Equal: map[string]*string{"uuid": ptr(w2.UUID)}}, "wim2"},
		{"by type and tenant", persistence.WIMFilter{TenantID: t0.UUID, Equal: map[string]*string{"type": ptr("fake")}}, "wim0,wim2"},
		{"null url", persistence.WIMFilter{Equal: map[string]*string{"wim_url": nil}}, ""},
	}
	for _, c := range cases {
		list, err := b.db.ListWIMs(b.ctx, c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := names(list); got != c.want {
			t.Errorf("%s: ListWIMs = %q, want %q", c.name, got, c.want)
		}
	}
	_, err = b.db.ListWIMs(b.ctx, persistence.WIMFilter{Equal: map[string]*string{"config; DROP TABLE wims": ptr("x")}})
	wantCode(t, err, wimro.EINVALID)

	w1.Name, w1.Type, w1.Config = "wim1b", "dynpac", map[string]any{"k": "v"}
	up, err := b.db.UpdateWIM(b.ctx, w1)
	if err != nil || up.Name != "wim1b" || up.Type != "dynpac" || up.Config["k"] != "v" {
		t.Fatalf("UpdateWIM = %+v, %v", up, err)
	}
	w1.Name = "wim0"
	_, err = b.db.UpdateWIM(b.ctx, w1)
	wantCode(t, err, wimro.ECONFLICT)

	err = b.db.Tx(b.ctx, func(s *persistence.Store) error {
		w, err := s.GetWIMForUpdate(b.ctx, w2.UUID)
		if err != nil {
			return err
		}
		w.Description = ptr("locked edit")
		_, err = s.UpdateWIM(b.ctx, w)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.db.GetWIM(b.ctx, "wim2"); got.Description == nil || *got.Description != "locked edit" {
		t.Fatalf("edit under lock lost: %+v", got)
	}

	// Deleting a WIM cascades to its accounts, associations and mappings.
	dc := b.datacenter(t, "dc0", t0)
	b.mapping(t, w0, dc, "1")
	if err := b.db.DeleteWIM(b.ctx, w0.UUID); err != nil {
		t.Fatal(err)
	}
	if accts, _ := b.db.ListAccountsOfWIM(b.ctx, w0.UUID); len(accts) != 0 {
		t.Fatalf("accounts left after WIM delete: %d", len(accts))
	}
	if pms, _ := b.db.ListPortMappings(b.ctx, persistence.PortMappingFilter{WIMIDs: []string{w0.UUID}}); len(pms) != 0 {
		t.Fatalf("mappings left after WIM delete: %d", len(pms))
	}
	wantCode(t, b.db.DeleteWIM(b.ctx, w0.UUID), wimro.ENOTFOUND)
}

func TestAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := b.tenant(t, "t0"), b.tenant(t, "t1")
	w := b.wim(t, "wim0")
	a, err := b.db.CreateAccount(b.ctx, wimro.WIMAccount{Name: ptr("shared"), WIMID: w.UUID, User: ptr("admin"), Password: []byte("sealed-1"), Config: map[string]any{"x": 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.db.CreateAccount(b.ctx, wimro.WIMAccount{Name: ptr("shared"), WIMID: w.UUID})
	wantCode(t, err, wimro.ECONFLICT)
	_, err = b.db.CreateAccount(b.ctx, wimro.WIMAccount{Name: ptr("orphan"), WIMID: "00000000-0000-0000-0000-000000000000"})
	wantCode(t, err, wimro.ENOTFOUND)

	if _, err := b.db.CreateAssociation(b.ctx, t0.UUID, w.UUID, a.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.CreateAssociation(b.ctx, t1.UUID, w.UUID, a.UUID); err != nil {
		t.Fatal(err)
	}
	other, _ := b.db.CreateAccount(b.ctx, wimro.WIMAccount{Name: ptr("other"), WIMID: w.UUID})
	_, err = b.db.CreateAssociation(b.ctx, t0.UUID, w.UUID, other.UUID)
	wantCode(t, err, wimro.ECONFLICT)
	if c := persistence.Constraint(err); c != persistence.ConstraintWIMTenant {
		t.Fatalf("constraint = %q", c)
	}

	// An account shared by two tenants is one row by uuid, two attached rows.
	got, err := b.db.GetAccount(b.ctx, a.UUID)
	if err != nil || string(got.Password) != "sealed-1" || *got.User != "admin" {
		t.Fatalf("GetAccount = %+v, %v", got, err)
	}
	att, err := b.db.ListAttachedAccounts(b.ctx, w.UUID, "")
	if err != nil || len(att) != 2 || att[0].Account.UUID != a.UUID || att[1].Association.TenantID != t1.UUID {
		t.Fatalf("ListAttachedAccounts(all) = %+v, %v", att, err)
	}
	att, err = b.db.ListAttachedAccounts(b.ctx, w.UUID, t1.UUID)
	if err != nil || len(att) != 1 || att[0].Association.TenantID != t1.UUID {
		t.Fatalf("ListAttachedAccounts(t1) = %+v, %v", att, err)
	}
	assocs, err := b.db.ListAssociationsOfAccount(b.ctx, a.UUID)
	if err != nil || len(assocs) != 2 {
		t.Fatalf("ListAssociationsOfAccount = %+v, %v", assocs, err)
	}
	found, err := b.db.FindAccountByName(b.ctx, w.UUID, "shared")
	if err != nil || found == nil || found.UUID != a.UUID {
		t.Fatalf("FindAccountByName = %+v, %v", found, err)
	}
	if none, err := b.db.FindAccountByName(b.ctx, w.UUID, "nope"); err != nil || none != nil {
		t.Fatalf("FindAccountByName(nope) = %+v, %v", none, err)
	}

	// An edit that does not mention the password keeps it (OSM wrote back
	// its masked form).
	up, err := b.db.UpdateAccount(b.ctx, a.UUID, persistence.AccountUpdate{User: ptr("root"), Config: &map[string]any{"y": 2.0}})
	if err != nil || *up.User != "root" || string(up.Password) != "sealed-1" || up.Config["y"] != 2.0 || up.Config["x"] != nil || *up.Name != "shared" {
		t.Fatalf("UpdateAccount = %+v, %v", up, err)
	}
	up, err = b.db.UpdateAccount(b.ctx, a.UUID, persistence.AccountUpdate{Password: []byte("sealed-2"), Created: ptr(true)})
	if err != nil || string(up.Password) != "sealed-2" || !up.Created {
		t.Fatalf("UpdateAccount(password) = %+v, %v", up, err)
	}
	if same, err := b.db.UpdateAccount(b.ctx, a.UUID, persistence.AccountUpdate{}); err != nil || same.UUID != a.UUID {
		t.Fatalf("empty UpdateAccount = %+v, %v", same, err)
	}
	_, err = b.db.UpdateAccount(b.ctx, a.UUID, persistence.AccountUpdate{Name: ptr("other")})
	wantCode(t, err, wimro.ECONFLICT)
	_, err = b.db.UpdateAccount(b.ctx, "00000000-0000-0000-0000-000000000000", persistence.AccountUpdate{Name: ptr("z")})
	wantCode(t, err, wimro.ENOTFOUND)

	all, err := b.db.ListAccounts(b.ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("ListAccounts = %d, %v", len(all), err)
	}
	if err := b.db.DeleteAssociation(b.ctx, assocs[1].ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, b.db.DeleteAssociation(b.ctx, assocs[1].ID), wimro.ENOTFOUND)
	if err := b.db.DeleteAccount(b.ctx, a.UUID); err != nil {
		t.Fatal(err)
	}
	if left, _ := b.db.ListAssociationsOfAccount(b.ctx, a.UUID); len(left) != 0 {
		t.Fatalf("associations left: %d", len(left))
	}
	wantCode(t, b.db.DeleteAccount(b.ctx, a.UUID), wimro.ENOTFOUND)
}

func TestPortMappings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := b.tenant(t, "t0"), b.tenant(t, "t1")
	w0, w1 := b.wim(t, "wim0"), b.wim(t, "wim1")
	b.attach(t, w0, t0)
	b.attach(t, w1, t0)
	b.attach(t, w1, t1)
	dc0, dc1 := b.datacenter(t, "dc0", t0, t1), b.datacenter(t, "dc1", t0)

	b.mapping(t, w0, dc0, "1")
	b.mapping(t, w0, dc0, "2")
	b.mapping(t, w0, dc1, "3")
	b.mapping(t, w1, dc0, "4")
	b.mapping(t, w1, dc1, "5")

	// The same PoP port twice, or the same endpoint twice in a WIM: conflict.
	_, err := b.db.CreatePortMapping(b.ctx, wimro.PortMapping{WIMID: w1.UUID, DatacenterID: dc0.UUID, PopSwitchDPID: "AA:AA:AA:AA:AA:AA:AA:AA", PopSwitchPort: "1", WANServiceEndpointID: "new"})
	wantCode(t, err, wimro.ECONFLICT)
	_, err = b.db.CreatePortMapping(b.ctx, wimro.PortMapping{WIMID: w0.UUID, DatacenterID: dc1.UUID, PopSwitchDPID: "CC", PopSwitchPort: "9", WANServiceEndpointID: "wim0-dc0-1"})
	wantCode(t, err, wimro.ECONFLICT)
	_, err = b.db.CreatePortMapping(b.ctx, wimro.PortMapping{WIMID: w0.UUID, DatacenterID: "00000000-0000-0000-0000-000000000000", PopSwitchDPID: "CC", PopSwitchPort: "9", WANServiceEndpointID: "x"})
	wantCode(t, err, wimro.ENOTFOUND)

	pairs := func(f persistence.PortMappingFilter) []string {
		t.Helper()
		list, err := b.db.ListPortMappings(b.ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range list {
			out = append(out, m.WANServiceEndpointID)
		}
		return out
	}
	cases := []struct {
		name string
		f    persistence.PortMappingFilter
		want int
	}{
		{"all", persistence.PortMappingFilter{}, 5},
		{"wim0", persistence.PortMappingFilter{WIMIDs: []string{w0.UUID}}, 3},
		{"wim0 dc0", persistence.PortMappingFilter{WIMIDs: []string{w0.UUID}, DatacenterIDs: []string{dc0.UUID}}, 2},
		{"both wims dc1", persistence.PortMappingFilter{WIMIDs: []string{w0.UUID, w1.UUID}, DatacenterIDs: []string{dc1.UUID}}, 2},
		{"tenant t1 sees wim1 and dc0 only", persistence.PortMappingFilter{TenantID: t1.UUID}, 1},
	}
	for _, c := range cases {
		if got := pairs(c.f); len(got) != c.want {
			t.Errorf("%s: %d mappings %v, want %d", c.name, len(got), got, c.want)
		}
	}
	// Ordered by (wim, datacenter) so the API can group consecutive rows.
	list, _ := b.db.ListPortMappings(b.ctx, persistence.PortMappingFilter{})
	for i := 1; i < len(list); i++ {
		p, c := list[i-1], list[i]
		if p.WIMID > c.WIMID || p.WIMID == c.WIMID && p.DatacenterID > c.DatacenterID {
			t.Fatalf("mappings not ordered at %d", i)
		}
	}
	if list[0].WANServiceMappingInfo["mapping_type"] != "dpid-port" {
		t.Fatalf("mapping info = %v", list[0].WANServiceMappingInfo)
	}

	m, err := b.db.FindPortMapping(b.ctx, w0.UUID, dc0.UUID, "AA:AA:AA:AA:AA:AA:AA:AA", "2")
	if err != nil || m.WANServiceEndpointID != "wim0-dc0-2" {
		t.Fatalf("FindPortMapping = %+v, %v", m, err)
	}
	_, err = b.db.FindPortMapping(b.ctx, w0.UUID, dc0.UUID, "AA:AA:AA:AA:AA:AA:AA:AA", "7")
	wantCode(t, err, wimro.ENOTFOUND)

	n, err := b.db.DeletePortMappings(b.ctx, w0.UUID)
	if err != nil || n != 3 {
		t.Fatalf("DeletePortMappings = %d, %v", n, err)
	}
	if got := pairs(persistence.PortMappingFilter{}); len(got) != 2 {
		t.Fatalf("left %v", got)
	}
	// A nil mapping info is stored as {}.
	m, err = b.db.CreatePortMapping(b.ctx, wimro.PortMapping{WIMID: w0.UUID, DatacenterID: dc1.UUID, PopSwitchDPID: "CC", PopSwitchPort: "9", WANServiceEndpointID: "plain"})
	if err != nil || m.WANServiceMappingInfo == nil || len(m.WANServiceMappingInfo) != 0 {
		t.Fatalf("nil info stored as %v, %v", m.WANServiceMappingInfo, err)
	}
}

// Scenarios of OSM's test_engine for find_common_wims / find_common_wim.
func TestFindCommonWIMs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := b.tenant(t, "t0"), b.tenant(t, "t1")
	w0, w1 := b.wim(t, "wim0"), b.wim(t, "wim1")
	b.attach(t, w0, t0)
	b.attach(t, w1, t0)
	dcs := []wimro.Datacenter{b.datacenter(t, "dc0", t0), b.datacenter(t, "dc1", t0), b.datacenter(t, "dc2", t0)}
	for i, dc := range dcs {
		b.mapping(t, w0, dc, "1"+string(rune('0'+i)))
	}
	b.mapping(t, w1, dcs[0], "20")
	b.mapping(t, w1, dcs[1], "21")

	find := func(tenant wimro.Tenant, dcs ...wimro.Datacenter) string {
		t.Helper()
		var ids []string
		for _, d := range dcs {
			ids = append(ids, d.UUID)
		}
		ws, err := b.db.FindCommonWIMs(b.ctx, ids, tenant.UUID)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, w := range ws {
			names = append(names, w.Name)
		}
		return strings.Join(names, ",")
	}
	if got := find(t0, dcs...); got != "wim0" {
		t.Errorf("three datacenters: %q, want wim0", got)
	}
	if got := find(t0, dcs[0], dcs[1]); got != "wim0,wim1" {
		t.Errorf("two datacenters: %q, want wim0,wim1 (oldest first)", got)
	}
	if got := find(t0, dcs[0], dcs[1], dcs[1]); got != "wim0,wim1" {
		t.Errorf("duplicated datacenter: %q", got)
	}
	if got := find(t0); got != "wim0,wim1" {
		t.Errorf("no datacenter: %q, want every WIM of the tenant", got)
	}
	// Another tenant sees none: neither WIMs nor datacenters are attached.
	if got := find(t1, dcs[0], dcs[1]); got != "" {
		t.Errorf("other tenant: %q, want none", got)
	}
	// Mappings in datacenters the tenant cannot use do not count.
	if err := b.db.DetachDatacenter(b.ctx, t0.UUID, dcs[2].UUID); err != nil {
		t.Fatal(err)
	}
	if got := find(t0, dcs...); got != "" {
		t.Errorf("detached datacenter: %q, want none", got)
	}
}

func TestTxRollsBackWholeRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	err := b.db.Tx(b.ctx, func(s *persistence.Store) error {
		if _, err := s.CreateTenant(b.ctx, wimro.Tenant{Name: "half"}); err != nil {
			return err
		}
		return errBoom
	})
	if err != errBoom {
		t.Fatalf("Tx error = %v", err)
	}
	_, err = b.db.GetTenant(b.ctx, "half")
	wantCode(t, err, wimro.ENOTFOUND)

	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic not propagated")
			}
		}()
		_ = b.db.Tx(b.ctx, func(s *persistence.Store) error {
			_, _ = s.CreateTenant(b.ctx, wimro.Tenant{Name: "panicked"})
			panic("boom")
		})
	}()
	_, err = b.db.GetTenant(b.ctx, "panicked")
	wantCode(t, err, wimro.ENOTFOUND)

	// A failed statement inside the transaction aborts it all.
	err = b.db.Tx(b.ctx, func(s *persistence.Store) error {
		if _, err := s.CreateTenant(b.ctx, wimro.Tenant{Name: "first"}); err != nil {
			return err
		}
		_, err := s.CreateTenant(b.ctx, wimro.Tenant{Name: "first"})
		return err
	})
	wantCode(t, err, wimro.ECONFLICT)
	_, err = b.db.GetTenant(b.ctx, "first")
	wantCode(t, err, wimro.ENOTFOUND)

	if err := b.db.Tx(b.ctx, func(s *persistence.Store) error {
		_, err := s.CreateTenant(b.ctx, wimro.Tenant{Name: "kept"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.GetTenant(b.ctx, "kept"); err != nil {
		t.Fatal(err)
	}
}

// Concurrent creators of one name: exactly one wins, the others get a
// conflict, never an internal error.
func TestConcurrentUniqueNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 16
	var wg sync.WaitGroup
	codes := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.db.CreateWIM(b.ctx, wimro.WIM{Name: "race", Type: "fake", URL: "x"})
			codes[i] = wimro.ErrorCode(err)
		}()
	}
	wg.Wait()
	won := 0
	for _, c := range codes {
		switch c {
		case "":
			won++
		case wimro.ECONFLICT:
		default:
			t.Fatalf("unexpected code %q", c)
		}
	}
	if won != 1 {
		t.Fatalf("%d winners, want 1", won)
	}
}
