package engine

import (
	"context"
	"maps"
	"reflect"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors/accountconn"
)

// Connectors is what the engine asks of the process's connectors: wimd
// gives it one value (an accountconn.Factory, with wimd's rules for the
// development types), the one home of turning a WIM and an account into a
// connector. The checks contact no controller; Account does not either
// (its connector does, when called).
type Connectors interface {
	// CheckType refuses a WIM type no connector handles (the registry is
	// the one list of WIM types, development types included only when
	// offered).
	CheckType(wimType string) error
	// CheckAddress refuses a WIM whose wim_url the operator's controller
	// address policy refuses (wimd's --controller-allow): a literal
	// address, or a host name that resolves to refused addresses only.
	// It is advice given when the URL is written (DNS may answer
	// otherwise later); the connectors check every connection, which is
	// the guard.
	CheckAddress(ctx context.Context, w wimro.WIM) error
	// CheckSettings validates the connector settings of a WIM (type, URL,
	// config; secrets opened) combined with one account's config, so that
	// a bad timeout_ms or wim_url is refused when the WIM or account is
	// written, with a 400 naming the field, rather than failing every
	// action later. A type no connector handles passes (CheckType refuses
	// those when a WIM is written; a WIM stored by an older wimd may have
	// one).
	CheckSettings(w wimro.WIM, accountConfig map[string]any) error
	// CheckMapping validates one port mapping's wan_service_mapping_info
	// for the connector of WIM w (the keys the connector needs,
	// well-formed values); nil when the connector cannot tell.
	CheckMapping(w wimro.WIM, endpointID string, info map[string]any) error
	// Account reads account id and builds its connector as the workers
	// do, for the credentials check and drift reconcile.
	Account(ctx context.Context, id string) (accountconn.Conn, error)
}

// SetConnectors installs c: the checks of what is written and drift
// reconcile; with credentials, also the credentials check run after an
// account is created or edited (waited for at most DefaultCheckWait,
// bounded by DefaultCheckTimeout). nil (the default) checks nothing,
// leaves the account status as stored and makes Reconcile unavailable.
// Call it before serving requests.
func (e *Engine) SetConnectors(c Connectors, credentials bool) {
	e.conns, e.checkCredentials = c, credentials && c != nil
	e.checkWait, e.checkTimeout = DefaultCheckWait, DefaultCheckTimeout
	e.checkCtx, e.stopChecks = context.WithCancel(context.Background())
}

// checkType refuses, naming wim.type, a type Connectors refuses.
func (e *Engine) checkType(wimType string) error {
	if e.conns == nil {
		return nil
	}
	err := e.conns.CheckType(wimType)
	if err == nil || wimro.ErrorField(err) != "" {
		return err
	}
	return wimro.FieldErrorf("wim.type", "wim.type: %v", err)
}

// checkAddress refuses, naming wim.wim_url, a URL Connectors refuses.
func (e *Engine) checkAddress(ctx context.Context, w wimro.WIM) error {
	if e.conns == nil {
		return nil
	}
	if err := e.conns.CheckAddress(ctx, w); err != nil {
		return wimro.FieldErrorf("wim.wim_url", "wim.wim_url: %v", err)
	}
	return nil
}

// checkConnector runs the check and turns its refusal into an invalid
// error on field (or on wim_url when that is what the connector refused).
func (e *Engine) checkConnector(w wimro.WIM, accountConfig map[string]any, prefix, field string) error {
	if e.conns == nil {
		return nil
	}
	w, accountConfig, err := e.openSecrets(w, accountConfig)
	if err != nil {
		return err
	}
	err = e.conns.CheckSettings(w, accountConfig)
	if err == nil {
		return nil
	}
	if wimro.ErrorField(err) != "" {
		return err // the check named the field itself
	}
	if strings.Contains(err.Error(), "wim_url") {
		field = "wim.wim_url"
	}
	return wimro.FieldErrorf(field, "%s%s", prefix, err)
}

// connectorSettings is what a connector check reads: the WIM's type, URL
// and config, and the config of the accounts checked with it. Checks run
// before the write transaction (they may read files, e.g. ca_file); the
// transaction compares what it is about to write with what was checked.
type connectorSettings struct {
	typ, url  string
	wimConfig map[string]any
	accounts  map[string]map[string]any
}

// settingsOf returns the connector settings of w and accts. Sealed
// settings are opened: a key rotation (wimd rekey) that
// re-seals them between the check and the write changes their stored
// text, not what was checked. One that does not open is compared as
// stored.
func (e *Engine) settingsOf(w wimro.WIM, accts []wimro.WIMAccount) connectorSettings {
	opened := func(cfg map[string]any) map[string]any {
		if out, err := e.box.OpenConfig(cfg); err == nil {
			return out
		}
		return cfg
	}
	url := w.URL
	if u, err := e.box.OpenURL(url); err == nil {
		url = u
	}
	s := connectorSettings{typ: w.Type, url: url, wimConfig: opened(w.Config), accounts: make(map[string]map[string]any, len(accts))}
	for _, a := range accts {
		s.accounts[a.UUID] = opened(a.Config)
	}
	return s
}

func (s connectorSettings) equal(o connectorSettings) bool {
	return s.typ == o.typ && s.url == o.url && reflect.DeepEqual(s.wimConfig, o.wimConfig) &&
		maps.EqualFunc(s.accounts, o.accounts, func(a, b map[string]any) bool { return reflect.DeepEqual(a, b) })
}

// errChangedWhileChecked is the conflict of a write whose connector
// settings another request changed between the check and the transaction.
func errChangedWhileChecked(what string) error {
	return wimro.Errorf(wimro.ECONFLICT, "%s was changed by another request while its connector settings were checked; try again", what)
}
