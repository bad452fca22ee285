package failing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/failing"
)

// call runs one connector method and returns its error.
type call struct {
	name   string
	prefix string // OSM's FailingConnector wording
	run    func(ctx context.Context, c connectors.Connector) error
}

var calls = []call{
	{"CheckCredentials", "Impossible to use WIM:\n", func(ctx context.Context, c connectors.Connector) error {
		return c.CheckCredentials(ctx)
	}},
	{"CreateService", "Impossible to connect ELINE.\n", func(ctx context.Context, c connectors.Connector) error {
		id, info, err := c.CreateService(ctx, connectors.Request{Key: "key-1", Type: connectors.ServiceELINE, Points: nil})
		if id != "" || info != nil {
			return errors.New("CreateService returned a service")
		}
		return err
	}},
	{"GetServiceStatus", "Impossible to retrieve status for svc-1\n\n", func(ctx context.Context, c connectors.Connector) error {
		_, err := c.GetServiceStatus(ctx, "svc-1", nil)
		return err
	}},
	{"EditService", "Impossible to change connection svc-1.\n", func(ctx context.Context, c connectors.Connector) error {
		_, err := c.EditService(ctx, "svc-1", nil, connectors.Request{})
		return err
	}},
	{"DeleteService", "Impossible to disconnect svc-1\n\n", func(ctx context.Context, c connectors.Connector) error {
		return c.DeleteService(ctx, "svc-1", nil)
	}},
	{"ListServices", "Impossible to use WIM:\n", func(ctx context.Context, c connectors.Connector) error {
		_, err := c.ListServices(ctx)
		return err
	}},
	{"ClearAll", "Impossible to use WIM:\n", func(ctx context.Context, c connectors.Connector) error {
		return c.ClearAll(ctx)
	}},
}

func TestEveryMethodFails(t *testing.T) {
	t.Parallel()
	connectorsUnderTest := []struct {
		name   string
		c      connectors.Connector
		reason string
		kind   connectors.Kind
	}{
		{"zero kind is permanent", failing.New("Unable to find the WIM connector for WIM (odl)", 0), "Unable to find the WIM connector for WIM (odl)", connectors.KindPermanent},
		{"retryable", failing.New("controller unreachable", connectors.KindRetryable), "controller unreachable", connectors.KindRetryable},
		{"unauthorized", failing.New("bad password", connectors.KindUnauthorized), "bad password", connectors.KindUnauthorized},
		{"default reason", failing.New("", connectors.KindPermanent), failing.DefaultReason, connectors.KindPermanent},
	}
	for _, cu := range connectorsUnderTest {
		for _, m := range calls {
			t.Run(cu.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				err := m.run(t.Context(), cu.c)
				var ce *connectors.Error
				if !errors.As(err, &ce) {
					t.Fatalf("error %v (%T), want a *connectors.Error", err, err)
				}
				if ce.Kind != cu.kind {
					t.Errorf("kind = %s, want %s", ce.Kind, cu.kind)
				}
				if want := m.prefix + cu.reason; err.Error() != want {
					t.Errorf("error = %q, want %q", err, want)
				}
			})
		}
	}
}

func TestFactory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		account    map[string]any
		wantReason string
		wantKind   connectors.Kind
		wantErr    string
	}{
		{name: "defaults", wantReason: failing.DefaultReason, wantKind: connectors.KindPermanent},
		{name: "reason and kind", account: map[string]any{"reason": "drill", "kind": "retryable"}, wantReason: "drill", wantKind: connectors.KindRetryable},
		{name: "unknown kind", account: map[string]any{"kind": "sometimes"}, wantErr: `"kind"`},
		{name: "reason not a string", account: map[string]any{"reason": 42.0}, wantErr: `"reason"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := connectors.NewRegistry()
			failing.Register(r)
			c, err := r.New(connectors.Config{Type: failing.Type, AccountConfig: tt.account})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || connectors.KindOf(err) != connectors.KindPermanent {
					t.Fatalf("error = %v, want a Permanent error mentioning %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckCredentials(t.Context())
			if !strings.HasSuffix(err.Error(), tt.wantReason) || connectors.KindOf(err) != tt.wantKind {
				t.Fatalf("CheckCredentials error %q (kind %s), want reason %q, kind %s", err, connectors.KindOf(err), tt.wantReason, tt.wantKind)
			}
		})
	}
}
