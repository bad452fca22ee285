package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
)

// exec runs a statement that plays a part the tests do not run (a worker
// finishing its actions).
func (b *bundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := b.db.Pool().Exec(b.ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

// finishAll marks every unfinished action DONE, as the workers would.
func (b *bundle) finishAll(t *testing.T) {
	t.Helper()
	b.exec(t, `UPDATE vim_wim_actions SET status = 'DONE' WHERE status IN ('SCHEDULED', 'BUILD')`)
}

// countWhere counts the rows of table that match cond over args.
func (b *bundle) countWhere(t *testing.T, table, cond string, args ...any) int {
	t.Helper()
	var n int
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM `+table+` WHERE `+cond, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Issue 12: tenants t0 (tenantT) and t1 share one WIM account; t1's
// instance is deleted while its CREATEs are still BUILD, so its DELETEs
// wait SCHEDULED. Deleting t1 must not discard them: it is refused, names
// the unfinished actions (at most 10, then how many more), and deletes
// nothing. Once they are finished, t1 goes with its history, and t0, the
// shared account and t0's history stay.
func TestDeleteTenantWithUnfinishedActions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		vlds int
		more string // the end of the list in the message
	}{
		{"two actions", 1, ""},
		{"more than ten", 6, "and 2 more"}, // 6 CREATEs + 6 DELETEs
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc := newScenario(t)
			t1 := sc.bundle.Tenant(t, "t1")
			for _, dc := range []string{"dcA", "dcB"} {
				if _, err := sc.eng.AttachDatacenter(sc.ctx, "t1", dc); err != nil {
					t.Fatal(err)
				}
			}
			shared := sc.bundle.Account(t, "t1", "wan1", engine.AccountInput{Name: sc.account.Name})
			if shared.UUID != sc.account.UUID {
				t.Fatalf("t1 got its own account %s", shared.UUID)
			}
			// t0 has a finished instance action of its own.
			if _, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns0", Networks: testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcB")}); err != nil {
				t.Fatal(err)
			}
			sc.finishAll(t)

			var vlds []string
			for range c.vlds {
				vlds = append(vlds, uuid.NewString())
			}
			v, err := sc.eng.CreateInstance(sc.ctx, "t1", engine.InstanceInput{Name: "ns1", Networks: testfactory.Nets("", vlds, "dcA", "dcB")})
			if err != nil {
				t.Fatal(err)
			}
			sc.exec(t, `UPDATE vim_wim_actions SET status = 'BUILD' WHERE instance_action_id = $1`, v.ActionID)
			del, _, err := sc.eng.DeleteInstance(sc.ctx, "t1", "ns1")
			if err != nil {
				t.Fatal(err)
			}
			ofT1 := `instance_action_id IN (SELECT uuid FROM instance_actions WHERE tenant_id = $1)`
			before := sc.countWhere(t, "vim_wim_actions", ofT1, t1.UUID)
			if before != 2*c.vlds {
				t.Fatalf("t1 has %d actions, want %d", before, 2*c.vlds)
			}

			_, err = sc.eng.DeleteTenant(sc.ctx, "t1")
			wantCode(t, err, wimro.ECONFLICT)
			msg := wimro.ErrorMessage(err)
			for _, want := range []string{
				fmt.Sprintf("%d unfinished action(s)", 2*c.vlds),
				fmt.Sprintf("instance action %s task 0: CREATE of WAN link %s (BUILD)", v.ActionID, v.WANLinks[0].UUID),
				c.more,
			} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if c.more == "" && !strings.Contains(msg, fmt.Sprintf("instance action %s task 0: DELETE of WAN link %s (SCHEDULED)", del.UUID, v.WANLinks[0].UUID)) {
				t.Errorf("message does not name the pending DELETE:\n%s", msg)
			}
			if n := strings.Count(msg, "instance action "); n > 10 {
				t.Errorf("message names %d actions, want at most 10", n)
			}
			if _, err := sc.eng.GetTenant(sc.ctx, "t1"); err != nil {
				t.Fatalf("refused delete removed the tenant: %v", err)
			}
			if n := sc.countWhere(t, "vim_wim_actions", ofT1, t1.UUID); n != before {
				t.Fatalf("refused delete left %d of %d actions", n, before)
			}
			if n := sc.countWhere(t, "wim_nfvo_tenants", "nfvo_tenant_id = $1", t1.UUID); n != 1 {
				t.Fatalf("refused delete detached t1 from the WIM (%d associations)", n)
			}

			// Finished work is only history: it goes with the tenant.
			sc.finishAll(t)
			if _, err := sc.eng.DeleteTenant(sc.ctx, "t1"); err != nil {
				t.Fatal(err)
			}
			if n := sc.countWhere(t, "instance_actions", "tenant_id = $1", t1.UUID); n != 0 {
				t.Fatalf("%d instance actions of the deleted tenant left", n)
			}
			if n := sc.countWhere(t, "vim_wim_actions", "instance_action_id = ANY($1::uuid[])", []string{v.ActionID, del.UUID}); n != 0 {
				t.Fatalf("%d actions of the deleted tenant left", n)
			}
			if n := sc.countWhere(t, "vim_wim_actions", "wim_account_id = $1", sc.account.UUID); n != 1 {
				t.Fatalf("t0's history: %d actions, want 1", n)
			}
			if _, err := sc.db.GetAccount(sc.ctx, sc.account.UUID); err != nil {
				t.Fatalf("the account t0 still uses was deleted: %v", err)
			}
		})
	}
}

// Issue 12 (B): an account, WIM or tenant delete that races an instance
// delete cannot see the DELETE actions the instance delete has written but
// not committed yet; its checks pass, and when its delete gets the row
// after the instance delete committed, a cascade would remove those
// actions. The RESTRICT foreign keys refuse the delete instead. Each round
// starts both together; whatever the interleaving, no DELETE action may be
// lost and no unfinished action may be left without its account.
func TestDeleteAccountRacingInstanceDelete(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		del   func(sc *scenario) error
		names func(sc *scenario) string // what a refusal by a foreign key names
	}{
		{"account", func(sc *scenario) error { _, err := sc.eng.DeleteAccounts(sc.ctx, "tenantT", "wan1"); return err },
			func(sc *scenario) string { return sc.account.UUID }},
		{"wim", func(sc *scenario) error { _, err := sc.eng.DeleteWIM(sc.ctx, "wan1"); return err },
			func(sc *scenario) string { return sc.account.UUID }},
		{"tenant", func(sc *scenario) error { _, err := sc.eng.DeleteTenant(sc.ctx, "tenantT"); return err },
			func(sc *scenario) string { return sc.tenant.UUID }},
	}
	const rounds = 50
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc := newScenario(t)
			byFK := 0
			for i := range rounds {
				name := fmt.Sprintf("ns%d", i)
				if _, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: name, Networks: testfactory.Nets("", []string{uuid.NewString(), uuid.NewString()}, "dcA", "dcB")}); err != nil {
					t.Fatal(err)
				}
				sc.finishAll(t) // the CREATEs ran: the account is idle

				start := make(chan struct{})
				var (
					wg              sync.WaitGroup
					ia              wimro.InstanceAction
					instErr, delErr error
				)
				wg.Add(2)
				go func() {
					defer wg.Done()
					<-start
					ia, _, instErr = sc.eng.DeleteInstance(sc.ctx, "tenantT", name)
				}()
				go func() {
					defer wg.Done()
					<-start
					delErr = c.del(sc)
				}()
				close(start)
				wg.Wait()

				if instErr != nil {
					t.Fatalf("round %d: DeleteInstance: %v", i, instErr)
				}
				kept := sc.countWhere(t, "vim_wim_actions", "instance_action_id = $1", ia.UUID)
				orphans := sc.countWhere(t, "vim_wim_actions a", `a.status IN ('SCHEDULED', 'BUILD')
					AND NOT EXISTS (SELECT 1 FROM wim_accounts w WHERE w.uuid = a.wim_account_id)`)
				accounts := sc.countWhere(t, "wim_accounts", "uuid = $1", sc.account.UUID)
				if kept != ia.Tasks || orphans != 0 {
					t.Fatalf("round %d: the %s delete (error: %v) lost DELETE actions: %d of %d left, %d unfinished actions without account, account rows: %d",
						i, c.name, delErr, kept, ia.Tasks, orphans, accounts)
				}
				// Before the instance delete its links hold the account; after
				// it, its DELETE actions do.
				wantCode(t, delErr, wimro.ECONFLICT)
				// Refused by a foreign key of the actions, the message says why
				// and names what it could not delete.
				if msg := wimro.ErrorMessage(delErr); strings.Contains(msg, "still has unfinished actions") {
					byFK++
					if !strings.Contains(msg, c.names(sc)) {
						t.Fatalf("round %d: message %q does not name %s", i, msg, c.names(sc))
					}
				}
				sc.finishAll(t) // the DELETEs ran: idle again for the next round
			}
			t.Logf("%d of %d deletes were refused by a foreign key of the actions (the race), the others by the checks, the WAN links or the instance", byFK, rounds)
		})
	}
}

// Deleting an idle account or WIM keeps the finished history of its
// actions, detached from the account.
func TestDeleteAccountKeepsFinishedHistory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		del  func(sc *scenario) (string, error)
	}{
		{"account", func(sc *scenario) (string, error) { return sc.eng.DeleteAccounts(sc.ctx, "tenantT", "wan1") }},
		{"wim", func(sc *scenario) (string, error) { return sc.eng.DeleteWIM(sc.ctx, "wan1") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sc := newScenario(t)
			v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", Networks: testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcB")})
			if err != nil {
				t.Fatal(err)
			}
			del, _, err := sc.eng.DeleteInstance(sc.ctx, "tenantT", "ns")
			if err != nil {
				t.Fatal(err)
			}
			sc.finishAll(t)
			if msg, err := c.del(sc); err != nil || !strings.Contains(msg, "deleted") {
				t.Fatalf("delete = %q, %v", msg, err)
			}
			if n := sc.countWhere(t, "wim_accounts", "uuid = $1", sc.account.UUID); n != 0 {
				t.Fatal("account not deleted")
			}
			for _, id := range []string{v.ActionID, del.UUID} {
				got, err := sc.eng.GetInstanceAction(sc.ctx, "tenantT", v.UUID, id)
				if err != nil || len(got.VimActions) != 1 || got.VimActions[0].WIMAccountID != nil || got.VimActions[0].Status != wimro.ActionDone {
					t.Fatalf("history of %s = %+v, %v", id, got.VimActions, err)
				}
			}
		})
	}
}
