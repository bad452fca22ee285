package engine_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

// A key rotation that re-seals a WIM's and its accounts' secrets while an
// edit of them runs its connector check is no concurrent edit: the
// settings checked are the same once opened, and the edit is written
// (the old comparison of the stored text answered 409 "changed by another
// request"). Afterwards every secret opens with the new key to its value.
func TestResealDuringConnectorCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		write func(ctx context.Context, eng *engine.Engine) error
	}{
		{"edit WIM", func(ctx context.Context, eng *engine.Engine) error {
			_, err := eng.UpdateWIM(ctx, "wan1", engine.WIMInput{Description: ptr("edited")})
			return err
		}},
		{"edit account", func(ctx context.Context, eng *engine.Engine) error {
			_, err := eng.UpdateAccounts(ctx, "t0", "wan1", engine.AccountInput{Config: map[string]any{"timeout_ms": 1000.0, "bearer_token": "acct-tok"}})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			oldKey, newKey := make([]byte, 32), make([]byte, 32)
			rand.Read(oldKey)
			rand.Read(newKey)
			oldBox, _ := secret.New(oldKey)
			db := persistence.NewDB(pgtest.NewPool(t), nil)
			f := testfactory.NewOn(t, db, oldBox)
			f.Tenant(t, "t0")
			f.WIMOf(t, engine.WIMInput{Name: ptr("wan1"), URL: ptr("http://u:url-pw@fake-" + uuid.NewString()), Config: map[string]any{"bearer_token": "wim-tok"}})
			f.Account(t, "t0", "wan1", engine.AccountInput{User: ptr("u"), Password: ptr(engine.Secret("acct-pw")), Config: map[string]any{"bearer_token": "acct-tok"}})
			ring, err := secret.NewRing(newKey, oldKey)
			if err != nil {
				t.Fatal(err)
			}
			// The edit's engine holds both keys and seals with the new
			// one, as every process must before wimd rekey run.
			editor := engine.New(db, ring, nil)
			rekeyer := engine.New(db, ring, nil)
			var once sync.Once
			var resealed map[string]int
			var resealErr error
			withSettingsCheck(editor, f, func(wimro.WIM, map[string]any) error {
				once.Do(func() { resealed, resealErr = rekeyer.Reseal(f.Ctx, 1, nil) })
				return nil
			})
			if err := tt.write(f.Ctx, editor); err != nil {
				t.Fatalf("%s while the secrets were re-sealed: %v", tt.name, err)
			}
			if resealErr != nil || resealed[persistence.SealedWIMs] != 1 || resealed[persistence.SealedAccounts] != 1 {
				t.Fatalf("the re-seal during the check: %v, %v", resealed, resealErr)
			}
			newBox, _ := secret.New(newKey)
			counts, err := engine.New(db, newBox, nil).SealedCounts(f.Ctx)
			if err != nil || len(counts) != 1 || counts[secret.KeyID(newKey)] != 4 {
				t.Fatalf("stored secrets by key: %v, %v; want the 4 under the new key", counts, err)
			}
			if err := engine.New(db, newBox, nil).CheckSecretKey(f.Ctx); err != nil {
				t.Fatalf("the new key alone: %v", err)
			}
			if err := engine.New(db, oldBox, nil).CheckSecretKey(f.Ctx); err == nil {
				t.Fatal("the old key alone passes the secret key check")
			}
		})
	}
}
