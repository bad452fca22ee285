package persistence

import (
	"context"
)

// ChannelAccounts is the NOTIFY channel that tells workers an account, its
// WIM or its port mappings changed. The payload is an account uuid, or
// NotifyAll. Sent inside the writing transaction, it is delivered only if
// the change commits, to every wimd process sharing the database.
const ChannelAccounts = "wimro_accounts"

// NotifyAll is the payload that means "reload every account".
const NotifyAll = "*"

// NotifyReleased is the payload that means "account leases were
// released": a process waiting for one takes what is free now. One per
// release statement, whatever the number of leases it frees: a rebalance
// releases tens of thousands, and a notification each had every
// listening process read them all (the subscriptions overflowed, each
// overflow a reload of every account).
const NotifyReleased = "released"

// NotifyAccounts queues a notification per account id.
func (s *Store) NotifyAccounts(ctx context.Context, ids ...string) error {
	for _, id := range dedupe(ids) {
		if _, err := s.exec(ctx, "notify", `SELECT pg_notify($1, $2)`, ChannelAccounts, id); err != nil {
			return err
		}
	}
	return nil
}

// NotifyAllAccounts asks every process to rebuild the connectors of its accounts.
func (s *Store) NotifyAllAccounts(ctx context.Context) error {
	return s.NotifyAccounts(ctx, NotifyAll)
}

// NotifyWIMAccounts notifies every account of a WIM.
func (s *Store) NotifyWIMAccounts(ctx context.Context, wimID string) error {
	accts, err := s.ListAccountsOfWIM(ctx, wimID)
	if err != nil {
		return err
	}
	ids := make([]string, len(accts))
	for i, a := range accts {
		ids[i] = a.UUID
	}
	return s.NotifyAccounts(ctx, ids...)
}

// AccountsOnlyServing returns the accounts attached to tenantID and to no
// other tenant.
func (s *Store) AccountsOnlyServing(ctx context.Context, tenantID string) ([]string, error) {
	return getIDs(ctx, s, "wim_accounts", `
		SELECT a.uuid AS id FROM wim_accounts a
		WHERE EXISTS (SELECT 1 FROM wim_nfvo_tenants wt WHERE wt.wim_account_id = a.uuid AND wt.nfvo_tenant_id = $1)
		  AND NOT EXISTS (SELECT 1 FROM wim_nfvo_tenants wt WHERE wt.wim_account_id = a.uuid AND wt.nfvo_tenant_id <> $1)
		ORDER BY a.uuid`, tenantID)
}
