package engine

import (
	"context"

	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// A key rotation (wimd rekey) re-seals every stored secret with the
// engine's sealing key, in batches while wimd serves, then counts by key
// what the database holds, so that an old key is retired only once it
// seals nothing. The sealed columns are persistence.SealedTables.

// Unsealed is the key SealedCounts gives a secret stored in clear (by a
// wimd older than sealing; it is sealed on its next write or by Reseal).
const Unsealed = "clear"

// SealedCounts returns how many stored secrets each key seals, by key id
// (secret.Legacy for values sealed before key ids, Unsealed for clear
// ones), over every sealed column.
func (e *Engine) SealedCounts(ctx context.Context) (map[string]int, error) {
	counts := map[string]int{}
	for _, table := range persistence.SealedTables {
		after := ""
		for {
			rows, next, err := e.db.ScanSealed(ctx, table, secret.ConfigKeys, after, 500)
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				if len(r.Password) > 0 {
					counts[orUnsealed(secret.SealedKeyID(r.Password))]++
				}
				if r.URL != nil {
					if pw, ok := secret.URLPassword(*r.URL); ok {
						counts[orUnsealed(secret.StringKeyID(pw))]++
					}
				}
				for _, v := range r.Config {
					counts[orUnsealed(secret.StringKeyID(v))]++
				}
			}
			if next == "" {
				break
			}
			after = next
		}
	}
	return counts, nil
}

func orUnsealed(id string) string {
	if id == "" {
		return Unsealed
	}
	return id
}

// Reseal re-seals every stored secret that the sealing key does not seal
// yet (clear ones included), batch rows per transaction, and says how
// many rows of each table it changed; progress, when set, is told after
// each batch that changed rows. A secret no key of the engine opens stops
// it with an error naming the row: it would be lost.
func (e *Engine) Reseal(ctx context.Context, batch int, progress func(table string, changed int)) (map[string]int, error) {
	changed := map[string]int{}
	for _, table := range persistence.SealedTables {
		after := ""
		for {
			next, n, err := e.db.ResealBatch(ctx, table, secret.ConfigKeys, after, batch, e.resealRow)
			if err != nil {
				return changed, err
			}
			changed[table] += n
			if n > 0 && progress != nil {
				progress(table, n)
			}
			if next == "" {
				break
			}
			after = next
		}
	}
	return changed, nil
}

// resealRow re-seals the sealed values of one row in place.
func (e *Engine) resealRow(r *persistence.SealedRow) (bool, error) {
	dirty := false
	if len(r.Password) > 0 {
		out, changed, err := e.box.Reseal(r.Password)
		if err != nil {
			return false, err
		}
		r.Password, dirty = out, dirty || changed
	}
	if r.URL != nil {
		out, changed, err := e.box.ResealURL(*r.URL)
		if err != nil {
			return false, err
		}
		r.URL, dirty = &out, dirty || changed
	}
	for k, v := range r.Config {
		out, err := e.box.ResealString(v)
		if err != nil {
			return false, err
		}
		if out != v {
			r.Config[k], dirty = out, true
		}
	}
	return dirty, nil
}

// SealingKeyID names the key the engine seals with; KeyIDs every key it
// opens with.
func (e *Engine) SealingKeyID() string { return e.box.KeyID() }

// KeyIDs names every key the engine opens with, the sealing one first.
func (e *Engine) KeyIDs() []string { return e.box.KeyIDs() }
