package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/coordinator"
	"github.com/wimro/wimro/coordinator/chores"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/migrations"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// serve runs wimd serve: the database (migrated and checked), the
// workers, the coordinator and the HTTP API, until ctx ends. Each step
// starts one part; the parts stop in the reverse order (server.stop).
func (a *App) serve(ctx context.Context, args []string) (err error) {
	c, err := a.parseServe(args)
	if err != nil {
		return err
	}
	tlsConf, err := serverTLS(c.tlsCert, c.tlsKey)
	if err != nil {
		return err
	}
	logger, err := a.logger(c.db)
	if err != nil {
		return err
	}
	// Deferred first, so written last: after every part, the local
	// PostgreSQL included, has stopped, the log says the process is done.
	started := time.Now()
	defer func() { logStopped(logger, started, err) }()
	s := &server{app: a, c: c, logger: logger}
	defer s.stop()
	for _, step := range []func(context.Context) error{
		s.openTokenFile,
		s.openDatabase,
		s.openSecrets,
		s.listen,
		s.holdKeys,
		s.startListener,
		s.wireEngine,
		s.startWorkers,
		s.startCoordinator,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return s.serveHTTP(ctx, tlsConf)
}

// logStopped says the process is done, with its uptime and the error it
// stops with.
func logStopped(logger *slog.Logger, started time.Time, err error) {
	attrs := []any{slog.Duration("uptime", time.Since(started).Round(time.Millisecond))}
	if err != nil {
		logger.Error("wimd stopped", append(attrs, slog.Any("error", err))...)
		return
	}
	logger.Info("wimd stopped", attrs...)
}

// server holds the parts of wimd serve as its steps start them.
type server struct {
	app    *App
	c      *serveConfig
	logger *slog.Logger
	// stops undo the steps, run last first (stop).
	stops []func()

	tokenFile *httpapi.TokenFile
	restarts  prometheus.Counter
	db        *persistence.DB
	box       *secret.Box
	keyFile   string
	eng       *engine.Engine
	conns     wimdConnectors
	ln        net.Listener
	boot      string
	listener  *persistence.Listener
	// Subscriptions of the one LISTEN connection: the workers follow
	// account changes, the coordinator the account list and, on its
	// leader, released leases (to hand their accounts over at once).
	accountNotes, accountList, leaseReleases *persistence.Subscription
	metrics                                  *serveMetrics
	sup                                      *wimthread.Supervisor
	workers                                  atomic.Bool // started, for /readyz
	coord                                    coordinator.Coordinator
}

// onStop adds f to what stop runs.
func (s *server) onStop(f func()) { s.stops = append(s.stops, f) }

// stopPart adds the stop of a long-lived part (stopPart, 30 s).
func (s *server) stopPart(what string, stop func(context.Context) error) {
	s.onStop(func() { stopPart(s.logger, what, stop) })
}

// stop stops what the steps started, last started first, as deferred
// calls would.
func (s *server) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// openTokenFile reads --api-token-file, re-read as it changes.
func (s *server) openTokenFile(context.Context) (err error) {
	if s.c.apiTokenFile == "" {
		return nil
	}
	if s.tokenFile, err = httpapi.OpenTokenFile(s.c.apiTokenFile, s.logger); err != nil {
		return fmt.Errorf("--api-token-file: %w", err)
	}
	return nil
}

// openDatabase reaches the database (the local PostgreSQL, started here,
// unless a URL is given), guards its schema and opens the pool.
func (s *server) openDatabase(ctx context.Context) error {
	c := s.c
	// Counted from the start; registered once the registry exists.
	s.restarts = newRestartsCounter()
	url, stopDB, err := s.app.database(ctx, c.db, s.logger, localDB{serve: true, restarts: s.restarts})
	if err != nil {
		return err
	}
	s.onStop(stopDB)
	if err := checkSchema(ctx, url, c.autoMigrate, s.logger); err != nil {
		return err
	}
	if c.dbMaxConns <= 0 {
		c.dbMaxConns = wimthread.PoolSize(c.parallel)
	}
	if s.db, err = persistence.Open(ctx, url, s.logger, persistence.WithMaxConns(c.dbMaxConns)); err != nil {
		return err
	}
	s.onStop(s.db.Close)
	if c.coordinator == "consul" && c.db.url != "" {
		warnEmbeddedDatabase(ctx, s.db, s.logger)
	}
	return nil
}

// checkSchema is the schema guard: migrate when asked, then refuse to
// serve a schema this binary does not know (or one still behind it).
func checkSchema(ctx context.Context, url string, autoMigrate bool, logger *slog.Logger) error {
	sqlDB, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	if autoMigrate {
		if err := migrations.Up(ctx, sqlDB, logger); err != nil {
			return err
		}
	}
	return migrations.Check(ctx, sqlDB)
}

// openSecrets loads the secret keys (generating one at first start) and
// checks that they open what the database holds; the engine is made with
// them.
func (s *server) openSecrets(ctx context.Context) error {
	s.keyFile = s.c.secretKeyFile
	if s.keyFile == "" {
		s.keyFile = filepath.Join(s.c.db.dataDir, "secret.key")
	}
	keys, source, err := secret.LoadKeys(s.app.Getenv("WIMRO_SECRET_KEY"), s.keyFile)
	if err != nil {
		return err
	}
	if s.box, err = secret.NewRing(keys...); err != nil {
		return err
	}
	s.logger.Info("secret key loaded", slog.String("source", source), slog.String("sealing_key_id", s.box.KeyID()), slog.Any("key_ids", s.box.KeyIDs()))
	s.eng = engine.New(s.db, s.box, s.logger)
	err = s.eng.CheckSecretKey(ctx)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, engine.ErrSecretKeyMismatch):
		return fmt.Errorf("check the secret key: %w", err)
	case source == "generated":
		// No key was found, so one was made; it can open nothing stored.
		// Leave the folder as it was, for the right key.
		if rmErr := os.Remove(s.keyFile); rmErr != nil {
			s.logger.Warn("remove the key generated at start", slog.String("file", s.keyFile), slog.Any("error", rmErr))
		}
		return fmt.Errorf("%w: no key was found at %s (nor in WIMRO_SECRET_KEY), but the database holds secrets sealed with one; "+
			"put back the secret.key of this database (it is backed up with it, see docs/operations.md, Backup and restore) or set WIMRO_SECRET_KEY", err, s.keyFile)
	default:
		return fmt.Errorf("%w: the key from %s is not the one this database was written with; "+
			"use the secret.key backed up with this database (see docs/operations.md, Backup and restore)", err, keySource(source, s.keyFile))
	}
}

// listen opens the API's socket before anything runs: the instance id
// defaults to its port.
func (s *server) listen(context.Context) (err error) {
	c := s.c
	if s.ln, err = net.Listen("tcp", c.listen); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s.onStop(func() { s.ln.Close() })
	if c.apiToken == "" && s.tokenFile == nil && !isLoopback(s.ln.Addr()) {
		s.logger.Warn("serving without an API token on a non-loopback address: whoever reaches it can use the API; set WIMRO_API_TOKEN_FILE or WIMRO_API_TOKEN",
			slog.String("addr", s.ln.Addr().String()))
	}
	if c.instanceID == "" {
		host, _ := os.Hostname()
		c.instanceID = net.JoinHostPort(host, strconv.Itoa(s.ln.Addr().(*net.TCPAddr).Port))
		if err := coordinator.CheckInstanceID(c.instanceID); err != nil {
			return fmt.Errorf("the default instance id (<hostname>:<port>): %w; set --instance-id", err)
		}
	}
	return nil
}

// holdKeys records this process's key ids (wimd rekey checks every live
// process's keys before each step). Leases and claims are taken under the
// instance id and a nonce of this start: two processes given one id
// never share a lease.
func (s *server) holdKeys(ctx context.Context) error {
	s.boot = coordinator.NewBoot()
	holder := newKeyHolder(s.db, s.c.instanceID, s.box, s.logger)
	if err := holder.Start(ctx); err != nil {
		return fmt.Errorf("record the secret key ids: %w", err)
	}
	s.stopPart("secret key holder", holder.Stop)
	s.logger.Info("leases and claims taken under this start's owner", slog.String("instance_id", s.c.instanceID), slog.String("lease_owner", s.owner()))
	return nil
}

// owner is the name this process takes leases and claims under.
func (s *server) owner() string { return coordinator.LeaseOwner(s.c.instanceID, s.boot) }

// startListener starts the process's one LISTEN connection and the event
// hub that wakes the event streams from it.
func (s *server) startListener(ctx context.Context) error {
	s.listener = persistence.NewListener(s.db, s.logger)
	s.accountNotes = s.listener.Subscribe(persistence.ChannelAccounts)
	s.accountList = s.listener.Subscribe(persistence.ChannelAccountList)
	s.leaseReleases = s.listener.Subscribe(persistence.ChannelAccounts)
	events := engine.NewEventHub(s.db, s.listener.Subscribe(persistence.ChannelEvents), s.logger, 0)
	if err := s.listener.Start(ctx); err != nil {
		return fmt.Errorf("start notification listener: %w", err)
	}
	s.stopPart("notification listener", s.listener.Stop)
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); events.Run(hubCtx) }()
	s.onStop(func() { stopHub(); <-hubDone })
	s.eng.SetEventHub(events)
	return nil
}

// wireEngine gives the engine the process's connectors (the one home of
// turning an account into a connector, which the workers share) and
// makes the metrics registry their calls are timed on.
func (s *server) wireEngine(context.Context) (err error) {
	c := s.c
	if s.metrics, err = newMetrics(s.db); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if c.db.url == "" {
		if err := s.metrics.reg.Register(s.restarts); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	registry := newRegistry(c.devConnectors, c.db.dataDir, filepath.Join(c.db.dataDir, localDir), filepath.Join(c.db.dataDir, localDir+pglocal.OwnerSuffix), s.keyFile)
	registry.SetAddressPolicy(c.addresses)
	s.logger.Info("controller address policy", slog.String("controller_allow", c.addresses.String()))
	s.conns = newConnectors(accountconn.Config{Registry: registry, Box: s.box, DB: s.db, Logger: s.logger,
		UserAgent: userAgent(c.instanceID), Instrument: s.metrics.workers.Instrument})
	s.eng.SetConnectors(s.conns, true)
	s.eng.SetCapabilities(registry.Capabilities)
	s.stopPart("account checks", s.eng.StopChecks)
	return nil
}

// startWorkers starts the supervisor, which runs the actions of the
// accounts the coordinator gives this process.
func (s *server) startWorkers(ctx context.Context) error {
	c := s.c
	s.sup = wimthread.New(s.db, s.conns.Factory, s.logger, wimthread.Options{Owner: s.owner(), Parallel: c.parallel, Lease: c.claimLease,
		Policy: actions.Policy{Refresh: c.refresh}, MonitorInterval: c.monitor, Notifications: s.accountNotes, Metrics: s.metrics.workers})
	if err := s.sup.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	s.workers.Store(true)
	s.stopPart("workers", func(ctx context.Context) error { s.workers.Store(false); return s.sup.Stop(ctx) })
	if err := s.metrics.reg.Register(wimthread.NewSupervisorCollector(s.sup)); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// startCoordinator starts the coordinator (none or consul), which tells
// the workers their accounts and runs the leader's chores. Stopped first:
// no assignment is applied after it, and the others take this process's
// accounts as the supervisor releases them (coordinator/doc.go,
// "Stopping").
func (s *server) startCoordinator(ctx context.Context) (err error) {
	c := s.c
	reconciler, err := newReconcileChore(s.eng, s.logger, c.reconcile, s.metrics.reg)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	leaderChores := []coordinator.Chore{
		chores.NewRescuer(s.db, s.logger, c.claimLease/3),
		chores.NewRetention(s.db, s.logger, chores.RetentionOptions{Retention: c.retention, AuditRetention: c.auditRetention}),
		reconciler,
	}
	switch c.coordinator {
	case "consul":
		checkTTL := c.consul.checkTTL
		if checkTTL == 0 {
			checkTTL = -1 // no service, no check: the session's TTL alone
		}
		s.coord, err = coordinator.NewConsul(coordinator.ConsulConfig{
			Addr: c.consul.addr, Token: c.consul.token, InstanceID: c.instanceID, Boot: s.boot, Prefix: c.consul.prefix,
			SessionTTL: c.consul.sessionTTL, CheckTTL: checkTTL, Service: c.consul.service, LockDelay: c.consul.lockDelay,
			LeaderSoak: c.consul.leaderSoak, AssignmentSoak: c.consul.assignmentSoak,
			APIAddress: s.ln.Addr().String(), Version: version, DB: s.db, AccountList: s.accountList, LeaseReleases: s.leaseReleases,
			Runner: s.sup, Chores: leaderChores, Health: s.sup.LeaseHealth, Logger: s.logger})
		if err != nil {
			return err
		}
	default:
		// Without a cluster this process owns every account and runs every chore.
		s.coord = coordinator.NewNone(coordinator.NoneConfig{DB: s.db, AccountList: s.accountList, Runner: s.sup, Chores: leaderChores,
			InstanceID: c.instanceID, Address: s.ln.Addr().String(), Version: version, Logger: s.logger})
	}
	if err := registerClusterMetrics(s.metrics.reg, s.coord); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := s.coord.Start(ctx); err != nil {
		return fmt.Errorf("start coordinator: %w", err)
	}
	s.stopPart("coordinator", s.coord.Stop)
	return nil
}

// serveHTTP serves the API until ctx ends or the coordinator finds this
// process must not run (another live process has its instance id): serve
// then stops, with that error.
func (s *server) serveHTTP(ctx context.Context, tlsConf *tls.Config) error {
	// database/sql over the pool, for the schema check of /readyz (goose
	// reads through it); it holds no connection of its own.
	schemaDB := stdlib.OpenDBFromPool(s.db.Pool())
	defer schemaDB.Close()
	api := httpapi.New(s.eng, s.apiOptions(schemaDB))
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	go func() {
		select {
		case err := <-s.coord.Failed():
			stopRun(err)
		case <-runCtx.Done():
		}
	}()
	err := s.app.runHTTP(runCtx, s.ln, api.Handler(), api.CloseStreams, tlsConf, s.logger, slog.String("instance_id", s.c.instanceID))
	if cause := context.Cause(runCtx); err == nil && ctx.Err() == nil && cause != nil {
		return cause
	}
	return err
}

// apiOptions are the HTTP API's: auth, limits, health and readiness, the
// cluster's status and the metrics.
func (s *server) apiOptions(schemaDB *sql.DB) httpapi.Options {
	c := s.c
	return httpapi.Options{
		Logger:                  s.logger,
		Token:                   c.apiToken,
		TokenFile:               s.tokenFile,
		MaxBodyBytes:            c.maxBodyBytes,
		MaxEventStreams:         c.maxStreams,
		MaxEventStreamsPerToken: c.maxStreamsPerToken,
		L2SMWait:                c.l2smWait,
		Health:                  s.db.Ping,
		Ready:                   readiness(s.db, schemaDB, s.listener, s.workers.Load, s.sup.LeaseHealth, s.coord),
		Cluster: func(ctx context.Context) (wimro.ClusterStatus, error) {
			st, err := s.coord.Status(ctx)
			if err != nil {
				return st, wimro.Errorf(wimro.EUNAVAILABLE, "the cluster status is unavailable: %v", err)
			}
			st.Owned = nonNil(s.sup.Owned())
			return st, nil
		},
		Version:        version,
		Metrics:        s.metrics.handler(s.logger),
		RequestMetrics: s.metrics.http,
	}
}

// readiness is /readyz: the workers keep their account leases (a process
// that could not renew them for one lease has stepped out of the cluster,
// see coordinator/doc.go), the database answers, its schema is the one
// this binary knows (migrations.Check: a newer wimd may have migrated it,
// or a migrate down rolled it back, while this one serves), the
// notification listener is connected, the workers are started, and the
// coordinator applied an assignment since it (re)joined; the error names
// the first check that fails.
func readiness(db *persistence.DB, sqlDB *sql.DB, l *persistence.Listener, workers func() bool, leases func() error, c coordinator.Coordinator) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := leases(); err != nil {
			return wimro.Errorf(wimro.EUNAVAILABLE, "account leases: %v", err)
		}
		if err := db.Ping(ctx); err != nil {
			return wimro.Errorf(wimro.EUNAVAILABLE, "database: %s", wimro.ErrorMessage(err))
		}
		if err := migrations.Check(ctx, sqlDB); err != nil {
			return wimro.Errorf(wimro.EUNAVAILABLE, "schema: %v", err)
		}
		if !workers() {
			return wimro.Errorf(wimro.EUNAVAILABLE, "workers: not started")
		}
		if !l.Connected() {
			return wimro.Errorf(wimro.EUNAVAILABLE, "notification listener: not connected")
		}
		if !c.Ready() {
			return wimro.Errorf(wimro.EUNAVAILABLE, "coordinator: no account assignment applied since this process joined the cluster")
		}
		return nil
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// stopPart stops a long-lived part of serve, giving it 30 s, and logs a
// failure (serve is returning anyway).
func stopPart(logger *slog.Logger, what string, stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		logger.Error("stop "+what, slog.Any("error", err))
	}
}

// keySource names where the secret key came from, for an error.
func keySource(source, keyFile string) string {
	if source == "env" {
		return "WIMRO_SECRET_KEY"
	}
	return keyFile
}

// clusterRecipe names the docs section on a cluster's database.
const clusterRecipe = `docs/cluster.md, "A cluster on a real PostgreSQL"`

// warnEmbeddedDatabase says so when a wimd of a cluster was given the
// local PostgreSQL of another wimd: that server lives and moves with its
// owner (a restart of that wimd pulls the database from under the
// others, its backups are that wimd's), so it is no cluster's database.
func warnEmbeddedDatabase(ctx context.Context, db *persistence.DB, logger *slog.Logger) {
	name, err := db.ClusterName(ctx)
	if err != nil {
		logger.Debug("cannot tell whether the database is a wimd's local PostgreSQL", slog.Any("error", err))
		return
	}
	if name == pglocal.EmbeddedClusterName {
		logger.Warn("the database is another wimd's local PostgreSQL (cluster_name "+name+"): it stops and starts with that wimd and "+
			"is backed up as that wimd's; run the cluster on a PostgreSQL server of its own, see "+clusterRecipe,
			slog.String("coordinator", "consul"))
	}
}
