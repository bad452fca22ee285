package engine_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
)

// refuseSlow is a connector check that, like the real connectors, refuses
// a non-positive timeout_ms (account config first, then WIM config) and a
// URL without a scheme.
func refuseSlow(calls *int) engine.ConnectorCheck {
	return func(w wimro.WIM, acct map[string]any) error {
		*calls++
		if w.URL == "no-scheme" {
			return errors.New(`wim_url "no-scheme" is not an http(s) URL`)
		}
		v, ok := acct["timeout_ms"]
		if !ok {
			v, ok = w.Config["timeout_ms"]
		}
		if ok && v.(float64) <= 0 {
			return fmt.Errorf(`config "timeout_ms" must be positive, got %v`, v)
		}
		return nil
	}
}

func TestConnectorCheck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	calls := 0
	b.eng.SetConnectorCheck(refuseSlow(&calls))
	tn := b.tenant(t, "t0")

	_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("bad"), Type: ptr("fake"), URL: ptr("http://x"), Config: map[string]any{"timeout_ms": -1.0}})
	wantField(t, err, "wim.config")
	_, err = b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("bad"), Type: ptr("fake"), URL: ptr("no-scheme")})
	wantField(t, err, "wim.wim_url")
	if _, err := b.db.GetWIM(b.ctx, "bad"); wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("a refused WIM was written: %v", err)
	}

	b.wim(t, "wan1")
	_, err = b.eng.CreateAccount(b.ctx, tn.Name, "wan1", engine.AccountInput{Config: map[string]any{"timeout_ms": 0.0}})
	wantField(t, err, "wim_account.config")
	if accts, err := b.db.ListAccounts(b.ctx); err != nil || len(accts) != 0 {
		t.Fatalf("a refused account was written: %v, %v", accts, err)
	}

	b.account(t, tn.Name, "wan1", engine.AccountInput{Config: map[string]any{"timeout_ms": 500.0}})
	_, err = b.eng.UpdateAccounts(b.ctx, tn.Name, "wan1", engine.AccountInput{Config: map[string]any{"timeout_ms": -5.0}})
	wantField(t, err, "wim_account.config")

	// A WIM edit is checked alone and with every account's config.
	_, err = b.eng.UpdateWIM(b.ctx, "wan1", engine.WIMInput{Config: map[string]any{"timeout_ms": -1.0}})
	wantField(t, err, "wim.config")
	_, err = b.eng.UpdateWIM(b.ctx, "wan1", engine.WIMInput{URL: ptr("no-scheme")})
	wantField(t, err, "wim.wim_url")
	w, err := b.db.GetWIM(b.ctx, "wan1")
	if err != nil || w.URL != "http://wan1.example" || w.Config["timeout_ms"] != nil {
		t.Fatalf("a refused edit changed the WIM: %+v, %v", w, err)
	}
	accts, err := b.db.ListAccounts(b.ctx)
	if err != nil || len(accts) != 1 || accts[0].Config["timeout_ms"] != 500.0 {
		t.Fatalf("a refused edit changed the account: %+v, %v", accts, err)
	}
	if _, err := b.eng.UpdateWIM(b.ctx, "wan1", engine.WIMInput{Config: map[string]any{"timeout_ms": 1000.0}}); err != nil {
		t.Fatalf("a valid edit: %v", err)
	}
	if calls < 8 {
		t.Fatalf("the check ran %d times", calls)
	}
}

func TestMappingCheck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.datacenter(t, "dcA")
	b.eng.SetMappingCheck(func(w wimro.WIM, endpointID string, info map[string]any) error {
		if _, ok := info["wan_switch_port"]; !ok {
			return fmt.Errorf("service endpoint %q: no wan_switch_port", endpointID)
		}
		return nil
	})
	bad := mapping("dcA", 1)
	delete(bad.PopWANMappings[0].WANServiceMappingInfo, "wan_switch_port")
	_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("wan1"), Type: ptr("fake"), URL: ptr("http://x"),
		Config: map[string]any{"wim_port_mapping": toAny([]engine.PortMappingInput{bad})}})
	wantField(t, err, "wim.config.wim_port_mapping[0].pop_wan_mappings[0].wan_service_mapping_info")
	if _, err := b.db.GetWIM(b.ctx, "wan1"); wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("the WIM of a refused mapping was written: %v", err)
	}
	b.wim(t, "wan1", mapping("dcA", 1))
	_, err = b.eng.CreatePortMappings(b.ctx, engine.AnyTenant, "wan1", []engine.PortMappingInput{bad})
	wantField(t, err, "wim_port_mapping[0].pop_wan_mappings[0].wan_service_mapping_info")
}
