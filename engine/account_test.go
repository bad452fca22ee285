package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/persistence"
)

func TestCreateAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0, t1 := b.Tenant(t, "tenant0"), b.Tenant(t, "tenant1")
	w := b.WIM(t, "wim0")

	a := b.Account(t, "tenant0", "wim0", engine.AccountInput{User: ptr("admin"), Password: ptr(engine.Secret("s3cret")), Config: map[string]any{"x": 1.0}})
	if *a.Name != "tenant0" || a.WIMID != w.UUID || a.Association.TenantID != t0.UUID || a.WIM.UUID != w.UUID || a.Tenant.UUID != t0.UUID {
		t.Fatalf("CreateAccount = %+v", a)
	}
	if a.Password == nil || *a.Password != engine.Masked {
		t.Fatalf("password shown as %v", a.Password)
	}
	// Sealed at rest: the column never holds the clear text.
	stored, err := b.db.GetAccount(b.ctx, a.UUID)
	if err != nil || len(stored.Password) == 0 || bytes.Contains(stored.Password, []byte("s3cret")) {
		t.Fatalf("stored password = %q, %v", stored.Password, err)
	}
	if clear, err := b.eng.AccountPassword(stored); err != nil || clear != "s3cret" {
		t.Fatalf("AccountPassword = %q, %v", clear, err)
	}

	// Attaching the same tenant again is a conflict naming both.
	_, err = b.eng.CreateAccount(b.ctx, "tenant0", "wim0", engine.AccountInput{Name: ptr("another")})
	wantCode(t, err, wimro.ECONFLICT)
	if msg := wimro.ErrorMessage(err); !strings.Contains(msg, "There is already a wim account attaching the given wim and tenant") || !strings.Contains(msg, w.UUID) || !strings.Contains(msg, t0.UUID) {
		t.Fatalf("message = %q", msg)
	}
	if _, err := b.db.FindAccountByName(b.ctx, w.UUID, "another"); err != nil {
		t.Fatal(err)
	} else if acct, _ := b.db.FindAccountByName(b.ctx, w.UUID, "another"); acct != nil {
		t.Fatal("account of a refused attach was kept")
	}

	// Reusing an account by name with different credentials is refused.
	_, err = b.eng.CreateAccount(b.ctx, "tenant1", "wim0", engine.AccountInput{Name: ptr("tenant0"), User: ptr("other"), Password: ptr(engine.Secret("wrong"))})
	wantCode(t, err, wimro.ECONFLICT)
	if msg := wimro.ErrorMessage(err); !strings.Contains(msg, "attempt to overwrite") || !strings.Contains(msg, "user, password") {
		t.Fatalf("message = %q", msg)
	}
	// With the same credentials (or the name only) it is shared.
	shared := b.Account(t, "tenant1", "wim0", engine.AccountInput{Name: ptr("tenant0"), User: ptr("admin"), Password: ptr(engine.Secret("s3cret"))})
	if shared.UUID != a.UUID || shared.Association.TenantID != t1.UUID {
		t.Fatalf("shared account = %+v", shared)
	}
	if all, _ := b.db.ListAccounts(b.ctx); len(all) != 1 {
		t.Fatalf("%d accounts, want 1 shared", len(all))
	}

	_, err = b.eng.CreateAccount(b.ctx, "nobody", "wim0", engine.AccountInput{})
	wantCode(t, err, wimro.ENOTFOUND)
	_, err = b.eng.CreateAccount(b.ctx, "tenant0", "nowim", engine.AccountInput{})
	wantCode(t, err, wimro.ENOTFOUND)
	// "any" is not a tenant here.
	_, err = b.eng.CreateAccount(b.ctx, "any", "wim0", engine.AccountInput{})
	wantCode(t, err, wimro.ENOTFOUND)
	_, err = b.eng.CreateAccount(b.ctx, "tenant0", "wim0", engine.AccountInput{Name: ptr("a(b)")})
	wantField(t, err, "wim_account.name")
}

func TestUpdateAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Tenant(t, "t0")
	b.Tenant(t, "t1")
	b.WIM(t, "wim0")
	a0 := b.Account(t, "t0", "wim0", engine.AccountInput{User: ptr("u0"), Password: ptr(engine.Secret("p0")), Config: map[string]any{"a": 1.0, "b": 2.0}})
	a1 := b.Account(t, "t1", "wim0", engine.AccountInput{User: ptr("u1"), Password: ptr(engine.Secret("p1"))})

	// Without a password the stored one is kept (OSM overwrote it with its
	// mask).
	out, err := b.eng.UpdateAccounts(b.ctx, "t0", "wim0", engine.AccountInput{Name: ptr("renamed"), User: ptr("root"), Config: map[string]any{"b": nil, "c": 3.0}})
	if err != nil || len(out) != 1 || *out[0].Name != "renamed" || *out[0].User != "root" || *out[0].Password != engine.Masked {
		t.Fatalf("UpdateAccounts = %+v, %v", out, err)
	}
	if cfg := out[0].Config; cfg["a"] != 1.0 || cfg["c"] != 3.0 || len(cfg) != 2 {
		t.Fatalf("merged config = %v", cfg)
	}
	stored, _ := b.db.GetAccount(b.ctx, a0.UUID)
	if p, _ := b.eng.AccountPassword(stored); p != "p0" {
		t.Fatalf("password after edit without password = %q", p)
	}

	out, err = b.eng.UpdateAccounts(b.ctx, "any", "wim0", engine.AccountInput{Password: ptr(engine.Secret("new"))})
	if err != nil || len(out) != 2 {
		t.Fatalf("UpdateAccounts(any) = %+v, %v", out, err)
	}
	for _, id := range []string{a0.UUID, a1.UUID} {
		stored, _ := b.db.GetAccount(b.ctx, id)
		if p, _ := b.eng.AccountPassword(stored); p != "new" {
			t.Fatalf("password of %s = %q", id, p)
		}
	}

	b.Tenant(t, "t2")
	_, err = b.eng.UpdateAccounts(b.ctx, "t2", "wim0", engine.AccountInput{User: ptr("x")})
	wantCode(t, err, wimro.ENOTFOUND)
	_, err = b.eng.UpdateAccounts(b.ctx, "t0", "wim0", engine.AccountInput{Name: ptr("t1")})
	wantCode(t, err, wimro.ECONFLICT)
}

func TestDeleteAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Tenant(t, "t0")
	b.Tenant(t, "t1")
	b.Tenant(t, "t2")
	w := b.WIM(t, "wim0")
	b.Account(t, "t0", "wim0", engine.AccountInput{Name: ptr("wim-account00")})
	b.Account(t, "t1", "wim0", engine.AccountInput{})
	// t2 shares t1's account.
	b.Account(t, "t2", "wim0", engine.AccountInput{Name: ptr("t1")})

	msg, err := b.eng.DeleteAccounts(b.ctx, "t0", "wim0")
	if err != nil || !strings.Contains(msg, "account `wim-account00` deleted") {
		t.Fatalf("DeleteAccounts = %q, %v", msg, err)
	}
	// Detaching one tenant of a shared account keeps it for the other.
	msg, err = b.eng.DeleteAccounts(b.ctx, "t1", "wim0")
	if err != nil || !strings.Contains(msg, "kept") {
		t.Fatalf("DeleteAccounts(shared) = %q, %v", msg, err)
	}
	if att, _ := b.db.ListAttachedAccounts(b.ctx, w.UUID, ""); len(att) != 1 {
		t.Fatalf("attached = %d, want 1", len(att))
	}
	_, err = b.eng.DeleteAccounts(b.ctx, "t0", "wim0")
	wantCode(t, err, wimro.ENOTFOUND)
	msg, err = b.eng.DeleteAccounts(b.ctx, "any", "wim0")
	if err != nil || !strings.Contains(msg, "account `t1` deleted") {
		t.Fatalf("DeleteAccounts(any) = %q, %v", msg, err)
	}
	if all, _ := b.db.ListAccounts(b.ctx); len(all) != 0 {
		t.Fatalf("%d accounts left", len(all))
	}
}

// Account changes wake the workers of every wimd process through NOTIFY,
// sent only when the change commits.
func TestAccountChangesNotify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := b.db.Pool().Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(b.ctx, "LISTEN "+persistence.ChannelAccounts); err != nil {
		t.Fatal(err)
	}
	wait := func() string {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return n.Payload
	}
	b.Tenant(t, "t0")
	b.WIM(t, "wim0")
	a := b.Account(t, "t0", "wim0", engine.AccountInput{})
	if p := wait(); p != a.UUID {
		t.Fatalf("payload = %q, want %q", p, a.UUID)
	}
	// A refused change sends nothing: the next notification is the edit's.
	if _, err := b.eng.CreateAccount(b.ctx, "t0", "wim0", engine.AccountInput{}); err == nil {
		t.Fatal("second attach accepted")
	}
	if _, err := b.eng.UpdateAccounts(b.ctx, "t0", "wim0", engine.AccountInput{User: ptr("u")}); err != nil {
		t.Fatal(err)
	}
	if p := wait(); p != a.UUID {
		t.Fatalf("payload = %q", p)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 200*time.Millisecond)
	defer cancel()
	if n, err := conn.Conn().WaitForNotification(ctx); err == nil {
		t.Fatalf("unexpected extra notification %q", fmt.Sprint(n.Payload))
	}
}

func TestTenantsAndDatacenters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := b.Tenant(t, "t0")
	dc := b.Datacenter(t, "dc0", t0)
	if dc.VimURL != "http://dc0.example:5000" {
		t.Fatalf("vim_url not cleaned: %q", dc.VimURL)
	}
	if _, err := b.eng.GetDatacenter(b.ctx, "t0", "dc0"); err != nil {
		t.Fatal(err)
	}
	_, err := b.eng.AttachDatacenter(b.ctx, "t0", "dc0")
	wantCode(t, err, wimro.ECONFLICT)
	list, err := b.eng.ListDatacenters(b.ctx, "any")
	if err != nil || len(list) != 1 {
		t.Fatalf("ListDatacenters = %v, %v", list, err)
	}
	_, err = b.eng.ListDatacenters(b.ctx, "nobody")
	wantCode(t, err, wimro.ENOTFOUND)

	up, err := b.eng.UpdateDatacenter(b.ctx, "dc0", engine.DatacenterInput{Config: map[string]any{"external_connections": []any{
		map[string]any{"condition": map[string]any{"provider:physical_network": "physnet1"}, "vim_external_port": map[string]any{"switch": "00:00:00:00:00:00:00:0a", "port": "1"}},
	}}})
	if err != nil || up.Config["external_connections"] == nil {
		t.Fatalf("UpdateDatacenter = %+v, %v", up, err)
	}
	_, err = b.eng.UpdateDatacenter(b.ctx, "dc0", engine.DatacenterInput{Config: map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": "x"}}}}})
	wantField(t, err, "datacenter.config.external_connections[0].vim_external_port")
	_, err = b.eng.CreateDatacenter(b.ctx, engine.DatacenterInput{Name: ptr("dc1")})
	wantField(t, err, "datacenter.vim_url")

	msg, err := b.eng.DetachDatacenter(b.ctx, "t0", "dc0")
	if err != nil || !strings.Contains(msg, "detached") {
		t.Fatalf("DetachDatacenter = %q, %v", msg, err)
	}
	if msg, err := b.eng.DeleteDatacenter(b.ctx, "dc0"); err != nil || !strings.Contains(msg, "deleted") {
		t.Fatalf("DeleteDatacenter = %q, %v", msg, err)
	}

	// Deleting a tenant deletes the accounts that served only it.
	b.Tenant(t, "t1")
	b.WIM(t, "wim0")
	b.Account(t, "t0", "wim0", engine.AccountInput{})
	b.Account(t, "t1", "wim0", engine.AccountInput{Name: ptr("t0")}) // shared
	b.WIM(t, "wim1")
	b.Account(t, "t0", "wim1", engine.AccountInput{})
	if _, err := b.eng.DeleteTenant(b.ctx, "t0"); err != nil {
		t.Fatal(err)
	}
	all, _ := b.db.ListAccounts(b.ctx)
	if len(all) != 1 || *all[0].Name != "t0" {
		t.Fatalf("accounts after tenant delete = %+v", all)
	}
	_, err = b.eng.CreateTenant(b.ctx, engine.TenantInput{Name: ""})
	wantField(t, err, "tenant.name")
}
