package persistence_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// Since schema version 8 no trigger sets modified_at on vim_wim_actions
// and instance_wim_nets: every statement that updates them sets it. Each
// step below first moves the rows' modified_at into the past, runs one
// writer, and checks that the rows it wrote carry a fresh modified_at (the
// retention purge reads the actions' modified_at).
func TestEveryWriterMovesModifiedAt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, link1, link2, ia := queue(t, b)
	la := lease(t, b, acct, "P")
	var claimed []wimro.Action
	key := func(i int) []persistence.ClaimKey { return []persistence.ClaimKey{persistence.KeyOf(claimed[i])} }
	later := time.Now().Add(time.Hour)
	steps := []struct {
		name string
		run  func(t *testing.T)
		// actions (task indexes) and links whose modified_at must move
		actions []int
		links   []string
	}{
		{"ClaimActions", func(t *testing.T) {
			var err error
			if claimed, err = b.db.ClaimActions(b.ctx, la, "A", time.Minute, 10, nil); err != nil || len(claimed) != 2 {
				t.Fatalf("claim = %d, %v", len(claimed), err)
			}
			// claimed[0] is task 0 (link1's CREATE), claimed[1] task 2
			slices.SortFunc(claimed, func(x, y wimro.Action) int { return x.TaskIndex - y.TaskIndex })
		}, []int{0, 2}, nil},
		{"ExtendClaims", func(t *testing.T) {
			if n, err := b.db.ExtendClaims(b.ctx, key(0), time.Minute); err != nil || n != 1 {
				t.Fatalf("extended %d, %v", n, err)
			}
		}, []int{0}, nil},
		{"ReleaseClaimsOf", func(t *testing.T) {
			if n, err := b.db.ReleaseClaimsOf(b.ctx, key(0)); err != nil || n != 1 {
				t.Fatalf("released %d, %v", n, err)
			}
		}, []int{0}, nil},
		{"ReleaseClaims", func(t *testing.T) {
			if n, err := b.db.ReleaseClaims(b.ctx, "A"); err != nil || n != 1 {
				t.Fatalf("released %d, %v", n, err)
			}
		}, []int{2}, nil},
		{"ClaimDue", func(t *testing.T) {
			res, err := b.db.ClaimDue(b.ctx, persistence.ClaimRequest{Owner: "P", Claim: "B", TTL: -time.Second, Parallel: 8, Limit: 10})
			if err != nil || len(res.Claimed) != 2 {
				t.Fatalf("claim due = %d, %v", len(res.Claimed), err)
			}
			claimed = claimed[:0]
			for _, c := range res.Claimed {
				claimed = append(claimed, c.Action)
			}
		}, []int{0, 2}, nil},
		{"SweepExpiredClaims", func(t *testing.T) {
			if n, err := b.db.SweepExpiredClaims(b.ctx); err != nil || n != 2 {
				t.Fatalf("swept %d, %v", n, err)
			}
		}, []int{0, 2}, nil},
		{"FinishActions", func(t *testing.T) {
			got, err := b.db.ClaimActions(b.ctx, la, "C", time.Minute, 10, nil)
			if err != nil || len(got) != 2 {
				t.Fatalf("claim = %d, %v", len(got), err)
			}
			for _, a := range got {
				// the CREATE of link2 waits for its networks; link1's is built
				o := wimro.Outcome{Status: wimro.ActionScheduled, RunAfter: &later}
				if a.ItemID == link1 {
					o = wimro.Outcome{Status: wimro.ActionBuild, Done: 1, RunAfter: &later, Link: &wimro.LinkUpdate{Status: ptr(wimro.NetBuild)}}
				}
				if err := b.db.FinishAction(b.ctx, la, a, o); err != nil {
					t.Fatal(err)
				}
			}
		}, []int{0, 2}, []string{link1}},
		{"MakeLinksDue", func(t *testing.T) {
			if n, err := b.db.MakeLinksDue(b.ctx, []string{link2}); err != nil || n != 1 {
				t.Fatalf("made due %d, %v", n, err)
			}
		}, []int{2}, nil},
		{"UpdateWANLink", func(t *testing.T) {
			if err := b.db.UpdateWANLink(b.ctx, link2, wimro.LinkUpdate{Status: ptr(wimro.NetActive)}); err != nil {
				t.Fatal(err)
			}
		}, nil, []string{link2}},
		{"RecordLinkStatus", func(t *testing.T) {
			// The link's CREATE finished (written here without touching
			// modified_at): monitoring may now record what it finds.
			if _, err := b.db.Pool().Exec(b.ctx, `UPDATE vim_wim_actions SET status = 'DONE' WHERE item_id = $1`, link2); err != nil {
				t.Fatal(err)
			}
			ok, err := b.db.RecordLinkStatus(b.ctx, la, persistence.LinkStatus{LinkID: link2, From: wimro.LinkActive, ActionSeq: 1 << 62, Status: wimro.LinkDown, ErrorMsg: ptr("gone")})
			if err != nil || !ok {
				t.Fatalf("record = %v, %v", ok, err)
			}
		}, nil, []string{link2}},
	}
	for _, s := range steps {
		if _, err := b.db.Pool().Exec(b.ctx, `UPDATE vim_wim_actions SET modified_at = '2000-01-01Z';
			UPDATE instance_wim_nets SET modified_at = '2000-01-01Z'`); err != nil {
			t.Fatal(err)
		}
		s.run(t)
		rows, err := b.db.Pool().Query(b.ctx, `
			SELECT 'action ' || task_index, modified_at > now() - interval '1 hour' FROM vim_wim_actions WHERE instance_action_id = $1
			UNION ALL
			SELECT 'link ' || uuid, modified_at > now() - interval '1 hour' FROM instance_wim_nets WHERE uuid IN ($2, $3)`, ia.UUID, link1, link2)
		if err != nil {
			t.Fatal(err)
		}
		fresh := map[string]bool{}
		for rows.Next() {
			var name string
			var f bool
			if err := rows.Scan(&name, &f); err != nil {
				t.Fatal(err)
			}
			fresh[name] = f
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, i := range s.actions {
			want["action "+strconv.Itoa(i)] = true
		}
		for _, l := range s.links {
			want["link "+l] = true
		}
		for name, f := range fresh {
			if f != want[name] {
				t.Errorf("%s: %s modified_at moved = %v, want %v", s.name, name, f, want[name])
			}
		}
	}
}
