package connectors

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/wimro/wimro"
)

// Config is what a factory gets to build a connector: everything about the
// WIM and the account, including the clear-text password. String, GoString
// and LogValue mask the password and leave out the config maps (they may
// hold tokens or keys), so a Config can be logged or printed safely; never
// log Password itself.
type Config struct {
	WIMID, WIMName string
	// Type is the WIM type that selected the factory.
	Type string
	// URL is the controller's base URL (wim_url).
	URL string
	// WIMConfig is the WIM's config (dialect and other per-controller
	// settings).
	WIMConfig map[string]any

	AccountID, AccountName string
	User                   string
	Password               string
	// AccountConfig holds the connector settings of the account (timeouts,
	// TLS CA or insecure, auth type, ...). Settings here override the
	// WIM's: see IntSetting.
	AccountConfig map[string]any

	// PortMappings are the port mappings of this WIM.
	PortMappings []wimro.PortMapping

	// Logger is the parent logger; nil discards. Use Log, which adds the
	// account and connector attributes.
	Logger *slog.Logger

	// Locker, when set, serialises read-modify-write changes on the
	// controller with the other processes sharing it (see MutationLock).
	Locker Locker

	// UserAgent names the calling process in every request, e.g.
	// "wimro/1.2.0 (host-a:9090)", so a controller's log shows which wimd
	// process called; "" sends DefaultUserAgent.
	UserAgent string

	// Addresses is the policy of the addresses the connector may reach
	// (connectors/rest enforces it on every connection and redirect); nil
	// takes the Registry's (SetAddressPolicy), else the default policy.
	Addresses *AddressPolicy
}

// ConfigOf is the Config of account a of WIM w, whose secrets (password,
// and the sealed settings of w and a) the caller has opened, with the
// WIM's port mappings (nil stands for none). The caller adds Logger,
// Locker and UserAgent. The workers, the credentials check and drift
// reconcile all build their connectors from it, so they see one account
// alike.
func ConfigOf(w wimro.WIM, a wimro.WIMAccount, password string, mappings []wimro.PortMapping) Config {
	if mappings == nil {
		mappings = []wimro.PortMapping{}
	}
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	return Config{WIMID: w.UUID, WIMName: w.Name, Type: w.Type, URL: w.URL, WIMConfig: w.Config,
		AccountID: a.UUID, AccountName: deref(a.Name), User: deref(a.User), Password: password,
		AccountConfig: a.Config, PortMappings: mappings}
}

// DefaultUserAgent is sent when Config.UserAgent is empty.
const DefaultUserAgent = "wimro"

const masked = "********"

// String describes the Config without secrets.
func (c Config) String() string {
	pw := ""
	if c.Password != "" {
		pw = masked
	}
	return fmt.Sprintf("connectors.Config{type=%s wim=%s(%s) url=%s account=%s(%s) user=%s password=%s port_mappings=%d}",
		c.Type, c.WIMName, c.WIMID, redactURL(c.URL), c.AccountName, c.AccountID, c.User, pw, len(c.PortMappings))
}

// GoString masks the password for %#v too.
func (c Config) GoString() string { return c.String() }

// LogValue logs the Config without secrets.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("type", c.Type),
		slog.String("wim_id", c.WIMID),
		slog.String("wim_name", c.WIMName),
		slog.String("url", redactURL(c.URL)),
		slog.String("account_id", c.AccountID),
		slog.String("account_name", c.AccountName),
		slog.String("user", c.User),
	}
	if c.Password != "" {
		attrs = append(attrs, slog.String("password", masked))
	}
	return slog.GroupValue(append(attrs, slog.Int("port_mappings", len(c.PortMappings)))...)
}

// redactURL hides a password written into the URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// Log returns the logger a connector should use: cfg.Logger (or a discarding
// one) with the account_id and connector attributes every line needs.
func (c Config) Log() *slog.Logger {
	l := c.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return l.With("account_id", c.AccountID, "connector", c.Type)
}

// setting looks key up in AccountConfig, then in WIMConfig: an account may
// tune what the WIM sets for every account.
func (c Config) setting(key string) (any, bool) {
	if v, ok := c.AccountConfig[key]; ok && v != nil {
		return v, true
	}
	if v, ok := c.WIMConfig[key]; ok && v != nil {
		return v, true
	}
	return nil, false
}

// IntSetting returns the integer setting key (account config first, then WIM
// config), or def when it is absent. Config arrives as decoded JSON, so
// whole float64 values, json.Number and numeric strings are accepted;
// anything else is a Permanent error naming the key.
func (c Config) IntSetting(key string, def int) (int, error) {
	v, ok := c.setting(key)
	if !ok {
		return def, nil
	}
	bad := func() (int, error) {
		return def, Errorf(KindPermanent, "config %q: want an integer, got %v", key, v)
	}
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return bad()
		}
		return int(n), nil
	case json.Number:
		i, err := strconv.Atoi(n.String())
		if err != nil {
			return bad()
		}
		return i, nil
	case string:
		i, err := strconv.Atoi(n)
		if err != nil {
			return bad()
		}
		return i, nil
	}
	return bad()
}

// StringSetting returns the string setting key (account config first, then
// WIM config), or def when it is absent; a non-string is a Permanent error.
func (c Config) StringSetting(key, def string) (string, error) {
	v, ok := c.setting(key)
	if !ok {
		return def, nil
	}
	s, isString := v.(string)
	if !isString {
		return def, Errorf(KindPermanent, "config %q: want a string, got %v", key, v)
	}
	return s, nil
}

// BoolSetting returns the boolean setting key (account config first, then
// WIM config), or def when it is absent. A bool or "true"/"false" string is
// accepted; anything else is a Permanent error.
func (c Config) BoolSetting(key string, def bool) (bool, error) {
	v, ok := c.setting(key)
	if !ok {
		return def, nil
	}
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		if p, err := strconv.ParseBool(b); err == nil {
			return p, nil
		}
	}
	return def, Errorf(KindPermanent, "config %q: want true or false, got %v", key, v)
}

// Factory builds a connector for one WIM account. It should not contact the
// controller (the supervisor builds the connectors of the accounts it
// owns and must not block on a controller that is down); it validates cfg and returns a Permanent
// error for a configuration that cannot work.
type Factory func(cfg Config) (Connector, error)

// Registry maps WIM types to connector factories. It is safe for concurrent
// use. The daemon fills one at start-up (each connector package has a
// Register function) rather than relying on init-time globals, so tests can
// build registries with exactly the connectors they want.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
	caps      map[string]Capabilities
	addresses *AddressPolicy
}

// SetAddressPolicy makes p the address policy of every connector New
// builds whose Config has none: one setting for the workers, the
// credentials checks and reconcile, which all build through the registry.
func (r *Registry) SetAddressPolicy(p *AddressPolicy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addresses = p
}

// AddressPolicy returns the policy SetAddressPolicy set (nil: the
// default).
func (r *Registry) AddressPolicy() *AddressPolicy {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.addresses
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{factories: make(map[string]Factory), caps: make(map[string]Capabilities)}
}

// Register adds the factory for wimType with what its connectors can do.
// Declaring it here lets the engine and the runner choose and validate
// from it without building a connector (no credentials at hand when an
// instance is written). Registering a type twice, an empty type, a nil
// factory or capabilities with no service type is a programming error
// and panics.
func (r *Registry) Register(wimType string, f Factory, caps Capabilities) {
	if wimType == "" || f == nil {
		panic("connectors: Register needs a WIM type and a factory")
	}
	if len(caps.Services) == 0 {
		panic(fmt.Sprintf("connectors: WIM type %q registered without a service type", wimType))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[wimType]; dup {
		panic(fmt.Sprintf("connectors: WIM type %q registered twice", wimType))
	}
	r.factories[wimType] = f
	caps.Services, caps.QoS = slices.Clone(caps.Services), slices.Clone(caps.QoS)
	r.caps[wimType] = caps
}

// Capabilities returns what the connector of cfg.Type can do for cfg:
// the type's declaration narrowed by cfg's settings (Capabilities.For).
// A type not registered can do nothing (no service type). The engine
// passes a Config with Type and WIMConfig only, when an instance is
// written; the runner the full Config its connector was built with.
func (r *Registry) Capabilities(cfg Config) Capabilities {
	r.mu.RLock()
	c, ok := r.caps[cfg.Type]
	r.mu.RUnlock()
	if !ok {
		return Capabilities{}
	}
	return c.For(cfg)
}

// New builds the connector for cfg.Type. An unknown type is a Permanent
// error; so is a factory error that carries no classification.
func (r *Registry) New(cfg Config) (Connector, error) {
	r.mu.RLock()
	f := r.factories[cfg.Type]
	if cfg.Addresses == nil {
		cfg.Addresses = r.addresses
	}
	r.mu.RUnlock()
	if f == nil {
		return nil, r.CheckType(cfg.Type)
	}
	c, err := f(cfg)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, &Error{Kind: KindOf(err), Message: fmt.Sprintf("building the %s connector", cfg.Type), Err: err}
	}
	if c == nil {
		return nil, Errorf(KindPermanent, "the %s connector factory returned no connector", cfg.Type)
	}
	return c, nil
}

// CheckType returns nil when wimType is registered, else a Permanent
// error that lists the registered types: the registry is the one list of
// WIM types, so wimd checks a WIM's type here when it is written.
func (r *Registry) CheckType(wimType string) error {
	r.mu.RLock()
	_, ok := r.factories[wimType]
	r.mu.RUnlock()
	if ok {
		return nil
	}
	return Errorf(KindPermanent, "no connector for WIM type %q: use one of %s", wimType, strings.Join(r.Types(), ", "))
}

// Types returns the registered WIM types, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	types := make([]string, 0, len(r.factories))
	for t := range r.factories {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}

// MappingIndex maps service endpoint ids to the wan_service_mapping_info
// of the WIM's port mappings: where a connection point that carries no
// MappingInfo of its own finds it.
type MappingIndex map[string]map[string]any

// Mappings indexes c.PortMappings by service endpoint id.
func (c Config) Mappings() MappingIndex {
	m := make(MappingIndex, len(c.PortMappings))
	for _, pm := range c.PortMappings {
		m[pm.WANServiceEndpointID] = pm.WANServiceMappingInfo
	}
	return m
}

// For returns the mapping info of point p, the i-th of a request: its own
// MappingInfo, else the port mapping of its endpoint. With neither it is
// a Permanent error naming the point, prefixed with connector (its type).
func (m MappingIndex) For(connector string, i int, p ConnectionPoint) (map[string]any, error) {
	if p.MappingInfo != nil {
		return p.MappingInfo, nil
	}
	if info := m[p.ServiceEndpointID]; info != nil {
		return info, nil
	}
	return nil, Errorf(KindPermanent, "%s: connection point %d: no port mapping for service endpoint %q", connector, i, p.ServiceEndpointID)
}
