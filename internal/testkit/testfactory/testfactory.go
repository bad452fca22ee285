// Package testfactory builds the fixtures that the database tests of
// several packages share: a fresh migrated database with an engine over
// it, and tenants, datacenters (with exit rules), WIMs with port mappings,
// accounts, WANs (a WIM reaching datacenters of its own, with an
// account: one account's worth of actions), instance networks and instances,
// each made through the engine as a client would. One factory, so the packages' tests do not
// each keep a copy that drifts.
//
// It is an internal package rather than exported helpers of engine so
// that no test code ships in the engine's API.
package testfactory

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/connectors/builtin"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/persistence"
)

// PhysicalNetwork is the provider network of every exit rule the factory
// writes and of every network Nets makes.
const PhysicalNetwork = "physnet1"

// Factory makes fixtures in one fresh database. The package using it
// runs its tests through pgtest.Main.
type Factory struct {
	Ctx context.Context
	DB  *persistence.DB
	Box *secret.Box
	Eng *engine.Engine
	// Registry holds every connector, fake and failing included; the
	// engine checks WIM types against it, as wimd does.
	Registry *connectors.Registry
	// Conns builds the accounts' connectors from Registry, as wimd's do:
	// the engine's (checks, credentials check, reconcile) and the
	// workers' of a test that starts them.
	Conns *accountconn.Factory
}

// UserAgent is what the factory's connectors send.
const UserAgent = "wimro/test"

// New returns a factory over a fresh migrated database.
func New(t testing.TB) *Factory {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return NewOn(t, persistence.NewDB(pgtest.NewPool(t), nil), box)
}

// NewOn returns a factory over db, already migrated, sealing with box:
// for a benchmark that opens its database as wimd does.
func NewOn(t testing.TB, db *persistence.DB, box *secret.Box) *Factory {
	t.Helper()
	r := connectors.NewRegistry()
	fake.Register(r)
	failing.Register(r)
	builtin.Register(r)
	conns := accountconn.New(accountconn.Config{Registry: r, Box: box, DB: db, UserAgent: UserAgent})
	eng := engine.New(db, box, nil)
	eng.SetConnectors(conns, false)
	eng.SetCapabilities(r.Capabilities)
	return &Factory{Ctx: t.Context(), DB: db, Box: box, Eng: eng, Registry: r, Conns: conns}
}

// Tenant creates a tenant.
func (f *Factory) Tenant(t testing.TB, name string) wimro.Tenant {
	t.Helper()
	v, err := f.Eng.CreateTenant(f.Ctx, engine.TenantInput{Name: name})
	if err != nil {
		t.Fatalf("create tenant %s: %v", name, err)
	}
	return v
}

// Datacenter creates a datacenter whose one exit rule sends
// PhysicalNetwork to port 1 of its own PoP switch, PopDPID(name), and
// attaches it to tenants.
func (f *Factory) Datacenter(t testing.TB, name string, tenants ...wimro.Tenant) wimro.Datacenter {
	t.Helper()
	d, err := f.Eng.CreateDatacenter(f.Ctx, engine.DatacenterInput{Name: &name, VimURL: ptr("http://" + name + ".example:5000/"),
		Config: map[string]any{"external_connections": []any{map[string]any{
			"condition":         map[string]any{"provider:physical_network": PhysicalNetwork},
			"vim_external_port": map[string]any{"switch": PopDPID(name), "port": "1"},
		}}}})
	if err != nil {
		t.Fatalf("create datacenter %s: %v", name, err)
	}
	for _, tn := range tenants {
		if _, err := f.Eng.AttachDatacenter(f.Ctx, tn.Name, d.UUID); err != nil {
			t.Fatalf("attach %s to %s: %v", name, tn.Name, err)
		}
	}
	return d
}

// WIM creates a WIM of type fake with the port mappings given.
func (f *Factory) WIM(t testing.TB, name string, mappings ...engine.PortMappingInput) engine.WIMView {
	t.Helper()
	return f.WIMOf(t, engine.WIMInput{Name: &name}, mappings...)
}

// WIMOf creates the WIM in, with the port mappings given added to its
// config. A nil Type is fake; a nil URL is http://<name>.example.
func (f *Factory) WIMOf(t testing.TB, in engine.WIMInput, mappings ...engine.PortMappingInput) engine.WIMView {
	t.Helper()
	if in.Name == nil {
		t.Fatal("testfactory: WIMOf needs a name")
	}
	if in.Type == nil {
		in.Type = ptr("fake")
	}
	if in.URL == nil {
		in.URL = ptr("http://" + *in.Name + ".example")
	}
	if len(mappings) > 0 {
		// A copy: the caller's config map is not written to.
		cfg := map[string]any{"wim_port_mapping": mappings}
		for k, v := range in.Config {
			if k != "wim_port_mapping" {
				cfg[k] = v
			}
		}
		in.Config = cfg
	}
	w, err := f.Eng.CreateWIM(f.Ctx, in)
	if err != nil {
		t.Fatalf("create wim %s: %v", *in.Name, err)
	}
	return w
}

// Account attaches tenant to wim through a new account.
func (f *Factory) Account(t testing.TB, tenant, wim string, in engine.AccountInput) engine.AccountFull {
	t.Helper()
	a, err := f.Eng.CreateAccount(f.Ctx, tenant, wim, in)
	if err != nil {
		t.Fatalf("attach %s to %s: %v", tenant, wim, err)
	}
	return a
}

// Instance creates an instance of tenant with nets.
func (f *Factory) Instance(t testing.TB, tenant, name string, nets []engine.NetworkInput) engine.InstanceView {
	t.Helper()
	v, err := f.Eng.CreateInstance(f.Ctx, tenant, engine.InstanceInput{Name: name, Networks: nets})
	if err != nil {
		t.Fatalf("create instance %s: %v", name, err)
	}
	return v
}

// WAN is a WIM that alone reaches datacenters of its own, with a
// tenant's account on it: one account's worth of work for the action
// workers. Several WANs over one tenant give it several accounts.
type WAN struct {
	// WIM is created by WIMOf (Name is required).
	WIM engine.WIMInput
	// Tenant, which must exist, gets the account Account.
	Tenant  string
	Account engine.AccountInput
	// Datacenters are created (Datacenter) and attached to Tenant; the
	// i-th is mapped by ExitMapping(dc, i+1).
	Datacenters []string
}

// WAN creates w's datacenters, WIM and account.
func (f *Factory) WAN(t testing.TB, w WAN) engine.AccountFull {
	t.Helper()
	tn := wimro.Tenant{Name: w.Tenant}
	var mappings []engine.PortMappingInput
	for i, dc := range w.Datacenters {
		f.Datacenter(t, dc, tn)
		mappings = append(mappings, ExitMapping(dc, i+1))
	}
	f.WIMOf(t, w.WIM, mappings...)
	return f.Account(t, w.Tenant, *w.WIM.Name, w.Account)
}

// Scenario is the usual set-up: a tenant, datacenters dcA and dcB
// attached to it, WIM wan1 (fake) mapped to both, and the tenant's
// account on it.
type Scenario struct {
	Tenant   wimro.Tenant
	DCA, DCB wimro.Datacenter
	WIM      engine.WIMView
	Account  engine.AccountFull
}

// Scenario makes the usual set-up for tenant.
func (f *Factory) Scenario(t testing.TB, tenant string) Scenario {
	t.Helper()
	sc := Scenario{Tenant: f.Tenant(t, tenant)}
	sc.DCA, sc.DCB = f.Datacenter(t, "dcA", sc.Tenant), f.Datacenter(t, "dcB", sc.Tenant)
	sc.WIM = f.WIM(t, "wan1", Mapping("dcA", 1), Mapping("dcB", 2))
	sc.Account = f.Account(t, tenant, "wan1", engine.AccountInput{User: ptr("u"), Password: ptr(engine.Secret("p"))})
	return sc
}

// Mapping is one datacenter's dpid-port mapping: port `port` of its PoP
// switch, PopDPID(dc), to port `port` of WAN switch BB:..:BB. Only port 1
// is where Datacenter's exit rule leaves.
func Mapping(dc string, port int) engine.PortMappingInput {
	return engine.PortMappingInput{DatacenterName: dc, PopWANMappings: []engine.PopWANMappingInput{{
		PopSwitchDPID: PopDPID(dc), PopSwitchPort: engine.Port(strconv.Itoa(port)),
		WANServiceMappingInfo: engine.JSONObject{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": port},
	}}}
}

// ExitMapping maps where Datacenter(dc)'s exit rule leaves, port 1 of
// PopDPID(dc), to port wanPort of WAN switch BB:..:BB and to service
// endpoint "ep-<dc>", so that both dpid-port connectors (dynpac) and
// endpoint ones (fake) find it.
func ExitMapping(dc string, wanPort int) engine.PortMappingInput {
	m := Mapping(dc, wanPort)
	m.PopWANMappings[0].PopSwitchPort = "1"
	m.PopWANMappings[0].WANServiceEndpointID = "ep-" + dc
	return m
}

// PopDPID gives each datacenter its own PoP switch, by the last character
// of its name: dcA 0a, dcB 0b, ...
func PopDPID(dc string) string {
	return "00:00:00:00:00:00:00:0" + strings.ToLower(dc[len(dc)-1:])
}

// Nets returns, for each VLD (sce_net_id), one network in each of dcs on
// PhysicalNetwork, status status ("" is BUILD). VLANs count from 301
// across VLDs and datacenters, so no two networks share one (at most
// 3,794 networks).
func Nets(status string, vlds []string, dcs ...string) []engine.NetworkInput {
	var out []engine.NetworkInput
	for k, v := range vlds {
		for i, dc := range dcs {
			out = append(out, engine.NetworkInput{SceNetID: v, Datacenter: dc, PhysicalNetwork: PhysicalNetwork, Status: status,
				EncapsulationType: "vlan", EncapsulationID: ptr(300 + k*len(dcs) + i + 1), Name: fmt.Sprintf("net-%d-%s", k, dc)})
		}
	}
	return out
}

// VLDs returns n new VLD ids, for Nets.
func VLDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = uuid.NewString()
	}
	return out
}

func ptr[T any](v T) *T { return &v }
