package main

import (
	"context"
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

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
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
// workers, the coordinator and the HTTP API, until ctx ends.
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
	defer func() {
		attrs := []any{slog.Duration("uptime", time.Since(started).Round(time.Millisecond))}
		if err != nil {
			logger.Error("wimd stopped", append(attrs, slog.Any("error", err))...)
			return
		}
		logger.Info("wimd stopped", attrs...)
	}()
	var tokenFile *httpapi.TokenFile
	if c.apiTokenFile != "" {
		if tokenFile, err = httpapi.OpenTokenFile(c.apiTokenFile, logger); err != nil {
			return fmt.Errorf("--api-token-file: %w", err)
		}
	}
	// Counted from the start; registered once the registry exists.
	restarts := newRestartsCounter()
	url, stopDB, err := a.database(ctx, c.db, logger, localDB{serve: true, restarts: restarts})
	if err != nil {
		return err
	}
	defer stopDB()

	// The schema guard: migrate when asked, then refuse to serve a schema
	// this binary does not know (or one still behind it).
	sqlDB, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	if c.autoMigrate {
		err = migrations.Up(ctx, sqlDB, logger)
	}
	if err == nil {
		err = migrations.Check(ctx, sqlDB)
	}
	sqlDB.Close()
	if err != nil {
		return err
	}
	if c.dbMaxConns <= 0 {
		c.dbMaxConns = wimthread.PoolSize(c.parallel)
	}
	db, err := persistence.Open(ctx, url, logger, persistence.WithMaxConns(c.dbMaxConns))
	if err != nil {
		return err
	}
	defer db.Close()
	if c.coordinator == "consul" && c.db.url != "" {
		warnEmbeddedDatabase(ctx, db, logger)
	}

	keyFile := c.secretKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(c.db.dataDir, "secret.key")
	}
	keys, source, err := secret.LoadKeys(a.Getenv("WIMRO_SECRET_KEY"), keyFile)
	if err != nil {
		return err
	}
	box, err := secret.NewRing(keys...)
	if err != nil {
		return err
	}
	logger.Info("secret key loaded", slog.String("source", source), slog.String("sealing_key_id", box.KeyID()), slog.Any("key_ids", box.KeyIDs()))
	eng := engine.New(db, box, logger)
	if err := eng.CheckSecretKey(ctx); err != nil {
		if errors.Is(err, engine.ErrSecretKeyMismatch) {
			if source == "generated" {
				// No key was found, so one was made; it can open nothing
				// stored. Leave the folder as it was, for the right key.
				if rmErr := os.Remove(keyFile); rmErr != nil {
					logger.Warn("remove the key generated at start", slog.String("file", keyFile), slog.Any("error", rmErr))
				}
				return fmt.Errorf("%w: no key was found at %s (nor in WIMRO_SECRET_KEY), but the database holds secrets sealed with one; "+
					"put back the secret.key of this database (it is backed up with it, see docs/operations.md, Backup and restore) or set WIMRO_SECRET_KEY", err, keyFile)
			}
			return fmt.Errorf("%w: the key from %s is not the one this database was written with; "+
				"use the secret.key backed up with this database (see docs/operations.md, Backup and restore)", err, keySource(source, keyFile))
		}
		return fmt.Errorf("check the secret key: %w", err)
	}
	// Listen before anything runs: the instance id defaults to the port.
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	if c.apiToken == "" && tokenFile == nil && !isLoopback(ln.Addr()) {
		logger.Warn("serving without an API token on a non-loopback address: whoever reaches it can use the API; set WIMRO_API_TOKEN_FILE or WIMRO_API_TOKEN",
			slog.String("addr", ln.Addr().String()))
	}
	if c.instanceID == "" {
		host, _ := os.Hostname()
		c.instanceID = net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		if err := coordinator.CheckInstanceID(c.instanceID); err != nil {
			return fmt.Errorf("the default instance id (<hostname>:<port>): %w; set --instance-id", err)
		}
	}
	// Leases and claims are taken under the instance id and a nonce of
	// this start: two processes given one id never share a lease.
	boot := coordinator.NewBoot()
	// wimd rekey checks every live process's keys before each step.
	holder := newKeyHolder(db, c.instanceID, box, logger)
	if err := holder.Start(ctx); err != nil {
		return fmt.Errorf("record the secret key ids: %w", err)
	}
	defer stopPart(logger, "secret key holder", holder.Stop)
	logger.Info("leases and claims taken under this start's owner", slog.String("instance_id", c.instanceID), slog.String("lease_owner", coordinator.LeaseOwner(c.instanceID, boot)))
	registry := newRegistry(c.devConnectors, c.db.dataDir, filepath.Join(c.db.dataDir, localDir), filepath.Join(c.db.dataDir, localDir+pglocal.OwnerSuffix), keyFile)
	registry.SetAddressPolicy(c.addresses)
	logger.Info("controller address policy", slog.String("controller_allow", c.addresses.String()))
	eng.SetTypeCheck(typeCheck(registry))
	eng.SetAddressCheck(addressCheck(registry))
	eng.SetCapabilities(registry.Capabilities)
	eng.SetConnectorCheck(connectorCheck(registry))
	eng.SetMappingCheck(mappingCheck(registry))
	eng.SetCredentialsCheck(credentialsCheck(registry, logger, fmt.Sprintf("wimro/%s (%s)", version, c.instanceID)), 0, 0)
	eng.SetConnectorBuilder(connectorBuilder(registry, logger, fmt.Sprintf("wimro/%s (%s)", version, c.instanceID), db))
	defer stopPart(logger, "account checks", eng.StopChecks)
	// One LISTEN connection for the process: the workers follow account
	// changes, the coordinator the account list, the event streams their
	// instance actions' events (through one hub).
	listener := persistence.NewListener(db, logger)
	accountNotes := listener.Subscribe(persistence.ChannelAccounts)
	accountList := listener.Subscribe(persistence.ChannelAccountList)
	// The coordinator's leader hears of released leases on the same
	// channel: it hands their accounts over at once.
	leaseReleases := listener.Subscribe(persistence.ChannelAccounts)
	events := engine.NewEventHub(db, listener.Subscribe(persistence.ChannelEvents), logger, 0)
	if err := listener.Start(ctx); err != nil {
		return fmt.Errorf("start notification listener: %w", err)
	}
	defer stopPart(logger, "notification listener", listener.Stop)
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); events.Run(hubCtx) }()
	defer func() { stopHub(); <-hubDone }()
	eng.SetEventHub(events)
	metrics, err := newMetrics(db)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if c.db.url == "" {
		if err := metrics.reg.Register(restarts); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	sup := wimthread.New(db, box, registry, logger, wimthread.Options{Owner: coordinator.LeaseOwner(c.instanceID, boot), Parallel: c.parallel, Lease: c.claimLease,
		Policy: actions.Policy{Refresh: c.refresh}, MonitorInterval: c.monitor, Notifications: accountNotes, Metrics: metrics.workers,
		UserAgent: fmt.Sprintf("wimro/%s (%s)", version, c.instanceID)})
	if err := sup.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	var workers atomic.Bool // started, for /readyz
	workers.Store(true)
	defer stopPart(logger, "workers", func(ctx context.Context) error { workers.Store(false); return sup.Stop(ctx) })
	if err := metrics.reg.Register(wimthread.NewSupervisorCollector(sup)); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	reconciler, err := newReconcileChore(eng, logger, c.reconcile, metrics.reg)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	leaderChores := []coordinator.Chore{
		chores.NewRescuer(db, logger, c.claimLease/3),
		chores.NewRetention(db, logger, chores.RetentionOptions{Retention: c.retention, AuditRetention: c.auditRetention}),
		reconciler,
	}
	var coord coordinator.Coordinator
	switch c.coordinator {
	case "consul":
		checkTTL := c.consul.checkTTL
		if checkTTL == 0 {
			checkTTL = -1 // no service, no check: the session's TTL alone
		}
		coord, err = coordinator.NewConsul(coordinator.ConsulConfig{
			Addr: c.consul.addr, Token: c.consul.token, InstanceID: c.instanceID, Boot: boot, Prefix: c.consul.prefix,
			SessionTTL: c.consul.sessionTTL, CheckTTL: checkTTL, Service: c.consul.service, LockDelay: c.consul.lockDelay,
			LeaderSoak: c.consul.leaderSoak, AssignmentSoak: c.consul.assignmentSoak,
			APIAddress: ln.Addr().String(), Version: version, DB: db, AccountList: accountList, LeaseReleases: leaseReleases,
			Runner: sup, Chores: leaderChores, Health: sup.LeaseHealth, Logger: logger})
		if err != nil {
			return err
		}
	default:
		// Without a cluster this process owns every account and runs every chore.
		coord = coordinator.NewNone(coordinator.NoneConfig{DB: db, AccountList: accountList, Runner: sup, Chores: leaderChores,
			InstanceID: c.instanceID, Address: ln.Addr().String(), Version: version, Logger: logger})
	}
	if err := registerClusterMetrics(metrics.reg, coord); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := coord.Start(ctx); err != nil {
		return fmt.Errorf("start coordinator: %w", err)
	}
	// Deferred last, stopped first: no assignment is applied after it, and
	// the others take this process's accounts as the supervisor releases
	// them (coordinator/doc.go, "Stopping").
	defer stopPart(logger, "coordinator", coord.Stop)
	// database/sql over the pool, for the schema check of /readyz (goose
	// reads through it); it holds no connection of its own.
	schemaDB := stdlib.OpenDBFromPool(db.Pool())
	defer schemaDB.Close()
	api := httpapi.New(eng, httpapi.Options{
		Logger:                  logger,
		Token:                   c.apiToken,
		TokenFile:               tokenFile,
		MaxBodyBytes:            c.maxBodyBytes,
		MaxEventStreams:         c.maxStreams,
		MaxEventStreamsPerToken: c.maxStreamsPerToken,
		Health:                  db.Ping,
		Ready:                   readiness(db, schemaDB, listener, workers.Load, sup.LeaseHealth, coord),
		Cluster: func(ctx context.Context) (wimro.ClusterStatus, error) {
			st, err := coord.Status(ctx)
			if err != nil {
				return st, wimro.Errorf(wimro.EUNAVAILABLE, "the cluster status is unavailable: %v", err)
			}
			st.Owned = nonNil(sup.Owned())
			return st, nil
		},
		Version:        version,
		Metrics:        metrics.handler(logger),
		RequestMetrics: metrics.http,
	})
	// The coordinator may find this process must not run (another live
	// process has its instance id): serve then stops, with that error.
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	go func() {
		select {
		case err := <-coord.Failed():
			stopRun(err)
		case <-runCtx.Done():
		}
	}()
	err = a.runHTTP(runCtx, ln, api.Handler(), api.CloseStreams, tlsConf, logger, slog.String("instance_id", c.instanceID))
	if cause := context.Cause(runCtx); err == nil && ctx.Err() == nil && cause != nil {
		return cause
	}
	return err
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
