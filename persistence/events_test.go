package persistence_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/persistence"
)

// eventLine renders an event for comparison: task, action, status, link
// status (the link is named by the caller's names).
func eventLine(e wimro.Event, names map[string]string) string {
	s := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	task := "-"
	if e.TaskIndex != nil {
		task = fmt.Sprint(*e.TaskIndex)
	}
	link := "-"
	if e.WANLinkID != nil {
		link = names[*e.WANLinkID]
	}
	return strings.Join([]string{task, s(e.Action), s(e.Status), link, s(e.LinkStatus)}, " ")
}

// readN reads the events after a cursor once at least n of them can be
// read.
func readN(t *testing.T, b *bundle, ia string, after wimro.EventCursor, n int) persistence.EventPage {
	t.Helper()
	var page persistence.EventPage
	eventually.Until(t, 10*time.Second, fmt.Sprintf("%d events", n), func() (bool, string) {
		var err error
		if page, err = b.db.ReadEvents(b.ctx, ia, after, 0); err != nil {
			t.Fatalf("read events: %v", err)
		}
		return len(page.Events) >= n, fmt.Sprintf("%d events", len(page.Events))
	})
	return page
}

// created returns the cursor after the three events of queue's tasks,
// created.
func created(t *testing.T, b *bundle, ia string) wimro.EventCursor {
	t.Helper()
	start := readN(t, b, ia, wimro.EventCursor{}, 3)
	return start.Events[len(start.Events)-1].Cursor
}

func lines(page persistence.EventPage, names map[string]string) []string {
	var out []string
	for _, e := range page.Events {
		out = append(out, eventLine(e, names))
	}
	return out
}

func TestEventsFollowTheChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, link2, ia := queue(t, b)
	names := map[string]string{link1: "l1", link2: "l2"}
	la := lease(t, b, acct, "P")

	first := readN(t, b, ia.UUID, wimro.EventCursor{}, 3)
	want := []string{"0 CREATE SCHEDULED l1 BUILD", "1 DELETE SCHEDULED l1 BUILD", "2 CREATE SCHEDULED l2 BUILD"}
	if got := lines(first, names); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("created: %q, want %q", got, want)
	}
	if first.Settled {
		t.Fatal("settled with every task scheduled")
	}
	before, _ := b.db.GetWANLink(b.ctx, link1)

	got, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	create1, create2 := got[0], got[1]
	if create1.ItemID != link1 {
		create1, create2 = create2, create1
	}
	build, active, failed := wimro.LinkBuild, wimro.LinkActive, wimro.LinkError
	msg := "no port"
	later := time.Now().Add(time.Hour)
	// link1: the service is made (task BUILD, link stays BUILD: one event);
	// link2 fails (task FAILED, link ERROR: one event with the message).
	errs, err := b.db.FinishActions(b.ctx, []persistence.Finished{
		{Action: create1, Lease: la, Outcome: wimro.Outcome{Status: wimro.ActionBuild, RunAfter: &later, Done: 1, Link: &wimro.LinkUpdate{Status: &build}}},
		{Action: create2, Lease: la, Outcome: wimro.Outcome{Status: wimro.ActionFailed, ErrorMsg: &msg, Failed: 1, Link: &wimro.LinkUpdate{Status: &failed, ErrorMsg: &msg}}},
	})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("finish = %v %v", err, errs)
	}
	last := first.Events[len(first.Events)-1].Cursor
	second := readN(t, b, ia.UUID, last, 2)
	want = []string{"0 CREATE BUILD l1 BUILD", "2 CREATE FAILED l2 ERROR"}
	if got := lines(second, names); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after the outcomes: %q, want %q", got, want)
	}
	if e := second.Events[1]; e.ErrorMsg == nil || *e.ErrorMsg != msg {
		t.Fatalf("failure event without its message: %+v", e)
	}
	if l, _ := b.db.GetWANLink(b.ctx, link1); !l.StatusSince.Equal(before.StatusSince) {
		t.Fatalf("status_since moved without a status change: %v -> %v", before.StatusSince, l.StatusSince)
	}
	if l, _ := b.db.GetWANLink(b.ctx, link2); !l.StatusSince.After(before.StatusSince) {
		t.Fatalf("status_since of the failed link did not move: %v", l.StatusSince)
	}

	// A refresh that changes nothing writes no event; the one that finds
	// the link ACTIVE does.
	refresh := func(status string, link *string) {
		t.Helper()
		if _, err := b.db.Pool().Exec(b.ctx, `UPDATE vim_wim_actions SET run_after = now() WHERE item_id = $1`, link1); err != nil {
			t.Fatal(err)
		}
		got, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
		if err != nil || len(got) != 1 || got[0].ItemID != link1 {
			t.Fatalf("claim the refresh = %+v, %v", got, err)
		}
		if err := b.db.FinishAction(b.ctx, la, got[0], wimro.Outcome{Status: status, RunAfter: &later, Link: &wimro.LinkUpdate{Status: link}}); err != nil {
			t.Fatal(err)
		}
	}
	// (An event of the first refresh would come before the second's.)
	refresh(wimro.ActionBuild, &build)
	refresh(wimro.ActionDone, &active)
	third := readN(t, b, ia.UUID, second.Events[1].Cursor, 1)
	if got := lines(third, names); strings.Join(got, "|") != "0 CREATE DONE l1 ACTIVE" {
		t.Fatalf("after a refresh without change and one to ACTIVE: %q, want only the second", got)
	}
	// The DELETE of link1 is still queued: not settled.
	if third.Settled {
		t.Fatal("settled with a DELETE queued")
	}

	// Everything, from the start, is the same sequence in the same order.
	n := len(first.Events) + len(second.Events) + len(third.Events)
	all := readN(t, b, ia.UUID, wimro.EventCursor{}, n)
	if len(all.Events) != n {
		t.Fatalf("replay has %d events, want %d", len(all.Events), n)
	}
	for i := 1; i < len(all.Events); i++ {
		p, c := all.Events[i-1].Cursor, all.Events[i].Cursor
		if c.Seq != p.Seq+1 {
			t.Fatalf("cursor %v after %v", c, p)
		}
	}
}

func TestEventsSettle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, _, ia := queue(t, b)
	la := lease(t, b, acct, "P")
	later := time.Now().Add(time.Hour)
	for round := 0; round < 2; round++ {
		got, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got {
			if err := b.db.FinishAction(b.ctx, la, a, wimro.Outcome{Status: wimro.ActionDone, RunAfter: &later, Done: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l, _ := b.db.ListActionsOfItem(b.ctx, link1); l[1].Status != wimro.ActionDone {
		t.Fatalf("the DELETE did not run: %+v", l[1])
	}
	var page persistence.EventPage
	eventually.Until(t, 10*time.Second, "settled", func() (bool, string) {
		var err error
		if page, err = b.db.ReadEvents(b.ctx, ia.UUID, wimro.EventCursor{}, 0); err != nil {
			t.Fatal(err)
		}
		return page.Settled, fmt.Sprintf("settled = %v with %d events", page.Settled, len(page.Events))
	})
	if len(page.Events) != 6 {
		t.Fatalf("settled with %d events, want 6", len(page.Events))
	}
	// A page cut short by its limit is not the end.
	short, err := b.db.ReadEvents(b.ctx, ia.UUID, wimro.EventCursor{}, 2)
	if err != nil || short.Settled || len(short.Events) != 2 {
		t.Fatalf("limit 2: settled = %v, %d events, %v", short.Settled, len(short.Events), err)
	}
	// An instance action with no event at all (or unknown) is settled
	// with nothing to read: the caller checks that it exists.
	// Once its instance is gone, the retention purge takes the instance
	// action with its events and progress increments (the counters' key
	// refuses a delete that leaves them: nothing cascades into them).
	if err := b.db.DeleteInstance(b.ctx, *ia.InstanceID); err != nil {
		t.Fatal(err)
	}
	var purged int64
	eventually.Until(t, 10*time.Second, "the instance action purged", func() (bool, string) {
		_, n, err := b.db.PurgeFinishedActions(b.ctx, 0, 100)
		if err != nil {
			t.Fatalf("purge: %v", err)
		}
		purged += n
		return purged == 1, fmt.Sprintf("%d instance actions purged", purged)
	})
	var events, progress int
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT (SELECT count(*) FROM instance_action_events WHERE instance_action_id = $1),
		(SELECT count(*) FROM instance_action_progress WHERE instance_action_id = $1)`, ia.UUID).Scan(&events, &progress); err != nil || events != 0 || progress != 0 {
		t.Fatalf("left after the purge: %d events, %d progress rows (%v)", events, progress, err)
	}
	eventually.Until(t, 10*time.Second, "an unknown instance action settled", func() (bool, string) {
		empty, err := b.db.ReadEvents(b.ctx, "00000000-0000-0000-0000-000000000000", wimro.EventCursor{}, 0)
		return err == nil && empty.Settled && len(empty.Events) == 0, fmt.Sprintf("%+v, %v", empty, err)
	})
}

// An operator's psql session left open in a transaction (BEGIN; SELECT
// txid_current();) holds nothing back: an event committed after it began
// is read by the very next statement. (Schema 6 showed only events older
// than every open transaction: this read came back empty until the
// session ended.)
func TestEventsAreNotHeldBackByAnUnrelatedOpenTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, _, ia := queue(t, b)
	cur := created(t, b, ia.UUID)

	psql, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer psql.Rollback(b.ctx) //nolint:errcheck // left open on purpose until the test ends
	if _, err := psql.Exec(b.ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}

	la := lease(t, b, acct, "P")
	got, err := b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim = %d, %v", len(got), err)
	}
	active := wimro.LinkActive
	for _, a := range got {
		if a.ItemID == link1 {
			if err := b.db.FinishAction(b.ctx, la, a, wimro.Outcome{Status: wimro.ActionDone, Done: 1, Link: &wimro.LinkUpdate{Status: &active}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	page, err := b.db.ReadEvents(b.ctx, ia.UUID, cur, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(page, map[string]string{link1: "l1"}); strings.Join(got, "|") != "0 CREATE DONE l1 ACTIVE" {
		t.Fatalf("read with a transaction open elsewhere = %q, want the outcome's event", got)
	}
}

// Two transactions writing events of one instance action do not wait for
// each other, and the one that commits last is read last, whatever their
// ids: each event is numbered once committed, after every event numbered
// before, so a reader neither skips the late one nor reads one twice.
func TestEventsOfOneInstanceActionAreNumberedInCommitOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, _, ia := queue(t, b)
	cur := created(t, b, ia.UUID)

	insert := `INSERT INTO instance_action_events (instance_action_id, task_index, action, status) VALUES ($1, $2, 'CREATE', $3)`
	first, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(b.ctx) //nolint:errcheck // committed below; a failed test leaves it open otherwise
	if _, err := first.Exec(b.ctx, insert, ia.UUID, 7, "FIRST"); err != nil {
		t.Fatal(err)
	}
	// The second, with a larger id, commits at once: no wait.
	if _, err := b.db.Pool().Exec(b.ctx, insert, ia.UUID, 8, "SECOND"); err != nil {
		t.Fatal(err)
	}
	page, err := b.db.ReadEvents(b.ctx, ia.UUID, cur, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(page, nil); strings.Join(got, "|") != "8 CREATE SECOND - -" {
		t.Fatalf("with the first still open: %q", got)
	}
	if err := first.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	next, err := b.db.ReadEvents(b.ctx, ia.UUID, page.Events[0].Cursor, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(next, nil); strings.Join(got, "|") != "7 CREATE FIRST - -" {
		t.Fatalf("after the first committed: %q", got)
	}
	if a, c := page.Events[0].Cursor, next.Events[0].Cursor; a.Seq != cur.Seq+1 || c.Seq != cur.Seq+2 || c.ID > a.ID {
		t.Fatalf("cursors %v then %v after %v: want the next two numbers, the later one on the smaller id", a, c, cur)
	}
	all, err := b.db.ReadEvents(b.ctx, ia.UUID, wimro.EventCursor{}, 0)
	if err != nil || len(all.Events) != 5 {
		t.Fatalf("replay: %d events, %v; want 5, each once", len(all.Events), err)
	}
}

// A cursor of schema 6 (transaction id, event id) resumes after its
// event: the reader finds the event by its id.
func TestEventsResumeFromAnOldCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, _, ia := queue(t, b)
	all := readN(t, b, ia.UUID, wimro.EventCursor{}, 3)
	var xid int64
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT xid::text::bigint FROM instance_action_events WHERE id = $1`, all.Events[0].Cursor.ID).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	old := wimro.EventCursor{Seq: xid, ID: all.Events[0].Cursor.ID}
	page, err := b.db.ReadEvents(b.ctx, ia.UUID, old, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.Events[0].Cursor != all.Events[1].Cursor {
		t.Fatalf("after the old cursor %v: %v, want the 2nd and 3rd events %v", old, page.Events, all.Events[1:])
	}
}

func TestParseEventCursor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want wimro.EventCursor
		ok   bool
	}{
		{"", wimro.EventCursor{}, true},
		{"12-34", wimro.EventCursor{Seq: 12, ID: 34}, true},
		{wimro.EventCursor{Seq: 1 << 40, ID: 9}.String(), wimro.EventCursor{Seq: 1 << 40, ID: 9}, true},
		{"-1-3", wimro.EventCursor{}, false},
		{"12", wimro.EventCursor{}, false},
		{"12--3", wimro.EventCursor{}, false},
		{"a-b", wimro.EventCursor{}, false},
		{"99999999999999999999-1", wimro.EventCursor{}, false},
		{"\x00\xff-1", wimro.EventCursor{}, false},
	} {
		got, err := wimro.ParseEventCursor("Last-Event-ID", tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %v, %v", tc.in, got, err)
		}
		if err != nil && (wimro.ErrorCode(err) != wimro.EINVALID || !strings.Contains(err.Error(), "Last-Event-ID")) {
			t.Errorf("%q: error %v does not name the field as invalid", tc.in, err)
		}
	}
}

func TestLinksOfInstanceAction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, link1, link2, ia := queue(t, b)
	if _, err := b.db.Pool().Exec(b.ctx, `DELETE FROM instance_wim_nets WHERE uuid = $1`, link2); err != nil {
		t.Fatal(err)
	}
	got, err := b.db.LinksOfInstanceAction(b.ctx, ia.UUID)
	if err != nil {
		t.Fatal(err)
	}
	// link1 has two tasks and is listed once; link2 is gone.
	want := map[string]string{link1: wimro.LinkBuild, link2: "gone"}
	if len(got) != 2 {
		t.Fatalf("links = %+v, want link1 and link2 once each", got)
	}
	for _, l := range got {
		st := "gone"
		if l.Status != nil {
			st = *l.Status
		}
		if want[l.WANLinkID] != st {
			t.Errorf("link %s: %s, want %s", l.WANLinkID, st, want[l.WANLinkID])
		}
	}
}

// Writers notify persistence.ChannelEvents only for the instance actions
// a process watches, and stop when the watch goes. (Notifications arrive
// in commit order, so the first one received says which were sent.)
func TestEventsNotifyOnlyWatchedInstanceActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, _, _, ia1 := queue(t, b)
	ia2, err := b.db.CreateInstanceAction(b.ctx, wimro.InstanceAction{TenantID: ia1.TenantID, InstanceID: ia1.InstanceID, Description: "DELETE"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := b.db.Pool().Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(b.ctx, "LISTEN "+persistence.ChannelEvents); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "UNLISTEN *") //nolint:errcheck // back to the pool clean
	insert := func(ia string) {
		t.Helper()
		if _, err := b.db.Pool().Exec(b.ctx, `INSERT INTO instance_action_events (instance_action_id, action) VALUES ($1, 'CREATE')`, ia); err != nil {
			t.Fatal(err)
		}
	}
	next := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n.Payload
	}
	insert(ia1.UUID) // nobody watches: no notification
	if err := b.db.WatchEvents(b.ctx, "P", []string{ia2.UUID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	insert(ia2.UUID)
	if got := next(); got != ia2.UUID {
		t.Fatalf("first notification %q, want the watched %s only", got, ia2.UUID)
	}
	// P keeps ia1 only: ia2 is no longer notified.
	if err := b.db.UnwatchEvents(b.ctx, "P", []string{ia1.UUID}); err != nil {
		t.Fatal(err)
	}
	if err := b.db.WatchEvents(b.ctx, "P", []string{ia1.UUID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	insert(ia2.UUID)
	insert(ia1.UUID)
	if got := next(); got != ia1.UUID {
		t.Fatalf("notification %q after ia2's watch went, want %s", got, ia1.UUID)
	}
	// P keeps nothing (a process stopping): ia1 is no longer notified
	// either; Q's watch of ia2 is.
	if err := b.db.UnwatchEvents(b.ctx, "P", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.db.WatchEvents(b.ctx, "Q", []string{ia2.UUID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	insert(ia1.UUID)
	insert(ia2.UUID)
	if got := next(); got != ia2.UUID {
		t.Fatalf("notification %q after P kept nothing, want Q's %s", got, ia2.UUID)
	}
}
