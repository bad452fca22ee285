package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/coordinator/chores"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// exitDrift is wimd reconcile's exit status when drift remains: found
// and not fixed (no --fix, or a fix that failed). 1 stays "error" and 2 "usage", so a script tells the
// three apart.
const exitDrift = 3

// errDrift makes Run exit with exitDrift; the report says the rest.
var errDrift = errors.New("drift found")

// reconcile runs wimd reconcile: one drift reconcile of the accounts'
// controllers, printed as a table or JSON.
// offlineEngine is an engine over the database of c with the keys wimd
// serve uses, for the commands that run beside it (reconcile, rekey). The
// keys are read, never generated: a new key would open nothing stored.
// closeDB closes the database (and the local server it attached); box
// holds the keys.
func (a *App) offlineEngine(ctx context.Context, c *dbConfig, logger *slog.Logger, keyFile string) (eng *engine.Engine, db *persistence.DB, box *secret.Box, closeDB func(), err error) {
	env := a.Getenv("WIMRO_SECRET_KEY")
	if env == "" {
		if _, err := os.Stat(keyFile); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("no secret key: WIMRO_SECRET_KEY is empty and %s cannot be read (%v); give the key wimd serve uses", keyFile, err)
		}
	}
	keys, _, err := secret.LoadKeys(env, keyFile)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	box, err = secret.NewRing(keys...)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	url, stop, err := a.database(ctx, c, logger, localDB{})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	db, err = persistence.Open(ctx, url, logger, persistence.WithMaxConns(4))
	if err != nil {
		stop()
		return nil, nil, nil, nil, err
	}
	return engine.New(db, box, logger), db, box, func() { db.Close(); stop() }, nil
}

func (a *App) reconcile(ctx context.Context, args []string) error {
	fs := a.newFlagSet("reconcile", "Usage: wimd reconcile [--account X] [--fix] [-o text|json] [flags]\n\n"+
		"Compares each WIM account's WAN links with what its controller lists and reports\n"+
		"orphans (services with wimro's key that belong to no link), missing links (ACTIVE,\n"+
		"INACTIVE, DOWN or ERROR in the database, absent on the controller) and mismatches\n"+
		"(endpoints, or an L3VPN's sites, differ). --fix deletes the orphans, re-queues the\n"+
		"missing links as CREATE actions and the mismatched ones as EDITs (a running wimd\n"+
		"makes them). A service is\n"+
		"an orphan only when no WAN link or unfinished action of ANY account knows its key\n"+
		"(accounts may share a controller). Services whose DELETE an operator abandoned\n"+
		"(openmano instance-action-abandon) are listed as \"abandoned\", known leftovers:\n"+
		"--fix leaves them, --fix --delete-abandoned deletes them. Services without\n"+
		"wimro's key are never touched. Exit status: 0 no drift left, 1 error, 2 usage,\n"+
		"3 drift left (abandoned services still listed included).")
	c := a.dbFlags(fs)
	var account, output, keyFile string
	var fix, deleteAbandoned, dev bool
	fs.StringVar(&account, "account", "", "reconcile only this WIM account (uuid or name)")
	fs.BoolVar(&fix, "fix", false, "delete orphans and re-queue missing links")
	fs.BoolVar(&deleteAbandoned, "delete-abandoned", false, "with --fix, also delete the services whose DELETE an operator abandoned")
	fs.StringVar(&output, "o", "text", "output: text or json")
	fs.StringVar(&keyFile, "secret-key-file", a.env("WIMRO_SECRET_KEY_FILE", ""),
		"the key serve seals secrets with (env WIMRO_SECRET_KEY_FILE; default <data-dir>/secret.key; WIMRO_SECRET_KEY overrides it)")
	fs.BoolVar(&dev, "dev-connectors", a.envBool("WIMRO_DEV_CONNECTORS", false), "offer the development WIM types fake and failing (env WIMRO_DEV_CONNECTORS)")
	allow := a.allowFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(a.Stderr, "wimd reconcile: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	if err := a.envError(); err != nil {
		return err
	}
	if deleteAbandoned && !fix {
		fmt.Fprintln(a.Stderr, "wimd reconcile: --delete-abandoned needs --fix")
		return errUsage
	}
	addresses, err := allow.policy(a)
	if err != nil {
		return err
	}
	if output != "text" && output != "json" {
		fmt.Fprintf(a.Stderr, "wimd reconcile: -o must be text or json (got %q)\n", output)
		return errUsage
	}
	logger, err := a.logger(c)
	if err != nil {
		return err
	}
	if keyFile == "" {
		keyFile = filepath.Join(c.dataDir, "secret.key")
	}
	eng, db, box, closeDB, err := a.offlineEngine(ctx, c, logger, keyFile)
	if err != nil {
		return err
	}
	defer closeDB()
	if err := eng.CheckSecretKey(ctx); err != nil {
		return fmt.Errorf("check the secret key: %w", err)
	}
	registry := newRegistry(dev, c.dataDir, filepath.Join(c.dataDir, localDir), filepath.Join(c.dataDir, localDir+pglocal.OwnerSuffix), keyFile)
	registry.SetAddressPolicy(addresses)
	eng.SetCapabilities(registry.Capabilities)
	eng.SetConnectors(newConnectors(accountconn.Config{Registry: registry, Box: box, DB: db, Logger: logger, UserAgent: userAgent("wimd reconcile")}), false)
	rep, err := eng.Reconcile(ctx, engine.ReconcileOptions{Account: account, Fix: fix, DeleteAbandoned: deleteAbandoned})
	if err != nil {
		return err
	}
	if output == "json" {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printDrift(a.Stdout, rep)
	}
	if n := rep.Failed(); n > 0 {
		return fmt.Errorf("%d account(s) could not be reconciled (see the report)", n)
	}
	if left(rep) > 0 {
		return errDrift
	}
	return nil
}

// left counts the drift items not fixed.
func left(rep engine.DriftReport) int {
	n := 0
	for _, a := range rep.Accounts {
		for _, d := range a.Drift {
			if !d.Fixed {
				n++
			}
		}
	}
	return n
}

// printDrift writes the report as a table: one line per account, then one
// per drift item.
func printDrift(w io.Writer, rep engine.DriftReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tWIM\tTYPE\tLINKS\tSERVICES\tDRIFT\tERROR")
	for _, a := range rep.Accounts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", a.AccountName, a.WIMName, a.WIMType, a.Links, a.Services, len(a.Drift), dash(a.Error))
	}
	tw.Flush()
	for _, a := range rep.Accounts {
		if a.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", a.AccountName, a.Note)
		}
	}
	var any bool
	for _, a := range rep.Accounts {
		for _, d := range a.Drift {
			if !any {
				fmt.Fprintln(w)
				fmt.Fprintln(tw, "ACCOUNT\tKIND\tWAN LINK\tSERVICE\tLINK STATUS\tFIXED\tDETAIL")
				any = true
			}
			fixed := "no"
			switch {
			case d.Fixed && d.ActionID != "":
				fixed = "re-queued (action " + d.ActionID + ")"
			case d.Fixed:
				fixed = "deleted"
			case d.FixError != "":
				fixed = "failed: " + d.FixError
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.AccountName, d.Kind, dash(d.WANLinkID), dash(d.ServiceID), dash(d.LinkStatus), fixed, d.Detail)
		}
	}
	tw.Flush()
	c := rep.Count()
	fmt.Fprintf(w, "\n%d orphan(s), %d missing, %d mismatched, %d abandoned; %d left\n", c[engine.DriftOrphan], c[engine.DriftMissing], c[engine.DriftMismatch],
		c[engine.DriftAbandoned], left(rep))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// reconcileChore runs a report-only drift reconcile every interval on the
// process that runs the cluster's chores (the leader; every process runs
// them without a cluster). It never fixes: --fix is an operator's call.
// Drift is logged at WARN per account, and published as
// wimro_reconcile_drift{kind} and wimro_reconcile_runs_total{result}.
type reconcileChore struct {
	eng    *engine.Engine
	logger *slog.Logger
	drift  *prometheus.GaugeVec
	runs   *prometheus.CounterVec
	// The first run comes one interval after Start: a process that just
	// took the lead has workers still catching up.
	chores.Periodic
}

func newReconcileChore(eng *engine.Engine, logger *slog.Logger, interval time.Duration, reg prometheus.Registerer) (*reconcileChore, error) {
	r := &reconcileChore{eng: eng, logger: logger,
		drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "wimro_reconcile_drift",
			Help: "Drift found by the last periodic reconcile, by kind (orphan, missing, mismatch, abandoned); set on the process that runs it."}, []string{"kind"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "wimro_reconcile_runs_total",
			Help: "Periodic drift reconciles run by this process, by result (clean, drift, error)."}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{r.drift, r.runs} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, k := range engine.DriftKinds {
		r.drift.WithLabelValues(k)
	}
	for _, res := range []string{"clean", "drift", "error"} {
		r.runs.WithLabelValues(res)
	}
	r.Periodic = chores.Periodic{Name: "reconcile", Interval: interval, Job: r.run, WaitFirst: true}
	return r, nil
}

// run reconciles every account once, report only.
func (r *reconcileChore) run(ctx context.Context) {
	rep, err := r.eng.Reconcile(ctx, engine.ReconcileOptions{})
	if ctx.Err() != nil {
		return // stopped: not a result
	}
	if err != nil {
		r.runs.WithLabelValues("error").Inc()
		r.logger.Warn("reconcile failed", slog.Any("error", err))
		return
	}
	for k, n := range rep.Count() {
		r.drift.WithLabelValues(k).Set(float64(n))
	}
	result := "clean"
	for _, a := range rep.Accounts {
		if a.Error != "" {
			result = "error"
			r.logger.Warn("reconcile could not check an account", slog.String("account_id", a.AccountID), slog.String("connector", a.WIMType), slog.String("error", a.Error))
		}
		for _, d := range a.Drift {
			if result == "clean" {
				result = "drift"
			}
			r.logger.Warn("drift between the database and the controller", slog.String("account_id", a.AccountID), slog.String("connector", a.WIMType),
				slog.String("kind", d.Kind), slog.String("wan_link_id", d.WANLinkID), slog.String("service_id", d.ServiceID), slog.String("detail", d.Detail))
		}
	}
	r.runs.WithLabelValues(result).Inc()
}
