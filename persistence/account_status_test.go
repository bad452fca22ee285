package persistence_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wimro/wimro"
)

// A status write records the check (message cleaned and bounded), returns
// the status before, keeps modified_at (a check is not an edit), and
// counts in CountAccountsByStatus; RecordAccountCheck logs a change only.
func TestAccountStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.attach(t, b.wim(t, "w1"), b.tenant(t, "t1"))
	if a.Status != wimro.AccountUnknown || a.CheckedAt != nil {
		t.Fatalf("new account: status %q checked_at %v, want UNKNOWN never checked", a.Status, a.CheckedAt)
	}
	long := "401 Unauthorized\x00 " + strings.Repeat("é", 2000) + "\xff"
	t0 := time.Now()
	prev, stale, err := b.db.SetAccountStatus(b.ctx, a.UUID, wimro.AccountError, long, t0, a.ModifiedAt)
	if err != nil || stale || prev != wimro.AccountUnknown {
		t.Fatalf("SetAccountStatus = %q, %v; want UNKNOWN before", prev, err)
	}
	got, err := b.db.GetAccount(b.ctx, a.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != wimro.AccountError || got.StatusMsg == nil || got.CheckedAt == nil {
		t.Fatalf("after the write: %+v", got)
	}
	if m := *got.StatusMsg; !strings.HasPrefix(m, "401 Unauthorized") || strings.ContainsRune(m, 0) || !utf8.ValidString(m) || len(m) > 1024+8 {
		t.Fatalf("status_msg not cleaned or bounded: %d bytes %.40q", len(m), m)
	}
	if !got.ModifiedAt.Equal(a.ModifiedAt) {
		t.Fatalf("modified_at moved with a status write: %v -> %v", a.ModifiedAt, got.ModifiedAt)
	}
	n, err := b.db.CountAccountsByStatus(b.ctx)
	if err != nil || n[wimro.AccountError] != 1 || n[wimro.AccountActive] != 0 || n[wimro.AccountUnknown] != 0 {
		t.Fatalf("CountAccountsByStatus = %v, %v", n, err)
	}

	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	b.db.RecordAccountCheck(b.ctx, logger, a.UUID, t0.Add(time.Second), a.ModifiedAt, nil)
	if !strings.Contains(log.String(), "level=INFO") {
		t.Fatalf("no INFO line on recovery: %q", log.String())
	}
	log.Reset()
	b.db.RecordAccountCheck(b.ctx, logger, a.UUID, t0.Add(2*time.Second), a.ModifiedAt, nil)
	if log.Len() != 0 {
		t.Fatalf("logged without a change: %q", log.String())
	}
	got, _ = b.db.GetAccount(b.ctx, a.UUID)
	if got.Status != wimro.AccountActive || got.StatusMsg != nil {
		t.Fatalf("after a passing check: %q %v", got.Status, got.StatusMsg)
	}

	// A check begun before the last recorded one (a slow check of the
	// password an edit replaced) is dropped: the newer result stays.
	prev, stale, err = b.db.SetAccountStatus(b.ctx, a.UUID, wimro.AccountError, "old password", t0.Add(time.Second), a.ModifiedAt)
	if err != nil || !stale || prev != wimro.AccountActive {
		t.Fatalf("overtaken check: prev %q stale %v err %v; want ACTIVE, stale", prev, stale, err)
	}
	got, _ = b.db.GetAccount(b.ctx, a.UUID)
	if got.Status != wimro.AccountActive {
		t.Fatalf("an overtaken check overwrote the newer result: %q", got.Status)
	}

	// A check that began later but with credentials read before an edit
	// (a connector cached before the edit's notification arrived) is
	// dropped too: its verdict is on a password that is gone.
	if _, err := b.db.Pool().Exec(b.ctx, `UPDATE wim_accounts SET password = 'edited' WHERE uuid = $1`, a.UUID); err != nil {
		t.Fatal(err)
	}
	edited, _ := b.db.GetAccount(b.ctx, a.UUID)
	if !edited.ModifiedAt.After(a.ModifiedAt) {
		t.Fatalf("the edit did not move modified_at: %v", edited.ModifiedAt)
	}
	prev, stale, err = b.db.SetAccountStatus(b.ctx, a.UUID, wimro.AccountError, "401 with the old password", t0.Add(3*time.Second), a.ModifiedAt)
	if err != nil || !stale || prev != wimro.AccountActive {
		t.Fatalf("check on credentials from before the edit: prev %q stale %v err %v; want ACTIVE, stale", prev, stale, err)
	}
	if _, stale, err = b.db.SetAccountStatus(b.ctx, a.UUID, wimro.AccountError, "401 with the new password", t0.Add(4*time.Second), edited.ModifiedAt); err != nil || stale {
		t.Fatalf("check on the edited credentials: stale %v err %v", stale, err)
	}

	if _, _, err := b.db.SetAccountStatus(b.ctx, "00000000-0000-0000-0000-000000000000", wimro.AccountActive, "", time.Now(), time.Now()); wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("unknown account: %v, want ENOTFOUND", err)
	}
}
