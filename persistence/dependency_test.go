package persistence_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/persistence"
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

// Nothing cascades into the work rows: deleting a tenant, an account or a
// WIM while an action of theirs is unfinished is refused by a RESTRICT
// foreign key (named by Constraint, the row by ReferencedKey) and deletes
// nothing, even outside the engine's checks. Once the action is finished,
// the delete goes through: a tenant's history goes with it, an account's
// stays, detached from it.
func TestDeleteRefusedByUnfinishedActions(t *testing.T) {
	t.Parallel()
	type fixture struct {
		tenant  wimro.Tenant
		wim     wimro.WIM
		account wimro.WIMAccount
		ia      wimro.InstanceAction
	}
	tenant := func(f fixture) string { return f.tenant.UUID }
	account := func(f fixture) string { return f.account.UUID }
	cases := []struct {
		name        string
		del         func(*persistence.Store, context.Context, string) error
		id, key     func(fixture) string // what is deleted, what is still referenced
		constraint  string
		historyKept bool
	}{
		{"tenant", (*persistence.Store).DeleteTenant, tenant, tenant, persistence.ConstraintInstanceActionTenant, false},
		{"account", (*persistence.Store).DeleteAccount, account, account, persistence.ConstraintActionAccount, true},
		{"wim", (*persistence.Store).DeleteWIM, func(f fixture) string { return f.wim.UUID }, account, persistence.ConstraintActionAccount, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var f fixture
			f.tenant = b.tenant(t, "t0")
			f.wim = b.wim(t, "wim0")
			f.account = b.attach(t, f.wim, f.tenant)
			var err error
			f.ia, err = b.db.CreateInstanceAction(b.ctx, wimro.InstanceAction{TenantID: f.tenant.UUID, Description: "DELETE", Tasks: 2})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.CreateActions(b.ctx, []wimro.Action{
				{InstanceActionID: f.ia.UUID, TaskIndex: 0, WIMAccountID: &f.account.UUID, Action: wimro.ActionCreate, ItemID: uuid.NewString(), Status: wimro.ActionDone},
				{InstanceActionID: f.ia.UUID, TaskIndex: 1, WIMAccountID: &f.account.UUID, Action: wimro.ActionDelete, ItemID: uuid.NewString()},
			}); err != nil {
				t.Fatal(err)
			}
			del := func() error {
				return b.db.Tx(b.ctx, func(s *persistence.Store) error { return c.del(s, b.ctx, c.id(f)) })
			}
			count := func(cond string) int {
				t.Helper()
				var n int
				if err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM vim_wim_actions WHERE instance_action_id = $1 AND `+cond, f.ia.UUID).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}

			err = del()
			wantCode(t, err, wimro.ECONFLICT)
			if got := persistence.Constraint(err); got != c.constraint {
				t.Errorf("constraint = %q, want %q", got, c.constraint)
			}
			if got := persistence.ReferencedKey(err); got != c.key(f) {
				t.Errorf("referenced key = %q, want %q", got, c.key(f))
			}
			if n := count("wim_account_id IS NOT NULL"); n != 2 {
				t.Fatalf("refused delete left %d of 2 attached actions", n)
			}
			if _, err := b.db.GetTenant(b.ctx, f.tenant.UUID); err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.GetAccount(b.ctx, f.account.UUID); err != nil {
				t.Fatal(err)
			}

			if _, err := b.db.Pool().Exec(b.ctx, `UPDATE vim_wim_actions SET status = 'FINISHED' WHERE status = 'SCHEDULED'`); err != nil {
				t.Fatal(err)
			}
			if err := del(); err != nil {
				t.Fatal(err)
			}
			want := 0
			if c.historyKept {
				want = 2
			}
			if n := count("wim_account_id IS NULL"); n != want {
				t.Fatalf("%d detached actions left, want %d", n, want)
			}
			if n := count("true"); n != want {
				t.Fatalf("%d actions left, want %d", n, want)
			}
		})
	}
}
