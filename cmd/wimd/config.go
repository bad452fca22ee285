package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/coordinator"
	"github.com/wimro/wimro/httpapi"
)

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
	errs := &flagErrors{w: a.Stderr}
	fs.SetOutput(errs)
	fs.Usage = func() {
		// Asked for (-h): on stdout, like any tool's help ("wimd serve -h
		// | less"); after the flag package's error message: on stderr.
		w := a.Stdout
		if errs.wrote {
			w = a.Stderr
		}
		fmt.Fprintf(w, "%s\n\nFlags:\n", help)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(errs)
	}
	return fs
}

// flagErrors is the output of a flag set outside its help: the flag
// package writes there only the error of a bad command line.
type flagErrors struct {
	w     io.Writer
	wrote bool
}

func (f *flagErrors) Write(p []byte) (int, error) {
	f.wrote = true
	return f.w.Write(p)
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

// defaultClaimLease is --claim-lease's default: a dead process's accounts
// are taken over within it (renewed every third of it: 1.67 s), which is
// what bounds a failover (docs/cluster.md).
const defaultClaimLease = 5 * time.Second

// serveConfig is the configuration of wimd serve.
type serveConfig struct {
	db           *dbConfig
	listen       string
	autoMigrate  bool
	apiToken     string
	apiTokenFile string
	tlsCert      string
	tlsKey       string
	maxBodyBytes int64
	// maxStreams and maxStreamsPerToken cap the event streams open at
	// once, in the process and per API token.
	maxStreams, maxStreamsPerToken int
	// l2smWait bounds the wait of the access completing an L2SM vpws.
	l2smWait       time.Duration
	secretKeyFile  string
	devConnectors  bool
	allow          *allowList
	addresses      *connectors.AddressPolicy
	parallel       int
	dbMaxConns     int
	claimLease     time.Duration
	refresh        time.Duration
	retention      time.Duration
	auditRetention time.Duration
	monitor        time.Duration
	reconcile      time.Duration
	instanceID     string
	coordinator    string
	consul         consulFlags
}

// consulFlags configure --coordinator consul.
type consulFlags struct {
	addr, token, prefix, service                                string
	sessionTTL, checkTTL, leaderSoak, assignmentSoak, lockDelay time.Duration
}

// parseServe reads the flags of wimd serve (every one with its
// environment default) and checks the values that need no I/O.
func (a *App) parseServe(args []string) (*serveConfig, error) {
	fs := a.newFlagSet("serve", "Usage: wimd serve [flags]\n\nServes the openmano-compatible REST API under /openmano and runs the actions of the WIM accounts.")
	c := &serveConfig{db: a.dbFlags(fs)}
	fs.StringVar(&c.listen, "listen", a.env("WIMRO_LISTEN", "127.0.0.1:9090"), "address to serve HTTP on (env WIMRO_LISTEN)")
	fs.BoolVar(&c.autoMigrate, "auto-migrate", a.envBool("WIMRO_AUTO_MIGRATE", true), "apply pending migrations at start (env WIMRO_AUTO_MIGRATE)")
	fs.StringVar(&c.apiToken, "api-token", a.env("WIMRO_API_TOKEN", ""), "require this bearer token on every route but /livez, /healthz and /readyz; it holds every scope (read, write, admin) (env WIMRO_API_TOKEN; prefer the variable: flags show in ps)")
	fs.StringVar(&c.apiTokenFile, "api-token-file", a.env("WIMRO_API_TOKEN_FILE", ""),
		"file of bearer tokens, one a line: <token> [id=<name>] [scopes=read,write,admin] (a token alone holds every scope; blank lines and # comments ignored), any of which is accepted besides --api-token; re-read when it changes, so a token rotates or changes scopes without a restart (env WIMRO_API_TOKEN_FILE)")
	fs.StringVar(&c.tlsCert, "tls-cert", a.env("WIMRO_TLS_CERT", ""),
		"PEM certificate (chain) to serve HTTPS with, TLS 1.2 at least; needs --tls-key (env WIMRO_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", a.env("WIMRO_TLS_KEY", ""), "PEM private key of --tls-cert (env WIMRO_TLS_KEY)")
	fs.Int64Var(&c.maxBodyBytes, "max-body-bytes", 1<<20, "largest request body accepted")
	fs.IntVar(&c.maxStreams, "max-event-streams", a.envInt("WIMRO_MAX_EVENT_STREAMS", httpapi.DefaultMaxEventStreams),
		"event streams open at once in this process; one more is answered 429 with Retry-After (env WIMRO_MAX_EVENT_STREAMS)")
	fs.IntVar(&c.maxStreamsPerToken, "max-event-streams-per-token", a.envInt("WIMRO_MAX_EVENT_STREAMS_PER_TOKEN", httpapi.DefaultMaxEventStreamsPerToken),
		"event streams open at once with one API token (with --api-token or --api-token-file); one more is answered 429 with Retry-After (env WIMRO_MAX_EVENT_STREAMS_PER_TOKEN)")
	fs.DurationVar(&c.l2smWait, "l2sm-wait", a.envDuration("WIMRO_L2SM_WAIT", httpapi.DefaultL2SMWait),
		"how long the IETF L2VPN site-network-access that completes a point-to-point vpn-service waits for its WAN link: up or still building is 201, failed is 500 with the reason (env WIMRO_L2SM_WAIT)")
	fs.IntVar(&c.parallel, "parallel", a.envInt("WIMRO_PARALLEL", 8), "WAN links run at once per WIM account (env WIMRO_PARALLEL)")
	fs.IntVar(&c.dbMaxConns, "db-max-conns", a.envInt("WIMRO_DB_MAX_CONNS", 0),
		"PostgreSQL connections in the pool, workers and API together (env WIMRO_DB_MAX_CONNS); 0: --parallel + 13 "+
			"(claimer 1, completer 2, cluster chores 1, connector reads --parallel, API 9); the LISTEN connection and the connector locks' (one each) and the lease keeper's two (renewals; takes and releases) are extra")
	fs.DurationVar(&c.claimLease, "claim-lease", a.envDuration("WIMRO_CLAIM_LEASE", defaultClaimLease),
		"account and claim lease, renewed every third of it while the work runs: how soon another process takes over the accounts and actions of a dead one; a process that cannot renew its leases for this long steps out of the cluster (env WIMRO_CLAIM_LEASE)")
	fs.DurationVar(&c.refresh, "status-refresh", a.envDuration("WIMRO_STATUS_REFRESH", actions.DefaultPolicy.Refresh),
		"how often the status of a WAN link still being built is asked of its controller (env WIMRO_STATUS_REFRESH)")
	fs.DurationVar(&c.retention, "action-retention", a.envDuration("WIMRO_ACTION_RETENTION", 30*24*time.Hour),
		"how long the finished actions of a deleted instance are kept before they are purged; 0 keeps them forever (env WIMRO_ACTION_RETENTION)")
	fs.DurationVar(&c.auditRetention, "audit-retention", a.envDuration("WIMRO_AUDIT_RETENTION", 30*24*time.Hour),
		"how long the audit trail's entries (GET /openmano/audit) are kept before the leader purges them; 0 keeps them forever (env WIMRO_AUDIT_RETENTION)")
	fs.DurationVar(&c.monitor, "monitor-interval", a.envDuration("WIMRO_MONITOR_INTERVAL", 5*time.Minute),
		"how often the credentials of each WIM account are checked with its controller (status ACTIVE or ERROR in the account's answers) and each created WAN link is re-read from it (ACTIVE, DOWN, ERROR, INACTIVE); 0 checks credentials only when an account is written and never re-reads links (env WIMRO_MONITOR_INTERVAL)")
	fs.DurationVar(&c.reconcile, "reconcile-interval", a.envDuration("WIMRO_RECONCILE_INTERVAL", time.Hour),
		"how often the leader (every process without a cluster) compares each account's controller with the database and logs drift, report only (wimd reconcile --fix repairs); 0 turns it off (env WIMRO_RECONCILE_INTERVAL)")
	fs.StringVar(&c.instanceID, "instance-id", a.env("WIMRO_INSTANCE_ID", ""),
		"this process's name in the cluster, in the User-Agent of controller requests and, with a nonce of each start (<id>#<nonce>), in account leases and claims; unique per live process (with Consul a second live process with the same id is refused), no '/' or '#' (env WIMRO_INSTANCE_ID; default <hostname>:<listen port>)")
	fs.StringVar(&c.coordinator, "coordinator", a.env("WIMRO_COORDINATOR", "none"),
		"none: this process owns every account; consul: processes sharing the database split the accounts through Consul (env WIMRO_COORDINATOR)")
	fs.StringVar(&c.consul.addr, "consul", a.env("WIMRO_CONSUL", a.env("CONSUL_HTTP_ADDR", "127.0.0.1:8500")),
		"Consul agent host:port (env WIMRO_CONSUL, else CONSUL_HTTP_ADDR)")
	fs.StringVar(&c.consul.token, "consul-token", a.env("WIMRO_CONSUL_TOKEN", a.env("CONSUL_HTTP_TOKEN", "")),
		"Consul ACL token (env WIMRO_CONSUL_TOKEN, else CONSUL_HTTP_TOKEN; prefer the variables: flags show in ps)")
	fs.StringVar(&c.consul.prefix, "consul-prefix", a.env("WIMRO_CONSUL_PREFIX", coordinator.DefaultConsulPrefix),
		"root of the cluster's Consul keys (env WIMRO_CONSUL_PREFIX)")
	fs.DurationVar(&c.consul.sessionTTL, "session-ttl", a.envDuration("WIMRO_SESSION_TTL", coordinator.DefaultSessionTTL),
		"TTL of this process's Consul session: the backstop of --check-ttl, and how soon a dead process is noticed without a check (env WIMRO_SESSION_TTL)")
	fs.DurationVar(&c.consul.checkTTL, "check-ttl", a.envDuration("WIMRO_CHECK_TTL", coordinator.DefaultCheckTTL),
		"TTL of this process's health check in Consul's catalog (service --consul-service), passed every third of it while the process can keep its account leases; "+
			"its session is bound to it, so a dead, paused or unhealthy process loses its session, and leadership, within it; 0 registers no service (env WIMRO_CHECK_TTL)")
	fs.StringVar(&c.consul.service, "consul-service", a.env("WIMRO_CONSUL_SERVICE", coordinator.DefaultService),
		"name of the service each wimd registers in Consul's catalog, with the id <name>-<instance id> (env WIMRO_CONSUL_SERVICE)")
	fs.DurationVar(&c.consul.lockDelay, "lock-delay", a.envDuration("WIMRO_LOCK_DELAY", coordinator.DefaultLockDelay),
		"Consul lock-delay of the session: how long the leader key of a dead leader stays refused to the others; at least 1ms (env WIMRO_LOCK_DELAY)")
	fs.DurationVar(&c.consul.leaderSoak, "leader-soak", a.envDuration("WIMRO_LEADER_SOAK", coordinator.DefaultLeaderSoak),
		"how long membership and the account list must stay still before the leader reassigns (env WIMRO_LEADER_SOAK)")
	fs.DurationVar(&c.consul.assignmentSoak, "assignment-soak", a.envDuration("WIMRO_ASSIGNMENT_SOAK", coordinator.DefaultAssignmentSoak),
		"how long this process's assignment must stay still before it is applied (env WIMRO_ASSIGNMENT_SOAK)")
	fs.StringVar(&c.secretKeyFile, "secret-key-file", a.env("WIMRO_SECRET_KEY_FILE", ""),
		"key that seals account passwords, bearer tokens and wim_url passwords at rest, generated on first run (env WIMRO_SECRET_KEY_FILE; default <data-dir>/secret.key; WIMRO_SECRET_KEY overrides it)")
	fs.BoolVar(&c.devConnectors, "dev-connectors", a.envBool("WIMRO_DEV_CONNECTORS", false),
		"offer the development WIM types fake and failing, fake's state_file confined to --data-dir (env WIMRO_DEV_CONNECTORS)")
	c.allow = a.allowFlag(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(a.Stderr, "wimd serve: unexpected argument %q\n", fs.Arg(0))
		return nil, errUsage
	}
	if err := a.envError(); err != nil {
		return nil, err
	}
	if c.retention < 0 {
		return nil, fmt.Errorf("--action-retention must not be negative (got %s)", c.retention)
	}
	if c.auditRetention < 0 {
		return nil, fmt.Errorf("--audit-retention must not be negative (got %s)", c.auditRetention)
	}
	if c.reconcile < 0 {
		return nil, fmt.Errorf("--reconcile-interval must not be negative (got %s)", c.reconcile)
	}
	if c.maxStreams < 1 {
		return nil, fmt.Errorf("--max-event-streams must be at least 1 (got %d)", c.maxStreams)
	}
	if c.maxStreamsPerToken < 1 {
		return nil, fmt.Errorf("--max-event-streams-per-token must be at least 1 (got %d)", c.maxStreamsPerToken)
	}
	if c.dbMaxConns < 0 {
		return nil, fmt.Errorf("--db-max-conns must not be negative (got %d)", c.dbMaxConns)
	}
	if c.instanceID != "" {
		if err := coordinator.CheckInstanceID(c.instanceID); err != nil {
			return nil, fmt.Errorf("--instance-id: %w", err)
		}
	}
	if c.consul.checkTTL < 0 {
		return nil, fmt.Errorf("--check-ttl must not be negative (got %s)", c.consul.checkTTL)
	}
	if c.consul.lockDelay < time.Millisecond {
		return nil, fmt.Errorf("--lock-delay must be at least 1ms (got %s)", c.consul.lockDelay)
	}
	if c.coordinator != "none" && c.coordinator != "consul" {
		return nil, fmt.Errorf("--coordinator must be none or consul (got %q)", c.coordinator)
	}
	var err error
	if c.addresses, err = c.allow.policy(a); err != nil {
		return nil, err
	}
	return c, nil
}

// allowList is --controller-allow: repeatable, each value a comma-separated
// list; the first value on the command line replaces the variable's.
type allowList struct {
	entries []string
	fromCLI bool
}

func (l *allowList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.entries, ",")
}

func (l *allowList) Set(s string) error {
	if !l.fromCLI {
		l.entries, l.fromCLI = nil, true
	}
	if _, err := connectors.ParseAddressPolicy(s); err != nil {
		return err
	}
	l.entries = append(l.entries, s)
	return nil
}

// policy is the connectors' address policy the list gives, resolving
// with the App's lookup when a test set one.
func (l *allowList) policy(a *App) (*connectors.AddressPolicy, error) {
	p, err := connectors.ParseAddressPolicy(l.entries...)
	if err != nil {
		return nil, fmt.Errorf("--controller-allow: %w", err)
	}
	if a.lookup != nil {
		p = p.WithLookup(a.lookup)
	}
	return p, nil
}

// allowFlag defines --controller-allow on fs, by default from
// WIMRO_CONTROLLER_ALLOW (checked when the policy is built).
func (a *App) allowFlag(fs *flag.FlagSet) *allowList {
	l := &allowList{}
	if v := a.Getenv("WIMRO_CONTROLLER_ALLOW"); v != "" {
		l.entries = []string{v}
	}
	fs.Var(l, "controller-allow",
		"the addresses the connectors may reach: CIDR prefixes, addresses and host names, comma-separated or repeated; "+
			"empty: any but link-local (169.254.0.0/16, fe80::/10); cloud metadata addresses (169.254.169.254, ...) only when listed by exact address; "+
			"loopback is allowed unless a list leaves it out (env WIMRO_CONTROLLER_ALLOW)")
	return l
}
