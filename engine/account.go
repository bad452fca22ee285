package engine

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// Masked is what the API shows instead of a stored secret.
const Masked = secret.Masked

// Secret is a clear-text secret on its way in. It never prints, logs or
// marshals its value.
type Secret string

func (Secret) String() string                 { return Masked }
func (Secret) LogValue() slog.Value           { return slog.StringValue(Masked) }
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Masked + `"`), nil }

// AccountInput is the body of an account create or edit. Nil fields are
// not changed on edit: an edit without password keeps the stored one.
type AccountInput struct {
	Name     *string        `json:"name"`
	User     *string        `json:"user"`
	Password *Secret        `json:"password"`
	Config   map[string]any `json:"config"`
}

func (in AccountInput) validate() error {
	if in.Name != nil {
		if err := checkName("wim_account.name", *in.Name, 255); err != nil {
			return err
		}
	}
	if in.User != nil && len(*in.User) > 255 {
		return wimro.FieldErrorf("wim_account.user", "wim_account.user must be at most 255 characters")
	}
	if in.Password != nil && len(*in.Password) > 1024 {
		// openmano capped passwords at 60 characters and forbade quotes;
		// sealed at rest, any character is safe here.
		return wimro.FieldErrorf("wim_account.password", "wim_account.password must be at most 1024 characters")
	}
	if err := refuseSealed("wim_account.", nil, in.Config); err != nil {
		return err
	}
	if _, ok := in.Config["wim_port_mapping"]; ok {
		return wimro.FieldErrorf("wim_account.config.wim_port_mapping", "port mappings belong to the WIM (wim.config.wim_port_mapping or .../port_mapping), not to an account")
	}
	return nil
}

// AccountView is an account as the API shows it: the password masked.
type AccountView struct {
	UUID       string         `json:"uuid"`
	Name       *string        `json:"name"`
	WIMID      string         `json:"wim_id"`
	Created    bool           `json:"created"`
	User       *string        `json:"user"`
	Password   *string        `json:"password"`
	Config     map[string]any `json:"config"`
	CreatedAt  time.Time      `json:"created_at"`
	ModifiedAt time.Time      `json:"modified_at"`
	AccountStatus
}

// AccountStatus is the result of the account's last credentials check:
// UNKNOWN before the first one finished, ACTIVE, or ERROR with the
// controller's message.
type AccountStatus struct {
	Status    string     `json:"status"`
	StatusMsg *string    `json:"status_msg"`
	CheckedAt *time.Time `json:"checked_at"`
}

func statusOf(a wimro.WIMAccount) AccountStatus {
	st := a.Status
	if st == "" {
		st = wimro.AccountUnknown
	}
	return AccountStatus{Status: st, StatusMsg: a.StatusMsg, CheckedAt: a.CheckedAt}
}

// AccountFull is the create response: the account with its association,
// WIM and tenant.
type AccountFull struct {
	AccountView
	Association wimro.WIMTenantAssociation `json:"association"`
	WIM         wimro.WIM                  `json:"wim"`
	Tenant      wimro.Tenant               `json:"nfvo_tenant"`
}

// AccountShort is the edit response.
type AccountShort struct {
	UUID     string         `json:"uuid"`
	Name     *string        `json:"name"`
	User     *string        `json:"user"`
	Password *string        `json:"password"`
	Config   map[string]any `json:"config"`
	AccountStatus
}

func masked(sealed []byte) *string {
	if len(sealed) == 0 {
		return nil
	}
	m := Masked
	return &m
}

func accountView(a wimro.WIMAccount) AccountView {
	return AccountView{
		UUID: a.UUID, Name: a.Name, WIMID: a.WIMID, Created: a.Created, User: a.User,
		Password: masked(a.Password), Config: secret.MaskConfig(a.Config), CreatedAt: a.CreatedAt, ModifiedAt: a.ModifiedAt,
		AccountStatus: statusOf(a),
	}
}

func (e *Engine) seal(p *Secret) ([]byte, error) {
	if p == nil || *p == "" {
		return nil, nil
	}
	b, err := e.box.Seal([]byte(*p))
	if err != nil {
		return nil, fmt.Errorf("seal account password: %w", err)
	}
	return b, nil
}

// AccountPassword returns the clear-text password of an account, for
// whoever builds its connector. It is never part of an API answer.
func (e *Engine) AccountPassword(a wimro.WIMAccount) (string, error) {
	if len(a.Password) == 0 {
		return "", nil
	}
	b, err := e.box.Open(a.Password)
	if err != nil {
		return "", fmt.Errorf("open password of account %s: %w", a.UUID, err)
	}
	return string(b), nil
}

// CreateAccount attaches a tenant to a WIM through an account. The account
// name defaults to the tenant name; an existing account of that name is
// reused when the supplied user and password match it.
func (e *Engine) CreateAccount(ctx context.Context, tenantRef, wimRef string, in AccountInput) (AccountFull, error) {
	if err := in.validate(); err != nil {
		return AccountFull{}, err
	}
	sealed, err := e.seal(in.Password)
	if err != nil {
		return AccountFull{}, err
	}
	// Check the connector settings before the transaction (building a
	// connector may read files); the refusal counts only if a new account
	// is made, with the settings checked.
	var checked connectorSettings
	var checkErr error
	if e.conns != nil {
		w, err := e.db.GetWIM(ctx, wimRef)
		if err != nil {
			return AccountFull{}, err
		}
		checkErr = e.checkConnector(w, in.Config, "", "wim_account.config")
		checked = e.settingsOf(w, nil)
	}
	var out AccountFull
	err = e.db.Tx(ctx, func(s *persistence.Store) error {
		w, err := s.GetWIM(ctx, wimRef)
		if err != nil {
			return err
		}
		t, err := s.GetTenant(ctx, tenantRef)
		if err != nil {
			return err
		}
		name := t.Name
		if in.Name != nil {
			name = *in.Name
		}
		acct, err := s.FindAccountByName(ctx, w.UUID, name)
		if err != nil {
			return err
		}
		if acct != nil {
			if err := e.checkReuse(*acct, in); err != nil {
				return err
			}
		} else {
			if e.conns != nil && !checked.equal(e.settingsOf(w, nil)) {
				return errChangedWhileChecked("WIM " + w.UUID)
			}
			if checkErr != nil {
				return checkErr
			}
			cfg, err := e.box.SealConfig(in.Config)
			if err != nil {
				return fmt.Errorf("seal account config: %w", err)
			}
			created, err := s.CreateAccount(ctx, wimro.WIMAccount{
				Name: &name, WIMID: w.UUID, User: in.User, Password: sealed, Config: cfg,
			})
			if err != nil {
				return err
			}
			acct = &created
		}
		assoc, err := s.CreateAssociation(ctx, t.UUID, w.UUID, acct.UUID)
		if err != nil {
			if persistence.Constraint(err) == persistence.ConstraintWIMTenant {
				return &wimro.Error{Code: wimro.ECONFLICT, Err: err, Message: fmt.Sprintf(
					"There is already a wim account attaching the given wim and tenant: `%s` <> `%s`", w.UUID, t.UUID)}
			}
			return err
		}
		out = AccountFull{AccountView: accountView(*acct), Association: assoc, WIM: maskWIM(w), Tenant: t}
		return s.NotifyAccounts(ctx, acct.UUID)
	})
	if err != nil {
		return out, err
	}
	out.AccountStatus = e.checkAccounts(ctx, out.UUID)[out.UUID]
	return out, nil
}

// checkReuse refuses to attach an existing account when the request
// supplies a user or password that differs from it: that would silently
// overwrite (or ignore) credentials another tenant relies on.
func (e *Engine) checkReuse(a wimro.WIMAccount, in AccountInput) error {
	var differ []string
	if in.User != nil && (a.User == nil || *a.User != *in.User) {
		differ = append(differ, "user")
	}
	if in.Password != nil {
		stored, err := e.AccountPassword(a)
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare([]byte(stored), []byte(*in.Password)) != 1 {
			differ = append(differ, "password")
		}
	}
	if len(differ) == 0 {
		return nil
	}
	name := ""
	if a.Name != nil {
		name = *a.Name
	}
	return wimro.Errorf(wimro.ECONFLICT, "An attempt to overwrite an existing WIM account was identified\n"+
		"Account -- name: %s, uuid: %s\nDiffering fields: %s\nEdit the account first, and then attach it to a tenant",
		name, a.UUID, strings.Join(differ, ", "))
}

// attachedAccounts resolves the WIM and the tenant (or "any") and returns
// the accounts attaching them, 404 when there is none.
func (e *Engine) attachedAccounts(ctx context.Context, s *persistence.Store, tenantRef, wimRef string) (wimro.WIM, []persistence.AttachedAccount, error) {
	t, err := e.tenantFilter(ctx, s, tenantRef)
	if err != nil {
		return wimro.WIM{}, nil, err
	}
	w, err := s.GetWIM(ctx, wimRef)
	if err != nil {
		return wimro.WIM{}, nil, err
	}
	att, err := s.ListAttachedAccounts(ctx, w.UUID, tenantID(t))
	if err != nil {
		return wimro.WIM{}, nil, err
	}
	if len(att) == 0 {
		crit := "wim_id=" + w.UUID
		if t != nil {
			crit += " nfvo_tenant_id=" + t.UUID
		}
		return wimro.WIM{}, nil, wimro.Errorf(wimro.ENOTFOUND, "No record was found in the database: wim_accounts - `%s`", crit)
	}
	return w, att, nil
}

// UpdateAccounts edits the account attaching the WIM to the tenant, or with
// tenant "any" every account of the WIM that serves a tenant. Only the
// supplied fields change; config is merged (null removes a key).
func (e *Engine) UpdateAccounts(ctx context.Context, tenantRef, wimRef string, in AccountInput) ([]AccountShort, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	sealed, err := e.seal(in.Password)
	if err != nil {
		return nil, err
	}
	// merged is the WIM and the edited configs of its accounts: checked
	// before the transaction (building a connector may read files), and
	// compared with what the transaction writes.
	merged := func(w wimro.WIM, att []persistence.AttachedAccount) connectorSettings {
		accts := make([]wimro.WIMAccount, len(att))
		for i, aa := range att {
			accts[i] = aa.Account
			accts[i].Config = editedConfig(aa.Account.Config, in.Config)
		}
		return e.settingsOf(w, accts)
	}
	check := e.conns != nil && len(in.Config) > 0
	var checked connectorSettings
	if check {
		w, att, err := e.attachedAccounts(ctx, &e.db.Store, tenantRef, wimRef)
		if err != nil {
			return nil, err
		}
		checked = merged(w, att)
		for _, cfg := range checked.accounts {
			if err := e.checkConnector(w, cfg, "", "wim_account.config"); err != nil {
				return nil, err
			}
		}
	}
	var out []AccountShort
	err = e.db.Tx(ctx, func(s *persistence.Store) error {
		w, att, err := e.attachedAccounts(ctx, s, tenantRef, wimRef)
		if err != nil {
			return err
		}
		if check && !checked.equal(merged(w, att)) {
			return errChangedWhileChecked("WIM " + w.UUID)
		}
		seen := map[string]bool{}
		for _, aa := range att {
			a := aa.Account
			if seen[a.UUID] {
				continue // an account shared by two tenants is edited once
			}
			seen[a.UUID] = true
			u := persistence.AccountUpdate{Name: in.Name, User: in.User}
			if in.Password != nil {
				u.Password = sealed
				if sealed == nil {
					u.Password = []byte{} // an empty password clears it
				}
			}
			if len(in.Config) > 0 {
				cfg, err := e.box.SealConfig(editedConfig(a.Config, in.Config))
				if err != nil {
					return fmt.Errorf("seal account config: %w", err)
				}
				u.Config = &cfg
			}
			up, err := s.UpdateAccount(ctx, a.UUID, u)
			if err != nil {
				return err
			}
			out = append(out, AccountShort{UUID: up.UUID, Name: up.Name, User: up.User, Password: masked(up.Password), Config: secret.MaskConfig(up.Config), AccountStatus: statusOf(up)})
			if err := s.NotifyAccounts(ctx, a.UUID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	ids := make([]string, len(out))
	for i, a := range out {
		ids[i] = a.UUID
	}
	st := e.checkAccounts(ctx, ids...)
	for i := range out {
		out[i].AccountStatus = st[out[i].UUID]
	}
	return out, nil
}

// DeleteAccounts detaches the tenant (or with "any" every tenant) from the
// WIM. An account left serving no tenant is deleted (its finished actions
// stay as history); an account still serving another tenant is kept
// (openmano deleted it under the other tenant's feet). WAN links or
// unfinished actions of a deleted account make the whole request a
// conflict.
func (e *Engine) DeleteAccounts(ctx context.Context, tenantRef, wimRef string) (string, error) {
	var lines []string
	err := e.db.Tx(ctx, func(s *persistence.Store) error {
		w, att, err := e.attachedAccounts(ctx, s, tenantRef, wimRef)
		if err != nil {
			return err
		}
		touched := map[string]wimro.WIMAccount{}
		for _, aa := range att {
			if err := s.DeleteAssociation(ctx, aa.Association.ID); err != nil {
				return err
			}
			touched[aa.Account.UUID] = aa.Account
			lines = append(lines, fmt.Sprintf("Tenant `%s` detached from WIM `%s`.", aa.Association.TenantID, w.UUID))
		}
		ids := make([]string, 0, len(touched))
		for id := range touched {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			name := accountName(touched[id])
			left, err := s.ListAssociationsOfAccount(ctx, id)
			if err != nil {
				return err
			}
			if len(left) > 0 {
				lines = append(lines, fmt.Sprintf("WIM account `%s` kept: it still serves %d other tenant(s).", name, len(left)))
				continue
			}
			if err := checkIdle(ctx, s, id); err != nil {
				return err
			}
			if err := s.DeleteAccount(ctx, id); err != nil {
				return accountDeleteConflict(err, fmt.Sprintf("WIM account `%s`", name))
			}
			lines = append(lines, fmt.Sprintf("WIM account `%s` deleted.", name))
		}
		return s.NotifyAccounts(ctx, ids...)
	})
	return strings.Join(lines, "\n"), err
}

// accountName is how messages name an account: its name, else its uuid.
func accountName(a wimro.WIMAccount) string {
	if a.Name != nil {
		return *a.Name
	}
	return a.UUID
}

// maxListed caps the unfinished actions that a refused delete names.
const maxListed = 10

// checkIdle refuses to delete accounts that still have unfinished actions:
// a pending DELETE would then never remove its service from the
// controller. It gives a clear answer in the common case; under
// concurrency the RESTRICT foreign key of the actions is what keeps them
// (see accountDeleteConflict).
func checkIdle(ctx context.Context, s *persistence.Store, accountIDs ...string) error {
	u, err := s.UnfinishedActionsOfAccounts(ctx, accountIDs, maxListed)
	if err != nil {
		return err
	}
	return unfinishedConflict(u, "WIM account(s) "+strings.Join(accountIDs, ", ")+" still have")
}

// unfinishedConflict refuses a delete that would discard the unfinished
// actions u; it returns nil when there are none. The message starts with
// what (the subject and its verb), names the listed actions, e.g.
// "instance action <uuid> task 0: DELETE of WAN link <uuid> (SCHEDULED)",
// and says how many more there are.
func unfinishedConflict(u persistence.Unfinished, what string) error {
	if u.Total == 0 {
		return nil
	}
	parts := make([]string, 0, len(u.Actions)+1)
	for _, a := range u.Actions {
		parts = append(parts, fmt.Sprintf("instance action %s task %d: %s of WAN link %s (%s)", a.InstanceActionID, a.TaskIndex, a.Action, a.ItemID, a.Status))
	}
	if more := u.Total - len(u.Actions); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return wimro.Errorf(wimro.ECONFLICT, "%s %d unfinished action(s); wait until they are done (a pending DELETE would otherwise leave its service on the controller): %s",
		what, u.Total, strings.Join(parts, "; "))
}

// accountDeleteConflict explains why PostgreSQL refused to delete an
// account, itself or through its WIM (what names it): its WAN links still
// use it, or it still has unfinished actions. Other errors pass through.
func accountDeleteConflict(err error, what string) error {
	if wimro.ErrorCode(err) != wimro.ECONFLICT {
		return err
	}
	if persistence.Constraint(err) == persistence.ConstraintActionAccount {
		return scheduledMeanwhile(err, what)
	}
	return &wimro.Error{Code: wimro.ECONFLICT, Err: err, Message: what + " is still used by WAN links: delete the NS instances that use it first. " + wimro.ErrorMessage(err)}
}

// scheduledMeanwhile explains a delete that the RESTRICT foreign key of
// the actions refused after the engine found no unfinished action: a
// transaction that committed meanwhile (an instance delete) scheduled new
// ones, which the engine's check could not see. The foreign key is what
// keeps them; the client only has to wait and try again.
func scheduledMeanwhile(err error, what string) error {
	return &wimro.Error{Code: wimro.ECONFLICT, Err: err, Message: what +
		" still has unfinished actions (scheduled while it was being deleted, e.g. by an instance delete): wait until they are done and try again. " +
		wimro.ErrorMessage(err)}
}

// editedConfig is an account's config edited by patch: merged, and the
// secrets sent back masked kept as stored.
func editedConfig(stored, patch map[string]any) map[string]any {
	return secret.KeepConfig(mergeConfig(stored, patch), stored)
}
