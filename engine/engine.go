// Package engine holds wimro's domain rules: tenants, datacenters, WIMs,
// their accounts and port mappings, and NS instances: from an instance's
// networks it derives the WAN links (one per VLD spanning datacenters:
// an ELINE, an ELAN across more than two, an L3VPN when its networks give
// their l3 sites), picks the WIM of each by what the link needs, then the
// account's health, then the oldest (choice.go; the dry run says why for
// every WIM), and the account, and records the CREATE and DELETE
// actions the workers run; the NFVO's network reports and the action
// views go through it too. A scenario catalogue holds the networks of
// openmano scenario descriptors, naming their VNFs from a VNF catalogue
// (kept, never deployed); an instance of a scenario places each network
// in datacenters. SDN controllers and datacenters' SDN port mappings are
// kept as openmano's records; what openmano would ask a VIM is refused
// (wimro has none). A datacenter whose networks nobody reports
// (config.network_status_source none) gets them ACTIVE at creation, with
// VLANs wimro allocates from its range; every VLAN of such a datacenter is
// recorded, and stays taken until no WAN link on the controller can use it
// (netsource.go). It speaks neither SQL nor HTTP: it validates, decides,
// and asks persistence to write each request in one transaction
// (with the NOTIFY that wakes the workers). It never calls the workers.
package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// Engine is the WimEngine of openmano: the API calls it, it calls the
// database.
type Engine struct {
	db     *persistence.DB
	box    *secret.Box
	logger *slog.Logger
	// conns turns WIMs and accounts into connectors: the checks of what
	// is written, the credentials check and drift reconcile; nil: no
	// checks and no reconcile.
	conns Connectors
	// checkCredentials runs the credentials check after an account is
	// written.
	checkCredentials bool
	// capabilities tells what a WIM's connector declares it can do.
	capabilities            CapabilitiesOf
	checkWait, checkTimeout time.Duration
	checks                  sync.WaitGroup // checks running in the background
	checkCtx                context.Context
	stopChecks              context.CancelFunc
	// events wakes event feeds; nil: they are not woken.
	events *EventHub
}

// New returns an engine over db. box seals account passwords at rest.
func New(db *persistence.DB, box *secret.Box, logger *slog.Logger) *Engine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{db: db, box: box, logger: logger}
}

// Ping checks the database (for /healthz).
func (e *Engine) Ping(ctx context.Context) error { return e.db.Ping(ctx) }

// AnyTenant is the tenant path segment that means "no tenant filter".
const AnyTenant = "any"
