// Package failing provides the connector whose every call fails, OSM's
// FailingConnector. wimro uses it as a placeholder when the
// real connector cannot be built (unknown WIM type, bad account config), so
// that the account's actions fail with the reason instead of hanging; and it
// is registered as WIM type "failing" for tests and drills.
package failing

import (
	"context"
	"fmt"

	"github.com/wimro/wimro/connectors"
)

// Type is the WIM type this package registers.
const Type = "failing"

// DefaultReason is the reason used when none is given.
const DefaultReason = "failing connector: every call fails by design"

// New returns a connector whose every method returns a *connectors.Error of
// the given kind with reason embedded in OSM's wording. The zero kind is
// KindPermanent; pass KindRetryable when the reason is transient (the
// supervisor rebuilds the real connector at the account's next change).
func New(reason string, kind connectors.Kind) connectors.Connector {
	if reason == "" {
		reason = DefaultReason
	}
	return &connector{reason: reason, kind: kind}
}

// Factory builds a failing connector from account config: "reason" (string,
// default DefaultReason) and "kind" (a connectors.Kind name, default
// "permanent").
func Factory(cfg connectors.Config) (connectors.Connector, error) {
	reason, err := cfg.StringSetting("reason", DefaultReason)
	if err != nil {
		return nil, err
	}
	name, err := cfg.StringSetting("kind", connectors.KindPermanent.String())
	if err != nil {
		return nil, err
	}
	kind, err := connectors.ParseKind(name)
	if err != nil {
		return nil, connectors.Errorf(connectors.KindPermanent, "config \"kind\": %w", err)
	}
	return New(reason, kind), nil
}

// Register adds the failing connector to r under Type.
func Register(r *connectors.Registry) { r.Register(Type, Factory, Capabilities) }

// Capabilities declare everything, so that every call reaches the
// connector and fails with its reason rather than being refused first.
var Capabilities = connectors.Everything()

type connector struct {
	reason string
	kind   connectors.Kind
}

func (c *connector) fail(format string, args ...any) error {
	return &connectors.Error{Kind: c.kind, Message: fmt.Sprintf(format, args...)}
}

func (c *connector) CheckCredentials(context.Context) error {
	return c.fail("Impossible to use WIM:\n%s", c.reason)
}

func (c *connector) CreateService(_ context.Context, req connectors.Request) (string, map[string]any, error) {
	return "", nil, c.fail("Impossible to connect %s.\n%s", req.Type, c.reason)
}

func (c *connector) GetServiceStatus(_ context.Context, id string, _ map[string]any) (connectors.ServiceStatus, error) {
	return connectors.ServiceStatus{}, c.fail("Impossible to retrieve status for %s\n\n%s", id, c.reason)
}

func (c *connector) EditService(_ context.Context, id string, _ map[string]any, _ connectors.Request) (map[string]any, error) {
	return nil, c.fail("Impossible to change connection %s.\n%s", id, c.reason)
}

func (c *connector) DeleteService(_ context.Context, id string, _ map[string]any) error {
	return c.fail("Impossible to disconnect %s\n\n%s", id, c.reason)
}

func (c *connector) ListServices(context.Context) ([]connectors.Service, error) {
	return nil, c.fail("Impossible to use WIM:\n%s", c.reason)
}

func (c *connector) ClearAll(context.Context) error {
	return c.fail("Impossible to use WIM:\n%s", c.reason)
}
