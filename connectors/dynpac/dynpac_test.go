package dynpac_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/conformance"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/dynpac"
	emu "github.com/wimro/wimro/internal/testkit/emulators/dynpac"
)

const (
	user     = "admin"
	password = "s3cret"
)

// points returns valid ELINE points: two WAN switch ports, VLAN 100+i.
func points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{
		{
			ServiceEndpointID: "dcA",
			Encapsulation:     connectors.EncapDot1Q,
			VLAN:              100 + i,
			MappingInfo:       map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "00:00:00:00:00:00:01:00", "wan_switch_port": float64(1)},
		},
		{
			ServiceEndpointID: "dcB",
			Encapsulation:     connectors.EncapDot1Q,
			VLAN:              200 + i,
			MappingInfo:       map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "00:00:00:00:00:00:02:00", "wan_switch_port": "2"},
		},
	}
}

// server starts an emulator on its own server.
func server(t *testing.T, opts emu.Options) (*emu.Emulator, *httptest.Server) {
	t.Helper()
	e := emu.New(opts)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv
}

// build makes the connector through a registry, as wimd does.
var build = connectortest.Builder(dynpac.Type, dynpac.Register)

// setup returns a connector on a fresh emulator requiring user/password.
func setup(t *testing.T, opts emu.Options, account map[string]any) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	opts.User, opts.Password = user, password
	e, srv := server(t, opts)
	return build(t, connectors.Config{URL: srv.URL + "/", User: user, Password: password, AccountConfig: account}), e
}

func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.Run(t, conformance.Harness{
		New: func(t *testing.T) connectors.Connector {
			c, _ := setup(t, emu.Options{BuildPolls: 2}, nil)
			return c
		},
		Points:          points,
		ServerChosenIDs: true,
		MaxStatusPolls:  5,
		Unreachable: func(t *testing.T) connectors.Connector {
			return build(t, connectors.Config{URL: connectortest.Unreachable(t), User: user, Password: password, AccountConfig: map[string]any{"timeout_ms": 5000}})
		},
		BadCredentials: func(t *testing.T) connectors.Connector {
			_, srv := server(t, emu.Options{User: user, Password: password})
			return build(t, connectors.Config{URL: srv.URL, User: user, Password: "wrong"})
		},
		Capabilities: connectortest.Capabilities(dynpac.Type, dynpac.Register, connectors.Config{}),

		QoS: func(t *testing.T) (connectors.Connector, func(string) connectors.QoS) {
			c, e := setup(t, emu.Options{}, nil)
			return c, func(id string) connectors.QoS {
				s, _ := e.Service(id)
				return connectors.QoS{BandwidthMbps: int(s.Bandwidth)}
			}
		},
	})
}

func TestCreateRequest(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, map[string]any{"bandwidth": 250, "backup": true})
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: "key-1", Type: connectors.ServiceELINE, Points: points(3)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	reqs := e.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %+v, want one POST", reqs)
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/service/create" || r.ContentType != "application/x-www-form-urlencoded" {
		t.Fatalf("request = %s %s (%s), want POST /service/create form", r.Method, r.Path, r.ContentType)
	}
	if !strings.HasPrefix(r.Body, "body=") {
		t.Errorf("raw body %q does not start with body=", r.Body)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.FormBody), &got); err != nil {
		t.Fatalf("form body %q: %v", r.FormBody, err)
	}
	want := map[string]any{
		"connection_points": []any{
			map[string]any{"wan_switch_dpid": "00:00:00:00:00:00:01:00", "wan_switch_port": float64(1), "wan_vlan": float64(103)},
			map[string]any{"wan_switch_dpid": "00:00:00:00:00:00:02:00", "wan_switch_port": "2", "wan_vlan": float64(203)},
		},
		"bandwidth":    float64(250),
		"service_type": "L2",
		"backup":       true,
	}
	if g, w := connectortest.MustJSON(t, got), connectortest.MustJSON(t, want); g != w {
		t.Errorf("create body\n got %s\nwant %s", g, w)
	}
	if s, ok := e.Service(id); !ok || s.ServiceType != "L2" || s.ConnectionPoints[1].WANVLAN != 203 {
		t.Errorf("emulator service %s = %+v, %v", id, s, ok)
	}
	if connInfo["service_key"] != "key-1" {
		t.Errorf("connInfo = %v, want service_key key-1", connInfo)
	}

	// The other routes.
	if _, err := c.GetServiceStatus(t.Context(), id, connInfo); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteService(t.Context(), id, connInfo); err != nil {
		t.Fatal(err)
	}
	if err := c.ClearAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs = e.Requests()[1:]
	wantReqs := []string{"GET /service/status/" + id, "DELETE /service/delete/" + id, "DELETE /service/clearAll", "GET /checkCredentials"}
	if len(reqs) != len(wantReqs) {
		t.Fatalf("requests = %+v, want %v", reqs, wantReqs)
	}
	for i, w := range wantReqs {
		if g := reqs[i].Method + " " + reqs[i].Path; g != w {
			t.Errorf("request %d = %s, want %s", i, g, w)
		}
	}
	if cc := reqs[3]; !cc.HasAuth || cc.User != user || cc.Status != http.StatusOK {
		t.Errorf("checkCredentials request = %+v, want basic auth as %s and 200", cc, user)
	}
}

func TestCreateRetryAdopts(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	id1, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	id2, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	if id1 != id2 || e.Count() != 1 {
		t.Fatalf("retried create gave %s then %s, %d services; want adoption", id1, id2, e.Count())
	}
	// A service deleted behind the connector's back is created again.
	if !deleteOnController(t, e, id1) {
		t.Fatal("could not delete on the emulator")
	}
	id3, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	if id3 == id1 || e.Count() != 1 {
		t.Fatalf("create after the service vanished gave %s (old %s), %d services", id3, id1, e.Count())
	}
	list, err := c.ListServices(t.Context())
	if err != nil || len(list) != 1 || list[0].ID != id3 || list[0].Key != "k" {
		t.Fatalf("ListServices = %+v, %v; want only %s with key k", list, err, id3)
	}
}

// deleteOnController removes id through a second client (another tool).
func deleteOnController(t *testing.T, e *emu.Emulator, id string) bool {
	t.Helper()
	req := httptest.NewRequest(http.MethodDelete, "/service/delete/"+id, nil)
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w.Code == http.StatusOK
}

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		format, set string
		want        connectors.Status
	}{
		{emu.FormatJSON, "", connectors.StatusActive},
		{emu.FormatWIMStatus, "", connectors.StatusActive},
		{emu.FormatRaw, "", connectors.StatusActive},
		{emu.FormatEmpty, "", connectors.StatusActive},
		{emu.FormatJSON, "DOWN", connectors.StatusDown},
		{emu.FormatWIMStatus, "ERROR", connectors.StatusError},
		{emu.FormatRaw, "FAILED", connectors.StatusError},
		{emu.FormatJSON, "BUILDING", connectors.StatusBuild},
		{emu.FormatJSON, "SOMETHING_NEW", connectors.StatusInactive},
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.set, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{StatusFormat: tt.format}, nil)
			id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.set != "" {
				e.SetStatus(id, tt.set)
			}
			st, err := c.GetServiceStatus(t.Context(), id, ci)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status != tt.want {
				t.Fatalf("status = %s (%s), want %s", st.Status, st.Message, tt.want)
			}
			if tt.want != connectors.StatusActive && st.Message == "" {
				t.Errorf("status %s has no message", st.Status)
			}
		})
	}
}

func TestBuildThenActive(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, emu.Options{BuildPolls: 2}, nil)
	id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []connectors.Status{connectors.StatusBuild, connectors.StatusBuild, connectors.StatusActive, connectors.StatusActive} {
		st, err := c.GetServiceStatus(t.Context(), id, ci)
		if err != nil || st.Status != want {
			t.Fatalf("status call %d = %s, %v; want %s", i, st.Status, err, want)
		}
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		status   int
		kind     connectors.Kind
		contains string
	}{
		{"400 is permanent with the controller's message", 400, connectors.KindPermanent, "Description: injected failure"},
		{"500 is retryable", 500, connectors.KindRetryable, "Reason: INJECTED"},
		{"503 is retryable", 503, connectors.KindRetryable, "503"},
		{"429 is retryable", 429, connectors.KindRetryable, "429"},
		{"401 is unauthorized", 401, connectors.KindUnauthorized, "401"},
		{"403 is unauthorized", 403, connectors.KindUnauthorized, "403"},
		{"409 is permanent", 409, connectors.KindPermanent, "409"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			e.FailNext(1, tt.status)
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
			if err == nil {
				t.Fatal("CreateService succeeded, want an error")
			}
			if k := connectors.KindOf(err); k != tt.kind {
				t.Errorf("error %q has kind %s, want %s", err, k, tt.kind)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			if e.Count() != 0 {
				t.Errorf("a failed create left %d services", e.Count())
			}
		})
	}
}

func TestControllerValidationMessage(t *testing.T) {
	t.Parallel()
	// A mapping whose port the connector accepts but the emulator refuses
	// (negative port) shows the 400 path with DynPaC's own text.
	c, e := setup(t, emu.Options{}, nil)
	p := points(0)
	p[0].MappingInfo = map[string]any{"wan_switch_dpid": "x", "wan_switch_port": float64(-1)}
	_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: p})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "wan_switch_port") {
		t.Fatalf("error = %v (kind %s), want Permanent naming wan_switch_port", err, connectors.KindOf(err))
	}
	if reqs := e.Requests(); len(reqs) != 1 || reqs[0].Status != http.StatusBadRequest {
		t.Fatalf("requests = %+v, want one 400", reqs)
	}
}

func TestMalformedReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		call    func(c connectors.Connector) error
		kind    connectors.Kind
	}{
		{
			name: "create 200 with empty body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
			},
			call: func(c connectors.Connector) error {
				_, _, err := c.CreateService(context.Background(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
				return err
			},
			kind: connectors.KindPermanent,
		},
		{
			name: "create 200 with a binary body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("\x00\xff\xfe\x01garbage"))
			},
			call: func(c connectors.Connector) error {
				_, _, err := c.CreateService(context.Background(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
				return err
			},
			kind: connectors.KindPermanent,
		},
		{
			name: "error reply that is not JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<html>proxy error</html>", http.StatusBadGateway)
			},
			call: func(c connectors.Connector) error {
				_, err := c.GetServiceStatus(context.Background(), "x", nil)
				return err
			},
			kind: connectors.KindRetryable,
		},
		{
			name: "reply cut short",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "100")
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(`{"status":`))
			},
			call: func(c connectors.Connector) error {
				_, err := c.GetServiceStatus(context.Background(), "x", nil)
				return err
			},
			kind: connectors.KindRetryable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			c := build(t, connectors.Config{URL: srv.URL})
			err := tt.call(c)
			if err == nil {
				t.Fatal("call succeeded, want an error")
			}
			if k := connectors.KindOf(err); k != tt.kind {
				t.Fatalf("error %q has kind %s, want %s", err, k, tt.kind)
			}
		})
	}
}

func TestTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, map[string]any{"timeout_ms": 50})
	e.Delay(time.Minute) // ends when the client gives up
	_, err := c.GetServiceStatus(t.Context(), "x", nil)
	if !connectors.Retryable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v (kind %s), want Retryable deadline exceeded", err, connectors.KindOf(err))
	}
}

func TestDeleteUnknownAndStatusUnknown(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	if err := c.DeleteService(t.Context(), "nope", nil); err != nil {
		t.Fatalf("DeleteService(unknown) = %v", err)
	}
	_, err := c.GetServiceStatus(t.Context(), "nope", nil)
	if !connectors.IsNotFound(err) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("status of unknown = %v, want NotFound with the controller's text", err)
	}
	if reqs := e.Requests(); reqs[0].Status != http.StatusNotFound {
		t.Fatalf("delete reply = %d, want 404 (emulator)", reqs[0].Status)
	}
}

func TestInvalidInputNeverSent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		typ    connectors.ServiceType
		change func(p []connectors.ConnectionPoint)
	}{
		{"ELAN", connectors.ServiceELAN, func(p []connectors.ConnectionPoint) {}},
		{"untagged point", connectors.ServiceELINE, func(p []connectors.ConnectionPoint) {
			p[0].Encapsulation, p[0].VLAN = connectors.EncapNone, 0
		}},
		{"no mapping", connectors.ServiceELINE, func(p []connectors.ConnectionPoint) { p[1].MappingInfo = nil }},
		{"no dpid", connectors.ServiceELINE, func(p []connectors.ConnectionPoint) {
			p[1].MappingInfo = map[string]any{"wan_switch_port": 1.0}
		}},
		{"no port", connectors.ServiceELINE, func(p []connectors.ConnectionPoint) {
			p[1].MappingInfo = map[string]any{"wan_switch_dpid": "d"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			p := points(0)
			tt.change(p)
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: tt.typ, Points: p})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("error = %v, want Permanent", err)
			}
			if n := len(e.Requests()); n != 0 {
				t.Fatalf("%d requests sent for invalid input", n)
			}
		})
	}
}

func TestMappingFromPortMappings(t *testing.T) {
	t.Parallel()
	e, srv := server(t, emu.Options{})
	c := build(t, connectors.Config{URL: srv.URL, PortMappings: []wimro.PortMapping{
		{WANServiceEndpointID: "dcB", WANServiceMappingInfo: map[string]any{"wan_switch_dpid": "pm-dpid", "wan_switch_port": 7.0}},
	}})
	p := points(0)
	p[1].MappingInfo = nil
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: p})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := e.Service(id)
	if s.ConnectionPoints[1].WANSwitchDPID != "pm-dpid" {
		t.Fatalf("point 1 = %+v, want the port mapping's dpid", s.ConnectionPoints[1])
	}
}

// TestOverloadedController: a 503 with Retry-After whose text, raw or in
// DynPaC's {code, description}, PostgreSQL would refuse, fails Retryable
// with the hint and quotes the controller storably.
func TestOverloadedController(t *testing.T) {
	t.Parallel()
	connectortest.CheckControllerError(t, build, map[string]any{"code": 503, "description": connectortest.Unstorable})
}

// TestTLSAndBearerToken: dynpac hands TLS and token settings to the
// shared REST client.
func TestTLSAndBearerToken(t *testing.T) {
	t.Parallel()
	connectortest.CheckTransport(t, build, emu.New(emu.Options{}))
}

// TestFactoryErrors checks dynpac's own settings; the shared ones
// (URL, timeout, TLS, token) are tested in connectors/rest.
func TestFactoryErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  connectors.Config
	}{
		{"bad url", connectors.Config{URL: "ftp://x"}},
		{"bandwidth zero", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"bandwidth": 0}}},
		{"bandwidth not a number", connectors.Config{URL: "http://x", WIMConfig: map[string]any{"bandwidth": "lots"}}},
		{"backup not bool", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"backup": "sometimes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := dynpac.Factory(tt.cfg)
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent {
				t.Fatalf("Factory error = %v, want Permanent", err)
			}
		})
	}
}

func TestSecretsNotLogged(t *testing.T) {
	t.Parallel()
	logger, logs := connectortest.Logger(t)
	e, srv := server(t, emu.Options{User: user, Password: password})
	c := build(t, connectors.Config{URL: srv.URL, User: user, Password: password, Logger: logger})
	id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	e.FailNext(1, http.StatusInternalServerError)
	_, statusErr := c.GetServiceStatus(t.Context(), id, ci)
	bad := build(t, connectors.Config{URL: srv.URL, User: user, Password: "wrong-" + password, Logger: logger})
	credErr := bad.CheckCredentials(t.Context())
	if !connectors.IsUnauthorized(credErr) {
		t.Fatalf("bad credentials: %v", credErr)
	}
	logged := logs.String()
	connectortest.NoSecret(t, password, []error{statusErr, credErr}, logged)
	if !strings.Contains(logged, "dynpac service created") {
		t.Fatalf("debug log = %q, want the create line", logged)
	}
}

// A create's bandwidth replaces the configured one (100 by default, as
// OSM); adopting the key's service with another bandwidth is Permanent,
// since DynPaC cannot edit a service.
func TestQoSBandwidth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		account map[string]any
		asked   int
		want    float64
	}{
		{"default", nil, 0, 100},
		{"configured", map[string]any{"bandwidth": 40}, 0, 40},
		{"asked", map[string]any{"bandwidth": 40}, 250, 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, tt.account)
			key := "qos-" + tt.name // the emulator's URL is the test's own
			q := connectors.QoS{BandwidthMbps: tt.asked}
			id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0), QoS: q})
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := e.Service(id); s.Bandwidth != tt.want || connInfo["bandwidth"] != int(tt.want) {
				t.Fatalf("controller bandwidth %v, connInfo %v, want %v", s.Bandwidth, connInfo["bandwidth"], tt.want)
			}
			if again, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0), QoS: q}); err != nil || again != id {
				t.Fatalf("same key, same bandwidth: %q, %v, want %s adopted", again, err, id)
			}
			q.BandwidthMbps = int(tt.want) + 1
			_, _, err = c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0), QoS: q})
			if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "cannot edit") {
				t.Fatalf("same key, other bandwidth: %v, want Permanent", err)
			}
			if s, _ := e.Service(id); e.Count() != 1 || s.Bandwidth != tt.want {
				t.Fatalf("%d services, bandwidth %v after the refused create, want 1 with %v", e.Count(), s.Bandwidth, tt.want)
			}
		})
	}
}
