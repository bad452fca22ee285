package persistence_test

import (
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
