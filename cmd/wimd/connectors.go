package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/connectors/builtin"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/connectors/fake"
)

// wimdConnectors is the one value wimd gives the engine: the accounts'
// connectors (accountconn, the home of turning an account into a
// connector, shared with the workers) with wimd's rules for the
// development types.
type wimdConnectors struct {
	*accountconn.Factory
	registry *connectors.Registry
}

// newConnectors builds accounts' connectors with cfg; its Registry is
// newRegistry's.
func newConnectors(cfg accountconn.Config) wimdConnectors {
	return wimdConnectors{Factory: accountconn.New(cfg), registry: cfg.Registry}
}

// userAgent names this wimd in every controller request, so a
// controller's log shows which process called: "wimro/<version> (who)",
// who the instance id or the command.
func userAgent(who string) string { return fmt.Sprintf("wimro/%s (%s)", version, who) }

// CheckType refuses, when a WIM is written, a type the registry does not
// hold, listing those it does; a development type says how to get it.
func (c wimdConnectors) CheckType(wimType string) error {
	if slices.Contains(devTypes, wimType) && !slices.Contains(c.registry.Types(), wimType) {
		return wimro.FieldErrorf("wim.type", "wim.type %q is a development connector, offered only when wimd runs with --dev-connectors (WIMRO_DEV_CONNECTORS=true)", wimType)
	}
	return c.Factory.CheckType(wimType)
}

// CheckAddress is accountconn's, but passes a development type: it
// connects nowhere.
func (c wimdConnectors) CheckAddress(ctx context.Context, w wimro.WIM) error {
	if slices.Contains(devTypes, w.Type) {
		return nil
	}
	return c.Factory.CheckAddress(ctx, w)
}

// devTypes are the WIM types of the development connectors.
var devTypes = []string{fake.Type, failing.Type}

// newRegistry lists every connector this build of wimd speaks; the
// development ones (devTypes) only with dev, fake's state_file confined to
// dataDir and kept out of reserved (wimd's own files there).
func newRegistry(dev bool, dataDir string, reserved ...string) *connectors.Registry {
	r := connectors.NewRegistry()
	if dev {
		fake.RegisterConfined(r, dataDir, reserved...)
		failing.Register(r)
	}
	builtin.Register(r)
	return r
}
