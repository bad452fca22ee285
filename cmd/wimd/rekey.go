package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wimro/wimro/coordinator/chores"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

const rekeyUsage = `Usage: wimd rekey status|add-key|promote <key id>|run|retire [flags]

Rotates the secret key that seals account passwords, bearer tokens and
wim_url passwords, while wimd serves. The key file holds one key a line:
the first seals, every one opens. Each wimd process records the ids of
its keys (never the keys) in the database every 30 s (secret_key_holders),
so that each step can check every live process first:

  1. wimd rekey add-key    appends a new key (opening only) to the key file;
                           copy the file to every process and restart each.
  2. wimd rekey promote ID makes it the sealing key (every live process must
                           hold it); copy the file, restart each process.
  3. wimd rekey run        re-seals every stored secret with it, in batches
                           (every live process must seal with it).
  4. wimd rekey retire     drops the old keys from the key file once no
                           stored secret is sealed with them and every live
                           process seals with the new key; copy the file.
  wimd rekey status        shows the keys, the processes and what each key seals.

With WIMRO_SECRET_KEY (keys separated by commas, the sealing one first)
instead of a key file, edit the variable yourself; status, run and
retire's checks work the same.`

// keyHolderEvery is how often a serving wimd records its key ids;
// defaultMemberWindow how recent a record must be for rekey to count its
// process as live (a process gone stops counting after it).
const (
	keyHolderEvery      = 30 * time.Second
	defaultMemberWindow = 2 * time.Minute
)

// rekey runs wimd rekey.
func (a *App) rekey(ctx context.Context, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(a.Stderr, rekeyUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			return nil
		}
		return errUsage
	}
	step := args[0]
	fs := a.newFlagSet("rekey "+step, rekeyUsage)
	c := a.dbFlags(fs)
	var keyFile string
	var batch int
	var window time.Duration
	fs.StringVar(&keyFile, "secret-key-file", a.env("WIMRO_SECRET_KEY_FILE", ""),
		"the key file serve uses (env WIMRO_SECRET_KEY_FILE; default <data-dir>/secret.key; WIMRO_SECRET_KEY overrides it)")
	fs.IntVar(&batch, "batch", 100, "rows re-sealed per transaction (run)")
	fs.DurationVar(&window, "member-window", defaultMemberWindow,
		"a wimd that recorded its keys within this is live and must agree (it records them every 30 s)")
	// Flags may come before or after the key id of promote.
	var positional []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional, rest = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	if err := a.envError(); err != nil {
		return err
	}
	var id string
	switch step {
	case "promote":
		if len(positional) != 1 {
			fmt.Fprintln(a.Stderr, "wimd rekey promote: give one key id (wimd rekey status lists them)")
			return errUsage
		}
		id = positional[0]
	case "status", "add-key", "run", "retire":
		if len(positional) > 0 {
			fmt.Fprintf(a.Stderr, "wimd rekey %s: unexpected argument %q\n", step, positional[0])
			return errUsage
		}
	default:
		fmt.Fprintf(a.Stderr, "wimd rekey: unknown step %q\n\n%s\n", step, rekeyUsage)
		return errUsage
	}
	if batch < 1 {
		return fmt.Errorf("--batch must be at least 1 (got %d)", batch)
	}
	if window < keyHolderEvery {
		// Shorter, a live process would drop out between two records
		// and escape the checks.
		return fmt.Errorf("--member-window must be at least %s, how often wimd records its keys (got %s)", keyHolderEvery, window)
	}
	if keyFile == "" {
		keyFile = filepath.Join(c.dataDir, "secret.key")
	}
	env := a.Getenv("WIMRO_SECRET_KEY")
	if env != "" && (step == "add-key" || step == "promote") {
		return fmt.Errorf("wimd rekey %s edits the key file, but WIMRO_SECRET_KEY is set: edit the variable instead (keys separated by commas, the sealing one first)", step)
	}
	if step == "add-key" {
		// Adding an opening key needs nothing of the database: no
		// process seals with it until it is promoted.
		newID, err := secret.AddKey(keyFile)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "added key %s to %s (it opens, it does not seal yet)\n"+
			"next: copy %s to every wimd process and restart each, then wimd rekey promote %s\n", newID, keyFile, keyFile, newID)
		return nil
	}
	logger, err := a.logger(c)
	if err != nil {
		return err
	}
	eng, db, _, closeDB, err := a.offlineEngine(ctx, c, logger, keyFile)
	if err != nil {
		return err
	}
	defer closeDB()
	holders, err := db.KeyHolders(ctx, window)
	if err != nil {
		return err
	}
	switch step {
	case "status":
		return a.rekeyStatus(ctx, eng, holders, keyFile, env != "")
	case "promote":
		if !slices.Contains(eng.KeyIDs(), id) {
			return fmt.Errorf("the key file holds no key %s (it holds %s)", id, strings.Join(eng.KeyIDs(), ", "))
		}
		if err := membersAgree(holders, "hold key "+id, func(h persistence.KeyHolder) bool { return slices.Contains(h.KeyIDs, id) }); err != nil {
			return err
		}
		if err := secret.PromoteKey(keyFile, id); err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "key %s now seals (first in %s)\n"+
			"next: copy %s to every wimd process and restart each, then wimd rekey run\n", id, keyFile, keyFile)
		return nil
	case "run":
		sealing := eng.SealingKeyID()
		if err := membersAgree(holders, "seal with key "+sealing, func(h persistence.KeyHolder) bool { return h.SealingKey == sealing }); err != nil {
			return err
		}
		start := time.Now()
		changed, err := eng.Reseal(ctx, batch, func(table string, n int) {
			logger.Info("re-sealed a batch", slog.String("table", table), slog.Int("rows", n))
		})
		if err != nil {
			return fmt.Errorf("re-seal: %w (what was re-sealed stays so; run again once the cause is fixed)", err)
		}
		counts, err := eng.SealedCounts(ctx)
		if err != nil {
			return err
		}
		for _, t := range persistence.SealedTables {
			fmt.Fprintf(a.Stdout, "%s: %d rows re-sealed\n", t, changed[t])
		}
		fmt.Fprintf(a.Stdout, "stored secrets by key: %s (%s)\n", formatCounts(counts), time.Since(start).Round(time.Millisecond))
		if others := notSealedWith(counts, sealing); others > 0 {
			return fmt.Errorf("%d stored secrets are still not sealed with key %s (a process sealing with another key wrote them meanwhile?): run again", others, sealing)
		}
		fmt.Fprintf(a.Stdout, "every stored secret is sealed with key %s\nnext: wimd rekey retire\n", sealing)
		return nil
	case "retire":
		sealing := eng.SealingKeyID()
		if err := membersAgree(holders, "seal with key "+sealing, func(h persistence.KeyHolder) bool { return h.SealingKey == sealing }); err != nil {
			return err
		}
		counts, err := eng.SealedCounts(ctx)
		if err != nil {
			return err
		}
		if others := notSealedWith(counts, sealing); others > 0 {
			return fmt.Errorf("%d stored secrets are not sealed with key %s (%s): run wimd rekey run first", others, sealing, formatCounts(counts))
		}
		if env != "" {
			fmt.Fprintf(a.Stdout, "no stored secret needs a key but %s: keep only it in WIMRO_SECRET_KEY of every process\n", sealing)
			return nil
		}
		retired, err := secret.RetireKeys(keyFile)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.Stdout, "retired %s from %s: it holds key %s alone\n"+
			"next: copy %s to every wimd process and restart each; remove the old keys from backups as their database copies age out (docs/operations.md, Backup and restore)\n",
			orNone(strings.Join(retired, ", ")), keyFile, sealing, keyFile)
		return nil
	}
	return nil
}

// membersAgree refuses unless every live process (holders) satisfies ok,
// naming those that do not.
func membersAgree(holders []persistence.KeyHolder, what string, ok func(persistence.KeyHolder) bool) error {
	var bad []string
	for _, h := range holders {
		if !ok(h) {
			bad = append(bad, fmt.Sprintf("%s (seals with %s, holds %s, seen %s)", h.InstanceID, h.SealingKey, strings.Join(h.KeyIDs, ","), h.SeenAt.UTC().Format(time.RFC3339)))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("not every live wimd process does %s yet: %s; give them the key file and restart them (a process that is gone drops out after --member-window)",
			what, strings.Join(bad, "; "))
	}
	return nil
}

// notSealedWith counts the stored secrets a key other than sealing seals
// (legacy ones included); clear ones need no key.
func notSealedWith(counts map[string]int, sealing string) int {
	n := 0
	for id, c := range counts {
		if id != sealing && id != engine.Unsealed {
			n += c
		}
	}
	return n
}

func formatCounts(counts map[string]int) string {
	if len(counts) == 0 {
		return "none stored"
	}
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s %d", id, counts[id])
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "no key"
	}
	return s
}

// rekeyStatus prints the keys, the live processes' keys and what each key
// seals.
func (a *App) rekeyStatus(ctx context.Context, eng *engine.Engine, holders []persistence.KeyHolder, keyFile string, fromEnv bool) error {
	counts, err := eng.SealedCounts(ctx)
	if err != nil {
		return err
	}
	where := keyFile
	if fromEnv {
		where = "WIMRO_SECRET_KEY"
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "KEY (%s)\tROLE\tSECRETS\n", where)
	for i, id := range eng.KeyIDs() {
		role := "opens"
		if i == 0 {
			role = "seals"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", id, role, counts[id])
	}
	tw.Flush()
	fmt.Fprintf(a.Stdout, "stored secrets by key: %s\n", formatCounts(counts))
	if len(holders) == 0 {
		fmt.Fprintln(a.Stdout, "no live wimd process recorded its keys")
		return nil
	}
	tw = tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPROCESS\tSEALS WITH\tHOLDS\tSEEN")
	for _, h := range holders {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.InstanceID, h.SealingKey, strings.Join(h.KeyIDs, ","), h.SeenAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// keyHolder records, every keyHolderEvery while serve runs, the ids of
// the keys this process holds (secret_key_holders), and removes the
// record when it stops: what wimd rekey checks before each step.
type keyHolder struct {
	chores.Periodic
	db         *persistence.DB
	instanceID string
}

func newKeyHolder(db *persistence.DB, instanceID string, box *secret.Box, logger *slog.Logger) *keyHolder {
	h := &keyHolder{db: db, instanceID: instanceID}
	h.Periodic = chores.Periodic{Name: "secret key holder", Interval: keyHolderEvery, Job: func(ctx context.Context) {
		if err := db.RecordKeyHolder(ctx, instanceID, box.KeyID(), box.KeyIDs()); err != nil && ctx.Err() == nil {
			logger.Warn("record the secret key ids of this process", slog.Any("error", err))
		}
	}}
	return h
}

// Stop ends the records and removes this process's.
func (h *keyHolder) Stop(ctx context.Context) error {
	return errors.Join(h.Periodic.Stop(ctx), h.db.DeleteKeyHolder(ctx, h.instanceID))
}
