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
	prev, stale, err := b.db.SetAccountStatus(b.ctx, a.UUID, wimro.AccountError, long, t0)
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
	b.db.RecordAccountCheck(b.ctx, logger, a.UUID, t0.Add(time.Second), nil)
	if !strings.Contains(log.String(), "level=INFO") {
		t.Fatalf("no INFO line on recovery: %q", log.String())
	}
	log.Reset()
	b.db.RecordAccountCheck(b.ctx, logger, a.UUID, t0.Add(2*time.Second), nil)
	if log.Len() != 0 {
		t.Fatalf("logged without a change: %q", log.String())
	}
	got, _ = b.db.GetAccount(b.ctx, a.UUID)
	if got.Status != wimro.AccountActive || got.StatusMsg != nil {
		t.Fatalf("after a passing check: %q %v", got.Status, got.StatusMsg)
	}

	// A check begun before the last recorded one (a slow check of the
	// password an edit replaced) is dropped: the newer result stays.
	prev, stale, err = b.db.SetAccountStatus(b.ctx, a.UUID, wimro.AccountError, "old password", t0.Add(time.Second))
	if err != nil || !stale || prev != wimro.AccountActive {
		t.Fatalf("overtaken check: prev %q stale %v err %v; want ACTIVE, stale", prev, stale, err)
	}
	got, _ = b.db.GetAccount(b.ctx, a.UUID)
	if got.Status != wimro.AccountActive {
		t.Fatalf("an overtaken check overwrote the newer result: %q", got.Status)
	}

	if _, _, err := b.db.SetAccountStatus(b.ctx, "00000000-0000-0000-0000-000000000000", wimro.AccountActive, "", time.Now()); wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("unknown account: %v, want ENOTFOUND", err)
	}
}
