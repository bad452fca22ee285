package engine_test

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/pgtest"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	ctx context.Context
	db  *persistence.DB
	box *secret.Box
	eng *engine.Engine
}

func setup(t *testing.T) *bundle {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	db := persistence.NewDB(pgtest.NewPool(t), nil)
	return &bundle{ctx: t.Context(), db: db, box: box, eng: engine.New(db, box, nil)}
}

func (b *bundle) tenant(t *testing.T, name string) wimro.Tenant {
	t.Helper()
	v, err := b.eng.CreateTenant(b.ctx, engine.TenantInput{Name: name})
	if err != nil {
		t.Fatalf("create tenant %s: %v", name, err)
	}
	return v
}

func (b *bundle) datacenter(t *testing.T, name string, tenants ...wimro.Tenant) wimro.Datacenter {
	t.Helper()
	d, err := b.eng.CreateDatacenter(b.ctx, engine.DatacenterInput{Name: ptr(name), VimURL: ptr("http://" + name + ".example:5000/")})
	if err != nil {
		t.Fatalf("create datacenter %s: %v", name, err)
	}
	for _, tn := range tenants {
		if _, err := b.eng.AttachDatacenter(b.ctx, tn.Name, d.UUID); err != nil {
			t.Fatalf("attach %s to %s: %v", name, tn.Name, err)
		}
	}
	return d
}

func (b *bundle) wim(t *testing.T, name string, mappings ...engine.PortMappingInput) engine.WIMView {
	t.Helper()
	in := engine.WIMInput{Name: ptr(name), Type: ptr("fake"), URL: ptr("http://" + name + ".example")}
	if len(mappings) > 0 {
		in.Config = map[string]any{"wim_port_mapping": toAny(mappings)}
	}
	w, err := b.eng.CreateWIM(b.ctx, in)
	if err != nil {
		t.Fatalf("create wim %s: %v", name, err)
	}
	return w
}

func (b *bundle) account(t *testing.T, tenant, wim string, in engine.AccountInput) engine.AccountFull {
	t.Helper()
	a, err := b.eng.CreateAccount(b.ctx, tenant, wim, in)
	if err != nil {
		t.Fatalf("attach %s to %s: %v", tenant, wim, err)
	}
	return a
}

// mapping is one datacenter's dpid-port mapping: PoP switch popDPID(dc)
// port `port` to WAN switch BB:..:BB port `port`.
func mapping(dc string, port int) engine.PortMappingInput {
	return engine.PortMappingInput{DatacenterName: dc, PopWANMappings: []engine.PopWANMappingInput{{
		PopSwitchDPID: popDPID(dc), PopSwitchPort: engine.Port(strconv.Itoa(port)),
		WANServiceMappingInfo: engine.JSONObject{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": port},
	}}}
}

// popDPID gives each datacenter its own PoP switch: dcA 0a, dcB 0b, ...
func popDPID(dc string) string {
	return "00:00:00:00:00:00:00:0" + strings.ToLower(dc[len(dc)-1:])
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := wimro.ErrorCode(err); got != code {
		t.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	wantCode(t, err, wimro.EINVALID)
	if got := wimro.ErrorField(err); got != field {
		t.Fatalf("error field = %q, want %q (err: %v)", got, field, err)
	}
}

func ptr[T any](v T) *T { return &v }
