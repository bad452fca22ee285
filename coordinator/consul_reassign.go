package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/wimro/wimro/persistence"
)

// txnMaxOps is Consul's limit of operations in one transaction.
const txnMaxOps = 64

// reassign makes the assignment keys follow the owners computed from
// view, revocations first; it returns how many moves wait for their
// previous owner to let go, and how long until the first lease they wait
// for expires (0: none known). It writes the sharded layout while every
// live member reads it, the per-account layout otherwise (doc.go,
// "Consul keys").
func (c *Consul) reassign(ctx context.Context, sessionID string, view *clusterView) (int, time.Duration, error) {
	if !view.haveMembers || !view.haveAccts || len(view.members) == 0 {
		return 0, 0, nil
	}
	start := time.Now()
	began := start
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	pairs, _, err := c.api.KV().List(c.keys.assignments(), (&api.QueryOptions{RequireConsistent: true}).WithContext(cctx))
	cancel()
	if err != nil {
		return 0, 0, fmt.Errorf("list assignments: %w", err)
	}
	st := c.keys.parseStored(pairs)
	read := time.Since(began)
	sharded := c.layout == layoutShards && len(view.perAccount) == 0
	current, leftover := st.perAccount, len(st.shards) > 0
	if sharded {
		current, leftover = st.forShards(), len(st.perAccount) > 0
	}
	wanted := owners(view.memberIDs(), view.accounts)
	var held map[string]persistence.HeldLease
	var holdersErr error
	began = time.Now()
	if needsHolders(wanted, current) {
		held, holdersErr = c.cfg.DB.HeldLeases(ctx)
	}
	leases := time.Since(began)
	holders := make(map[string]string, len(held))
	for a, l := range held {
		holders[a] = l.Owner
	}
	// Without the leases every move waits, but what needs none (the
	// revocations, the markers that confirm members) is written anyway.
	p := makePlan(wanted, current, holders, holdersErr == nil, view.departed)
	var w written
	began = time.Now()
	if !p.empty() || leftover {
		write := c.writePerAccount
		if sharded {
			write = c.writeShards
		}
		if w, err = write(ctx, sessionID, p, current, st); err != nil {
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
		slog.Int("pending", p.pending), slog.Int("members_gone", len(p.drop)), slog.Bool("sharded", sharded),
		slog.Int("keys_written", w.keys), slog.Int("bytes_written", w.bytes), slog.Int("transactions", w.txns),
		slog.Duration("read", read), slog.Duration("leases_read", leases), slog.Duration("write", time.Since(began)), slog.Duration("took", time.Since(start)))
	return p.pending, expiry, nil
}

// forShards is the current assignment as a leader of the sharded layout
// plans from: each member's accounts as it applies them (stored.applied,
// so that a member still reading its per-account folder moves to its
// shards with what it runs), and the sharded layout's marker.
func (s stored) forShards() assignments {
	applied := s.applied()
	out := assignments{}
	for _, m := range s.members() {
		a := &memberAssignment{accounts: map[string]bool{}}
		if cur := applied[m]; cur != nil {
			a.accounts = cur.accounts
		}
		a.marker = s.shards[m] != nil && s.shards[m].marker
		out[m] = a
	}
	return out
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

// writePerAccount applies p in the per-account layout: revocations, then
// folder markers and assignments, then the sharded folders are deleted
// (the members read their per-account folders once their markers are
// there).
func (c *Consul) writePerAccount(ctx context.Context, sessionID string, p plan, _ assignments, st stored) (written, error) {
	var revokes, assigns, leftovers []*api.KVTxnOp
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
	for _, m := range sortedKeys(st.shards) {
		leftovers = append(leftovers, &api.KVTxnOp{Verb: api.KVDeleteTree, Key: c.keys.shardsFolder(m)})
	}
	return c.writePhases(ctx, sessionID, revokes, assigns, leftovers)
}

// writeShards applies p in the sharded layout: first the folders of
// members gone and the values that lose accounts, then the values that
// gain accounts and the markers of members not confirmed yet (after
// their values: a member confirmed sees its whole assignment), and last
// the per-account folders, which the members read instead of their
// shards while they exist.
func (c *Consul) writeShards(ctx context.Context, sessionID string, p plan, current assignments, st stored) (written, error) {
	var revokes, assigns, leftovers []*api.KVTxnOp
	for _, m := range p.drop {
		revokes = append(revokes, &api.KVTxnOp{Verb: api.KVDeleteTree, Key: c.keys.folder(m)},
			&api.KVTxnOp{Verb: api.KVDeleteTree, Key: c.keys.shardsFolder(m)})
	}
	// Each live member's accounts once revoked (kept), then once given
	// (gained added); each step's values are compared with the step
	// before: the stored values, then the kept ones.
	kept := map[string]map[string]bool{}
	for m, a := range current {
		if !slices.Contains(p.drop, m) {
			kept[m] = maps.Clone(a.accounts)
		}
	}
	for _, r := range p.revoke {
		delete(kept[r.member], r.account)
	}
	gained := map[string][]string{}
	for _, a := range p.assign {
		gained[a.member] = append(gained[a.member], a.account)
		if kept[a.member] == nil {
			kept[a.member] = map[string]bool{}
		}
	}
	for _, m := range sortedKeys(kept) {
		mid, err := shardValues(kept[m])
		if err != nil {
			return written{}, err
		}
		revokes = append(revokes, c.shardOps(m, st.values[m], mid)...)
		if len(gained[m]) == 0 {
			continue
		}
		final := kept[m] // no longer needed as it was
		for _, a := range gained[m] {
			final[a] = true
		}
		end, err := shardValues(final)
		if err != nil {
			return written{}, err
		}
		assigns = append(assigns, c.shardOps(m, mid, end)...)
	}
	marker := []byte(c.cfg.InstanceID)
	for _, m := range p.markers {
		assigns = append(assigns, &api.KVTxnOp{Verb: api.KVSet, Key: c.keys.shardsFolder(m), Value: marker})
	}
	for _, m := range sortedKeys(st.perAccount) {
		if !slices.Contains(p.drop, m) {
			leftovers = append(leftovers, &api.KVTxnOp{Verb: api.KVDeleteTree, Key: c.keys.folder(m)})
		}
	}
	return c.writePhases(ctx, sessionID, revokes, assigns, leftovers)
}

// shardOps turns member's shard values from before into after: a value
// set where it changed, deleted where none is left.
func (c *Consul) shardOps(member string, before, after map[string][]byte) []*api.KVTxnOp {
	var ops []*api.KVTxnOp
	for _, s := range sortedKeys(before) {
		if _, ok := after[s]; !ok {
			ops = append(ops, &api.KVTxnOp{Verb: api.KVDelete, Key: c.keys.shard(member, s)})
		}
	}
	for _, s := range sortedKeys(after) {
		if old, ok := before[s]; !ok || !bytes.Equal(old, after[s]) {
			ops = append(ops, &api.KVTxnOp{Verb: api.KVSet, Key: c.keys.shard(member, s), Value: after[s]})
		}
	}
	return ops
}

// written counts what one pass wrote: keys set or deleted (a deleted tree
// counts one), bytes of values, and transactions.
type written struct{ keys, bytes, txns int }

// writePhases writes each phase in transactions of at most 64 operations
// and maxShardBytes of values, each guarded by the leader key being held
// by this term's session, so a deposed leader writes nothing. A phase is
// written in full before the next begins.
func (c *Consul) writePhases(ctx context.Context, sessionID string, phases ...[]*api.KVTxnOp) (written, error) {
	var w written
	guard := &api.KVTxnOp{Verb: api.KVCheckSession, Key: c.keys.leader(), Session: sessionID}
	for _, ops := range phases {
		for len(ops) > 0 {
			n, size := 0, 0
			for n < len(ops) && n < txnMaxOps-1 && (n == 0 || size+len(ops[n].Value) <= maxShardBytes) {
				size += len(ops[n].Value)
				n++
			}
			if _, err := c.txn(ctx, append(api.KVTxnOps{guard}, ops[:n]...)); err != nil {
				return w, err
			}
			w.keys, w.bytes, w.txns = w.keys+n, w.bytes+size, w.txns+1
			ops = ops[n:]
		}
	}
	return w, nil
}
