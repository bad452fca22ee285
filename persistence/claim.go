package persistence

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

// ClaimRequest is one claim across every account whose lease Owner holds.
type ClaimRequest struct {
	Owner string
	// Claim is written to claimed_by (ClaimName, unique per claim) and
	// fences every later write of these actions.
	Claim string
	TTL   time.Duration
	// Parallel is the number of actions claimed for an account not in
	// Free; Free holds the accounts with fewer free slots (actions in
	// flight, or 0: claim nothing for it, e.g. it is stopping).
	Parallel int
	Free     map[string]int
	// BusyLinks are links the caller is already working on.
	BusyLinks []string
	// Limit caps the actions claimed in all.
	Limit int
}

// Claimed is one claimed action and what running it needs, read in the
// same round trip as the claim.
type Claimed struct {
	Action wimro.Action
	// Epoch is the account lease's epoch at the claim: the caller drops
	// (and releases) an action claimed under a lease it does not know.
	Epoch int64
	// Link is the action's WAN link, nil when it was deleted.
	Link *wimro.WANLink
	// Nets are the local networks of the link's group, ordered by
	// datacenter; Datacenters holds their datacenters by uuid.
	Nets        []wimro.InstanceNet
	Datacenters map[string]wimro.Datacenter
}

// ClaimResult is what ClaimDue took, and when the next action it could
// take becomes due.
type ClaimResult struct {
	Claimed []Claimed
	// NextDue is the run_after of the earliest queued action of an owned
	// account that is the head of its link, unclaimed and not yet due (nil:
	// none). Actions waiting behind another of their link are not counted:
	// they become due when that one finishes, which wakes the caller.
	NextDue *time.Time
}

// linkHead holds for an action a that is the head of its link's queue:
// no earlier action of the link is unfinished and none of the link is
// claimed. Every claim and next-due query runs a link's actions strictly
// in order through it. One probe of the link's few actions (item_type_id):
// as two NOT EXISTS, the "none claimed" half was planned over every live
// claim of the database, materialised and compared with each candidate.
const linkHead = `NOT EXISTS (
		SELECT 1 FROM vim_wim_actions b
		WHERE b.item = a.item AND b.item_id = a.item_id
		  AND (b.claimed_by IS NOT NULL OR (b.seq < a.seq AND b.status IN ('SCHEDULED', 'BUILD'))))`

// claimSQL claims, in one statement, the due actions of every account
// whose lease $1 holds: per account at most its free slots (the arrays
// $2/$3, else $4), the head of each link only (no earlier unfinished
// action of the link, none of the link claimed, the link not in $5), at
// most $6 in all, taken in turns: every account's oldest candidate, then
// every account's second, and so on, oldest first within a turn. Taken
// oldest first across accounts, the accounts whose work is youngest came
// last in every claim while more slots were free than one claim takes:
// 100 accounts x 20 links under 100 ms of controller latency (three rounds
// of eight per account), turns took the wall time from 0.94 to 0.88 s
// (medians of 5). Each account's candidates come from a LATERAL
// scan of the claim index in (run_after, seq) order that stops at its free
// slots, so a claim reads about as many rows as it takes, however long the
// queue (a window function would rank every due row first, and PostgreSQL
// refuses FOR UPDATE beside one anyway). The actions chosen are then
// locked one by one by primary key (a LATERAL locking read, which the
// planner cannot turn around), re-checking the row's own columns, which is
// what a concurrent change can make false (SKIP LOCKED, then the re-check
// of the newest row version); one skipped is not replaced, and the claim
// takes fewer. Choosing first is what keeps the plan safe: as a join of
// the candidates with the actions, planned while the tables had no
// statistics yet (a fresh database, 10,000 leases just taken), PostgreSQL
// read the due actions first and ran the whole candidates part again for
// each of them: 23-27 s for one claim of 200 (TestClaimPlanWithoutStatistics).
var claimSQL = `
	WITH leases AS (
		SELECT l.account_id, l.epoch, COALESCE(f.free, $4::int) AS free
		FROM wim_account_leases l
		LEFT JOIN unnest($2::uuid[], $3::int[]) AS f(id, free) ON f.id = l.account_id
		WHERE l.owner = $1 AND ` + leaseLive + `),
	candidates AS (
		SELECT c.instance_action_id, c.task_index, c.run_after, c.seq, le.epoch,
		       row_number() OVER (PARTITION BY le.account_id ORDER BY c.run_after, c.seq) AS turn
		FROM leases le
		CROSS JOIN LATERAL (
			SELECT a.instance_action_id, a.task_index, a.run_after, a.seq
			FROM vim_wim_actions a
			WHERE a.wim_account_id = le.account_id
			  AND a.status IN ('SCHEDULED', 'BUILD') AND a.claimed_by IS NULL AND a.run_after <= now()
			  AND a.item_id <> ALL($5::uuid[])
			  AND ` + linkHead + `
			ORDER BY a.run_after, a.seq
			LIMIT le.free) c
		WHERE le.free > 0),
	chosen AS MATERIALIZED (
		SELECT instance_action_id, task_index, epoch FROM candidates
		ORDER BY turn, run_after, seq
		LIMIT $6),
	picked AS (
		SELECT l.instance_action_id, l.task_index, c.epoch
		FROM chosen c
		CROSS JOIN LATERAL (
			SELECT a.instance_action_id, a.task_index FROM vim_wim_actions a
			WHERE a.instance_action_id = c.instance_action_id AND a.task_index = c.task_index
			  AND a.status IN ('SCHEDULED', 'BUILD') AND a.claimed_by IS NULL
			FOR UPDATE SKIP LOCKED) l),
	claimed AS (
		UPDATE vim_wim_actions AS a
		SET claimed_by = $7, claim_expires_at = now() + $8::interval, unsettled_runs = a.unsettled_runs + 1, modified_at = now()
		FROM picked p
		WHERE a.instance_action_id = p.instance_action_id AND a.task_index = p.task_index
		RETURNING p.epoch AS lease_epoch, ` + actionCols + `),
	stash AS (
		SELECT ` + stash(claimedLinksSetting, "$7", "item_id::text") + ` FROM claimed)
	SELECT c.* FROM claimed c, stash`

// claimedLinksSetting is where the claim statement leaves, for the reads
// that follow it in the same round trip and transaction, its name and the
// uuids of the links it claimed ("<claim>\n<uuid>,<uuid>..."; set local:
// gone at commit). The reads used to find the claimed actions by
// claimed_by through an index of the claims; since schema version 8 no
// index covers claimed_by, so that a claim is a HOT update.
const claimedLinksSetting = "wimro.claimed_links"

// claimedDatacentersSetting is where the networks statement leaves the
// datacenters of the claimed links' networks, in the same form.
const claimedDatacentersSetting = "wimro.claimed_datacenters"

// stash is the expression that leaves in setting, for the statements after
// it in the transaction, the claim name claim and the uuids ids aggregates
// ("<claim>\n<uuid>,<uuid>..."; set local: gone at commit).
func stash(setting, claim, ids string) string {
	return `set_config('` + setting + `', ` + claim + ` || E'\n' || COALESCE(string_agg(` + ids + `, ','), ''), true)`
}

// stashed is a query of the uuids left in setting by the claim named $1:
// none when it holds another claim's (a claim that takes nothing may not
// set it, so an earlier claim's value could still be there).
func stashed(setting string) string {
	return `SELECT unnest(string_to_array(substr(v, length($1) + 2), ','))::uuid
		FROM (SELECT current_setting('` + setting + `', true) AS v) s
		WHERE starts_with(v, $1 || E'\n')`
}

// The statements after the claim, in the same round trip: what the
// claimed actions need. claimedNow is the links the claim named $1 left in
// claimedLinksSetting.
var (
	claimedNow      = `WITH claimedNow(item_id) AS (` + stashed(claimedLinksSetting) + `) `
	claimedLinksSQL = claimedNow + `SELECT ` + linkCols + ` FROM instance_wim_nets l
		WHERE l.uuid IN (SELECT item_id FROM claimedNow)`
	// claimedNetsSQL leaves the datacenters of the networks it read in
	// claimedDatacentersSetting, so that the datacenters statement reads
	// them by primary key instead of joining links and networks again.
	claimedNetsSQL = claimedNow + `, nets AS (
		SELECT ` + netCols + ` FROM instance_nets n
		JOIN instance_wim_nets l ON n.instance_scenario_id = l.instance_scenario_id AND n.sce_net_id = l.sce_net_id
		WHERE l.uuid IN (SELECT item_id FROM claimedNow)),
	stash AS (
		SELECT ` + stash(claimedDatacentersSetting, "$1", "DISTINCT datacenter_id::text") + ` FROM nets)
	SELECT n.* FROM nets n, stash
		ORDER BY n.datacenter_id, n.created_at, n.uuid`
	claimedDatacentersSQL = `SELECT ` + datacenterCols + ` FROM datacenters d
		WHERE d.uuid IN (` + stashed(claimedDatacentersSetting) + `)`
	// nextDueSQL runs after the claim, so the links just claimed are
	// excluded by their claimed actions. Per account it walks the claim
	// index in run_after order and stops at the first action that
	// qualifies: a min() over the join read every queued action of the
	// account (a BUILD link waiting for its refresh is one), so each claim
	// cost more as links were made.
	nextDueSQL = `SELECT min(n.run_after) FROM wim_account_leases l
		CROSS JOIN LATERAL (
			SELECT a.run_after FROM vim_wim_actions a
			WHERE a.wim_account_id = l.account_id
			  AND a.status IN ('SCHEDULED', 'BUILD') AND a.claimed_by IS NULL AND a.run_after > now()
			  AND a.item_id <> ALL($2::uuid[])
			  AND ` + linkHead + `
			ORDER BY a.run_after, a.seq
			LIMIT 1) n
		WHERE l.owner = $1 AND ` + leaseLive
)

type claimedRow struct {
	Epoch int64 `db:"lease_epoch"`
	wimro.Action
}

// ClaimDue claims due actions of every account whose lease r.Owner holds
// (see claimSQL for the rules) and reads, in the same round trip and
// transaction, the WAN link, networks and datacenters of each, and when
// the next action becomes due. SKIP LOCKED lets claimers of several
// processes race without waiting on each other; their accounts differ
// anyway (the leases). The claim records a lease; the attempt is counted
// by the outcome, when its run reached the controller (Outcome.Reached).
func (s *Store) ClaimDue(ctx context.Context, r ClaimRequest) (ClaimResult, error) {
	var res ClaimResult
	ids := make([]string, 0, len(r.Free))
	free := make([]int32, 0, len(r.Free))
	for id, n := range r.Free {
		ids = append(ids, id)
		free = append(free, int32(max(n, 0)))
	}
	busy := nonNil(r.BusyLinks)
	b := &pgx.Batch{}
	b.Queue(claimSQL, r.Owner, ids, free, r.Parallel, busy, max(r.Limit, 0), r.Claim, r.TTL)
	b.Queue(claimedLinksSQL, r.Claim)
	b.Queue(claimedNetsSQL, r.Claim)
	b.Queue(claimedDatacentersSQL, r.Claim)
	b.Queue(nextDueSQL, r.Owner, busy)
	var (
		links = map[string]*wimro.WANLink{}
		nets  []wimro.InstanceNet
		dcs   = map[string]wimro.Datacenter{}
	)
	err := s.runBatch(ctx, b, func(i int, rows pgx.Rows) error {
		switch i {
		case 0:
			list, err := collectAll[claimedRow](rows, "vim_wim_actions")
			for _, c := range list {
				res.Claimed = append(res.Claimed, Claimed{Action: c.Action, Epoch: c.Epoch})
			}
			return err
		case 1:
			list, err := collectAll[wimro.WANLink](rows, "instance_wim_nets")
			for j := range list {
				links[list[j].UUID] = &list[j]
			}
			return err
		case 2:
			var err error
			nets, err = collectAll[wimro.InstanceNet](rows, "instance_nets")
			return err
		case 3:
			list, err := collectAll[wimro.Datacenter](rows, "datacenters")
			for _, d := range list {
				dcs[d.UUID] = d
			}
			return err
		default:
			for rows.Next() {
				if err := rows.Scan(&res.NextDue); err != nil {
					return mapError(fmt.Errorf("persistence: next due action: %w", err))
				}
			}
			return nil
		}
	})
	if err != nil {
		return ClaimResult{}, fmt.Errorf("persistence: claim due actions: %w", err)
	}
	// The networks of each link's group, in the statement's order: one
	// pass over them, not one per claimed action (200 actions of 400
	// networks were 80,000 comparisons per claim).
	type group struct{ instance, sceNet string }
	groups := make(map[group][]wimro.InstanceNet, len(links))
	for _, n := range nets {
		if n.SceNetID != nil {
			g := group{n.InstanceID, *n.SceNetID}
			groups[g] = append(groups[g], n)
		}
	}
	for i := range res.Claimed {
		c := &res.Claimed[i]
		c.Link = links[c.Action.ItemID]
		if c.Link == nil || c.Link.InstanceID == nil || c.Link.SceNetID == nil {
			continue
		}
		c.Datacenters = map[string]wimro.Datacenter{}
		c.Nets = slices.Clone(groups[group{*c.Link.InstanceID, *c.Link.SceNetID}])
		for _, n := range c.Nets {
			if d, ok := dcs[n.DatacenterID]; ok {
				c.Datacenters[d.UUID] = d
			}
		}
	}
	return res, nil
}
