package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

// Lease is an account lease held by owner under epoch. Epochs only grow:
// a lease taken again (after a release, a dead holder, or by another
// process) gets a new one, so a write checked against an old epoch is
// refused. ProcEpoch is the epoch of the owner's process lease it hangs
// from: the account lease is held while that process lease is valid.
type Lease struct {
	AccountID string
	Owner     string
	Epoch     int64
	ProcEpoch int64
}

// ProcessLease is a process's lease: its owner name and the epoch of its
// current run. Every account lease the process holds is valid while this
// one is, so renewing it is one row however many accounts it holds. An
// epoch whose lease expired is dead for good (RenewProcessLease refuses
// it); the process starts another (StartProcessLease) and takes its
// accounts again.
type ProcessLease struct {
	Owner string
	Epoch int64
}

// ErrLeaseLost means a process lease was not renewed: it expired (and its
// accounts may be another process's now), or its owner started another
// epoch. Its holder stops driving every account at once.
var ErrLeaseLost = wimro.Errorf(wimro.ECONFLICT, "the process lease was lost")

// leaseLive is the condition that the account lease row l (the alias
// every statement gives wim_account_leases) is held: the process lease
// of its owner and epoch is valid. One primary-key probe of
// wim_process_leases.
const leaseLive = `EXISTS (SELECT 1 FROM wim_process_leases p WHERE p.owner = l.owner AND p.epoch = l.proc_epoch AND p.expires_at > now())`

// StartProcessLease starts a run of owner: a process lease under a new
// epoch, valid for ttl. The account leases of the owner's earlier epochs
// are free from now on (a restarted process drops what its previous run
// held; it takes them again under the new epoch). It also deletes the
// expired process leases nothing refers to any more (wimd names its
// owner per boot, so each start adds a row): a missing row is as dead as
// an expired one, and an owner without account lease rows has nothing an
// epoch started again at 1 could revive.
func (s *Store) StartProcessLease(ctx context.Context, owner string, ttl time.Duration) (ProcessLease, error) {
	p := ProcessLease{Owner: owner}
	err := s.q.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM wim_process_leases p
			WHERE p.expires_at < now() AND p.owner <> $1
			  AND NOT EXISTS (SELECT 1 FROM wim_account_leases l WHERE l.owner = p.owner))
		INSERT INTO wim_process_leases AS p (owner, epoch, expires_at) VALUES ($1, 1, now() + $2::interval)
		ON CONFLICT (owner) DO UPDATE SET epoch = p.epoch + 1, expires_at = excluded.expires_at
		RETURNING epoch`, owner, ttl).Scan(&p.Epoch)
	if err != nil {
		return ProcessLease{}, mapError(fmt.Errorf("persistence: start process lease: %w", err))
	}
	return p, nil
}

// RenewProcessLease extends p by ttl from the database's now, if it is
// still valid; otherwise it returns ErrLeaseLost. One row written and
// nothing read but that row, whatever the number of accounts: the
// holder's renewal costs the same at 10 and at 100,000 accounts, and it
// waits for no take or release (a take holds the row FOR KEY SHARE,
// which an update of expires_at does not wait for).
func (s *Store) RenewProcessLease(ctx context.Context, p ProcessLease, ttl time.Duration) error {
	tag, err := s.q.Exec(ctx, `UPDATE wim_process_leases SET expires_at = now() + $3::interval
		WHERE owner = $1 AND epoch = $2 AND expires_at > now()`, p.Owner, p.Epoch, ttl)
	if err != nil {
		return mapError(fmt.Errorf("persistence: renew process lease: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("persistence: renew process lease of %s (epoch %d): %w", p.Owner, p.Epoch, ErrLeaseLost)
	}
	return nil
}

// CountLeasesOf returns how many account leases are held under p (an
// index-only read): a holder that counts another number looks at which
// (LeasesOf).
func (s *Store) CountLeasesOf(ctx context.Context, p ProcessLease) (int64, error) {
	var n int64
	err := s.q.QueryRow(ctx, `SELECT count(*) FROM wim_account_leases WHERE owner = $1 AND proc_epoch = $2`, p.Owner, p.Epoch).Scan(&n)
	if err != nil {
		return 0, mapError(fmt.Errorf("persistence: count leases of %s: %w", p.Owner, err))
	}
	return n, nil
}

// EndProcessLease ends p at once (a clean stop, after its account leases
// were released): its epoch is dead, so nothing it still held waits for it.
func (s *Store) EndProcessLease(ctx context.Context, p ProcessLease) error {
	_, err := s.exec(ctx, "wim_process_leases", `UPDATE wim_process_leases SET expires_at = '-infinity' WHERE owner = $1 AND epoch = $2`, p.Owner, p.Epoch)
	return err
}

// LeasesOf returns the account leases held under p.
func (s *Store) LeasesOf(ctx context.Context, p ProcessLease) ([]Lease, error) {
	rows, err := s.q.Query(ctx, `SELECT account_id::text, owner, epoch, proc_epoch FROM wim_account_leases WHERE owner = $1 AND proc_epoch = $2`, p.Owner, p.Epoch)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: leases of %s: %w", p.Owner, err))
	}
	return collectLeases(rows, "list")
}

// The statements of TakeLeases, in one round trip and one transaction
// (each sees what the one before it did, and what other transactions
// committed before it began).
const (
	// takeHoldSQL checks the taker's own process lease: taking is only
	// allowed under a valid one, and the row stays locked until the takes
	// commit, so no other process can mark it dead meanwhile (takeReapSQL
	// locks FOR UPDATE, which waits for FOR KEY SHARE). It does not renew
	// it, and its lock does not hold up the holder's renewal (an update
	// of expires_at takes FOR NO KEY UPDATE, which FOR KEY SHARE lets
	// through): takes and renewals run on separate connections, and a take
	// slowed by rows another process is releasing must not delay the
	// renewal.
	takeHoldSQL = `SELECT epoch FROM wim_process_leases
		WHERE owner = $1 AND epoch = $2 AND expires_at > now() FOR KEY SHARE`
	// takeReapSQL marks dead the expired process leases of the accounts'
	// holders, locking their rows in order: the holder's renewal either
	// committed first (its lease is then valid, and takeSQL takes
	// nothing of it) or waits for this transaction and finds its lease
	// dead. Without it, a renewal that began before the expiry and
	// committed after this transaction read the lease would leave two
	// processes sure they hold the account.
	takeReapSQL = `
		WITH dead AS (
			SELECT p.owner FROM wim_process_leases p
			WHERE (p.owner, p.epoch) IN (
				SELECT l.owner, l.proc_epoch FROM wim_account_leases l
				WHERE l.account_id = ANY($1::uuid[]) AND l.owner IS NOT NULL AND l.owner <> $2)
			  AND p.expires_at <= now() AND p.expires_at > '-infinity'
			ORDER BY p.owner
			FOR UPDATE)
		UPDATE wim_process_leases p SET expires_at = '-infinity' FROM dead WHERE p.owner = dead.owner`
)

// takeSQL takes, under the process lease of owner $1 and epoch $2 (NULL:
// the owner's current one, just renewed in this transaction), the
// accounts that are free: never taken, released, already the taker's
// (same epoch: kept), held under a dead process lease (expired, or an
// earlier epoch of its owner), or held by the previous schema's rules and
// expired. The account epoch grows with every new holder or process epoch.
// Rows are locked in account order, as ReleaseLeases locks them: a take
// and a release of overlapping accounts deadlocked otherwise. Only the
// accounts that look free (by the rows as committed) are tried: the
// conflict path locks the row it finds even when its WHERE then refuses
// it, so trying every account locked the rows of live holders until the
// take committed, and a holder releasing them waited (and the taker
// waited for its releases in turn). The WHERE still decides, on the row
// as it is once locked.
const takeSQL = `
		WITH me AS (
			SELECT owner, epoch FROM wim_process_leases
			WHERE owner = $1 AND epoch = COALESCE($2::bigint, epoch) AND expires_at > now())
		INSERT INTO wim_account_leases AS l (account_id, owner, epoch, proc_epoch, expires_at)
		SELECT a.uuid, me.owner, 1, me.epoch, 'infinity'
		FROM wim_accounts a CROSS JOIN me
		WHERE a.uuid = ANY($3::uuid[])
		  AND NOT EXISTS (SELECT 1 FROM wim_account_leases l
			WHERE l.account_id = a.uuid AND l.owner IS NOT NULL AND l.owner <> $1
			  AND ((l.proc_epoch IS NULL AND l.expires_at > now()) OR (l.proc_epoch IS NOT NULL AND ` + leaseLive + `)))
		ORDER BY a.uuid
		ON CONFLICT (account_id) DO UPDATE
		SET owner = excluded.owner, proc_epoch = excluded.proc_epoch, expires_at = excluded.expires_at,
		    epoch = CASE WHEN l.owner = excluded.owner AND l.proc_epoch = excluded.proc_epoch THEN l.epoch ELSE l.epoch + 1 END
		WHERE l.owner IS NULL OR l.owner = excluded.owner
		   OR (l.proc_epoch IS NULL AND l.expires_at <= now())
		   OR (l.proc_epoch IS NOT NULL AND NOT ` + leaseLive + `)
		RETURNING account_id::text, owner, epoch, proc_epoch`

// TakeLeases takes, under p, the leases of those accounts that are free
// (see takeSQL); it returns the leases taken (an account missing from the
// answer is held by a live process, or no longer exists), or ErrLeaseLost
// when p is no longer valid (then nothing is taken). It does not renew p
// (RenewProcessLease does). One round trip, one row written per account:
// callers with many accounts take them in chunks, each its own
// transaction.
func (s *Store) TakeLeases(ctx context.Context, p ProcessLease, accountIDs []string) ([]Lease, error) {
	b := &pgx.Batch{}
	b.Queue(takeHoldSQL, p.Owner, p.Epoch)
	return s.take(ctx, b, p.Owner, &p.Epoch, accountIDs)
}

// take runs batch b, whose one statement checks (and locks) or starts
// owner's process lease (epoch, or its current one when nil), then reaps the
// dead holders of accountIDs and takes what is free.
func (s *Store) take(ctx context.Context, b *pgx.Batch, owner string, epoch *int64, accountIDs []string) ([]Lease, error) {
	b.Queue(takeReapSQL, accountIDs, owner)
	b.Queue(takeSQL, owner, epoch, accountIDs)
	var (
		renewed bool
		leases  []Lease
	)
	err := s.runBatch(ctx, b, func(i int, rows pgx.Rows) error {
		switch i {
		case 0:
			renewed = rows.Next()
			return nil
		case 2:
			var err error
			leases, err = collectLeases(rows, "take")
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("persistence: take leases: %w", err)
	}
	if !renewed {
		return nil, fmt.Errorf("persistence: take leases under %s: %w", owner, ErrLeaseLost)
	}
	return leases, nil
}

// AcquireLeases takes, for owner, the leases of those accounts that are
// free, under owner's process lease: its current epoch while valid (then
// renewed for ttl), else a new one. It returns the leases it holds
// afterwards; an account missing from the answer is held by another live
// process (or no longer exists). For callers that hold leases without a
// keeper (tests, tools); the supervisor starts its process lease once
// and takes in chunks (StartProcessLease, TakeLeases).
func (s *Store) AcquireLeases(ctx context.Context, owner string, accountIDs []string, ttl time.Duration) ([]Lease, error) {
	if len(accountIDs) == 0 {
		return nil, nil
	}
	b := &pgx.Batch{}
	b.Queue(`
		INSERT INTO wim_process_leases AS p (owner, epoch, expires_at) VALUES ($1, 1, now() + $2::interval)
		ON CONFLICT (owner) DO UPDATE
		SET epoch = CASE WHEN p.expires_at > now() THEN p.epoch ELSE p.epoch + 1 END, expires_at = excluded.expires_at
		RETURNING epoch`, owner, ttl)
	return s.take(ctx, b, owner, nil, accountIDs)
}

// ReleaseLeases gives the leases back (the process no longer drives those
// accounts) and, when it freed any, sends NotifyReleased once, so a
// process waiting for one takes it at once. A lease no longer held as
// given is left alone.
func (s *Store) ReleaseLeases(ctx context.Context, leases []Lease) error {
	if len(leases) == 0 {
		return nil
	}
	ids, owners, epochs := leaseArrays(leases)
	_, err := s.exec(ctx, "wim_account_leases", `
		WITH locked AS (
			SELECT l.account_id FROM wim_account_leases l
			JOIN unnest($1::uuid[], $2::text[], $3::bigint[]) AS k(id, owner, epoch)
			  ON l.account_id = k.id AND l.owner = k.owner AND l.epoch = k.epoch
			ORDER BY l.account_id
			FOR UPDATE OF l),
		released AS (
			UPDATE wim_account_leases AS l SET owner = NULL, proc_epoch = NULL, expires_at = now()
			FROM locked WHERE l.account_id = locked.account_id
			RETURNING l.account_id)
		SELECT pg_notify($4, $5) FROM (SELECT 1 FROM released LIMIT 1) AS freed`, ids, owners, epochs, ChannelAccounts, NotifyReleased)
	return err
}

// LeaseHolders returns, for every account whose lease is held and not
// expired, its holder.
func (s *Store) LeaseHolders(ctx context.Context) (map[string]string, error) {
	rows, err := s.q.Query(ctx, `SELECT account_id::text, owner, epoch, proc_epoch FROM wim_account_leases l WHERE l.owner IS NOT NULL AND `+leaseLive)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: lease holders: %w", err))
	}
	leases, err := collectLeases(rows, "list")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(leases))
	for _, l := range leases {
		out[l.AccountID] = l.Owner
	}
	return out, nil
}

// HeldLease is a lease held and not expired, and how long it has left by
// the database's clock (a caller's clock may differ from it).
type HeldLease struct {
	Owner string
	Left  time.Duration
}

// HeldLeases returns, for every account whose lease is held and not
// expired, its holder and the time left before it expires: the cluster's
// leader retries a move waiting for a dead holder's lease when it expires
// (an account lease lasts as long as its holder's process lease).
func (s *Store) HeldLeases(ctx context.Context) (map[string]HeldLease, error) {
	rows, err := s.q.Query(ctx, `SELECT l.account_id::text, l.owner, (extract(epoch FROM p.expires_at - now()) * 1000)::bigint
		FROM wim_account_leases l JOIN wim_process_leases p ON p.owner = l.owner AND p.epoch = l.proc_epoch
		WHERE p.expires_at > now()`)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: held leases: %w", err))
	}
	out := map[string]HeldLease{}
	var id, owner string
	var ms int64
	_, err = pgx.ForEachRow(rows, []any{&id, &owner, &ms}, func() error {
		out[id] = HeldLease{Owner: owner, Left: time.Duration(ms) * time.Millisecond}
		return nil
	})
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: held leases: %w", err))
	}
	return out, nil
}

func leaseArrays(leases []Lease) ([]string, []string, []int64) {
	ids := make([]string, len(leases))
	owners := make([]string, len(leases))
	epochs := make([]int64, len(leases))
	for i, l := range leases {
		ids[i], owners[i], epochs[i] = l.AccountID, l.Owner, l.Epoch
	}
	return ids, owners, epochs
}

func collectLeases(rows pgx.Rows, what string) ([]Lease, error) {
	leases, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		var l Lease
		var proc *int64
		err := r.Scan(&l.AccountID, &l.Owner, &l.Epoch, &proc)
		if proc != nil {
			l.ProcEpoch = *proc
		}
		return l, err
	})
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: %s leases: %w", what, err))
	}
	return leases, nil
}
