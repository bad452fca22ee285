package persistence_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
)

// ResealBatch rewrites the sealed values it is given, merges the secret
// config keys into the stored config (the other keys byte for byte, a
// large number included), keeps modified_at (a re-seal is no edit), and
// pages through the table.
func TestResealBatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for _, name := range []string{"wan1", "wan2", "wan3"} {
		w, err := b.db.CreateWIM(b.ctx, wimro.WIM{Name: name, Type: "fake", URL: "http://u:old-" + name + "@" + name + ".example",
			Config: map[string]any{"bearer_token": "old-tok", "other": map[string]any{"n": 1}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.UUID)
	}
	if _, err := b.db.Pool().Exec(b.ctx, `UPDATE wims SET config = config || '{"big": 12345678901234567890}'::jsonb`); err != nil {
		t.Fatal(err)
	}
	before := map[string]wimro.WIM{}
	for _, id := range ids {
		w, err := b.db.GetWIM(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		before[id] = w
	}
	after, total, batches := "", 0, 0
	for {
		next, n, err := b.db.ResealBatch(b.ctx, persistence.SealedWIMs, []string{"bearer_token"}, after, 2, func(r *persistence.SealedRow) (bool, error) {
			if r.URL == nil || r.Config["bearer_token"] != "old-tok" {
				t.Errorf("row %s: url %v, config %v", r.Key, r.URL, r.Config)
			}
			u := "http://u:new@x.example"
			r.URL, r.Config["bearer_token"] = &u, "new-tok"
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		total, batches = total+n, batches+1
		if next == "" {
			break
		}
		after = next
	}
	if total != 3 || batches != 2 {
		t.Fatalf("%d rows in %d batches, want 3 in 2", total, batches)
	}
	var big string
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT string_agg(DISTINCT config->>'big', ',') FROM wims`).Scan(&big); err != nil || big != "12345678901234567890" {
		t.Fatalf("config.big after the re-seal: %q, %v", big, err)
	}
	for _, id := range ids {
		w, err := b.db.GetWIM(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if w.URL != "http://u:new@x.example" || w.Config["bearer_token"] != "new-tok" || w.Config["other"] == nil {
			t.Errorf("wim %s after the re-seal: %s %v", id, w.URL, w.Config)
		}
		if !w.ModifiedAt.Equal(before[id].ModifiedAt) {
			t.Errorf("wim %s: modified_at moved from %s to %s", id, before[id].ModifiedAt, w.ModifiedAt)
		}
	}
}

// ScanSealed pages through a table in its key's order: every row once,
// action_overrides' numeric ids included (ordered as text, "10" came
// before "9" and the pages repeated rows), through the key's index.
func TestScanSealedPagesInKeyOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const rows = 25
	if _, err := b.db.Pool().Exec(b.ctx, `INSERT INTO action_overrides (kind, instance_action_id, task_index, action, wan_link_id, wim_url, actor, reason)
		SELECT 'cancel', gen_random_uuid(), i, 'CREATE', gen_random_uuid(), 'http://x.example', 'test', 'test' FROM generate_series(1, $1) i`, rows); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	after, pages := "", 0
	for {
		page, next, err := b.db.ScanSealed(b.ctx, persistence.SealedOverrides, nil, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range page {
			seen[r.Key]++
		}
		if next == "" || pages > rows {
			break
		}
		after = next
	}
	for i := 1; i <= rows; i++ {
		if n := seen[strconv.Itoa(i)]; n != 1 {
			t.Fatalf("override %d read %d times over %d pages (%d rows read)", i, n, pages, len(seen))
		}
	}
	// Sorted by the uuid itself, as the primary key's index is, not by
	// its text (a sort of the whole table for each page).
	rs, err := b.db.Pool().Query(b.ctx, `EXPLAIN `+persistence.SealedSelectForTest(persistence.SealedAccounts), "00000000-0000-0000-0000-000000000000", 500)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "\n"); strings.Contains(p, "::text") {
		t.Fatalf("a page of wim_accounts is sorted by text:\n%s", p)
	}
}
