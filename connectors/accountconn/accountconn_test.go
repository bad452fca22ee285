package accountconn_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// recorder is the fake connector's factory, registered under fake's type,
// that sends the Config of every account's connector built to built (the
// settings checks build without an account: not sent).
type recorder struct{ built chan connectors.Config }

func (r recorder) factory(cfg connectors.Config) (connectors.Connector, error) {
	if cfg.AccountID != "" {
		r.built <- cfg
	}
	return fake.Factory(cfg)
}

// next waits for the next connector built, by what.
func (r recorder) next(t *testing.T, what string) connectors.Config {
	t.Helper()
	select {
	case cfg := <-r.built:
		return cfg
	case <-time.After(30 * time.Second):
		t.Fatalf("%s built no connector", what)
		return connectors.Config{}
	}
}

// TestWorkersCheckAndReconcileSeeOneAccountAlike checks that the three
// parts that turn a stored account into a connector (the engine's
// credentials check after a write, drift reconcile, and the workers'
// periodic credentials check) build it through one Factory alike: the
// sealed password, wim_url password and bearer tokens opened the same way,
// the same User-Agent, the mutation Locker, and every call timed in
// wimro_connector_call_duration_seconds.
func TestWorkersCheckAndReconcileSeeOneAccountAlike(t *testing.T) {
	t.Parallel()
	f := testfactory.New(t)
	rec := recorder{built: make(chan connectors.Config, 16)}
	r := connectors.NewRegistry()
	r.Register(fake.Type, rec.factory, connectors.Everything())
	reg := prometheus.NewPedanticRegistry()
	m, err := wimthread.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	const ua = "wimro/test (alike)"
	conns := accountconn.New(accountconn.Config{Registry: r, Box: f.Box, DB: f.DB, UserAgent: ua, Instrument: m.Instrument})
	eng := engine.New(f.DB, f.Box, nil)
	eng.SetConnectors(conns, true)
	t.Cleanup(func() {
		if err := eng.StopChecks(context.Background()); err != nil {
			t.Error(err)
		}
	})
	f.Eng = eng

	url := "http://admin:url-pw@fake-" + uuid.NewString()
	t.Cleanup(fake.ControllerFor(url).Reset)
	tn := f.Tenant(t, "t0")
	f.Datacenter(t, "dcA", tn)
	f.WIMOf(t, engine.WIMInput{Name: ptr("wan1"), URL: &url, Config: map[string]any{"bearer_token": "wim-tok"}}, testfactory.Mapping("dcA", 1))
	acct := f.Account(t, "t0", "wan1", engine.AccountInput{User: ptr("u"), Password: ptr(engine.Secret("acct-pw")), Config: map[string]any{"bearer_token": "acct-tok"}})
	stored, err := f.DB.GetAccount(f.Ctx, acct.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored.Password), "acct-pw") || stored.Config["bearer_token"] == "acct-tok" {
		t.Fatalf("the account's secrets are stored in clear: %q, %v", stored.Password, stored.Config)
	}
	check := rec.next(t, "the engine's credentials check")
	if stored.Status != wimro.AccountActive {
		t.Errorf("account status after the engine's check = %s (%v), want ACTIVE", stored.Status, stored.StatusMsg)
	}

	if _, err := eng.Reconcile(f.Ctx, engine.ReconcileOptions{Account: acct.UUID}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	reconcile := rec.next(t, "reconcile")

	sup := wimthread.New(f.DB, conns, nil, wimthread.Options{Owner: "alike", Poll: 50 * time.Millisecond, MonitorInterval: 50 * time.Millisecond})
	if err := sup.Start(f.Ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sup.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	sup.SetAccounts([]string{acct.UUID})
	worker := rec.next(t, "the workers' periodic check")

	for _, got := range []struct {
		what string
		cfg  connectors.Config
	}{{"engine check", check}, {"reconcile", reconcile}, {"workers", worker}} {
		c := got.cfg
		switch {
		case c.AccountID != acct.UUID || c.User != "u" || c.Password != "acct-pw":
			t.Errorf("%s: account %s user %q password opened %v", got.what, c.AccountID, c.User, c.Password == "acct-pw")
		case !strings.Contains(c.URL, "url-pw") || c.WIMConfig["bearer_token"] != "wim-tok" || c.AccountConfig["bearer_token"] != "acct-tok":
			t.Errorf("%s: the sealed settings were not opened (wim_url password %v, WIM token %v, account token %v)", got.what,
				strings.Contains(c.URL, "url-pw"), c.WIMConfig["bearer_token"] == "wim-tok", c.AccountConfig["bearer_token"] == "acct-tok")
		case c.UserAgent != ua:
			t.Errorf("%s: User-Agent %q, want %q", got.what, c.UserAgent, ua)
		case c.Locker == nil:
			t.Errorf("%s: built without the mutation Locker", got.what)
		case len(c.PortMappings) != 1:
			t.Errorf("%s: %d port mappings, want 1", got.what, len(c.PortMappings))
		}
	}
	// Every part's calls are timed: two credentials checks (the engine's
	// and the workers') and reconcile's listing.
	// The workers' check is timed once its call returns, after the build
	// that rec saw: wait for it rather than read it at once.
	for op, want := range map[string]int{"check_credentials": 2, "list_services": 1} {
		eventually.Until(t, 10*time.Second, fmt.Sprintf("%d %s calls timed", want, op), func() (bool, string) {
			n := histogramCount(t, reg, "fake", op)
			return n >= want, fmt.Sprintf("%d timed", n)
		})
	}
}

// TestStandIn checks that an account whose connector cannot be built
// gets the failing stand-in, which fails every call with the reason, and
// the reason itself in Err, for each way building fails.
func TestStandIn(t *testing.T) {
	t.Parallel()
	f := testfactory.New(t)
	r := connectors.NewRegistry()
	fake.Register(r)
	failing.Register(r)
	conns := accountconn.New(accountconn.Config{Registry: r, Box: f.Box, DB: f.DB})
	tn := f.Tenant(t, "t0")
	f.WIM(t, "wan1")
	acct := f.Account(t, tn.Name, "wan1", engine.AccountInput{User: ptr("u"), Password: ptr(engine.Secret("pw"))})
	good, err := conns.Account(f.Ctx, acct.UUID)
	if err != nil || good.Err != nil {
		t.Fatalf("the account's connector: %v, %v", err, good.Err)
	}
	if _, err := conns.Account(f.Ctx, uuid.NewString()); wimro.ErrorCode(err) != wimro.ENOTFOUND {
		t.Fatalf("an account that does not exist: %v, want ENOTFOUND", err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	other, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	otherPW, err := other.Seal([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := other.SealString("tok")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(in *persistence.ConnectorInput)
		want   string // in the stand-in's error
	}{
		{"password sealed with another key", func(in *persistence.ConnectorInput) { in.Account.Password = otherPW }, "reading the password"},
		{"setting sealed with another key", func(in *persistence.ConnectorInput) {
			in.WIM.Config = map[string]any{"bearer_token": otherTok}
		}, "reading the secrets"},
		{"type without a connector", func(in *persistence.ConnectorInput) { in.WIM.Type = "odl" }, "loading WIM connector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := f.DB.ConnectorInputs(f.Ctx, []string{acct.UUID})
			if err != nil {
				t.Fatal(err)
			}
			i := in[acct.UUID]
			tt.change(&i)
			c := conns.Build(i)
			if c.Err == nil {
				t.Fatal("built, want the stand-in")
			}
			err = c.Connector.CheckCredentials(f.Ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) || connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("the stand-in's check = %v (kind %v), want a permanent error saying %q", err, connectors.KindOf(err), tt.want)
			}
		})
	}
}

// histogramCount is the number of calls observed for connector and op.
func histogramCount(t *testing.T, reg *prometheus.Registry, connector, op string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "wimro_connector_call_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["connector"] == connector && labels["operation"] == op {
				n += int(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return n
}

func ptr[T any](v T) *T { return &v }
