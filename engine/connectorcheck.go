package engine

import (
	"context"
	"maps"
	"reflect"
	"strings"

	"github.com/wimro/wimro"
)

// ConnectorCheck validates the connector settings of a WIM (type, URL,
// config) combined with one account's config, without contacting the
// controller. wimd builds it from its connector registry, so that a bad
// timeout_ms or wim_url is refused when the WIM or account is written,
// with a 400 naming the field, rather than failing every action later. It
// returns nil for a type no connector handles (the TypeCheck refuses
// those when a WIM is written; a WIM stored by an older wimd may have one).
type ConnectorCheck func(w wimro.WIM, accountConfig map[string]any) error

// SetConnectorCheck installs c; nil (the default) checks nothing. Call it
// before serving requests.
func (e *Engine) SetConnectorCheck(c ConnectorCheck) { e.check = c }

// TypeCheck refuses a WIM type no connector handles. wimd builds it from
// its connector registry, the one list of WIM types (development types
// included only when it offers them).
type TypeCheck func(wimType string) error

// SetTypeCheck installs c; nil (the default) accepts any type. Call it
// before serving requests.
func (e *Engine) SetTypeCheck(c TypeCheck) { e.typeCheck = c }

// checkType refuses, naming wim.type, a type the TypeCheck refuses.
func (e *Engine) checkType(wimType string) error {
	if e.typeCheck == nil {
		return nil
	}
	err := e.typeCheck(wimType)
	if err == nil || wimro.ErrorField(err) != "" {
		return err
	}
	return wimro.FieldErrorf("wim.type", "wim.type: %v", err)
}

// AddressCheck refuses a WIM whose wim_url the operator's controller
// address policy refuses (wimd's --controller-allow): a literal address,
// or a host name that resolves to refused addresses only. It is advice
// given when the URL is written (DNS may answer otherwise later); the
// connectors check every connection, which is the guard.
type AddressCheck func(ctx context.Context, w wimro.WIM) error

// SetAddressCheck installs c; nil (the default) checks nothing. Call it
// before serving requests.
func (e *Engine) SetAddressCheck(c AddressCheck) { e.addressCheck = c }

// checkAddress refuses, naming wim.wim_url, a URL the AddressCheck
// refuses.
func (e *Engine) checkAddress(ctx context.Context, w wimro.WIM) error {
	if e.addressCheck == nil {
		return nil
	}
	if err := e.addressCheck(ctx, w); err != nil {
		return wimro.FieldErrorf("wim.wim_url", "wim.wim_url: %v", err)
	}
	return nil
}

// MappingCheck validates one port mapping's wan_service_mapping_info for
// the connector of WIM w, without contacting the controller (the keys the
// connector needs, well-formed values). It returns nil when the connector
// cannot tell.
type MappingCheck func(w wimro.WIM, endpointID string, info map[string]any) error

// SetMappingCheck installs c; nil (the default) checks nothing. Call it
// before serving requests.
func (e *Engine) SetMappingCheck(c MappingCheck) { e.mappingCheck = c }

// checkConnector runs the check and turns its refusal into an invalid
// error on field (or on wim_url when that is what the connector refused).
func (e *Engine) checkConnector(w wimro.WIM, accountConfig map[string]any, prefix, field string) error {
	if e.check == nil {
		return nil
	}
	w, accountConfig, err := e.openSecrets(w, accountConfig)
	if err != nil {
		return err
	}
	err = e.check(w, accountConfig)
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
