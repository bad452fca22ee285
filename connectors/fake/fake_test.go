package fake_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/conformance"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/fake"
)

// Two datacenters' WAN endpoints, as the port mappings describe them.
var mappings = []wimro.PortMapping{
	{DatacenterID: "dc-a", PopSwitchDPID: "00:00:00:00:00:00:00:0a", PopSwitchPort: "1", WANServiceEndpointID: "ep-a",
		WANServiceMappingInfo: map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "00:00:00:00:00:00:01:00", "wan_switch_port": "1"}},
	{DatacenterID: "dc-b", PopSwitchDPID: "00:00:00:00:00:00:00:0b", PopSwitchPort: "1", WANServiceEndpointID: "ep-b",
		WANServiceMappingInfo: map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "00:00:00:00:00:00:01:00", "wan_switch_port": "2"}},
}

// points gives service i its own VLANs on the two endpoints.
func points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{
		{ServiceEndpointID: "ep-a", Encapsulation: connectors.EncapDot1Q, VLAN: 100 + i, MappingInfo: mappings[0].WANServiceMappingInfo},
		{ServiceEndpointID: "ep-b", Encapsulation: connectors.EncapDot1Q, VLAN: 200 + i, MappingInfo: mappings[1].WANServiceMappingInfo},
	}
}

// newConfig returns the config of an account on a WIM URL of its own, so
// that every test has a private controller; the controller is reset when
// the test ends.
func newConfig(t *testing.T, accountConfig map[string]any) connectors.Config {
	t.Helper()
	url := "fake://" + uuid.NewString()
	t.Cleanup(func() { fake.ControllerFor(url).Reset() })
	return connectors.Config{
		WIMID: uuid.NewString(), WIMName: "wan1", Type: fake.Type, URL: url,
		AccountID: uuid.NewString(), AccountName: "acct", User: "u", Password: "p",
		AccountConfig: accountConfig,
		PortMappings:  mappings,
	}
}

// build makes the connector through a registry, as wimd does.
var build = connectortest.Builder(fake.Type, fake.Register)

func harness(accountConfig map[string]any) conformance.Harness {
	return conformance.Harness{
		New:            func(t *testing.T) connectors.Connector { return build(t, newConfig(t, accountConfig)) },
		Points:         points,
		ListsEndpoints: true,
		ListsL3:        true,
		ELANPoints: func(i int) []connectors.ConnectionPoint {
			third := points(i)[0]
			third.VLAN += 50
			return append(points(i), third)
		},
		// Three sites of an L3VPN: the ELAN's ends, each with its L3 site.
		L3Points: func(i int) []connectors.ConnectionPoint {
			third := points(i)[0]
			third.VLAN += 50
			out := append(points(i), third)
			for j := range out {
				out[j].L3 = conformance.L3Site(j)
			}
			return out
		},
		Unreachable: func(t *testing.T) connectors.Connector {
			cfg := newConfig(t, accountConfig)
			fake.ControllerFor(cfg.URL).SetDown(true)
			return build(t, cfg)
		},
		BadCredentials: func(t *testing.T) connectors.Connector {
			cfg := newConfig(t, accountConfig)
			fake.ControllerFor(cfg.URL).SetCredentials("u", "the-right-one")
			return build(t, cfg)
		},
		Capabilities: connectortest.Capabilities(fake.Type, fake.Register, connectors.Config{AccountConfig: accountConfig}),
		Pair: func(t *testing.T) (connectors.Connector, connectors.Connector) {
			cfg := newConfig(t, accountConfig)
			return build(t, cfg), build(t, cfg)
		},
		QoS: func(t *testing.T) (connectors.Connector, func(string) connectors.QoS) {
			cfg := newConfig(t, accountConfig)
			return build(t, cfg), func(id string) connectors.QoS {
				q, _ := fake.ControllerFor(cfg.URL).QoS(id)
				return q
			}
		},
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config map[string]any
	}{
		{"defaults", nil},
		// Services stay BUILD for a few polls and every call waits a
		// little, as over a network; values arrive as decoded JSON.
		{"build polls and latency", map[string]any{"build_polls": float64(3), "latency_ms": float64(1)}},
		// A connector without edit, replaced by an EDIT action: the new
		// service made first, or the old one deleted first.
		{"replace, make before break", map[string]any{"edit": false}},
		{"replace, break before make", map[string]any{"edit": false, "make_before_break": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, harness(tt.config))
		})
	}
}

func TestBuildPolls(t *testing.T) {
	t.Parallel()
	c := build(t, newConfig(t, map[string]any{"build_polls": 2}))
	ctx := t.Context()
	id, connInfo, err := c.CreateService(ctx, connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	var got []connectors.Status
	for range 4 {
		st, err := c.GetServiceStatus(ctx, id, connInfo)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, st.Status)
	}
	want := []connectors.Status{connectors.StatusBuild, connectors.StatusBuild, connectors.StatusActive, connectors.StatusActive}
	if !slices.Equal(got, want) {
		t.Fatalf("statuses = %v, want %v", got, want)
	}
}

func TestLatencyHonoursContext(t *testing.T) {
	t.Parallel()
	// A latency far beyond the test's life: only the context can end the
	// wait.
	cfg := newConfig(t, map[string]any{"latency_ms": 10 * 60 * 1000})
	c := build(t, cfg)

	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, _, err := c.CreateService(ctx, connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			done <- err
		}()
		cancel()
		err := <-done
		if !errors.Is(err, context.Canceled) || !connectors.Retryable(err) {
			t.Fatalf("error = %v, want a Retryable error wrapping context.Canceled", err)
		}
	})
	t.Run("deadline while waiting", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		err := c.CheckCredentials(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !connectors.Retryable(err) {
			t.Fatalf("error = %v, want a Retryable error wrapping context.DeadlineExceeded", err)
		}
	})
	if n := len(fake.ControllerFor(cfg.URL).Calls()); n != 0 {
		t.Fatalf("%d calls reached the controller, want none", n)
	}
}

// TestSharedController: connectors built for the same URL (another worker,
// or the same worker after a restart) see one controller, and a retried
// create from the new connector adopts the service.
func TestSharedController(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	first := build(t, cfg)
	key := uuid.NewString()
	id, connInfo, err := first.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}

	restarted := cfg
	restarted.URL += "/" // the same WIM, written differently
	second := build(t, restarted)
	if _, err := second.GetServiceStatus(t.Context(), id, connInfo); err != nil {
		t.Fatalf("status from a second connector: %v", err)
	}
	id2, _, err := second.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	if id2 != id {
		t.Fatalf("re-create from a second connector gave %s, want %s", id2, id)
	}
	if n := fake.ControllerFor(cfg.URL).Count(); n != 1 {
		t.Fatalf("controller has %d services, want 1", n)
	}
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	kinds := []connectors.Kind{connectors.KindPermanent, connectors.KindRetryable, connectors.KindNotFound, connectors.KindUnauthorized}
	for _, kind := range kinds {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			cfg := newConfig(t, nil)
			ctrl := fake.ControllerFor(cfg.URL)
			c := build(t, cfg)
			ctrl.FailNext(2, kind)
			key := uuid.NewString()
			for i := range 2 {
				_, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
				if err == nil || connectors.KindOf(err) != kind {
					t.Fatalf("create #%d: error %v (kind %s), want kind %s", i+1, err, connectors.KindOf(err), kind)
				}
			}
			if n := ctrl.Count(); n != 0 {
				t.Fatalf("a refused create made %d services", n)
			}
			if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)}); err != nil {
				t.Fatalf("create after the injected failures: %v", err)
			}
			calls := ctrl.Calls()
			if len(calls) != 3 || calls[0].Err == nil || calls[1].Err == nil || calls[2].Err != nil || calls[2].ID == "" {
				t.Fatalf("calls = %v, want two failed creates then one that made a service", calls)
			}
		})
	}
}

// TestLostReplyThenRetryAdopts is the crash window: the controller made the
// service but the caller never heard; the retry must find it, not make a
// second one.
func TestLostReplyThenRetryAdopts(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	ctrl := fake.ControllerFor(cfg.URL)
	c := build(t, cfg)
	ctrl.LoseNextReplies(1)
	key := uuid.NewString()
	_, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if !connectors.Retryable(err) {
		t.Fatalf("create with a lost reply: error %v, want Retryable", err)
	}
	services := ctrl.Services()
	if len(services) != 1 || services[0].Key != key {
		t.Fatalf("controller services = %+v, want the one with key %s", services, key)
	}
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	if id != services[0].ID || ctrl.Count() != 1 {
		t.Fatalf("retry gave %s with %d services, want to adopt %s", id, ctrl.Count(), services[0].ID)
	}
}

func TestCreateSameKeyReplacesPoints(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	ctrl := fake.ControllerFor(cfg.URL)
	c := build(t, cfg)
	key := uuid.NewString()
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	id2, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(5)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := ctrl.Points(id)
	if id2 != id || ctrl.Count() != 1 || got[0].VLAN != 105 {
		t.Fatalf("got id %s (want %s), %d services, points %+v: want the service brought in line", id2, id, ctrl.Count(), got)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	ctrl := fake.ControllerFor(cfg.URL)
	c := build(t, cfg)
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EditService(t.Context(), id, connInfo, connectors.Request{Points: points(7)}); err != nil {
		t.Fatal(err)
	}
	got, _ := ctrl.Points(id)
	if got[0].VLAN != 107 || got[1].VLAN != 207 {
		t.Fatalf("points after edit = %+v, want VLANs 107/207", got)
	}

	three := append(points(1), points(2)[0])
	_, err = c.EditService(t.Context(), id, connInfo, connectors.Request{Points: three})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(fmt.Sprint(err), connectors.MultipointNotSupported) {
		t.Fatalf("edit to three points: error %v, want Permanent %q", err, connectors.MultipointNotSupported)
	}
	if got, _ := ctrl.Points(id); got[0].VLAN != 107 {
		t.Fatalf("a refused edit changed the points: %+v", got)
	}
}

func TestUnknownEndpointNeverReachesController(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	c := build(t, cfg)
	p := points(0)
	p[1].ServiceEndpointID = "ep-nowhere"
	_, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: p})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(fmt.Sprint(err), "ep-nowhere") {
		t.Fatalf("error = %v, want Permanent naming the endpoint", err)
	}
	if n := len(fake.ControllerFor(cfg.URL).Calls()); n != 0 {
		t.Fatalf("%d calls reached the controller, want none", n)
	}
}

func TestStoredPointsAreCopies(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	c := build(t, cfg)
	p := points(0)
	p[0].MappingInfo = map[string]any{"site-id": "s1", "bearer": map[string]any{"bearer-reference": "b1"}}
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: p})
	if err != nil {
		t.Fatal(err)
	}
	p[0].VLAN = 999
	p[0].MappingInfo["bearer"].(map[string]any)["bearer-reference"] = "changed"
	got, _ := fake.ControllerFor(cfg.URL).Points(id)
	if got[0].VLAN != 100 || got[0].MappingInfo["bearer"].(map[string]any)["bearer-reference"] != "b1" {
		t.Fatalf("the caller's later changes reached the controller: %+v", got[0])
	}
}

func TestFactorySettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		account map[string]any
		wim     map[string]any
		wantErr string
	}{
		{name: "none"},
		{name: "json numbers", account: map[string]any{"latency_ms": float64(1), "build_polls": float64(2)}},
		{name: "strings", account: map[string]any{"latency_ms": "1", "build_polls": "2"}},
		{name: "from the WIM", wim: map[string]any{"build_polls": float64(2)}},
		{name: "not a number", account: map[string]any{"latency_ms": "soon"}, wantErr: `"latency_ms"`},
		{name: "fraction", account: map[string]any{"build_polls": 1.5}, wantErr: `"build_polls"`},
		{name: "negative", account: map[string]any{"build_polls": -1}, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := newConfig(t, tt.account)
			cfg.WIMConfig = tt.wim
			_, err := fake.Factory(cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Factory: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Factory error = %v, want one mentioning %s", err, tt.wantErr)
			case err != nil && connectors.KindOf(err) != connectors.KindPermanent:
				t.Fatalf("Factory error %v is %s, want permanent", err, connectors.KindOf(err))
			}
		})
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	r := connectors.NewRegistry()
	fake.Register(r)
	c, err := r.New(newConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestResetAndCallCount(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	ctrl := fake.ControllerFor(cfg.URL)
	c := build(t, cfg)
	if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListServices(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ctrl.CallCount(fake.MethodCreateService) != 1 || ctrl.CallCount(fake.MethodListServices) != 1 {
		t.Fatalf("calls = %v", ctrl.Calls())
	}
	ctrl.SetDown(true)
	ctrl.FailNext(3, connectors.KindPermanent)
	ctrl.Reset()
	if ctrl.Count() != 0 || len(ctrl.Calls()) != 0 {
		t.Fatalf("after Reset: %d services, calls %v", ctrl.Count(), ctrl.Calls())
	}
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatalf("after Reset the controller should be up and fault-free: %v", err)
	}
}

// TestLogging: the connector logs with the account and connector
// attributes, and never the password.
func TestLogging(t *testing.T) {
	t.Parallel()
	logger, logs := connectortest.Logger(t)
	cfg := newConfig(t, nil)
	cfg.Password = "s3cret-pw"
	cfg.Logger = logger
	fake.ControllerFor(cfg.URL).SetCredentials("u", "other")
	c := build(t, cfg)
	refused := c.CheckCredentials(t.Context()) // logs the error
	fake.ControllerFor(cfg.URL).SetCredentials("", "")
	if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)}); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{"account_id=" + cfg.AccountID, "connector=fake", "error=", "service_id="} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	connectortest.NoSecret(t, cfg.Password, []error{refused}, out)
}

// With state_file the controller's services outlive the process: another
// controller on the same file starts from them.
func TestStateFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ctrl.json")
	first := connectors.Config{URL: "http://state-" + uuid.NewString(), AccountConfig: map[string]any{"state_file": path}}
	c, err := fake.Factory(first)
	if err != nil {
		t.Fatal(err)
	}
	pts := []connectors.ConnectionPoint{{ServiceEndpointID: "a", Encapsulation: connectors.EncapNone}, {ServiceEndpointID: "b", Encapsulation: connectors.EncapNone}}
	qos := connectors.QoS{BandwidthMbps: 100, LatencyMs: 5}
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "key-1", Type: connectors.ServiceELINE, Points: pts, QoS: qos})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := fake.ReadStateFile(path)
	if err != nil || len(saved) != 1 || saved[0].ID != id || saved[0].Key != "key-1" {
		t.Fatalf("state file = %+v, %v", saved, err)
	}
	second := connectors.Config{URL: "http://state-" + uuid.NewString(), AccountConfig: map[string]any{"state_file": path}}
	c2, err := fake.Factory(second)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := fake.ControllerFor(second.URL).QoS(id); got != qos {
		t.Fatalf("the reloaded controller holds QoS %+v, want %+v", got, qos)
	}
	again, _, err := c2.CreateService(t.Context(), connectors.Request{Key: "key-1", Type: connectors.ServiceELINE, Points: pts, QoS: qos})
	if err != nil || again != id {
		t.Fatalf("the reloaded controller made %q, want to adopt %q (%v)", again, id, err)
	}
	if err := c2.DeleteService(t.Context(), id, nil); err != nil {
		t.Fatal(err)
	}
	if saved, _ := fake.ReadStateFile(path); len(saved) != 0 {
		t.Fatalf("after delete: %+v", saved)
	}
}

// TestChangedBehindTheClientsBack: a service faulted by the controller
// answers its status and message until cleared; one removed is not found
// (and created again under its key is a new service); a silent controller
// keeps a call until its context ends.
func TestChangedBehindTheClientsBack(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, nil)
	ctrl := fake.ControllerFor(cfg.URL)
	c := build(t, cfg)
	ctx := t.Context()
	key := uuid.NewString()
	id, connInfo, err := c.CreateService(ctx, connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	status := func() (connectors.ServiceStatus, error) { return c.GetServiceStatus(ctx, id, connInfo) }

	if !ctrl.SetStatus(id, connectors.StatusDown, "port ep-a is down") {
		t.Fatal("SetStatus of an existing service reported none")
	}
	if st, err := status(); err != nil || st.Status != connectors.StatusDown || st.Message != "port ep-a is down" {
		t.Fatalf("faulted: %+v, %v", st, err)
	}
	ctrl.SetStatus(id, connectors.StatusActive, "ignored")
	if st, err := status(); err != nil || st.Status != connectors.StatusActive || st.Message != "" {
		t.Fatalf("cleared: %+v, %v", st, err)
	}

	if !ctrl.Remove(id) || ctrl.Remove(id) || ctrl.SetStatus(id, connectors.StatusDown, "") {
		t.Fatal("Remove/SetStatus do not report whether the service existed")
	}
	if _, err := status(); !connectors.IsNotFound(err) {
		t.Fatalf("status of a removed service: %v, want not found", err)
	}
	again, _, err := c.CreateService(ctx, connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil || again == id || ctrl.Count() != 1 {
		t.Fatalf("create after the removal: %s (was %s), %d services, %v", again, id, ctrl.Count(), err)
	}

	ctrl.SetHang(true)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.GetServiceStatus(short, again, nil); !connectors.Retryable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("status from a silent controller: %v, want a retryable deadline error", err)
	}
	ctrl.SetHang(false)
	if _, err := c.GetServiceStatus(ctx, again, nil); err != nil {
		t.Fatalf("status once the controller answers again: %v", err)
	}
}
