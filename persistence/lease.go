package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is an account lease held by owner under epoch. Epochs only grow:
// a lease taken again (after a release, an expiry, or by another process)
// gets a new one, so a write checked against an old epoch is refused.
type Lease struct {
	AccountID string
	Owner     string
	Epoch     int64
}

// AcquireLeases takes, for owner, the leases of those accounts that are
// free: never taken, released, expired, or already owner's (then renewed
// under the same epoch). It returns the leases it holds afterwards; an
// account missing from the answer is held by another live process (or no
// longer exists). One statement whatever the number of accounts.
func (s *Store) AcquireLeases(ctx context.Context, owner string, accountIDs []string, ttl time.Duration) ([]Lease, error) {
	if len(accountIDs) == 0 {
		return nil, nil
	}
	rows, err := s.q.Query(ctx, `
		INSERT INTO wim_account_leases AS l (account_id, owner, epoch, expires_at)
		SELECT a.uuid, $1, 1, now() + $3::interval
		FROM wim_accounts a WHERE a.uuid = ANY($2::uuid[])
		ON CONFLICT (account_id) DO UPDATE
		SET owner = excluded.owner,
		    epoch = CASE WHEN l.owner = excluded.owner AND l.expires_at > now() THEN l.epoch ELSE l.epoch + 1 END,
		    expires_at = excluded.expires_at
		WHERE l.owner IS NULL OR l.owner = excluded.owner OR l.expires_at <= now()
		RETURNING account_id::text, owner, epoch`, owner, accountIDs, ttl)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: acquire leases: %w", err))
	}
	return collectLeases(rows, "acquire")
}

// RenewLeases extends the leases still held exactly as given (same owner
// and epoch) and returns those; a lease missing from the answer was lost
// (it expired and another process took it, or its account is gone) and its
// holder must stop driving the account at once.
func (s *Store) RenewLeases(ctx context.Context, leases []Lease, ttl time.Duration) ([]Lease, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	ids, owners, epochs := leaseArrays(leases)
	rows, err := s.q.Query(ctx, `
		UPDATE wim_account_leases AS l SET expires_at = now() + $4::interval
		FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS k(id, owner, epoch)
		WHERE l.account_id = k.id AND l.owner = k.owner AND l.epoch = k.epoch AND l.expires_at > now()
		RETURNING l.account_id::text, l.owner, l.epoch`, ids, owners, epochs, ttl)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: renew leases: %w", err))
	}
	return collectLeases(rows, "renew")
}

// ReleaseLeases gives the leases back (the process no longer drives those
// accounts) and notifies the accounts, so a process waiting for one takes
// it at once. A lease no longer held as given is left alone.
func (s *Store) ReleaseLeases(ctx context.Context, leases []Lease) error {
	if len(leases) == 0 {
		return nil
	}
	ids, owners, epochs := leaseArrays(leases)
	_, err := s.exec(ctx, "wim_account_leases", `
		WITH released AS (
			UPDATE wim_account_leases AS l SET owner = NULL, expires_at = now()
			FROM unnest($1::uuid[], $2::text[], $3::bigint[]) AS k(id, owner, epoch)
			WHERE l.account_id = k.id AND l.owner = k.owner AND l.epoch = k.epoch
			RETURNING l.account_id)
		SELECT pg_notify($4, account_id::text) FROM released`, ids, owners, epochs, ChannelAccounts)
	return err
}

// LeaseHolders returns, for every account whose lease is held and not
// expired, its holder.
func (s *Store) LeaseHolders(ctx context.Context) (map[string]string, error) {
	rows, err := s.q.Query(ctx, `SELECT account_id::text, owner, epoch FROM wim_account_leases WHERE owner IS NOT NULL AND expires_at > now()`)
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
// leader retries a move waiting for a dead holder's lease when it expires.
func (s *Store) HeldLeases(ctx context.Context) (map[string]HeldLease, error) {
	rows, err := s.q.Query(ctx, `SELECT account_id::text, owner, (extract(epoch FROM expires_at - now()) * 1000)::bigint
		FROM wim_account_leases WHERE owner IS NOT NULL AND expires_at > now()`)
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
		return l, r.Scan(&l.AccountID, &l.Owner, &l.Epoch)
	})
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: %s leases: %w", what, err))
	}
	return leases, nil
}
