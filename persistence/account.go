package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

const accountCols = `a.uuid, a.name, a.wim_id, a.created, a.username, a.password, a.config, a.created_at, a.modified_at, a.status, a.status_msg, a.checked_at`

// CreateAccount inserts a; an empty UUID gets a new one. a.Password must
// already be sealed.
func (s *Store) CreateAccount(ctx context.Context, a wimro.WIMAccount) (wimro.WIMAccount, error) {
	return getOne[wimro.WIMAccount](ctx, s, "wim_accounts", "wim_id="+a.WIMID,
		`INSERT INTO wim_accounts AS a (uuid, name, wim_id, created, username, password, config)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+accountCols,
		newUUID(a.UUID), a.Name, a.WIMID, a.Created, a.User, a.Password, a.Config)
}

// GetAccount reads an account by uuid, without any association join, so an
// account shared by several tenants is still one row.
func (s *Store) GetAccount(ctx context.Context, id string) (wimro.WIMAccount, error) {
	return getOne[wimro.WIMAccount](ctx, s, "wim_accounts", "uuid="+id,
		`SELECT `+accountCols+` FROM wim_accounts a WHERE a.uuid = $1`, id)
}

// FindAccountByName returns the account of wimID named name, or nil.
func (s *Store) FindAccountByName(ctx context.Context, wimID, name string) (*wimro.WIMAccount, error) {
	list, err := getAll[wimro.WIMAccount](ctx, s, "wim_accounts",
		`SELECT `+accountCols+` FROM wim_accounts a WHERE a.wim_id = $1 AND a.name = $2`, wimID, name)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	return &list[0], nil
}

// ListAccounts returns every account, oldest first. The coordinator
// assigns from this list.
func (s *Store) ListAccounts(ctx context.Context) ([]wimro.WIMAccount, error) {
	return getAll[wimro.WIMAccount](ctx, s, "wim_accounts",
		`SELECT `+accountCols+` FROM wim_accounts a ORDER BY a.created_at, a.uuid`)
}

// ListAccountsOfWIM returns the accounts of one WIM.
func (s *Store) ListAccountsOfWIM(ctx context.Context, wimID string) ([]wimro.WIMAccount, error) {
	return getAll[wimro.WIMAccount](ctx, s, "wim_accounts",
		`SELECT `+accountCols+` FROM wim_accounts a WHERE a.wim_id = $1 ORDER BY a.created_at, a.uuid`, wimID)
}

// AttachedAccount is an account with the association that attaches it to a
// tenant.
type AttachedAccount struct {
	Account     wimro.WIMAccount
	Association wimro.WIMTenantAssociation
}

// ListAttachedAccounts returns the accounts that attach wimID to tenantID,
// or to any tenant when tenantID is "". An account shared by two tenants
// appears once per association.
func (s *Store) ListAttachedAccounts(ctx context.Context, wimID, tenantID string) ([]AttachedAccount, error) {
	sql := `SELECT ` + accountCols + `, wt.id, wt.nfvo_tenant_id, wt.wim_id, wt.wim_account_id, wt.created_at, wt.modified_at
		FROM wim_accounts a JOIN wim_nfvo_tenants wt ON wt.wim_account_id = a.uuid
		WHERE wt.wim_id = $1 AND ($2 = '' OR wt.nfvo_tenant_id::text = $2)
		ORDER BY wt.id`
	rows, err := s.query(ctx, "wim_accounts", sql, wimID, tenantID)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AttachedAccount, error) {
		var r AttachedAccount
		a, w := &r.Account, &r.Association
		err := row.Scan(&a.UUID, &a.Name, &a.WIMID, &a.Created, &a.User, &a.Password, &a.Config, &a.CreatedAt, &a.ModifiedAt, &a.Status, &a.StatusMsg, &a.CheckedAt,
			&w.ID, &w.TenantID, &w.WIMID, &w.WIMAccountID, &w.CreatedAt, &w.ModifiedAt)
		return r, err
	})
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: read wim_accounts: %w", err))
	}
	return list, nil
}

// AccountUpdate names the columns to change; nil fields are left alone, so
// an edit that does not mention the password keeps the stored one.
type AccountUpdate struct {
	Name     *string
	User     *string
	Password []byte // sealed; nil keeps the stored password
	Config   *map[string]any
	Created  *bool
}

// UpdateAccount changes only the supplied columns of account id.
func (s *Store) UpdateAccount(ctx context.Context, id string, u AccountUpdate) (wimro.WIMAccount, error) {
	var (
		sets []string
		args = []any{id}
	)
	set := func(col string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if u.Name != nil {
		set("name", *u.Name)
	}
	if u.User != nil {
		set("username", *u.User)
	}
	if u.Password != nil {
		set("password", u.Password)
	}
	if u.Config != nil {
		set("config", *u.Config)
	}
	if u.Created != nil {
		set("created", *u.Created)
	}
	if len(sets) == 0 {
		return s.GetAccount(ctx, id)
	}
	return getOne[wimro.WIMAccount](ctx, s, "wim_accounts", "uuid="+id,
		`UPDATE wim_accounts AS a SET `+strings.Join(sets, ", ")+` WHERE a.uuid = $1 RETURNING `+accountCols, args...)
}

// DeleteAccount deletes an account and its associations; its finished
// actions stay as history, detached from it (wim_account_id NULL). WAN
// links or unfinished actions that still use it make it a conflict
// (Constraint tells which; ConstraintActionAccount for actions). Run it
// inside DB.Tx so that a refused delete detaches nothing either.
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	if err := s.detachFinishedActions(ctx, `SELECT $1::uuid`, id); err != nil {
		return err
	}
	n, err := s.exec(ctx, "wim_accounts", `DELETE FROM wim_accounts WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("wim_accounts", "uuid="+id)
	}
	return nil
}

const associationCols = `id, nfvo_tenant_id, wim_id, wim_account_id, created_at, modified_at`

// ConstraintWIMTenant is the unique key that allows one account per
// (WIM, tenant).
const ConstraintWIMTenant = "wim_nfvo_tenant"

// CreateAssociation attaches tenantID to wimID through accountID. A second
// account for the same (WIM, tenant) violates ConstraintWIMTenant.
func (s *Store) CreateAssociation(ctx context.Context, tenantID, wimID, accountID string) (wimro.WIMTenantAssociation, error) {
	return getOne[wimro.WIMTenantAssociation](ctx, s, "wim_nfvo_tenants", "wim_id="+wimID,
		`INSERT INTO wim_nfvo_tenants (nfvo_tenant_id, wim_id, wim_account_id) VALUES ($1, $2, $3) RETURNING `+associationCols,
		tenantID, wimID, accountID)
}

// ListAssociationsOfAccount returns the tenants an account serves.
func (s *Store) ListAssociationsOfAccount(ctx context.Context, accountID string) ([]wimro.WIMTenantAssociation, error) {
	return getAll[wimro.WIMTenantAssociation](ctx, s, "wim_nfvo_tenants",
		`SELECT `+associationCols+` FROM wim_nfvo_tenants WHERE wim_account_id = $1 ORDER BY id`, accountID)
}

// DeleteAssociation detaches one tenant from a WIM.
func (s *Store) DeleteAssociation(ctx context.Context, id int64) error {
	n, err := s.exec(ctx, "wim_nfvo_tenants", `DELETE FROM wim_nfvo_tenants WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("wim_nfvo_tenants", fmt.Sprintf("id=%d", id))
	}
	return nil
}

// maxStatusMsg bounds a stored status message: a controller may answer
// with a whole HTML page.
const maxStatusMsg = 1024

// SetAccountStatus records the result of a credentials check of account id
// (msg is cleaned and bounded; "" stores none) and returns the status it
// had before, so that the caller can log a change. It touches nothing but
// the status columns: no notification, no cascade, modified_at kept. A
// deleted account is ENOTFOUND. started is when the check began and
// becomes checked_at: a result is written only if no check that began
// later was recorded first, so a slow check of an old password cannot
// overwrite the check that followed the edit. asOf is the account's
// modified_at when the checked credentials were read: a result is written
// only if the account was not edited since (a periodic check may run on a
// connector cached before an edit whose notification has not arrived yet;
// its verdict is on credentials that are gone). stale is true when the
// result was dropped.
func (s *Store) SetAccountStatus(ctx context.Context, id, status, msg string, started, asOf time.Time) (previous string, stale bool, err error) {
	var m *string
	if msg != "" {
		c := wimro.CleanText(msg, maxStatusMsg)
		m = &c
	}
	var written bool
	err = s.q.QueryRow(ctx,
		`WITH old AS (SELECT uuid, status, checked_at, modified_at FROM wim_accounts WHERE uuid = $1 FOR UPDATE),
		 upd AS (
			UPDATE wim_accounts AS a SET status = $2, status_msg = $3, checked_at = $4
			FROM old WHERE a.uuid = old.uuid AND (old.checked_at IS NULL OR old.checked_at <= $4) AND old.modified_at <= $5
			RETURNING a.uuid)
		 SELECT old.status, EXISTS (SELECT 1 FROM upd) FROM old`, id, status, m, started, asOf).Scan(&previous, &written)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, notFound("wim_accounts", "uuid="+id)
	}
	if err != nil {
		return "", false, mapError(fmt.Errorf("persistence: write wim_accounts status: %w", err))
	}
	return previous, !written, nil
}

// CountAccountsByStatus returns how many accounts have each status (every
// status present, zero included), for the metrics.
func (s *Store) CountAccountsByStatus(ctx context.Context) (map[string]int, error) {
	rows, err := s.query(ctx, "wim_accounts", `SELECT status, count(*) FROM wim_accounts GROUP BY status`)
	if err != nil {
		return nil, err
	}
	out := map[string]int{wimro.AccountUnknown: 0, wimro.AccountActive: 0, wimro.AccountError: 0}
	var st string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error { out[st] = n; return nil })
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: count wim_accounts: %w", err))
	}
	return out, nil
}

// RecordAccountCheck records the result err of a credentials check of
// account id, begun at started with the credentials of the account as it
// was at asOf (SetAccountStatus), and logs a change: WARN
// when the check fails, INFO when the account recovers. The engine (after
// a write) and the workers (periodically) record through it, so both log
// alike; a result overtaken by a later check is dropped silently.
func (s *Store) RecordAccountCheck(ctx context.Context, log *slog.Logger, id string, started, asOf time.Time, err error) {
	status, msg := wimro.AccountActive, ""
	if err != nil {
		status, msg = wimro.AccountError, err.Error()
	}
	// Recorded even if ctx ended: the check's result is known.
	prev, stale, werr := s.SetAccountStatus(context.WithoutCancel(ctx), id, status, msg, started, asOf)
	if werr != nil {
		if wimro.ErrorCode(werr) != wimro.ENOTFOUND && !errors.Is(werr, context.Canceled) {
			log.Warn("record account status", slog.Any("error", werr))
		}
		return
	}
	if stale {
		return
	}
	switch {
	case err != nil && prev != wimro.AccountError:
		log.Warn("account credentials check failed", slog.Any("error", err))
	case err == nil && prev == wimro.AccountError:
		log.Info("account credentials check passes again")
	}
}
