package main

import (
	"context"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/builtin"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
)

// typeCheck refuses, when a WIM is written, a type the registry does not
// hold, listing those it does; a development type says how to get it.
func typeCheck(r *connectors.Registry) engine.TypeCheck {
	return func(wimType string) error {
		if slices.Contains(devTypes, wimType) && !slices.Contains(r.Types(), wimType) {
			return wimro.FieldErrorf("wim.type", "wim.type %q is a development connector, offered only when wimd runs with --dev-connectors (WIMRO_DEV_CONNECTORS=true)", wimType)
		}
		return r.CheckType(wimType)
	}
}

// connectorCheck validates connector settings when a WIM or an account is
// written: it builds the connector (which contacts nothing) and reports
// what its factory refused. Types without a connector pass here (typeCheck
// refuses them when a WIM is written).
func connectorCheck(r *connectors.Registry) engine.ConnectorCheck {
	return func(w wimro.WIM, accountConfig map[string]any) error {
		_, err := buildFor(r, w, accountConfig)
		return err
	}
}

// credentialsCheck runs CheckCredentials of an account just written, with
// a connector built as the workers build theirs (secrets opened by the
// engine). A type no connector handles, or settings the factory refuses,
// is the account's ERROR.
func credentialsCheck(r *connectors.Registry, logger *slog.Logger, userAgent string) engine.CredentialsCheck {
	build := connectorBuilder(r, logger, userAgent, nil)
	return func(ctx context.Context, w wimro.WIM, a wimro.WIMAccount, password string, mappings []wimro.PortMapping) error {
		c, err := build(w, a, password, mappings)
		if err != nil {
			return err
		}
		return c.CheckCredentials(ctx)
	}
}

// connectorBuilder builds an account's connector as the workers do
// (secrets opened by the engine), for the credentials check and drift
// reconcile. locker, when set, is the workers' shared mutation lock: a
// reconcile that deletes an orphan changes the controller, and must not
// interleave with another process's read-modify-write there.
func connectorBuilder(r *connectors.Registry, logger *slog.Logger, userAgent string, locker connectors.Locker) engine.ConnectorBuilder {
	return func(w wimro.WIM, a wimro.WIMAccount, password string, mappings []wimro.PortMapping) (connectors.Connector, error) {
		cfg := connectors.ConfigOf(w, a, password, mappings)
		cfg.UserAgent, cfg.Locker = userAgent, locker
		cfg.Logger = logger.With(slog.String("account_id", a.UUID), slog.String("connector", w.Type))
		return r.New(cfg)
	}
}

// addressCheckTimeout bounds the DNS look-up of a wim_url's host when it
// is written: the answer is advice (see addressCheck).
const addressCheckTimeout = 3 * time.Second

// addressCheck refuses, when a WIM is written, a wim_url whose host the
// registry's address policy refuses: a literal address, or a name that
// resolves to refused addresses only. A name that does not resolve now
// passes, and so does a development type (it connects nowhere): the
// connectors check every connection, which is the guard; this check
// only says early what they would refuse.
func addressCheck(r *connectors.Registry) engine.AddressCheck {
	return func(ctx context.Context, w wimro.WIM) error {
		if slices.Contains(devTypes, w.Type) {
			return nil
		}
		u, err := url.Parse(w.URL)
		if err != nil || u.Hostname() == "" {
			return nil // the URL's own check names what is wrong
		}
		ctx, cancel := context.WithTimeout(ctx, addressCheckTimeout)
		defer cancel()
		return r.AddressPolicy().CheckHost(ctx, u.Hostname())
	}
}

// fileSettings are the connector settings that name files, which a
// factory reads (ca_file) or creates (fake's state_file).
var fileSettings = []string{"ca_file", "state_file"}

// mappingCheck validates a port mapping for the WIM's connector, when the
// connector can tell (connectors.MappingChecker). A WIM whose connector
// cannot be built passes here: connectorCheck reports its settings. It
// runs inside the write transaction, so the connector is built without
// its file settings: no file is touched while rows are locked
// (connectorCheck, run before the transaction, checks them).
func mappingCheck(r *connectors.Registry) engine.MappingCheck {
	return func(w wimro.WIM, endpointID string, info map[string]any) error {
		w.Config = maps.Clone(w.Config)
		for _, k := range fileSettings {
			delete(w.Config, k)
		}
		c, err := buildFor(r, w, nil)
		if mc, ok := c.(connectors.MappingChecker); ok && err == nil {
			return mc.CheckMapping(endpointID, info)
		}
		return nil
	}
}

// buildFor builds the connector of WIM w with an account's config, as the
// workers would (it contacts nothing); nil and no error for a type no
// connector handles.
func buildFor(r *connectors.Registry, w wimro.WIM, accountConfig map[string]any) (connectors.Connector, error) {
	if !slices.Contains(r.Types(), w.Type) {
		return nil, nil
	}
	return r.New(connectors.Config{WIMID: w.UUID, WIMName: w.Name, Type: w.Type, URL: w.URL, WIMConfig: w.Config, AccountConfig: accountConfig})
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
