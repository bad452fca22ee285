package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver for goose

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/dynpac"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/connectors/ietfl2vpn"
	"github.com/wimro/wimro/connectors/onos"
	"github.com/wimro/wimro/connectors/tapi"
	"github.com/wimro/wimro/coordinator"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/migrations"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// App is the wimd command line: a testable type with injected output and
// environment; main only wires it to the process.
type App struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Ready, if set, is called by serve with the address it listens on once
	// it accepts requests.
	Ready func(addr string)

	envErr error
}

const usage = `wimd - the wimro WAN Infrastructure Manager daemon

Usage:
  wimd serve   [flags]                       serve the REST API and run the workers
  wimd migrate up|down|status|version [flags] manage the database schema (goose)
  wimd version                               print the version

Run "wimd <command> --help" for the flags of a command. Every flag has an
environment variable default, shown in its help.
`

// Run runs the command in args and returns the process exit status.
func (a *App) Run(ctx context.Context, args []string) int {
	if a.Getenv == nil {
		a.Getenv = os.Getenv
	}
	if len(args) == 0 {
		fmt.Fprint(a.Stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = a.serve(ctx, args[1:])
	case "migrate":
		err = a.migrate(ctx, args[1:])
	case "version", "--version":
		if len(args) > 1 && (args[1] == "-h" || args[1] == "--help" || args[1] == "-help") {
			fmt.Fprint(a.Stdout, "Usage: wimd version\n\nPrints the version of this wimd build.\n")
			break
		}
		fmt.Fprintf(a.Stdout, "wimd %s\n", version)
	case "help", "-h", "--help":
		fmt.Fprint(a.Stdout, usage)
	default:
		fmt.Fprintf(a.Stderr, "wimd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(a.Stderr, "wimd: %v\n", err)
	return 1
}

var errUsage = errors.New("usage")

// env returns the environment value of key, or def.
func (a *App) env(key, def string) string {
	if v := a.Getenv(key); v != "" {
		return v
	}
	return def
}

// envParse reads a typed environment default. A value that does not parse
// is remembered and reported by envError, so a typo in WIMRO_PARALLEL
// stops wimd instead of silently running with the default.
func envParse[T any](a *App, key string, def T, parse func(string) (T, error)) T {
	v := a.Getenv(key)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		if a.envErr == nil {
			a.envErr = fmt.Errorf("environment %s=%q: %w", key, v, err)
		}
		return def
	}
	return x
}

func (a *App) envInt(key string, def int) int { return envParse(a, key, def, strconv.Atoi) }

func (a *App) envDuration(key string, def time.Duration) time.Duration {
	return envParse(a, key, def, time.ParseDuration)
}

func (a *App) envBool(key string, def bool) bool { return envParse(a, key, def, strconv.ParseBool) }

// envError returns the first environment value that did not parse.
func (a *App) envError() error { return a.envErr }

// dbConfig is the database part of the configuration, shared by serve and
// migrate.
type dbConfig struct {
	url      string
	dataDir  string
	logLevel string
	logJSON  bool
}

func (a *App) newFlagSet(name, help string) *flag.FlagSet {
	fs := flag.NewFlagSet("wimd "+name, flag.ContinueOnError)
	fs.SetOutput(a.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.Stderr, "%s\n\nFlags:\n", help)
		fs.PrintDefaults()
	}
	return fs
}

func (a *App) dbFlags(fs *flag.FlagSet) *dbConfig {
	c := &dbConfig{}
	fs.StringVar(&c.url, "database-url", a.env("WIMRO_DATABASE_URL", ""),
		"PostgreSQL URL (env WIMRO_DATABASE_URL); empty: run a local PostgreSQL under --data-dir")
	fs.StringVar(&c.dataDir, "data-dir", a.env("WIMRO_DATA_DIR", ".wimro"),
		"folder for the local PostgreSQL and the secret key file (env WIMRO_DATA_DIR)")
	fs.StringVar(&c.logLevel, "log-level", a.env("WIMRO_LOG_LEVEL", "info"), "debug, info, warn or error (env WIMRO_LOG_LEVEL)")
	fs.BoolVar(&c.logJSON, "log-json", a.envBool("WIMRO_LOG_JSON", false), "log as JSON lines (env WIMRO_LOG_JSON)")
	return c
}

func (a *App) logger(c *dbConfig) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.logJSON {
		return slog.New(slog.NewJSONHandler(a.Stderr, opts)), nil
	}
	return slog.New(slog.NewTextHandler(a.Stderr, opts)), nil
}

// localDatabase is the name of the database wimd keeps on its own server.
const localDatabase = "wimro"

// database returns the URL to use. With no --database-url it starts (or
// reuses) a PostgreSQL server that wimd owns under the data folder, creates
// the wimro database on it, and returns a function that stops the server.
func (a *App) database(ctx context.Context, c *dbConfig, logger *slog.Logger) (string, func(), error) {
	if c.url != "" {
		return c.url, func() {}, nil
	}
	dir, err := filepath.Abs(filepath.Join(c.dataDir, "postgres"))
	if err != nil {
		return "", nil, err
	}
	logger.Info("no database URL: starting a local PostgreSQL", slog.String("data_dir", dir))
	srv, err := pglocal.Start(ctx, pglocal.Options{DataDir: dir, Logger: logger})
	if err != nil {
		return "", nil, fmt.Errorf("local PostgreSQL: %w", err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			logger.Error("stopping local PostgreSQL", slog.Any("error", err))
		}
	}
	if err := ensureDatabase(ctx, srv.URL("postgres"), localDatabase); err != nil {
		stop()
		return "", nil, err
	}
	return srv.URL(localDatabase), stop, nil
}

func ensureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to local PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func (a *App) migrate(ctx context.Context, args []string) error {
	fs := a.newFlagSet("migrate", "Usage: wimd migrate up|down|status|version [flags]\n\n"+
		"  up       apply every pending migration\n"+
		"  down     roll back the newest migration\n"+
		"  status   list every migration and whether it is applied\n"+
		"  version  print the current schema version")
	c := a.dbFlags(fs)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := fs.Parse(args); err != nil {
			return err
		}
		fs.Usage()
		return errUsage
	}
	sub := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if err := a.envError(); err != nil {
		return err
	}
	switch sub {
	case "up", "down", "status", "version":
	default:
		fmt.Fprintf(a.Stderr, "wimd migrate: unknown subcommand %q\n", sub)
		fs.Usage()
		return errUsage
	}
	logger, err := a.logger(c)
	if err != nil {
		return err
	}
	url, stop, err := a.database(ctx, c, logger)
	if err != nil {
		return err
	}
	defer stop()
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		return err
	}
	switch sub {
	case "up":
		res, err := p.Up(ctx)
		for _, r := range res {
			fmt.Fprintf(a.Stdout, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(time.Millisecond))
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		if len(res) == 0 {
			fmt.Fprintln(a.Stdout, "no pending migrations")
		}
	case "down":
		r, err := p.Down(ctx)
		if err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		fmt.Fprintf(a.Stdout, "rolled back %s (%s)\n", r.Source.Path, r.Duration.Round(time.Millisecond))
	case "status":
		list, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("migrate status: %w", err)
		}
		fmt.Fprintf(a.Stdout, "%-8s %-8s %-25s %s\n", "VERSION", "STATE", "APPLIED AT", "MIGRATION")
		for _, s := range list {
			at := "-"
			if !s.AppliedAt.IsZero() {
				at = s.AppliedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(a.Stdout, "%-8d %-8s %-25s %s\n", s.Source.Version, s.State, at, filepath.Base(s.Source.Path))
		}
	case "version":
		v, err := p.GetDBVersion(ctx)
		if err != nil {
			return fmt.Errorf("migrate version: %w", err)
		}
		fmt.Fprintf(a.Stdout, "%d\n", v)
	}
	return nil
}

// serveConfig is the configuration of wimd serve.
type serveConfig struct {
	db            *dbConfig
	listen        string
	autoMigrate   bool
	apiToken      string
	apiTokenFile  string
	tlsCert       string
	tlsKey        string
	maxBodyBytes  int64
	secretKeyFile string
	devConnectors bool
	parallel      int
	dbMaxConns    int
	claimLease    time.Duration
	refresh       time.Duration
	retention     time.Duration
	instanceID    string
	coordinator   string
	consul        consulFlags
}

// consulFlags configure --coordinator consul.
type consulFlags struct {
	addr, token, prefix                    string
	sessionTTL, leaderSoak, assignmentSoak time.Duration
}

func (a *App) serve(ctx context.Context, args []string) error {
	fs := a.newFlagSet("serve", "Usage: wimd serve [flags]\n\nServes the openmano-compatible REST API under /openmano and runs the account workers.")
	c := &serveConfig{db: a.dbFlags(fs)}
	fs.StringVar(&c.listen, "listen", a.env("WIMRO_LISTEN", "127.0.0.1:9090"), "address to serve HTTP on (env WIMRO_LISTEN)")
	fs.BoolVar(&c.autoMigrate, "auto-migrate", a.envBool("WIMRO_AUTO_MIGRATE", true), "apply pending migrations at start (env WIMRO_AUTO_MIGRATE)")
	fs.StringVar(&c.apiToken, "api-token", a.env("WIMRO_API_TOKEN", ""), "require this bearer token on every route but /livez, /healthz and /readyz (env WIMRO_API_TOKEN; prefer the variable: flags show in ps)")
	fs.StringVar(&c.apiTokenFile, "api-token-file", a.env("WIMRO_API_TOKEN_FILE", ""),
		"file of bearer tokens, one a line (blank lines and # comments ignored), any of which is accepted besides --api-token; re-read when it changes, so a token rotates without a restart (env WIMRO_API_TOKEN_FILE)")
	fs.StringVar(&c.tlsCert, "tls-cert", a.env("WIMRO_TLS_CERT", ""),
		"PEM certificate (chain) to serve HTTPS with, TLS 1.2 at least; needs --tls-key (env WIMRO_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", a.env("WIMRO_TLS_KEY", ""), "PEM private key of --tls-cert (env WIMRO_TLS_KEY)")
	fs.Int64Var(&c.maxBodyBytes, "max-body-bytes", 1<<20, "largest request body accepted")
	fs.IntVar(&c.parallel, "parallel", a.envInt("WIMRO_PARALLEL", 8), "WAN links run at once per WIM account (env WIMRO_PARALLEL)")
	fs.IntVar(&c.dbMaxConns, "db-max-conns", a.envInt("WIMRO_DB_MAX_CONNS", 0),
		"PostgreSQL connections in the pool, workers and API together (env WIMRO_DB_MAX_CONNS); 0: --parallel + 13 "+
			"(claimer 1, completer 2, lease and claim renewal 1, cluster chores 1, connector locks and reads --parallel, API 8); the LISTEN connection is extra")
	fs.DurationVar(&c.claimLease, "claim-lease", a.envDuration("WIMRO_CLAIM_LEASE", 30*time.Second),
		"account and claim lease, renewed while the work runs: how soon another process takes over the accounts and actions of a dead one (env WIMRO_CLAIM_LEASE)")
	fs.DurationVar(&c.refresh, "status-refresh", a.envDuration("WIMRO_STATUS_REFRESH", actions.DefaultPolicy.Refresh),
		"how often the status of a WAN link still being built is asked of its controller (env WIMRO_STATUS_REFRESH)")
	fs.DurationVar(&c.retention, "action-retention", a.envDuration("WIMRO_ACTION_RETENTION", 30*24*time.Hour),
		"how long the finished actions of a deleted instance are kept before they are purged; 0 keeps them forever (env WIMRO_ACTION_RETENTION)")
	fs.StringVar(&c.instanceID, "instance-id", a.env("WIMRO_INSTANCE_ID", ""),
		"this process's name in the cluster, in account leases and claims and in the User-Agent of controller requests (env WIMRO_INSTANCE_ID; default <hostname>:<listen port>)")
	fs.StringVar(&c.coordinator, "coordinator", a.env("WIMRO_COORDINATOR", "none"),
		"none: this process owns every account; consul: processes sharing the database split the accounts through Consul (env WIMRO_COORDINATOR)")
	fs.StringVar(&c.consul.addr, "consul", a.env("WIMRO_CONSUL", a.env("CONSUL_HTTP_ADDR", "127.0.0.1:8500")),
		"Consul agent host:port (env WIMRO_CONSUL, else CONSUL_HTTP_ADDR)")
	fs.StringVar(&c.consul.token, "consul-token", a.env("WIMRO_CONSUL_TOKEN", a.env("CONSUL_HTTP_TOKEN", "")),
		"Consul ACL token (env WIMRO_CONSUL_TOKEN, else CONSUL_HTTP_TOKEN; prefer the variables: flags show in ps)")
	fs.StringVar(&c.consul.prefix, "consul-prefix", a.env("WIMRO_CONSUL_PREFIX", coordinator.DefaultConsulPrefix),
		"root of the cluster's Consul keys (env WIMRO_CONSUL_PREFIX)")
	fs.DurationVar(&c.consul.sessionTTL, "session-ttl", a.envDuration("WIMRO_SESSION_TTL", coordinator.DefaultSessionTTL),
		"TTL of this process's Consul session: how soon a dead process is noticed (env WIMRO_SESSION_TTL)")
	fs.DurationVar(&c.consul.leaderSoak, "leader-soak", a.envDuration("WIMRO_LEADER_SOAK", coordinator.DefaultLeaderSoak),
		"how long membership and the account list must stay still before the leader reassigns (env WIMRO_LEADER_SOAK)")
	fs.DurationVar(&c.consul.assignmentSoak, "assignment-soak", a.envDuration("WIMRO_ASSIGNMENT_SOAK", coordinator.DefaultAssignmentSoak),
		"how long this process's assignment must stay still before it is applied (env WIMRO_ASSIGNMENT_SOAK)")
	fs.StringVar(&c.secretKeyFile, "secret-key-file", a.env("WIMRO_SECRET_KEY_FILE", ""),
		"key that seals account passwords, bearer tokens and wim_url passwords at rest, generated on first run (env WIMRO_SECRET_KEY_FILE; default <data-dir>/secret.key; WIMRO_SECRET_KEY overrides it)")
	fs.BoolVar(&c.devConnectors, "dev-connectors", a.envBool("WIMRO_DEV_CONNECTORS", false),
		"offer the development WIM types fake and failing, fake's state_file confined to --data-dir (env WIMRO_DEV_CONNECTORS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(a.Stderr, "wimd serve: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	if err := a.envError(); err != nil {
		return err
	}
	if c.retention < 0 {
		return fmt.Errorf("--action-retention must not be negative (got %s)", c.retention)
	}
	if c.dbMaxConns < 0 {
		return fmt.Errorf("--db-max-conns must not be negative (got %d)", c.dbMaxConns)
	}
	if c.coordinator != "none" && c.coordinator != "consul" {
		return fmt.Errorf("--coordinator must be none or consul (got %q)", c.coordinator)
	}
	tlsConf, err := serverTLS(c.tlsCert, c.tlsKey)
	if err != nil {
		return err
	}
	logger, err := a.logger(c.db)
	if err != nil {
		return err
	}
	var tokenFile *httpapi.TokenFile
	if c.apiTokenFile != "" {
		if tokenFile, err = httpapi.OpenTokenFile(c.apiTokenFile, logger); err != nil {
			return fmt.Errorf("--api-token-file: %w", err)
		}
	}
	url, stopDB, err := a.database(ctx, c.db, logger)
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
		c.dbMaxConns = c.parallel + 13
	}
	db, err := persistence.Open(ctx, url, logger, persistence.WithMaxConns(c.dbMaxConns))
	if err != nil {
		return err
	}
	defer db.Close()

	keyFile := c.secretKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(c.db.dataDir, "secret.key")
	}
	key, source, err := secret.LoadKey(a.Getenv("WIMRO_SECRET_KEY"), keyFile)
	if err != nil {
		return err
	}
	logger.Info("secret key loaded", slog.String("source", source))
	box, err := secret.New(key)
	if err != nil {
		return err
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
	}
	eng := engine.New(db, box, logger)
	registry := newRegistry(c.devConnectors, c.db.dataDir, filepath.Join(c.db.dataDir, "postgres"), keyFile)
	eng.SetConnectorCheck(connectorCheck(registry))
	eng.SetMappingCheck(mappingCheck(registry))
	// One LISTEN connection for the process: the workers follow account
	// changes, the coordinator the account list.
	listener := persistence.NewListener(db, logger)
	accountNotes := listener.Subscribe(persistence.ChannelAccounts)
	accountList := listener.Subscribe(persistence.ChannelAccountList)
	if err := listener.Start(ctx); err != nil {
		return fmt.Errorf("start notification listener: %w", err)
	}
	defer stopPart(logger, "notification listener", listener.Stop)
	metrics, err := newMetrics(db)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	sup := wimthread.New(db, box, registry, logger, wimthread.Options{Owner: c.instanceID, Parallel: c.parallel, Lease: c.claimLease,
		Policy: actions.Policy{Refresh: c.refresh}, Notifications: accountNotes, Metrics: metrics.workers,
		UserAgent: fmt.Sprintf("wimro/%s (%s)", version, c.instanceID)})
	if err := sup.Start(ctx); err != nil {
		return fmt.Errorf("start workers: %w", err)
	}
	defer stopPart(logger, "workers", sup.Stop)
	if err := metrics.reg.Register(wimthread.NewSupervisorCollector(sup)); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	chores := []coordinator.Chore{
		wimthread.NewRescuer(db, logger, c.claimLease/3),
		wimthread.NewRetention(db, logger, wimthread.RetentionOptions{Retention: c.retention}),
	}
	var coord coordinator.Coordinator
	switch c.coordinator {
	case "consul":
		coord, err = coordinator.NewConsul(coordinator.ConsulConfig{
			Addr: c.consul.addr, Token: c.consul.token, InstanceID: c.instanceID, Prefix: c.consul.prefix,
			SessionTTL: c.consul.sessionTTL, LeaderSoak: c.consul.leaderSoak, AssignmentSoak: c.consul.assignmentSoak,
			APIAddress: ln.Addr().String(), Version: version, DB: db, AccountList: accountList, Runner: sup, Chores: chores, Logger: logger})
		if err != nil {
			return err
		}
	default:
		// Without a cluster this process owns every account and runs every chore.
		coord = coordinator.NewNone(coordinator.NoneConfig{DB: db, AccountList: accountList, Runner: sup, Chores: chores,
			InstanceID: c.instanceID, Address: ln.Addr().String(), Version: version, Logger: logger})
	}
	if err := coord.Start(ctx); err != nil {
		return fmt.Errorf("start coordinator: %w", err)
	}
	// Deferred last, stopped first: no assignment is applied after it, and
	// the others take this process's accounts as the supervisor releases
	// them (coordinator/doc.go, "Stopping").
	defer stopPart(logger, "coordinator", coord.Stop)
	api := httpapi.New(eng, httpapi.Options{
		Logger:       logger,
		Token:        c.apiToken,
		TokenFile:    tokenFile,
		MaxBodyBytes: c.maxBodyBytes,
		Health:       db.Ping,
		Ready:        readiness(db, listener, coord),
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
	return a.runHTTP(ctx, ln, api.Handler(), tlsConf, logger, slog.String("instance_id", c.instanceID))
}

// readiness is /readyz: the database answers, the notification listener
// is connected, and the coordinator applied its first assignment; the
// error names the first check that fails.
func readiness(db *persistence.DB, l *persistence.Listener, c coordinator.Coordinator) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := db.Ping(ctx); err != nil {
			return wimro.Errorf(wimro.EUNAVAILABLE, "database: %s", wimro.ErrorMessage(err))
		}
		if !l.Connected() {
			return wimro.Errorf(wimro.EUNAVAILABLE, "notification listener: not connected")
		}
		if !c.Ready() {
			return wimro.Errorf(wimro.EUNAVAILABLE, "coordinator: no account assignment applied yet")
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

// connectorCheck validates connector settings when a WIM or an account is
// written: it builds the connector (which contacts nothing) and reports
// what its factory refused. Types without a connector pass (their
// accounts get a failing connector).
func connectorCheck(r *connectors.Registry) engine.ConnectorCheck {
	return func(w wimro.WIM, accountConfig map[string]any) error {
		if slices.Contains(devTypes, w.Type) && !slices.Contains(r.Types(), w.Type) {
			return wimro.FieldErrorf("wim.type", "wim.type %q is a development connector, offered only when wimd runs with --dev-connectors (WIMRO_DEV_CONNECTORS=true)", w.Type)
		}
		_, err := buildFor(r, w, accountConfig)
		return err
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
	dynpac.Register(r)
	tapi.Register(r)
	ietfl2vpn.Register(r)
	onos.Register(r)
	return r
}

// serverTLS is the TLS configuration of --tls-cert and --tls-key: nil
// without them (plain HTTP), an error naming the flag when only one is
// given or the pair does not load.
func serverTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "":
		return nil, errors.New("--tls-key (WIMRO_TLS_KEY) needs --tls-cert (WIMRO_TLS_CERT): give both to serve HTTPS, or neither")
	case keyFile == "":
		return nil, errors.New("--tls-cert (WIMRO_TLS_CERT) needs --tls-key (WIMRO_TLS_KEY): give both to serve HTTPS, or neither")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// isLoopback says whether addr only accepts connections from this host.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// runHTTP serves until ctx ends, then shuts down gracefully; HTTPS when
// tlsConf is set.
func (a *App) runHTTP(ctx context.Context, ln net.Listener, h http.Handler, tlsConf *tls.Config, logger *slog.Logger, attrs ...any) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	errc := make(chan error, 1)
	if tlsConf != nil {
		scheme = "https"
		srv.TLSConfig = tlsConf
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	logger.Info("wimd serving", append([]any{slog.String("addr", ln.Addr().String()), slog.String("scheme", scheme), slog.String("version", version)}, attrs...)...)
	if a.Ready != nil {
		a.Ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	logger.Info("wimd stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}
