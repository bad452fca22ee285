package persistence_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// claimWorld is four accounts of owner P's view: a and b leased to P, c
// leased to Q, d leased to P but under an earlier epoch of its process
// lease (dead). Each account has links with a
// CREATE then a DELETE queued; a also has a link whose CREATE is due in an
// hour, and b an action whose link was deleted.
type claimWorld struct {
	a, b, c, d      string
	leaseA, leaseB  persistence.Lease
	linksA, linksB  []string
	later, goneLink string
	laterAt         time.Time
	group           string // sce_net_id of linksA[0]
	inst            wimro.Instance
	dcX, dcY        wimro.Datacenter
}

func newClaimWorld(t *testing.T, b *bundle) *claimWorld {
	t.Helper()
	w := &claimWorld{}
	tn := b.tenant(t, "t0")
	var err error
	if w.inst, err = b.db.CreateInstance(b.ctx, wimro.Instance{Name: "ns", TenantID: tn.UUID}); err != nil {
		t.Fatal(err)
	}
	w.dcX, w.dcY = b.datacenter(t, "dcX", tn), b.datacenter(t, "dcY", tn)
	ia, err := b.db.CreateInstanceAction(b.ctx, wimro.InstanceAction{TenantID: tn.UUID, InstanceID: &w.inst.UUID, Description: "CREATE", Tasks: 100})
	if err != nil {
		t.Fatal(err)
	}
	task := 0
	// links makes n links of acct with a CREATE then a DELETE each.
	links := func(acct, wimID string, n int) []string {
		var ids []string
		for range n {
			id, group := uuid.NewString(), uuid.NewString()
			if _, err := b.db.CreateWANLinks(b.ctx, []wimro.WANLink{{UUID: id, InstanceID: &w.inst.UUID, SceNetID: &group, WIMID: &wimID, WIMAccountID: acct}}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.CreateActions(b.ctx, []wimro.Action{
				{InstanceActionID: ia.UUID, TaskIndex: task, WIMAccountID: &acct, Action: wimro.ActionCreate, ItemID: id},
				{InstanceActionID: ia.UUID, TaskIndex: task + 1, WIMAccountID: &acct, Action: wimro.ActionDelete, ItemID: id},
			}); err != nil {
				t.Fatal(err)
			}
			task += 2
			ids = append(ids, id)
			if w.group == "" {
				w.group = group
				if _, err := b.db.CreateInstanceNets(b.ctx, []wimro.InstanceNet{
					{UUID: uuid.NewString(), InstanceID: w.inst.UUID, SceNetID: &group, DatacenterID: w.dcY.UUID, Status: wimro.NetActive},
					{UUID: uuid.NewString(), InstanceID: w.inst.UUID, SceNetID: &group, DatacenterID: w.dcX.UUID, Status: wimro.NetActive},
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		return ids
	}
	var accts []string
	for i := range 4 {
		wim := b.wim(t, fmt.Sprintf("wim%d", i))
		acct := b.attach(t, wim, tn)
		accts = append(accts, acct.UUID)
		n := 3
		if i == 1 {
			n = 2
		}
		ls := links(acct.UUID, wim.UUID, n)
		switch i {
		case 0:
			w.linksA = ls
			later := links(acct.UUID, wim.UUID, 1)[0]
			w.later = later
			w.laterAt = time.Now().Add(time.Hour).Truncate(time.Microsecond)
			if _, err := b.db.Pool().Exec(b.ctx, `UPDATE vim_wim_actions SET run_after = $2 WHERE item_id = $1`, later, w.laterAt); err != nil {
				t.Fatal(err)
			}
		case 1:
			w.linksB = ls
			w.goneLink = uuid.NewString()
			if _, err := b.db.CreateActions(b.ctx, []wimro.Action{{InstanceActionID: ia.UUID, TaskIndex: task, WIMAccountID: &acct.UUID, Action: wimro.ActionCreate, ItemID: w.goneLink}}); err != nil {
				t.Fatal(err)
			}
			task++
		}
	}
	w.a, w.b, w.c, w.d = accts[0], accts[1], accts[2], accts[3]
	w.leaseA, w.leaseB = lease(t, b, w.a, "P"), lease(t, b, w.b, "P")
	lease(t, b, w.c, "Q")
	lease(t, b, w.d, "P")
	if _, err := b.db.Pool().Exec(b.ctx, `UPDATE wim_account_leases SET proc_epoch = proc_epoch - 1 WHERE account_id = $1`, w.d); err != nil {
		t.Fatal(err)
	}
	return w
}

func byAccount(cs []persistence.Claimed) map[string][]persistence.Claimed {
	m := map[string][]persistence.Claimed{}
	for _, c := range cs {
		m[*c.Action.WIMAccountID] = append(m[*c.Action.WIMAccountID], c)
	}
	return m
}

func TestClaimDueAcrossAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newClaimWorld(t, b)
	claim := func(name string, free map[string]int, busy []string, limit int) persistence.ClaimResult {
		t.Helper()
		res, err := b.db.ClaimDue(b.ctx, persistence.ClaimRequest{Owner: "P", Claim: name, TTL: time.Minute, Parallel: 8, Free: free, BusyLinks: busy, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// a has 2 free slots, b's first link is busy: a gets the CREATEs of
	// its two oldest links, b the CREATE of its other link and the action
	// of the deleted link; c (Q's) and d (expired) nothing.
	res := claim("P#1", map[string]int{w.a: 2}, []string{w.linksB[0]}, 100)
	got := byAccount(res.Claimed)
	if len(got) != 2 || len(got[w.a]) != 2 || len(got[w.b]) != 2 {
		t.Fatalf("claimed per account: a %d, b %d, c %d, d %d; want 2, 2, 0, 0", len(got[w.a]), len(got[w.b]), len(got[w.c]), len(got[w.d]))
	}
	var itemsA []string
	for _, c := range got[w.a] {
		if c.Action.Action != wimro.ActionCreate || *c.Action.ClaimedBy != "P#1" || c.Epoch != w.leaseA.Epoch {
			t.Fatalf("claimed of a: %+v (epoch %d, want %d)", c.Action, c.Epoch, w.leaseA.Epoch)
		}
		itemsA = append(itemsA, c.Action.ItemID)
	}
	slices.Sort(itemsA)
	wantA := slices.Clone(w.linksA[:2])
	slices.Sort(wantA)
	if !slices.Equal(itemsA, wantA) {
		t.Fatalf("a's claimed links %v, want its two oldest %v", itemsA, wantA)
	}
	for _, c := range got[w.b] {
		if c.Epoch != w.leaseB.Epoch || c.Action.ItemID == w.linksB[0] {
			t.Fatalf("claimed of b: %+v epoch %d", c.Action, c.Epoch)
		}
		if (c.Action.ItemID == w.goneLink) != (c.Link == nil) {
			t.Fatalf("link of %s loaded as %v", c.Action.ItemID, c.Link)
		}
	}
	// What the action needs came with it: the link of a's first CREATE,
	// the two networks of its group in datacenter order, both datacenters;
	// a's other link (its own group, no networks) none of them.
	for _, c := range got[w.a] {
		if c.Action.ItemID != w.linksA[0] {
			if len(c.Nets) != 0 || len(c.Datacenters) != 0 {
				t.Fatalf("link %s of another group got nets %+v, datacenters %+v", c.Action.ItemID, c.Nets, c.Datacenters)
			}
			continue
		}
		if c.Link == nil || c.Link.UUID != w.linksA[0] || *c.Link.SceNetID != w.group {
			t.Fatalf("link = %+v", c.Link)
		}
		if len(c.Nets) != 2 || c.Nets[0].DatacenterID > c.Nets[1].DatacenterID {
			t.Fatalf("nets = %+v", c.Nets)
		}
		if c.Datacenters[w.dcX.UUID].Name != "dcX" || c.Datacenters[w.dcY.UUID].Name != "dcY" {
			t.Fatalf("datacenters = %+v", c.Datacenters)
		}
	}
	// The next not-yet-due head is a's later link.
	if res.NextDue == nil || !res.NextDue.Equal(w.laterAt) {
		t.Fatalf("next due = %v, want %v", res.NextDue, w.laterAt)
	}

	// Again: the claimed links are held (their DELETEs wait), so a gets
	// only its third link, b its first one (no longer busy), and the
	// total limit stops at 1.
	res = claim("P#2", map[string]int{w.a: 6}, nil, 1)
	if len(res.Claimed) != 1 {
		t.Fatalf("limit 1 claimed %d", len(res.Claimed))
	}
	res2 := claim("P#3", map[string]int{w.a: 5}, nil, 100)
	all := append(res.Claimed, res2.Claimed...)
	var items []string
	for _, c := range all {
		items = append(items, c.Action.ItemID)
		if c.Action.Action != wimro.ActionCreate {
			t.Fatalf("claimed %s of %s behind a claimed action", c.Action.Action, c.Action.ItemID)
		}
	}
	slices.Sort(items)
	want := []string{w.linksA[2], w.linksB[0]}
	slices.Sort(want)
	if !slices.Equal(items, want) {
		t.Fatalf("second round claimed %v, want %v", items, want)
	}

	// A stopping account (0 free slots) gets nothing; the next due time
	// is still reported.
	res = claim("P#4", map[string]int{w.a: 0, w.b: 0}, nil, 100)
	if len(res.Claimed) != 0 || res.NextDue == nil {
		t.Fatalf("with no free slot: %d claimed, next %v", len(res.Claimed), res.NextDue)
	}

	// The lease taken again after it expired has a new epoch, and the
	// claim reports it: the supervisor drops rows of an epoch it does not
	// know.
	if _, err := b.db.Pool().Exec(b.ctx, `UPDATE wim_account_leases SET proc_epoch = proc_epoch - 1 WHERE account_id = $1`, w.d); err != nil {
		t.Fatal(err)
	}
	ld := lease(t, b, w.d, "P")
	res = claim("P#5", nil, nil, 100)
	got = byAccount(res.Claimed)
	if len(got) != 1 || len(got[w.d]) != 3 {
		t.Fatalf("after d's lease came back: %d accounts, %d of d", len(got), len(got[w.d]))
	}
	for _, c := range got[w.d] {
		if c.Epoch != ld.Epoch || ld.Epoch < 2 {
			t.Fatalf("epoch %d, lease %d", c.Epoch, ld.Epoch)
		}
	}
}

// TestClaimDueTakesTurnsAcrossAccounts: when the limit is smaller than
// the free slots, each account gets its oldest due action before any gets
// its second, and so on: a's links, all older than b's, do not fill the
// claim ahead of b (the accounts claimed last in one claim would be last
// in every later one too).
func TestClaimDueTakesTurnsAcrossAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newClaimWorld(t, b)
	res, err := b.db.ClaimDue(b.ctx, persistence.ClaimRequest{Owner: "P", Claim: "P#1", TTL: time.Minute, Parallel: 8, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range res.Claimed {
		got[*c.Action.WIMAccountID] = append(got[*c.Action.WIMAccountID], c.Action.ItemID)
	}
	for _, want := range []struct {
		acct  string
		links []string
	}{{w.a, w.linksA[:2]}, {w.b, w.linksB[:2]}} {
		l := got[want.acct]
		slices.Sort(l)
		wl := slices.Sorted(slices.Values(want.links))
		if !slices.Equal(l, wl) {
			t.Fatalf("claimed of a: %v, of b: %v; want each account's two oldest: %v and %v", got[w.a], got[w.b], w.linksA[:2], w.linksB[:2])
		}
	}
}
