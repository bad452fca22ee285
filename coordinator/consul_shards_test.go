package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/wimro/wimro/internal/testkit/eventually"
)

// assignmentPairs lists the assignment keys under the harness's prefix.
func (h *harness) assignmentPairs() (keys, api.KVPairs) {
	h.t.Helper()
	k := keys{prefix: h.prefix}
	pairs, _, err := h.agent.Client().KV().List(k.assignments(), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return k, pairs
}

// layoutOf reads the assignment keys under the harness's prefix.
func (h *harness) layoutOf() stored {
	h.t.Helper()
	k, pairs := h.assignmentPairs()
	return k.parseStored(pairs)
}

// checkShards fails unless the assignment is in the sharded layout alone,
// every value lists sorted accounts of its own shard, and the values of
// each live member hold exactly the accounts rendezvous hashing gives it.
// It returns how many values there are.
func (h *harness) checkShards() int {
	h.t.Helper()
	k, pairs := h.assignmentPairs()
	st := k.parseStored(pairs)
	if len(st.perAccount) != 0 {
		h.t.Fatalf("per-account folders left: %v", sortedKeys(st.perAccount))
	}
	values := 0
	for _, p := range pairs {
		_, name, _ := strings.Cut(strings.TrimPrefix(p.Key, k.assignments()), "/")
		if name == "" {
			continue // a marker
		}
		values++
		ids := strings.Split(string(p.Value), "\n")
		if !slices.IsSorted(ids) || len(p.Value) == 0 {
			h.t.Fatalf("%s: not a sorted list of accounts: %q", p.Key, p.Value)
		}
		for _, a := range ids {
			if shardOf(a) != name {
				h.t.Fatalf("%s lists %s, of shard %s", p.Key, a, shardOf(a))
			}
		}
	}
	var ids []string
	for _, n := range h.alive() {
		ids = append(ids, n.id)
	}
	slices.Sort(ids)
	want := owners(ids, h.accounts())
	for _, id := range ids {
		a := st.shards[id]
		if a == nil || !a.marker || !slices.Equal(sortedSet(a.accounts), want[id]) {
			h.t.Fatalf("%s's shards %+v, want %d accounts and the marker", id, a, len(want[id]))
		}
	}
	return values
}

// Enough accounts that a member's assignment takes more values than one
// transaction carries: the leader writes each member's accounts as
// values per shard, in several transactions, and rewrites only the
// values that change when a member joins and when one leaves.
func TestConsulShardedAssignment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	h.createAccounts(400)
	h.startConverged(2)
	if n := h.checkShards(); n <= 2*txnMaxOps {
		t.Fatalf("%d values for 400 accounts over 2 members: the test needs several transactions per member", n)
	}

	c := h.start("wimd-2", nil)
	eventually.Until(t, convergeTimeout, "three members to split 400 accounts", h.converged)
	h.checkShards()
	if !strings.Contains(h.logs.String(), "sharded=true") {
		t.Fatal("the leader did not log a sharded pass")
	}

	h.stop(c)
	eventually.Until(t, convergeTimeout, "two members to split 400 accounts again", h.converged)
	h.checkShards()
}

// A rolling upgrade: processes of the per-account layout (before the
// sharded one) and of the sharded layout in one cluster. While one of
// the per-account layout is a member, whoever leads writes that layout
// and the new processes read it; once none is left the leader writes
// the shards and deletes the per-account folders; an old process
// joining again turns it back. Every member runs what it is assigned,
// and holds its lease.
func TestConsulMixedLayouts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	h.createAccounts(90)
	runners := map[string]*leasingRunner{}
	start := func(id string, layout int) *node {
		runners[id] = h.leasing(id, false)
		return h.startLayout(id, runners[id], h.db, nil, layout)
	}
	onlyPerAccount := func(what string) {
		t.Helper()
		eventually.Until(t, convergeTimeout, what, h.converged)
		if st := h.layoutOf(); len(st.shards) != 0 || len(st.perAccount) != len(h.alive()) {
			t.Fatalf("%s: %d sharded folders, %d per-account folders for %d members", what, len(st.shards), len(st.perAccount), len(h.alive()))
		}
	}
	leasesFollow := func(what string) {
		t.Helper()
		eventually.Until(t, convergeTimeout, what+": every lease held by its assigned member", func() (bool, string) {
			held, err := h.db.LeaseHolders(context.Background())
			if err != nil {
				return false, err.Error()
			}
			var ids []string
			for _, n := range h.alive() {
				ids = append(ids, n.id)
			}
			slices.Sort(ids)
			for m, accts := range owners(ids, h.accounts()) {
				for _, a := range accts {
					if held[a] != m {
						return false, fmt.Sprintf("%s held by %q, assigned to %s", a, held[a], m)
					}
				}
			}
			return true, ""
		})
	}

	// An old leader, new members.
	old := start("old", layoutPerAccount)
	eventually.Until(t, convergeTimeout, "the old process to lead", func() (bool, string) { return old.coord.leading.Load(), "not yet" })
	start("new-1", layoutShards)
	start("new-2", layoutShards)
	onlyPerAccount("an old leader, two new members")
	leasesFollow("an old leader")

	// The old one leaves (its runner lets its leases go, as wimd's
	// supervisor does once the coordinator stopped): a new leader, the
	// shards alone.
	h.stop(old)
	runners["old"].SetAccounts(nil)
	eventually.Until(t, convergeTimeout, "the new members alone", h.converged)
	h.checkShards()
	leasesFollow("the new members alone")

	// An old process joins a new leader: back to the per-account layout.
	start("old-2", layoutPerAccount)
	onlyPerAccount("a new leader, an old member")
	leasesFollow("a new leader, an old member")
}

// writePhases splits a phase by the size of its values as well as by
// the number of operations: Consul refuses a transaction over 512 KiB.
func TestWritePhasesSplitsBySize(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2*time.Second)
	c, err := NewConsul(ConsulConfig{Addr: h.agent.Addr(), InstanceID: "writer", Prefix: h.prefix, DB: h.db, Runner: &recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	client := h.agent.Client()
	session, _, err := client.Session().Create(&api.SessionEntry{TTL: "10s", Behavior: api.SessionBehaviorDelete}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = client.Session().Destroy(session, nil) })
	if ok, _, err := client.KV().Acquire(&api.KVPair{Key: c.keys.leader(), Session: session}, nil); err != nil || !ok {
		t.Fatalf("acquire the leader key: %v %v", ok, err)
	}
	const n = 3
	var ops []*api.KVTxnOp
	for i := range n {
		ops = append(ops, &api.KVTxnOp{Verb: api.KVSet, Key: c.keys.shard("m", fmt.Sprintf("%02x", i)),
			Value: bytes.Repeat([]byte{'a' + byte(i)}, maxShardBytes*3/4)})
	}
	w, err := c.writePhases(context.Background(), session, ops)
	if err != nil {
		t.Fatalf("write %d values of %d bytes: %v", n, maxShardBytes*3/4, err)
	}
	if w.txns != n || w.keys != n {
		t.Fatalf("written %+v, want %d transactions of one value", w, n)
	}
	for _, op := range ops {
		p, _, err := client.KV().Get(op.Key, nil)
		if err != nil || p == nil || !bytes.Equal(p.Value, op.Value) {
			t.Fatalf("%s not written (%v)", op.Key, err)
		}
	}
}
