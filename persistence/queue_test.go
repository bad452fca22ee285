package persistence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/persistence"
)

// queue builds one account with actions on two links: link1 CREATE then
// DELETE, link2 CREATE.
func queue(t *testing.T, b *bundle) (acct string, link1, link2 string, ia wimro.InstanceAction) {
	t.Helper()
	tn, w, a, inst := b.accountInstance(t)
	link1, link2 = uuid.NewString(), uuid.NewString()
	if _, err := b.db.CreateWANLinks(b.ctx, []wimro.WANLink{
		{UUID: link1, InstanceID: &inst.UUID, WIMID: &w.UUID, WIMAccountID: a.UUID},
		{UUID: link2, InstanceID: &inst.UUID, WIMID: &w.UUID, WIMAccountID: a.UUID},
	}); err != nil {
		t.Fatal(err)
	}
	ia, err := b.db.CreateInstanceAction(b.ctx, wimro.InstanceAction{TenantID: tn.UUID, InstanceID: &inst.UUID, Description: "CREATE", Tasks: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.db.CreateActions(b.ctx, []wimro.Action{
		{InstanceActionID: ia.UUID, TaskIndex: 0, WIMAccountID: &a.UUID, Action: wimro.ActionCreate, ItemID: link1},
		{InstanceActionID: ia.UUID, TaskIndex: 1, WIMAccountID: &a.UUID, Action: wimro.ActionDelete, ItemID: link1},
		{InstanceActionID: ia.UUID, TaskIndex: 2, WIMAccountID: &a.UUID, Action: wimro.ActionCreate, ItemID: link2},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.UUID, link1, link2, ia
}

// lease takes the account's lease for owner (the fence every claim and
// outcome write checks).
func lease(t *testing.T, b *bundle, acct, owner string) persistence.Lease {
	t.Helper()
	got, err := b.db.AcquireLeases(b.ctx, owner, []string{acct}, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("lease of %s for %s: %v, %v", acct, owner, got, err)
	}
	return got[0]
}

func TestClaimOrderAndFencing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, link2, ia := queue(t, b)
	la := lease(t, b, acct, "P")

	// One claim per link, the first of each: link1's DELETE waits.
	got, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	for _, a := range got {
		if a.Action != wimro.ActionCreate || *a.ClaimedBy != "A" || a.Attempts != 0 {
			t.Fatalf("claimed %+v", a)
		}
	}
	// Nothing more while they are claimed.
	if more, _ := b.db.ClaimActions(b.ctx, la, "B", time.Minute, 10, nil); len(more) != 0 {
		t.Fatalf("claimed %d actions of busy links", len(more))
	}

	create1 := got[0]
	if create1.ItemID != link1 {
		create1 = got[1]
	}
	// Fencing: B cannot finish A's claim.
	foreign := create1
	foreign.ClaimedBy = ptr("B")
	err = b.db.FinishAction(b.ctx, la, foreign, wimro.Outcome{Status: wimro.ActionDone, Done: 1})
	if !errors.Is(err, persistence.ErrClaimLost) {
		t.Fatalf("foreign finish = %v", err)
	}
	st := wimro.LinkBuild
	id := "svc-1"
	err = b.db.FinishAction(b.ctx, la, create1, wimro.Outcome{Status: wimro.ActionDone, WIMInternalID: &id, Done: 1,
		Extra: map[string]any{"conn_info": map[string]any{"k": "v"}}, Link: &wimro.LinkUpdate{Status: &st, WIMInternalID: &id, WIMInfo: map[string]any{"x": 1}}})
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	written, err := b.db.ListActionsOfItem(b.ctx, link1)
	if err != nil {
		t.Fatal(err)
	}
	var done wimro.Action
	for _, a := range written {
		if a.InstanceActionID == create1.InstanceActionID && a.TaskIndex == create1.TaskIndex {
			done = a
		}
	}
	if done.Status != wimro.ActionDone || done.ClaimedBy != nil || done.WIMInternalID == nil || *done.WIMInternalID != id || done.Extra["conn_info"] == nil {
		t.Fatalf("finished action = %+v", done)
	}
	l, _ := b.db.GetWANLink(b.ctx, link1)
	if *l.WIMInternalID != id || l.WIMInfo["x"] != 1.0 {
		t.Fatalf("link = %+v", l)
	}
	// Finishing twice is refused: the claim is gone.
	if err := b.db.FinishAction(b.ctx, la, create1, wimro.Outcome{Status: wimro.ActionDone, Done: 1}); !errors.Is(err, persistence.ErrClaimLost) {
		t.Fatalf("second finish = %v", err)
	}
	// Now link1's DELETE is next.
	got, _ = b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, []string{link2})
	if len(got) != 1 || got[0].Action != wimro.ActionDelete || got[0].ItemID != link1 {
		t.Fatalf("after the CREATE: %+v", got)
	}
	counters, _ := b.db.GetInstanceAction(b.ctx, *ia.InstanceID, ia.UUID)
	if counters.Done != 1 {
		t.Fatalf("done = %d", counters.Done)
	}
}

func TestSweepAndRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	la := lease(t, b, acct, "P")
	got, _ := b.db.ClaimActions(b.ctx, la, "dead", time.Millisecond, 10, nil)
	if len(got) != 2 {
		t.Fatalf("claimed %d", len(got))
	}
	deadline := time.Now().Add(10 * time.Second)
	var n int64
	for n < 2 && time.Now().Before(deadline) {
		m, err := b.db.SweepExpiredClaims(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	if n != 2 {
		t.Fatalf("swept %d, want 2", n)
	}
	got, _ = b.db.ClaimActions(b.ctx, la, "B", time.Minute, 1, nil)
	if len(got) != 1 || got[0].Attempts != 0 { // the dead claims reached no outcome: no attempt counted
		t.Fatalf("reclaimed %+v", got)
	}
	if n, _ := b.db.ReleaseClaims(b.ctx, "B"); n != 1 {
		t.Fatalf("released %d", n)
	}
	// A retry later is not due now.
	got, _ = b.db.ClaimActions(b.ctx, la, "B", time.Minute, 10, nil)
	later := time.Now().Add(time.Hour)
	for _, a := range got {
		if err := b.db.FinishAction(b.ctx, la, a, wimro.Outcome{Status: wimro.ActionScheduled, RunAfter: &later}); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := b.db.ClaimActions(b.ctx, la, "B", time.Minute, 10, nil); len(again) != 0 {
		t.Fatalf("claimed %d actions before their run_after", len(again))
	}
}

// A live owner renews its leases, so the sweep leaves its claims alone.
func TestExtendClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	la := lease(t, b, acct, "P")
	got, _ := b.db.ClaimActions(b.ctx, la, "alive", time.Millisecond, 10, nil)
	if len(got) != 2 {
		t.Fatalf("claimed %d", len(got))
	}
	// Only the named claim is renewed: the other one is no longer run by
	// anybody, so it must expire although its process lives.
	if n, err := b.db.ExtendClaims(b.ctx, []persistence.ClaimKey{persistence.KeyOf(got[0])}, time.Minute); err != nil || n != 1 {
		t.Fatalf("extended %d, %v", n, err)
	}
	// A key with another claim name (an older claim of the same action)
	// renews nothing.
	stale := persistence.KeyOf(got[1])
	stale.ClaimedBy += "-old"
	if n, err := b.db.ExtendClaims(b.ctx, []persistence.ClaimKey{stale}, time.Minute); err != nil || n != 0 {
		t.Fatalf("extended a stale claim: %d, %v", n, err)
	}
	eventually.Until(t, 10*time.Second, "the unrenewed claim swept", func() (bool, string) {
		n, err := b.db.SweepExpiredClaims(b.ctx)
		return err == nil && n == 1, fmt.Sprint(n, err)
	})
	held, err := b.db.ClaimsHeldBy(b.ctx, "alive")
	if err != nil || len(held) != 1 || held[0] != persistence.KeyOf(got[0]) {
		t.Fatalf("claims held = %v, %v", held, err)
	}
}

// Claim names make every claim distinct: an outcome of an earlier claim of
// the same process never lands on a later claim of the same action.
func TestStaleClaimOfSameOwnerIsFenced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	la := lease(t, b, acct, "P")
	first, _ := b.db.ClaimActions(b.ctx, la, persistence.ClaimName("P", "1"), time.Minute, 1, nil)
	if len(first) != 1 {
		t.Fatalf("claimed %d", len(first))
	}
	if n, err := b.db.ReleaseClaimsOf(b.ctx, []persistence.ClaimKey{persistence.KeyOf(first[0])}); err != nil || n != 1 {
		t.Fatalf("released %d, %v", n, err)
	}
	second, _ := b.db.ClaimActions(b.ctx, la, persistence.ClaimName("P", "2"), time.Minute, 1, nil)
	if len(second) != 1 || second[0].InstanceActionID != first[0].InstanceActionID || second[0].TaskIndex != first[0].TaskIndex {
		t.Fatalf("reclaimed %+v", second)
	}
	if err := b.db.FinishAction(b.ctx, la, first[0], wimro.Outcome{Status: wimro.ActionDone, Done: 1}); !errors.Is(err, persistence.ErrClaimLost) {
		t.Fatalf("stale outcome = %v, want ErrClaimLost", err)
	}
	if err := b.db.FinishAction(b.ctx, la, second[0], wimro.Outcome{Status: wimro.ActionDone, Done: 1}); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.db.ReleaseClaims(b.ctx, "P"); n != 0 {
		t.Fatalf("released %d after every claim was finished", n)
	}
}

// Controllers answer with anything: a NUL, invalid UTF-8, a rune cut in
// half, a huge text. The outcome is stored cleaned, and one such outcome
// never rolls back the others of its batch (issue 12, point 2).
func TestHostileOutcomeTextIsStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, _, _ := queue(t, b)
	la := lease(t, b, acct, "P")
	got, _ := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
	if len(got) != 2 {
		t.Fatalf("claimed %d", len(got))
	}
	if got[0].ItemID != link1 {
		got[0], got[1] = got[1], got[0]
	}
	bad := "refused\x00 by \xff\xfe controller " + strings.Repeat("€", 600) + "\xe2\x82"
	id := "svc\x00\xff"
	st := wimro.LinkBuild
	items := []persistence.Finished{
		{Action: got[0], Outcome: wimro.Outcome{Status: wimro.ActionBuild, ErrorMsg: &bad, WIMInternalID: &id, Done: 1,
			Extra: map[string]any{"conn_info": map[string]any{"k\x00": "v\xff"}},
			Link:  &wimro.LinkUpdate{Status: &st, ErrorMsg: &bad, WIMInternalID: &id, WIMInfo: map[string]any{"m": bad}}}, Lease: la},
		{Action: got[1], Outcome: wimro.Outcome{Status: wimro.ActionBuild, Done: 1}, Lease: la},
	}
	var errs []error
	err := b.db.Tx(b.ctx, func(s *persistence.Store) error {
		var err error
		errs, err = s.FinishActions(b.ctx, items)
		return err
	})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("finish = %v, %v", err, errs)
	}
	for _, a := range got {
		rows, err := b.db.ListActionsOfItem(b.ctx, a.ItemID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.TaskIndex != a.TaskIndex {
				continue
			}
			if r.Status != wimro.ActionBuild || r.ClaimedBy != nil {
				t.Fatalf("action %d not written: %+v", a.TaskIndex, r)
			}
			if r.ErrorMsg != nil && (!utf8.ValidString(*r.ErrorMsg) || strings.ContainsRune(*r.ErrorMsg, 0) || len(*r.ErrorMsg) > 1024) {
				t.Fatalf("stored error_msg %q", *r.ErrorMsg)
			}
		}
	}
	l, err := b.db.GetWANLink(b.ctx, link1)
	if err != nil {
		t.Fatal(err)
	}
	if l.ErrorMsg == nil || (l.WIMInternalID == nil || *l.WIMInternalID != "svc\uFFFD" || !strings.HasPrefix(*l.ErrorMsg, "refused by \uFFFD")) {
		t.Fatalf("link = id %v, error %q", l.WIMInternalID, *l.ErrorMsg)
	}
}

// The account lease fences claims and outcomes: once it expired and
// another process took it, the old holder can neither claim nor write.
func TestLeaseFencesClaimsAndOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	got, err := b.db.AcquireLeases(b.ctx, "old", []string{acct}, time.Millisecond)
	if err != nil || len(got) != 1 || got[0].Epoch != 1 {
		t.Fatalf("first lease = %v, %v", got, err)
	}
	old := got[0]
	claimed, _ := b.db.ClaimActions(b.ctx, old, "old#1", time.Minute, 1, nil)
	var taken []persistence.Lease
	eventually.Until(t, 10*time.Second, "the lease taken over once expired", func() (bool, string) {
		taken, err = b.db.AcquireLeases(b.ctx, "new", []string{acct}, time.Minute)
		return err == nil && len(taken) == 1, fmt.Sprint(taken, err)
	})
	if taken[0].Epoch != 2 {
		t.Fatalf("epoch after a takeover = %d, want 2", taken[0].Epoch)
	}
	if err := b.db.RenewProcessLease(b.ctx, persistence.ProcessLease{Owner: old.Owner, Epoch: old.ProcEpoch}, time.Minute); !errors.Is(err, persistence.ErrLeaseLost) {
		t.Fatalf("the old holder renewed a lost lease: %v, want ErrLeaseLost", err)
	}
	if more, err := b.db.ClaimActions(b.ctx, old, "old#2", time.Minute, 10, nil); err != nil || len(more) != 0 {
		t.Fatalf("claimed under a lost lease: %d, %v", len(more), err)
	}
	if len(claimed) == 1 {
		if err := b.db.FinishAction(b.ctx, old, claimed[0], wimro.Outcome{Status: wimro.ActionDone, Done: 1}); !errors.Is(err, persistence.ErrClaimLost) {
			t.Fatalf("outcome under a lost lease = %v, want ErrClaimLost", err)
		}
	}
	// Another owner cannot take a live lease; its holder renews it under the
	// same epoch, and a release frees it for the next one (epoch 3).
	if other, err := b.db.AcquireLeases(b.ctx, "third", []string{acct}, time.Minute); err != nil || len(other) != 0 {
		t.Fatalf("took a live lease: %v, %v", other, err)
	}
	if again, err := b.db.AcquireLeases(b.ctx, "new", []string{acct}, time.Minute); err != nil || len(again) != 1 || again[0] != taken[0] {
		t.Fatalf("re-acquire by the holder = %v, %v", again, err)
	}
	if err := b.db.ReleaseLeases(b.ctx, taken); err != nil {
		t.Fatal(err)
	}
	if third, err := b.db.AcquireLeases(b.ctx, "third", []string{acct}, time.Minute); err != nil || len(third) != 1 || third[0].Epoch != 3 {
		t.Fatalf("after a release = %v, %v", third, err)
	}
}

// FinishActions is atomic without a transaction around it (the completer
// calls it so): when the counter increment fails, the action row is not
// written either and stays claimed, so the outcome can be written again.
// A trigger of this test's own database makes the counter increment (an
// insert into instance_action_progress since schema 8) fail.
func TestFinishActionsIsAtomicAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, _, _ := queue(t, b)
	la := lease(t, b, acct, "P")
	got, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	if _, err := b.db.Pool().Exec(b.ctx, `
		CREATE FUNCTION refuse_counters() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'counters refused by the test'; END $$;
		CREATE TRIGGER refuse_counters BEFORE INSERT ON instance_action_progress FOR EACH ROW EXECUTE FUNCTION refuse_counters()`); err != nil {
		t.Fatal(err)
	}
	st := wimro.LinkActive
	items := make([]persistence.Finished, len(got))
	for i, a := range got {
		items[i] = persistence.Finished{Action: a, Lease: la, Outcome: wimro.Outcome{Status: wimro.ActionBuild, Done: 1,
			Link: &wimro.LinkUpdate{Status: &st}}}
	}
	if _, err := b.db.FinishActions(b.ctx, items); err == nil {
		t.Fatal("FinishActions succeeded although the counter update was refused")
	}
	for _, a := range got {
		rows, err := b.db.ListActionsOfItem(b.ctx, a.ItemID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.TaskIndex == a.TaskIndex && (r.Status != wimro.ActionScheduled || r.ClaimedBy == nil || *r.ClaimedBy != "A") {
				t.Fatalf("action %d written by a failed FinishActions: status %s, claimed_by %v", a.TaskIndex, r.Status, r.ClaimedBy)
			}
		}
	}
	link, err := b.db.GetWANLink(b.ctx, link1)
	if err != nil {
		t.Fatal(err)
	}
	if link.Status == wimro.LinkActive {
		t.Fatalf("link %s set to ACTIVE by a failed FinishActions", link1)
	}
}

// A link's first outcome adds the controller's description of the service
// (wim_info: the fake controller's shape, two connection points, about 550
// bytes) to a row inserted at about 160 bytes. The table leaves room for it
// on the row's page (schema version 9), so the update is HOT: no new entry
// in any of the link's four indexes. Checked by the row's page before and
// after, for outcomes written in batches as the completer writes them (one
// account at parallelism 8).
func TestLinkOutcomeStaysOnItsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn, w, acct, inst := b.accountInstance(t)
	const n = 40
	bw := 100
	links := make([]wimro.WANLink, n)
	tasks := make([]wimro.Action, n)
	ia, err := b.db.CreateInstanceAction(b.ctx, wimro.InstanceAction{TenantID: tn.UUID, InstanceID: &inst.UUID, Description: "CREATE", Tasks: n})
	if err != nil {
		t.Fatal(err)
	}
	for i := range links {
		id, net := uuid.NewString(), uuid.NewString()
		links[i] = wimro.WANLink{UUID: id, InstanceID: &inst.UUID, SceNetID: &net, WIMID: &w.UUID, WIMAccountID: acct.UUID,
			Status: wimro.LinkBuild, BandwidthMbps: &bw}
		tasks[i] = wimro.Action{InstanceActionID: ia.UUID, TaskIndex: i, WIMAccountID: &acct.UUID, Action: wimro.ActionCreate, ItemID: id}
	}
	if _, err := b.db.CreateWANLinks(b.ctx, links); err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.CreateActions(b.ctx, tasks); err != nil {
		t.Fatal(err)
	}
	pages := func() map[string]string {
		rows, err := b.db.Pool().Query(b.ctx, `SELECT uuid::text, split_part(ltrim(ctid::text, '('), ',', 1) FROM instance_wim_nets`)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		var id, page string
		if _, err := pgx.ForEachRow(rows, []any{&id, &page}, func() error { m[id] = page; return nil }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := pages()
	la := lease(t, b, acct.UUID, "A")
	claimed, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, n, nil)
	if err != nil || len(claimed) != n {
		t.Fatalf("claimed %d of %d: %v", len(claimed), n, err)
	}
	for start := 0; start < n; start += 8 {
		var batch []persistence.Finished
		for _, a := range claimed[start:min(start+8, n)] {
			svc, active := uuid.NewString(), wimro.LinkActive
			points := []any{}
			for _, dc := range []string{"dc000a", "dc000b"} {
				points = append(points, map[string]any{
					"service_endpoint_id":                 "ep-" + dc,
					"service_endpoint_encapsulation_type": "dot1q",
					"service_endpoint_encapsulation_info": map[string]any{"vlan": 3001},
				})
			}
			info := map[string]any{"conn_info": map[string]any{"service_key": a.ItemID}, "service_key": a.ItemID,
				"service_type": "ELINE", "connection_points": points, "bandwidth": bw}
			batch = append(batch, persistence.Finished{Action: a, Lease: la, Outcome: wimro.Outcome{
				Status: wimro.ActionDone, WIMInternalID: &svc, Done: 1, Extra: map[string]any{"conn_info": map[string]any{"service_key": a.ItemID}},
				Link: &wimro.LinkUpdate{Status: &active, WIMInternalID: &svc, ClearError: true, WIMInfo: info}}})
		}
		errs, err := b.db.FinishActions(b.ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	after := pages()
	moved := 0
	for id, page := range before {
		if after[id] != page {
			moved++
		}
	}
	var infoSize int
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT avg(pg_column_size(wim_info))::int FROM instance_wim_nets`).Scan(&infoSize); err != nil {
		t.Fatal(err)
	}
	if moved > 0 || infoSize < 300 {
		t.Fatalf("%d of %d links left their page when their first outcome added %d bytes of wim_info (want none)", moved, n, infoSize)
	}
}

// Attempts count the runs that reached the controller (issue 30, point
// 6): a claim counts nothing, nor does an outcome of a run stopped before
// the controller, a claim that expired, or an outcome refused because
// its claim was lost; the outcome of a run that called the controller
// adds one. A retry's outcome writes a retry event with its attempt,
// error and next try (point 8).
func TestAttemptsCountRunsThatReachedTheController(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, link2, ia := queue(t, b)
	la := lease(t, b, acct, "P")
	n := 0
	// claim takes link1's CREATE (link2 is kept busy) under a claim of its own.
	claim := func(t *testing.T, ttl time.Duration) wimro.Action {
		t.Helper()
		n++
		res, err := b.db.ClaimDue(b.ctx, persistence.ClaimRequest{Owner: "P", Claim: persistence.ClaimName("P", fmt.Sprint(n)), TTL: ttl, Parallel: 8, Limit: 1, BusyLinks: []string{link2}})
		if err != nil || len(res.Claimed) != 1 || res.Claimed[0].Action.ItemID != link1 {
			t.Fatalf("claim %d = %+v, %v", n, res.Claimed, err)
		}
		return res.Claimed[0].Action
	}
	stored := func() int {
		t.Helper()
		acts, err := b.db.ListActionsOfItem(b.ctx, link1)
		if err != nil {
			t.Fatal(err)
		}
		return acts[0].Attempts
	}
	// Retries due at once (in the past), each at a time of its own.
	now := time.Now().Add(-time.Minute)
	msg := "dynpac create: HTTP 503: maintenance window"
	retry := func(reached bool) wimro.Outcome {
		return wimro.Outcome{Status: wimro.ActionScheduled, ErrorMsg: &msg, RunAfter: &now, Reached: reached, Retry: true}
	}
	var retryAt []time.Time
	for _, step := range []struct {
		name string
		run  func(t *testing.T) error
		want int // attempts stored afterwards
	}{
		{"claimed", func(t *testing.T) error {
			if a := claim(t, time.Minute); a.Attempts != 0 {
				return fmt.Errorf("the claim says attempts %d", a.Attempts)
			}
			_, err := b.db.ReleaseClaims(b.ctx, "P")
			return err
		}, 0},
		{"interrupted before the controller", func(t *testing.T) error {
			interrupted := "interrupted: context canceled"
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), wimro.Outcome{Status: wimro.ActionScheduled, ErrorMsg: &interrupted, RunAfter: &now})
		}, 0},
		{"claim expired and swept, its outcome refused", func(t *testing.T) error {
			dead := claim(t, time.Millisecond)
			eventually.Until(t, 10*time.Second, "the claim swept", func() (bool, string) {
				k, err := b.db.SweepExpiredClaims(b.ctx)
				return err == nil && k == 1, fmt.Sprintf("swept %d, %v", k, err)
			})
			live := claim(t, time.Minute)
			if err := b.db.FinishAction(b.ctx, la, dead, retry(true)); !errors.Is(err, persistence.ErrClaimLost) {
				return fmt.Errorf("the dead claim's outcome: %v, want ErrClaimLost", err)
			}
			_, err := b.db.ReleaseClaimsOf(b.ctx, []persistence.ClaimKey{persistence.KeyOf(live)})
			return err
		}, 0},
		{"a retry that reached the controller", func(t *testing.T) error {
			retryAt = append(retryAt, now)
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), retry(true))
		}, 1},
		{"a second one", func(t *testing.T) error {
			now = now.Add(time.Second)
			retryAt = append(retryAt, now)
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), retry(true))
		}, 2},
		{"a retry that did not reach it (the database away)", func(t *testing.T) error {
			retryAt = append(retryAt, now)
			return b.db.FinishAction(b.ctx, la, claim(t, time.Minute), retry(false))
		}, 2},
	} {
		if err := step.run(t); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := stored(); got != step.want {
			t.Fatalf("%s: attempts %d, want %d", step.name, got, step.want)
		}
	}

	// One retry event per retry written, none for the interrupted run nor
	// the refused outcome.
	page := readN(t, b, ia.UUID, wimro.EventCursor{}, 3+len(retryAt))
	var got []string
	for _, e := range page.Events {
		if e.Attempt == nil {
			continue
		}
		if e.NextTryAt == nil || e.ErrorMsg == nil || *e.ErrorMsg != msg || *e.WANLinkID != link1 || *e.Status != wimro.ActionScheduled {
			t.Fatalf("retry event %+v", e)
		}
		got = append(got, fmt.Sprintf("attempt %d next %s", *e.Attempt, e.NextTryAt.UTC().Format(time.RFC3339Nano)))
	}
	want := []string{
		fmt.Sprintf("attempt 1 next %s", retryAt[0].UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)),
		fmt.Sprintf("attempt 2 next %s", retryAt[1].UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)),
		fmt.Sprintf("attempt 2 next %s", retryAt[2].UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("retry events:\n%q\nwant\n%q", got, want)
	}
}

// HeldLeases (issue 31) lists the live leases with their holder and the
// time they have left by the database's clock: the leader retries a move
// waiting for a dead holder when its lease expires. A released lease is
// not listed.
func TestHeldLeasesTellTimeLeft(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	got, err := b.db.AcquireLeases(b.ctx, "w1#boot", []string{acct}, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("lease = %v, %v", got, err)
	}
	held, err := b.db.HeldLeases(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := held[acct]
	if !ok || l.Owner != "w1#boot" || l.Left <= 50*time.Second || l.Left > time.Minute {
		t.Fatalf("held %+v (listed %v), want w1#boot with up to a minute left", l, ok)
	}
	if err := b.db.ReleaseLeases(b.ctx, got); err != nil {
		t.Fatal(err)
	}
	if held, err := b.db.HeldLeases(b.ctx); err != nil || len(held) != 0 {
		t.Fatalf("after the release: %v, %v", held, err)
	}
}
