package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/wimro/wimro/persistence"
)

// txnMaxOps is Consul's limit of operations in one transaction.
const txnMaxOps = 64

// reassign makes the assignment keys follow the owners computed from
// view, revocations first; it returns how many moves wait for their
// previous owner to let go, and how long until the first lease they wait
// for expires (0: none known).
func (c *Consul) reassign(ctx context.Context, sessionID string, view *clusterView) (int, time.Duration, error) {
	if !view.haveMembers || !view.haveAccts || len(view.members) == 0 {
		return 0, 0, nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	list, _, err := c.api.KV().Keys(c.keys.assignments(), "", (&api.QueryOptions{RequireConsistent: true}).WithContext(cctx))
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("list assignments: %w", err)
	}
	current := c.keys.parseAssignments(list)
	wanted := owners(view.memberIDs(), view.accounts)
	var held map[string]persistence.HeldLease
	var holdersErr error
	if needsHolders(wanted, current) {
		held, holdersErr = c.cfg.DB.HeldLeases(ctx)
	}
	holders := make(map[string]string, len(held))
	for a, l := range held {
		holders[a] = l.Owner
	}
	// Without the leases every move waits, but what needs none (the
	// revocations, the markers that confirm members) is written anyway.
	p := makePlan(wanted, current, holders, holdersErr == nil, view.departed)
	if !p.empty() {
		if err := c.write(ctx, sessionID, p); err != nil {
			return 0, 0, err
		}
	}
	if holdersErr != nil {
		return 0, 0, fmt.Errorf("read account leases: %w", holdersErr)
	}
	var expiry time.Duration
	for _, a := range p.waiting {
		if l := held[a].Left; l > 0 && (expiry == 0 || l < expiry) {
			expiry = l
		}
	}
	if p.empty() {
		return p.pending, expiry, nil
	}
	c.logger.Info("accounts reassigned", slog.Int("members", len(view.members)), slog.Int("accounts", len(view.accounts)),
		slog.Int("assigned", len(p.assign)), slog.Int("revoked", p.revoked), slog.Int("moved", p.moved),
		slog.Int("pending", p.pending), slog.Int("members_gone", len(p.drop)))
	return p.pending, expiry, nil
}

// needsHolders reports whether some wanted assignment is not written yet
// (only then do the leases matter).
func needsHolders(wanted map[string][]string, current assignments) bool {
	for m, accts := range wanted {
		cur := current[m]
		for _, a := range accts {
			if cur == nil || !cur.accounts[a] {
				return true
			}
		}
	}
	return false
}

// write applies p in transactions of at most 64 operations, each guarded
// by the leader key being held by this term's session, so a deposed
// leader writes nothing. Every revocation is written before any
// assignment.
func (c *Consul) write(ctx context.Context, sessionID string, p plan) error {
	var revokes, assigns []*api.KVTxnOp
	for _, m := range p.drop {
		revokes = append(revokes, &api.KVTxnOp{Verb: api.KVDeleteTree, Key: c.keys.folder(m)})
	}
	for _, a := range p.revoke {
		revokes = append(revokes, &api.KVTxnOp{Verb: api.KVDelete, Key: c.keys.assignment(a.member, a.account)})
	}
	marker := []byte(c.cfg.InstanceID)
	for _, m := range p.markers {
		assigns = append(assigns, &api.KVTxnOp{Verb: api.KVSet, Key: c.keys.folder(m), Value: marker})
	}
	for _, a := range p.assign {
		assigns = append(assigns, &api.KVTxnOp{Verb: api.KVSet, Key: c.keys.assignment(a.member, a.account)})
	}
	guard := &api.KVTxnOp{Verb: api.KVCheckSession, Key: c.keys.leader(), Session: sessionID}
	for _, ops := range [][]*api.KVTxnOp{revokes, assigns} {
		for len(ops) > 0 {
			n := min(len(ops), txnMaxOps-1)
			if _, err := c.txn(ctx, append(api.KVTxnOps{guard}, ops[:n]...)); err != nil {
				return err
			}
			ops = ops[n:]
		}
	}
	return nil
}
