package persistence_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
)

// A WIM or account that a WAN link still uses cannot be deleted, and the
// failed delete leaves everything in place.
func TestDeleteBlockedByWANLinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := b.tenant(t, "t0")
	w := b.wim(t, "wim0")
	a := b.attach(t, w, t0)
	inst := uuid.NewString()
	pool := b.db.Pool()
	if _, err := pool.Exec(b.ctx, `INSERT INTO instance_scenarios (uuid, name, tenant_id) VALUES ($1, 'ns', $2)`, inst, t0.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(b.ctx, `INSERT INTO instance_wim_nets (uuid, instance_scenario_id, wim_id, wim_account_id) VALUES ($1, $2, $3, $4)`,
		uuid.NewString(), inst, w.UUID, a.UUID); err != nil {
		t.Fatal(err)
	}

	for name, err := range map[string]error{
		"wim":     b.db.DeleteWIM(b.ctx, w.UUID),
		"account": b.db.DeleteAccount(b.ctx, a.UUID),
	} {
		wantCode(t, err, wimro.ECONFLICT)
		if !strings.Contains(wimro.ErrorMessage(err), "Resource is not free") {
			t.Errorf("%s: message %q", name, wimro.ErrorMessage(err))
		}
	}
	if _, err := b.db.GetAccount(b.ctx, a.UUID); err != nil {
		t.Fatalf("account gone after refused delete: %v", err)
	}
	if att, _ := b.db.ListAttachedAccounts(b.ctx, w.UUID, ""); len(att) != 1 {
		t.Fatalf("association gone after refused delete")
	}
	// A tenant with instances cannot be deleted either.
	wantCode(t, b.db.DeleteTenant(b.ctx, t0.UUID), wimro.ECONFLICT)
}
