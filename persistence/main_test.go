package persistence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/persistence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	ctx context.Context
	db  *persistence.DB
}

// setup gives each test its own migrated database.
func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{ctx: t.Context(), db: persistence.NewDB(pgtest.NewPool(t), nil)}
}

func (b *bundle) tenant(t *testing.T, name string) wimro.Tenant {
	t.Helper()
	v, err := b.db.CreateTenant(b.ctx, wimro.Tenant{Name: name})
	if err != nil {
		t.Fatalf("create tenant %s: %v", name, err)
	}
	return v
}

func (b *bundle) datacenter(t *testing.T, name string, tenants ...wimro.Tenant) wimro.Datacenter {
	t.Helper()
	v, err := b.db.CreateDatacenter(b.ctx, wimro.Datacenter{Name: name, VimURL: "http://" + name + ".example:5000"})
	if err != nil {
		t.Fatalf("create datacenter %s: %v", name, err)
	}
	for _, tn := range tenants {
		if err := b.db.AttachDatacenter(b.ctx, tn.UUID, v.UUID); err != nil {
			t.Fatalf("attach datacenter %s: %v", name, err)
		}
	}
	return v
}

func (b *bundle) wim(t *testing.T, name string) wimro.WIM {
	t.Helper()
	v, err := b.db.CreateWIM(b.ctx, wimro.WIM{Name: name, Type: "fake", URL: "http://" + name + ".example"})
	if err != nil {
		t.Fatalf("create wim %s: %v", name, err)
	}
	return v
}

// attach creates an account of w for tn and the association.
func (b *bundle) attach(t *testing.T, w wimro.WIM, tn wimro.Tenant) wimro.WIMAccount {
	t.Helper()
	name := "acct-" + w.Name + "-" + tn.Name
	a, err := b.db.CreateAccount(b.ctx, wimro.WIMAccount{Name: &name, WIMID: w.UUID})
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	if _, err := b.db.CreateAssociation(b.ctx, tn.UUID, w.UUID, a.UUID); err != nil {
		t.Fatalf("create association: %v", err)
	}
	return a
}

// accountInstance makes tenant t0, WIM wim0 with an account attached to
// the tenant, and an instance "ns" of the tenant: where WAN links go.
func (b *bundle) accountInstance(t *testing.T) (wimro.Tenant, wimro.WIM, wimro.WIMAccount, wimro.Instance) {
	t.Helper()
	tn := b.tenant(t, "t0")
	w := b.wim(t, "wim0")
	a := b.attach(t, w, tn)
	inst, err := b.db.CreateInstance(b.ctx, wimro.Instance{Name: "ns", TenantID: tn.UUID})
	if err != nil {
		t.Fatal(err)
	}
	return tn, w, a, inst
}

func (b *bundle) mapping(t *testing.T, w wimro.WIM, dc wimro.Datacenter, port string) wimro.PortMapping {
	t.Helper()
	m, err := b.db.CreatePortMapping(b.ctx, wimro.PortMapping{
		WIMID: w.UUID, DatacenterID: dc.UUID, PopSwitchDPID: "AA:AA:AA:AA:AA:AA:AA:AA", PopSwitchPort: port,
		WANServiceEndpointID:  w.Name + "-" + dc.Name + "-" + port,
		WANServiceMappingInfo: map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB", "wan_switch_port": port},
	})
	if err != nil {
		t.Fatalf("create port mapping: %v", err)
	}
	return m
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := wimro.ErrorCode(err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

func ptr[T any](v T) *T { return &v }

var errBoom = errors.New("boom")
