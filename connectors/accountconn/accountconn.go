// Package accountconn turns a stored WIM account into its ready
// connector: the one place that reads what a connector is built from (the
// WIM's settings, the account, their sealed secrets, the WIM's port
// mappings), opens the secrets, and builds the connector with the
// process's logger, User-Agent, controller address policy, mutation
// Locker and call instrumentation. The workers (wimthread), the
// credentials checks (the engine's after a write, the workers' periodic
// one) and drift reconcile all build through it, so a controller sees one
// account alike whichever part calls it.
//
// An account whose connector cannot be built (a secret that does not
// open, settings its factory refuses, a type no connector handles) gets a
// stand-in (connectors/failing) that fails every call with the reason, as
// OSM's FailingConnector did, and the reason itself in Conn.Err.
//
// It also validates settings when a WIM, an account or a port mapping is
// written (CheckSettings, CheckMapping): the connector is built there as
// here, without contacting the controller.
package accountconn

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// Config is what a Factory builds with.
type Config struct {
	// Registry holds the connectors of the WIM types this process speaks,
	// and the controller address policy they enforce.
	Registry *connectors.Registry
	// Box opens the sealed secrets.
	Box *secret.Box
	// DB is read for the accounts; its advisory locks are the connectors'
	// Locker: connectors that read-modify-write shared controller state
	// serialise with the other wimd processes through the database.
	DB *persistence.DB
	// Logger is the connectors' parent logger; nil discards.
	Logger *slog.Logger
	// UserAgent names the process in every controller request.
	UserAgent string
	// Instrument, when set, wraps every connector built (the workers'
	// call-duration metrics, wimthread.Metrics.Instrument): the calls of
	// the credentials checks and of reconcile are counted with the
	// actions'.
	Instrument func(wimType string, c connectors.Connector) connectors.Connector
}

// Factory builds accounts' connectors. It is safe for concurrent use.
type Factory struct {
	cfg Config
}

// New returns a factory building with cfg.
func New(cfg Config) *Factory {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Factory{cfg: cfg}
}

// Conn is an account turned into its connector.
type Conn struct {
	// Account and WIM are as stored (their secrets sealed); Mappings are
	// the WIM's port mappings the connector was built with.
	Account  wimro.WIMAccount
	WIM      wimro.WIM
	Mappings []wimro.PortMapping
	// Connector is ready to call; when it could not be built, it is a
	// stand-in that fails every call (connectors.KindPermanent) with the
	// reason.
	Connector connectors.Connector
	// Err is why the connector could not be built; nil when it was.
	Err error
	// Capabilities is what the connector's type declares for this
	// account (connectors.Registry.Capabilities): data, so no wrapper
	// can hide it. Zero for a stand-in.
	Capabilities connectors.Capabilities
}

// Load reads the accounts ids in one round trip and builds their
// connectors. An account that does not exist is absent from the answer;
// the error is the read's.
func (f *Factory) Load(ctx context.Context, ids []string) (map[string]Conn, error) {
	in, err := f.cfg.DB.ConnectorInputs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Conn, len(in))
	for id, i := range in {
		out[id] = f.Build(i)
	}
	return out, nil
}

// Account reads account id and builds its connector; ENOTFOUND when it
// does not exist.
func (f *Factory) Account(ctx context.Context, id string) (Conn, error) {
	in, err := f.Load(ctx, []string{id})
	if err != nil {
		return Conn{}, err
	}
	c, ok := in[id]
	if !ok {
		return Conn{}, wimro.Errorf(wimro.ENOTFOUND, "WIM account %s not found", id)
	}
	return c, nil
}

// Build builds the connector of what was read of an account.
func (f *Factory) Build(in persistence.ConnectorInput) Conn {
	a, w := in.Account, in.WIM
	out := Conn{Account: a, WIM: w, Mappings: in.Mappings}
	conn, caps, reason, err := f.build(in)
	if err != nil {
		conn = failing.New(reason, connectors.KindPermanent)
	}
	out.Connector, out.Capabilities, out.Err = f.instrument(w.Type, conn), caps, err
	return out
}

// build returns the account's connector and what its type declares for
// it, or the reason its stand-in gives and the error.
func (f *Factory) build(in persistence.ConnectorInput) (connectors.Connector, connectors.Capabilities, string, error) {
	a, w := in.Account, in.WIM
	password := ""
	if len(a.Password) > 0 {
		b, err := f.cfg.Box.Open(a.Password)
		if err != nil {
			return nil, connectors.Capabilities{}, fmt.Sprintf("Error when reading the password of WIM account %s: %v", a.UUID, err),
				fmt.Errorf("open password of account %s: %w", a.UUID, err)
		}
		password = string(b)
	}
	// The other secrets (wim_url's password, bearer_token) are sealed at
	// rest too; a value stored in clear by an older wimd is used as is.
	var err error
	if w.URL, w.Config, a.Config, err = f.cfg.Box.OpenConnector(w.URL, w.Config, a.Config); err != nil {
		return nil, connectors.Capabilities{}, fmt.Sprintf("Error when reading the secrets of WIM account %s: %v", a.UUID, err), err
	}
	cfg := connectors.ConfigOf(w, a, password, in.Mappings)
	cfg.Logger, cfg.UserAgent = f.cfg.Logger, f.cfg.UserAgent
	if f.cfg.DB != nil {
		cfg.Locker = f.cfg.DB
	}
	conn, err := f.cfg.Registry.New(cfg)
	if err != nil {
		name := ""
		if a.Name != nil {
			name = *a.Name
		}
		return nil, connectors.Capabilities{}, fmt.Sprintf("Error when loading WIM connector for WIM (%s): %v\nAny task targeting WIM account %s (%s) will fail.", w.Type, err, a.UUID, name), err
	}
	return conn, f.cfg.Registry.Capabilities(cfg), "", nil
}

func (f *Factory) instrument(wimType string, c connectors.Connector) connectors.Connector {
	if f.cfg.Instrument == nil {
		return c
	}
	return f.cfg.Instrument(wimType, c)
}

// CheckType refuses a WIM type no connector handles, listing those the
// registry holds.
func (f *Factory) CheckType(wimType string) error { return f.cfg.Registry.CheckType(wimType) }

// CheckSettings validates the connector settings of WIM w (type, URL,
// config) with one account's config, their secrets opened (the engine
// opens what a request writes): the connector is built as for the account
// (it contacts nothing); the error is what its factory refused. A type no
// connector handles passes (CheckType refuses it when a WIM is written;
// one stored by an older wimd may have it).
func (f *Factory) CheckSettings(w wimro.WIM, accountConfig map[string]any) error {
	_, err := f.buildFor(w, accountConfig)
	return err
}

// fileSettings are the connector settings that name files, which a
// factory reads (ca_file) or creates (fake's state_file).
var fileSettings = []string{"ca_file", "state_file"}

// CheckMapping validates a port mapping for the WIM's connector, when the
// connector can tell (connectors.MappingChecker). A WIM whose connector
// cannot be built passes here: CheckSettings reports its settings. It
// runs inside the write transaction, so the connector is built without
// its file settings: no file is touched while rows are locked
// (CheckSettings, run before the transaction, checks them).
func (f *Factory) CheckMapping(w wimro.WIM, endpointID string, info map[string]any) error {
	w.Config = maps.Clone(w.Config)
	for _, k := range fileSettings {
		delete(w.Config, k)
	}
	c, err := f.buildFor(w, nil)
	if mc, ok := c.(connectors.MappingChecker); ok && err == nil {
		return mc.CheckMapping(endpointID, info)
	}
	return nil
}

// buildFor builds the connector of WIM w with an account's config (it
// contacts nothing); nil and no error for a type no connector handles.
func (f *Factory) buildFor(w wimro.WIM, accountConfig map[string]any) (connectors.Connector, error) {
	if !slices.Contains(f.cfg.Registry.Types(), w.Type) {
		return nil, nil
	}
	return f.cfg.Registry.New(connectors.Config{WIMID: w.UUID, WIMName: w.Name, Type: w.Type, URL: w.URL, WIMConfig: w.Config, AccountConfig: accountConfig})
}

// addressCheckTimeout bounds the DNS look-up of a wim_url's host when it
// is written: the answer is advice (see CheckAddress).
const addressCheckTimeout = 3 * time.Second

// CheckAddress refuses a WIM whose wim_url host the registry's address
// policy refuses: a literal address, or a name that resolves to refused
// addresses only. A name that does not resolve now passes: the
// connectors check every connection, which is the guard; this check only
// says early what they would refuse.
func (f *Factory) CheckAddress(ctx context.Context, w wimro.WIM) error {
	u, err := url.Parse(w.URL)
	if err != nil || u.Hostname() == "" {
		return nil // the URL's own check names what is wrong
	}
	ctx, cancel := context.WithTimeout(ctx, addressCheckTimeout)
	defer cancel()
	return f.cfg.Registry.AddressPolicy().CheckHost(ctx, u.Hostname())
}
