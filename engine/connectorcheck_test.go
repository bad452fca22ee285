package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

// checks is the factory's engine.Connectors with the settings or the
// mapping check replaced by the test's (when set), to count, hold or
// watch the calls.
type checks struct {
	engine.Connectors
	settings func(w wimro.WIM, accountConfig map[string]any) error
	mapping  func(w wimro.WIM, endpointID string, info map[string]any) error
}

func (c checks) CheckSettings(w wimro.WIM, accountConfig map[string]any) error {
	if c.settings == nil {
		return c.Connectors.CheckSettings(w, accountConfig)
	}
	return c.settings(w, accountConfig)
}

func (c checks) CheckMapping(w wimro.WIM, endpointID string, info map[string]any) error {
	if c.mapping == nil {
		return c.Connectors.CheckMapping(w, endpointID, info)
	}
	return c.mapping(w, endpointID, info)
}

// withSettingsCheck makes e check settings with check, the rest as the
// factory's connectors.
func withSettingsCheck(e *engine.Engine, f *testfactory.Factory, check func(w wimro.WIM, accountConfig map[string]any) error) {
	e.SetConnectors(checks{Connectors: f.Conns, settings: check}, false)
}

// refuseSlow is a connector check that, like the real connectors, refuses
// a non-positive timeout_ms (account config first, then WIM config) and a
// URL without a scheme.
func refuseSlow(calls *int) func(w wimro.WIM, accountConfig map[string]any) error {
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
	withSettingsCheck(b.eng, b.Factory, refuseSlow(&calls))
	tn := b.Tenant(t, "t0")

	_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("bad"), Type: ptr("fake"), URL: ptr("http://x"), Config: map[string]any{"timeout_ms": -1.0}})
	wantField(t, err, "wim.config")
	_, err = b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("bad"), Type: ptr("fake"), URL: ptr("no-scheme")})
	wantField(t, err, "wim.wim_url")
	if _, err := b.db.GetWIM(b.ctx, "bad"); wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("a refused WIM was written: %v", err)
	}

	b.WIM(t, "wan1")
	_, err = b.eng.CreateAccount(b.ctx, tn.Name, "wan1", engine.AccountInput{Config: map[string]any{"timeout_ms": 0.0}})
	wantField(t, err, "wim_account.config")
	if accts, err := b.db.ListAccounts(b.ctx); err != nil || len(accts) != 0 {
		t.Fatalf("a refused account was written: %v, %v", accts, err)
	}

	b.Account(t, tn.Name, "wan1", engine.AccountInput{Config: map[string]any{"timeout_ms": 500.0}})
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
	b.Datacenter(t, "dcA")
	b.eng.SetConnectors(checks{Connectors: b.Conns, mapping: func(w wimro.WIM, endpointID string, info map[string]any) error {
		if _, ok := info["wan_switch_port"]; !ok {
			return fmt.Errorf("service endpoint %q: no wan_switch_port", endpointID)
		}
		return nil
	}}, false)
	bad := testfactory.Mapping("dcA", 1)
	delete(bad.PopWANMappings[0].WANServiceMappingInfo, "wan_switch_port")
	_, err := b.eng.CreateWIM(b.ctx, engine.WIMInput{Name: ptr("wan1"), Type: ptr("fake"), URL: ptr("http://x"),
		Config: map[string]any{"wim_port_mapping": toAny([]engine.PortMappingInput{bad})}})
	wantField(t, err, "wim.config.wim_port_mapping[0].pop_wan_mappings[0].wan_service_mapping_info")
	if _, err := b.db.GetWIM(b.ctx, "wan1"); wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("the WIM of a refused mapping was written: %v", err)
	}
	b.WIM(t, "wan1", testfactory.Mapping("dcA", 1))
	_, err = b.eng.CreatePortMappings(b.ctx, engine.AnyTenant, "wan1", []engine.PortMappingInput{bad})
	wantField(t, err, "wim_port_mapping[0].pop_wan_mappings[0].wan_service_mapping_info")
}

// TestConnectorCheckOutsideTransaction checks that the connector check
// (which may read a ca_file) runs while no row is locked, and that a write
// whose settings another request changed meanwhile is a conflict, not a
// write of unchecked settings.
func TestConnectorCheckOutsideTransaction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		write func(b *bundle, tenant string) error
	}{
		{"edit WIM", func(b *bundle, _ string) error {
			_, err := b.eng.UpdateWIM(b.ctx, "wan1", engine.WIMInput{Config: map[string]any{"timeout_ms": 1000.0}})
			return err
		}},
		{"create account", func(b *bundle, tenant string) error {
			_, err := b.eng.CreateAccount(b.ctx, tenant, "wan1", engine.AccountInput{Name: ptr("other")})
			return err
		}},
		{"edit account", func(b *bundle, tenant string) error {
			_, err := b.eng.UpdateAccounts(b.ctx, tenant, "wan1", engine.AccountInput{Config: map[string]any{"timeout_ms": 1000.0}})
			return err
		}},
	}
	for _, tt := range tests {
		for _, change := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/changed=%v", tt.name, change), func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				tn := b.Tenant(t, "t0")
				b.WIM(t, "wan1")
				if tt.name == "edit account" {
					b.Account(t, tn.Name, "wan1", engine.AccountInput{})
				}
				entered, release := make(chan struct{}), make(chan struct{})
				var once sync.Once
				withSettingsCheck(b.eng, b.Factory, func(wimro.WIM, map[string]any) error {
					once.Do(func() { close(entered); <-release })
					return nil
				})
				done := make(chan error, 1)
				go func() { done <- tt.write(b, tn.Name) }()
				<-entered
				// While the check runs, the WIM's row can be locked: the
				// check holds no row lock (the old code held it, and this
				// waited for the deadline).
				ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
				defer cancel()
				err := b.db.Tx(ctx, func(s *persistence.Store) error {
					w, err := s.GetWIM(ctx, "wan1")
					if err != nil {
						return err
					}
					if w, err = s.GetWIMForUpdate(ctx, w.UUID); err != nil || !change {
						return err
					}
					w.Config = map[string]any{"latency_ms": 7.0}
					_, err = s.UpdateWIM(ctx, w)
					return err
				})
				if err != nil {
					t.Fatalf("lock the WIM while its connector check runs: %v", err)
				}
				close(release)
				err = <-done
				if change {
					wantCode(t, err, wimro.ECONFLICT)
				} else if err != nil {
					t.Fatalf("write: %v", err)
				}
			})
		}
	}
}
