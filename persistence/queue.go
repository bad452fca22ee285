package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

// ClaimName returns the claimed_by value of a claim of owner, tagged with
// what makes it unique: "<owner>#<tag>". ReleaseClaims(owner) finds every
// claim named so.
func ClaimName(owner, tag string) string { return owner + "#" + tag }

// inFlight selects the unfinished actions, the only ones that can be
// claimed: no index covers claimed_by (a claim is a HOT update), so every
// statement that looks for claims reads them through the claim index's
// predicate.
const inFlight = `status IN ('SCHEDULED', 'BUILD')`

// claimedByOwner matches the claims of owner ($1) under any ClaimName.
const claimedByOwner = `(claimed_by = $1 OR starts_with(claimed_by, $1 || '#'))`

// ClaimKey names one claimed action and the claim it was taken under.
type ClaimKey struct {
	InstanceActionID string
	TaskIndex        int
	ClaimedBy        string
}

// KeyOf returns the claim key of a claimed action.
func KeyOf(a wimro.Action) ClaimKey {
	k := ClaimKey{InstanceActionID: a.InstanceActionID, TaskIndex: a.TaskIndex}
	if a.ClaimedBy != nil {
		k.ClaimedBy = *a.ClaimedBy
	}
	return k
}

func claimArrays(keys []ClaimKey) ([]string, []int32, []string) {
	ids := make([]string, len(keys))
	idx := make([]int32, len(keys))
	by := make([]string, len(keys))
	for i, k := range keys {
		ids[i], idx[i], by[i] = k.InstanceActionID, int32(k.TaskIndex), k.ClaimedBy
	}
	return ids, idx, by
}

// ErrClaimLost means the action is no longer claimed by this owner: its
// lease expired and another process may have taken it. The outcome is
// dropped; the action's code is safe to run again.
var ErrClaimLost = wimro.Errorf(wimro.ECONFLICT, "the claim on this action, or its account's lease, was lost")

// Finished is one claimed action and its outcome, for FinishActions, with
// the account lease it was claimed under.
type Finished struct {
	Action  wimro.Action
	Outcome wimro.Outcome
	Lease   Lease
}

// leaseHeld holds for an action a of the batch o while its account's
// lease is held as o names it. A scalar subquery, one primary-key probe
// per action: written as EXISTS, PostgreSQL planned it as a semi-join on
// (owner, epoch), which every lease of the process matches, and probed
// the actions once per (outcome, owned account) pair: 100 times the work
// at 100 accounts.
const leaseHeld = `COALESCE((
			SELECT l.owner = o.owner AND l.epoch = o.epoch AND ` + leaseLive + `
			FROM wim_account_leases l WHERE l.account_id = a.wim_account_id), false)`

// finishSQL writes a batch of outcomes in one statement, so in one round
// trip and one implicit transaction: the arrays are one outcome per index.
// An action is written only while it is still held under its claim and its
// account's lease is held as given; the rows are locked in primary-key
// order first, as every multi-row writer locks them. Only the actions
// written (done) update their WAN links (a missing link is ignored) and
// append one increment per instance action to instance_action_progress:
// an insert, so two batches with actions of the same instance action never
// wait for each other (they queued on its counter row when they updated
// it). An action whose status, or whose link's status, changes gets an
// event in the same statement (migrations/sql/00006_events.sql); the
// events part joins the links as the statement's snapshot has them (every
// part of a statement sees the same snapshot, not the links part's
// update), so the change is judged against the status the outcome was
// computed from. A retry (Outcome.Retry) gets an event though nothing
// changed status, with its attempt (counted in the same statement when
// the run reached the controller) and next try (00011_retry_events.sql).
// Each part carries forward what the next needs (locked the outcome,
// done what its link, event and increment need) and reads
// tables only by primary key: PostgreSQL has no row counts for WITH parts
// and planned joins between two of them as nested loops, quadratic in the
// batch (two such joins took more time than the rest of the statement at
// 400 outcomes). Data-modifying WITH parts always run, referenced or not.
// An outcome that keeps its action SCHEDULED is due at once when a network
// report marked the action under this very claim (woken_claim, see
// MakeLinksDue): the run read the networks before the report, and its
// wait would hold the report back a whole interval. The row is locked
// first, so a report that commits before the write is seen, and one that
// comes after finds the action unclaimed and makes it due itself.
const finishSQL = `
	WITH o AS (
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		                     $8::timestamptz[], $9::bool[], $10::text[], $11::bigint[],
		                     $12::bool[], $13::text[], $14::text[], $15::bool[], $16::text[], $17::text[], $18::int[], $19::int[],
		                     $20::bool[], $21::bool[])
			AS o(id, idx, claim, status, error_msg, wim_internal_id, extra, run_after, reset, owner, epoch,
			     has_link, link_status, link_error, link_clear, link_svc, link_info, n_done, n_failed, reached, retry)),
	locked AS (
		SELECT a.status AS old_status, o.*
		FROM o
		JOIN vim_wim_actions a ON a.instance_action_id = o.id AND a.task_index = o.idx AND a.claimed_by = o.claim
		WHERE ` + leaseHeld + `
		ORDER BY a.instance_action_id, a.task_index
		FOR UPDATE OF a),
	done AS (
		UPDATE vim_wim_actions AS a
		SET status = k.status, error_msg = k.error_msg, wim_internal_id = COALESCE(k.wim_internal_id, a.wim_internal_id),
		    extra = CASE WHEN k.extra IS NULL THEN a.extra ELSE COALESCE(a.extra, '{}'::jsonb) || k.extra::jsonb END,
		    run_after = CASE WHEN a.woken_claim = k.claim AND k.status = 'SCHEDULED' THEN least(k.run_after, now()) ELSE k.run_after END,
		    attempts = CASE WHEN k.reset THEN 0 WHEN k.reached THEN a.attempts + 1 ELSE a.attempts END,
		    claimed_by = NULL, claim_expires_at = NULL, woken_claim = NULL, unsettled_runs = greatest(a.unsettled_runs - 1, 0), modified_at = now()
		FROM locked k
		WHERE a.instance_action_id = k.id AND a.task_index = k.idx
		RETURNING a.instance_action_id, a.task_index, a.action, a.item_id, a.status, a.error_msg,
		          k.old_status, k.has_link, k.link_status, k.link_error, k.link_clear, k.link_svc, k.link_info, k.n_done, k.n_failed,
		          k.retry, a.attempts, a.run_after),
	links AS (
		UPDATE instance_wim_nets l SET
			status = COALESCE(d.link_status, l.status),
			status_since = CASE WHEN COALESCE(d.link_status, l.status) IS DISTINCT FROM l.status THEN now() ELSE l.status_since END,
			error_msg = CASE WHEN d.link_clear THEN NULL ELSE COALESCE(d.link_error, l.error_msg) END,
			wim_internal_id = COALESCE(d.link_svc, l.wim_internal_id),
			wim_info = CASE WHEN d.link_info IS NULL THEN l.wim_info ELSE COALESCE(l.wim_info, '{}'::jsonb) || d.link_info::jsonb END,
			modified_at = now()
		FROM done d
		WHERE d.has_link AND l.uuid = d.item_id),
	events AS (
		INSERT INTO instance_action_events (instance_action_id, task_index, action, status, wan_link_id, link_status, error_msg, attempt, next_try_at)
		SELECT d.instance_action_id, d.task_index, d.action, d.status, d.item_id,
		       CASE WHEN b.uuid IS NULL THEN NULL WHEN d.has_link THEN COALESCE(d.link_status, b.status) ELSE b.status END,
		       COALESCE(d.error_msg, CASE WHEN d.has_link THEN d.link_error END),
		       CASE WHEN d.retry THEN d.attempts END, CASE WHEN d.retry THEN d.run_after END
		FROM done d
		LEFT JOIN instance_wim_nets b ON b.uuid = d.item_id
		WHERE d.retry OR d.status IS DISTINCT FROM d.old_status
		   OR (d.has_link AND b.uuid IS NOT NULL AND d.link_status IS NOT NULL AND d.link_status IS DISTINCT FROM b.status)
		ORDER BY d.instance_action_id, d.task_index),
	counters AS (
		INSERT INTO instance_action_progress (instance_action_id, n_done, n_failed)
		SELECT d.instance_action_id, sum(d.n_done)::int, sum(d.n_failed)::int
		FROM done d
		WHERE d.n_done <> 0 OR d.n_failed <> 0
		GROUP BY d.instance_action_id)
	SELECT d.instance_action_id, d.task_index FROM done d`

// FinishActions writes the outcomes of claimed actions and releases their
// claims, with their WAN links and one counter increment per instance
// action, in one statement (one round trip, atomic by itself; inside Tx it
// joins the transaction) whatever their number. It was four round trips
// (BEGIN, the actions, links and counters, COMMIT), which bounded a
// busy account's throughput: its next claim waits for them.
// Fencing: an action is written only while it is still held under the
// claim it was taken with (Action.ClaimedBy as ClaimDue returned it)
// and its account's lease is still held as it was then; otherwise its
// error in errs is ErrClaimLost and it adds nothing to the counters nor
// changes its link.
// Every text is made storable first (wimro.CleanText), so a controller's
// message can never make PostgreSQL refuse the batch.
// Only which actions were written comes back: reading back the written
// rows cost a tenth of the process's CPU per action at 100 accounts, and
// the workers never looked at them.
func (s *Store) FinishActions(ctx context.Context, items []Finished) ([]error, error) {
	errs := make([]error, len(items))
	type key struct {
		id  string
		idx int
	}
	index := make(map[key]int, len(items))
	var (
		ids, claims, statuses, owners []string
		idxs, nDone, nFailed          []int32
		msgs, svcIDs, extras          []*string
		runAfters                     []time.Time
		resets, hasLink, linkClear    []bool
		reached, retry                []bool
		epochs                        []int64
		linkStatus, linkErr, linkSvc  []*string
		linkInfo                      []*string
	)
	now := time.Now()
	for i, it := range items {
		a, o := it.Action, it.Outcome
		k := key{a.InstanceActionID, a.TaskIndex}
		if _, dup := index[k]; dup {
			errs[i] = ErrClaimLost // the first outcome of an action releases its claim
			continue
		}
		index[k] = i
		runAfter := now
		if o.RunAfter != nil {
			runAfter = *o.RunAfter
		}
		claim := ""
		if a.ClaimedBy != nil {
			claim = *a.ClaimedBy
		}
		extra, err := jsonText(o.Extra)
		if err != nil {
			return nil, wimro.Errorf(wimro.EINVALID, "the outcome of %s[%d] has extra data that is not JSON: %v", a.InstanceActionID, a.TaskIndex, err)
		}
		u := o.Link
		if u == nil {
			u = &wimro.LinkUpdate{}
		}
		info, err := jsonText(u.WIMInfo)
		if err != nil {
			return nil, wimro.Errorf(wimro.EINVALID, "the outcome of %s[%d] has WAN link data that is not JSON: %v", a.InstanceActionID, a.TaskIndex, err)
		}
		ids, idxs, claims = append(ids, a.InstanceActionID), append(idxs, int32(a.TaskIndex)), append(claims, claim)
		statuses, msgs, svcIDs, extras = append(statuses, o.Status), append(msgs, cleanMsg(o.ErrorMsg)), append(svcIDs, cleanID(o.WIMInternalID)), append(extras, extra)
		runAfters, resets = append(runAfters, runAfter), append(resets, o.ResetAttempts)
		owners, epochs = append(owners, it.Lease.Owner), append(epochs, it.Lease.Epoch)
		hasLink, linkStatus, linkErr = append(hasLink, o.Link != nil), append(linkStatus, u.Status), append(linkErr, cleanMsg(u.ErrorMsg))
		linkClear, linkSvc, linkInfo = append(linkClear, u.ClearError), append(linkSvc, cleanID(u.WIMInternalID)), append(linkInfo, info)
		nDone, nFailed = append(nDone, int32(o.Done)), append(nFailed, int32(o.Failed))
		reached, retry = append(reached, o.Reached), append(retry, o.Retry)
	}
	written := make([]bool, len(items))
	if len(ids) > 0 {
		rows, err := s.query(ctx, "vim_wim_actions", finishSQL,
			ids, idxs, claims, statuses, msgs, svcIDs, extras, runAfters, resets, owners, epochs,
			hasLink, linkStatus, linkErr, linkClear, linkSvc, linkInfo, nDone, nFailed, reached, retry)
		if err != nil {
			return nil, err
		}
		var k key
		var idx int32
		_, err = pgx.ForEachRow(rows, []any{&k.id, &idx}, func() error {
			k.idx = int(idx)
			if i, ok := index[k]; ok {
				written[i] = true
			}
			return nil
		})
		if err != nil {
			return nil, mapError(fmt.Errorf("persistence: write action outcomes: %w", err))
		}
	}
	for i := range items {
		if errs[i] == nil && !written[i] {
			errs[i] = ErrClaimLost
		}
	}
	return errs, nil
}

// jsonText encodes a JSON object cleaned for storage (wimro.CleanMap), or
// nil for none. Most objects need no cleaning, and cleaning copies every
// map: the object is encoded as it is first, and cleaned and encoded again
// only when the encoding shows an escaped NUL or an escaped replacement
// character (what encoding/json writes for invalid UTF-8; a valid U+FFFD
// it writes as is). Otherwise CleanMap would have changed nothing, so the
// text is the same either way.
func jsonText(m map[string]any) (*string, error) {
	if m == nil {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(b, []byte(`\u0000`)) || bytes.Contains(b, []byte(`\ufffd`)) {
		if b, err = json.Marshal(wimro.CleanMap(m)); err != nil {
			return nil, err
		}
	}
	v := string(b)
	return &v, nil
}

// runBatch sends b in one round trip and hands each statement's rows to
// read, in order.
func (s *Store) runBatch(ctx context.Context, b *pgx.Batch, read func(i int, rows pgx.Rows) error) error {
	br := s.q.SendBatch(ctx, b)
	defer br.Close()
	for i := range b.Len() {
		rows, err := br.Query()
		if err != nil {
			return mapError(fmt.Errorf("persistence: batch: %w", err))
		}
		if err := read(i, rows); err != nil {
			rows.Close()
			return err
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return mapError(fmt.Errorf("persistence: batch: %w", err))
		}
	}
	if err := br.Close(); err != nil {
		return mapError(fmt.Errorf("persistence: batch: %w", err))
	}
	return nil
}

// UpdateWANLink applies u to a WAN link; a missing link is not an error.
func (s *Store) UpdateWANLink(ctx context.Context, id string, u wimro.LinkUpdate) error {
	_, err := s.exec(ctx, "instance_wim_nets", updateLinkSQL, id, u.Status, cleanMsg(u.ErrorMsg), u.ClearError, cleanID(u.WIMInternalID), wimro.CleanMap(u.WIMInfo))
	return err
}

const updateLinkSQL = `
	UPDATE instance_wim_nets SET
		status = COALESCE($2, status),
		status_since = CASE WHEN COALESCE($2, status) IS DISTINCT FROM status THEN now() ELSE status_since END,
		error_msg = CASE WHEN $4 THEN NULL ELSE COALESCE($3, error_msg) END,
		wim_internal_id = COALESCE($5, wim_internal_id),
		wim_info = CASE WHEN $6::jsonb IS NULL THEN wim_info ELSE COALESCE(wim_info, '{}'::jsonb) || $6::jsonb END,
		modified_at = now()
	WHERE uuid = $1`

// SweepExpiredClaims returns actions whose claim lease ran out (their
// process died or hung, or gave them up) to the queue, notifies their
// accounts so that their owners look at once, and says how many.
func (s *Store) SweepExpiredClaims(ctx context.Context) (int64, error) {
	var n int64
	err := s.q.QueryRow(ctx, `
		WITH expired AS (
			SELECT instance_action_id, task_index FROM vim_wim_actions
			WHERE `+inFlight+` AND claimed_by IS NOT NULL AND claim_expires_at < now()
			ORDER BY instance_action_id, task_index
			FOR UPDATE SKIP LOCKED),
		swept AS (
			UPDATE vim_wim_actions a SET claimed_by = NULL, claim_expires_at = NULL, modified_at = now()
			FROM expired e WHERE a.instance_action_id = e.instance_action_id AND a.task_index = e.task_index
			  AND a.claim_expires_at < now()
			RETURNING a.wim_account_id),
		accounts AS (SELECT DISTINCT wim_account_id AS id FROM swept WHERE wim_account_id IS NOT NULL),
		notified AS (SELECT pg_notify($1, id::text) FROM accounts)
		-- A plain SELECT in a WITH runs only if referenced: "0 *" makes
		-- the notifications happen without changing the count.
		SELECT (SELECT count(*) FROM swept) + 0 * (SELECT count(*) FROM notified)`, ChannelAccounts).Scan(&n)
	if err != nil {
		return 0, mapError(fmt.Errorf("persistence: sweep expired claims: %w", err))
	}
	return n, nil
}

// ReleaseClaims returns every action claimed by owner (under any of its
// ClaimName names) to the queue: a clean stop, once nothing runs.
func (s *Store) ReleaseClaims(ctx context.Context, owner string) (int64, error) {
	return s.exec(ctx, "vim_wim_actions", `UPDATE vim_wim_actions SET claimed_by = NULL, claim_expires_at = NULL, modified_at = now()
		WHERE `+inFlight+` AND `+claimedByOwner, owner)
}

// ReleaseClaimsOf returns exactly the named claims to the queue (an
// outcome that could not be written), and says how many it found.
func (s *Store) ReleaseClaimsOf(ctx context.Context, keys []ClaimKey) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	ids, idx, by := claimArrays(keys)
	return s.exec(ctx, "vim_wim_actions", `WITH `+lockClaimsSQL+`
		UPDATE vim_wim_actions AS a SET claimed_by = NULL, claim_expires_at = NULL, modified_at = now()
		FROM locked l WHERE a.instance_action_id = l.instance_action_id AND a.task_index = l.task_index`, ids, idx, by)
}

// maxMsg is the longest error text stored; longer ones keep their head and
// tail (OSM's bug 1150: long controller errors broke the update).
const maxMsg = 1024

// cleanMsg makes an error text storable: valid UTF-8, no NUL, at most
// maxMsg bytes.
func cleanMsg(m *string) *string {
	if m == nil {
		return nil
	}
	out := wimro.CleanText(*m, maxMsg)
	return &out
}

// cleanID makes a controller's service id storable (no length limit: an
// id cut short would no longer name the service).
func cleanID(m *string) *string {
	if m == nil {
		return nil
	}
	out := wimro.CleanText(*m, 0)
	return &out
}

// ExtendClaims renews the lease of exactly the named claims: those the
// live process is running. A claim nobody runs any more is
// never renewed, so it expires and is swept even while its process lives.
// It says how many of the claims it found.
func (s *Store) ExtendClaims(ctx context.Context, keys []ClaimKey, lease time.Duration) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	ids, idx, by := claimArrays(keys)
	return s.exec(ctx, "vim_wim_actions", `WITH `+lockClaimsSQL+`
		UPDATE vim_wim_actions AS a SET claim_expires_at = now() + $4::interval, modified_at = now()
		FROM locked l WHERE a.instance_action_id = l.instance_action_id AND a.task_index = l.task_index`, ids, idx, by, lease)
}

// lockClaimsSQL locks the actions named by the arrays $1 (instance action),
// $2 (task index) and $3 (claim name) that are still held under that name,
// in primary-key order: every statement that writes several actions locks
// them in that order (FinishActions sorts its batch), so two of them never
// deadlock.
const lockClaimsSQL = `locked AS (
		SELECT a.instance_action_id, a.task_index
		FROM vim_wim_actions a
		JOIN unnest($1::uuid[], $2::int[], $3::text[]) AS k(id, idx, by)
		  ON a.instance_action_id = k.id AND a.task_index = k.idx AND a.claimed_by = k.by
		ORDER BY a.instance_action_id, a.task_index
		FOR UPDATE OF a)`

// ClaimsHeldBy lists the claims of owner (under any of its ClaimName
// names) whose lease has not run out: what an invariant check compares
// with the claims the process knows it runs.
func (s *Store) ClaimsHeldBy(ctx context.Context, owner string) ([]ClaimKey, error) {
	rows, err := s.q.Query(ctx, `SELECT instance_action_id::text, task_index, claimed_by FROM vim_wim_actions
		WHERE `+inFlight+` AND `+claimedByOwner+` AND claim_expires_at > now()`, owner)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: claims of %s: %w", owner, err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ClaimKey, error) {
		var k ClaimKey
		return k, r.Scan(&k.InstanceActionID, &k.TaskIndex, &k.ClaimedBy)
	})
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: claims of %s: %w", owner, err))
	}
	return keys, nil
}
