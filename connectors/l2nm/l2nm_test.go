package l2nm_test

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/conformance"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/l2nm"
	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	emu "github.com/wimro/wimro/internal/testkit/emulators/l2nm"
)

const (
	user     = "nso-admin"
	password = "l2nm-pa55"
	base     = emu.DefaultRoot + "/data/" + emu.Top
	svcs     = "/vpn-services"
)

// mapping is the wan_service_mapping_info of a datacenter's PE port.
func mapping(dc string) map[string]any {
	return map[string]any{"ne-id": "pe-" + dc, "interface-id": "GigabitEthernet0/0/0/" + dc, "bearer-reference": "bearer-" + dc}
}

// point is a connection point of datacenter dc, dot1q when vlan > 0.
func point(dc string, vlan int) connectors.ConnectionPoint {
	p := connectors.ConnectionPoint{ServiceEndpointID: "ep-" + dc, Encapsulation: connectors.EncapNone, MappingInfo: mapping(dc)}
	if vlan > 0 {
		p.Encapsulation, p.VLAN = connectors.EncapDot1Q, vlan
	}
	return p
}

// points returns an ELINE between dc 1 and dc 2 on VLAN 100+i.
func points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{point("1", 100+i), point("2", 100+i)}
}

// elanPoints returns an ELAN of three datacenters on VLAN 300+i.
func elanPoints(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{point("1", 300+i), point("2", 300+i), point("3", 300+i)}
}

// portMappings are the WIM's port mappings of the three datacenters.
func portMappings() []wimro.PortMapping {
	var out []wimro.PortMapping
	for _, p := range elanPoints(0) {
		out = append(out, wimro.PortMapping{WANServiceEndpointID: p.ServiceEndpointID, WANServiceMappingInfo: p.MappingInfo})
	}
	return out
}

var build = connectortest.Builder(l2nm.Type, l2nm.Register)

// server starts an emulator that requires user/password and fails t at
// cleanup when yanglint refused any body the connector sent (or an answer
// of the emulator's).
func server(t *testing.T, opts emu.Options) (*emu.Emulator, *httptest.Server) {
	t.Helper()
	if opts.User == "" {
		opts.User, opts.Password = user, password
	}
	e := emu.New(opts)
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.Close()
		if f := e.LintFailures(); len(f) > 0 {
			t.Errorf("yanglint refused %d of %d documents:\n%s", len(f), e.Linted(), strings.Join(f, "\n"))
		}
		e.Close()
	})
	return e, srv
}

// setup returns a connector with account settings on a fresh emulator.
func setup(t *testing.T, opts emu.Options, account map[string]any) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	e, srv := server(t, opts)
	return build(t, connectors.Config{URL: srv.URL, User: user, Password: password, AccountConfig: account, PortMappings: portMappings()}), e
}

// TestConformance runs the shared suite against the emulator, every body
// checked by yanglint.
func TestConformance(t *testing.T) {
	t.Parallel()
	pair := func(t *testing.T) (connectors.Connector, connectors.Connector) {
		_, srv := server(t, emu.Options{BuildPolls: 2})
		cfg := connectors.Config{URL: srv.URL + "/", User: user, Password: password, PortMappings: portMappings()}
		return build(t, cfg), build(t, cfg)
	}
	var emulators sync.Map // connector → its emulator, for QoS
	conformance.Run(t, conformance.Harness{
		New: func(t *testing.T) connectors.Connector {
			c, _ := pair(t)
			return c
		},
		Pair:           pair,
		Capabilities:   connectortest.Capabilities(l2nm.Type, l2nm.Register, connectors.Config{}),
		ListsEndpoints: true,
		Points:         points,
		ELANPoints:     elanPoints,
		MaxStatusPolls: 5,
		Unreachable: func(t *testing.T) connectors.Connector {
			return build(t, connectors.Config{URL: connectortest.Unreachable(t), User: user, Password: password})
		},
		BadCredentials: func(t *testing.T) connectors.Connector {
			_, srv := server(t, emu.Options{})
			return build(t, connectors.Config{URL: srv.URL, User: user, Password: "not-" + password})
		},
		QoS: func(t *testing.T) (connectors.Connector, func(string) connectors.QoS) {
			c, e := setup(t, emu.Options{}, nil)
			emulators.Store(c, e)
			return c, func(id string) connectors.QoS {
				return connectors.QoS{BandwidthMbps: l2nm.BandwidthOf(e.Service(id))}
			}
		},
	})
}

// calls renders the request log as "METHOD path status", paths relative
// to the l2vpn-ntw container.
func calls(reqs []emu.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = fmt.Sprintf("%s %s %d", r.Method, strings.TrimPrefix(r.Path, base), r.Status)
	}
	return out
}

// TestRequests: the requests of each operation, in order: a create looks
// the vpn-id up, POSTs a new service, adopts one as asked and replaces
// (PUT) one that differs; an edit reads then PUTs; a delete is one DELETE,
// 404 being done.
func TestRequests(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	ctx := t.Context()
	const key = "5d0c6a5e-0000-4000-8000-000000000001"
	id := l2nm.IDPrefix + key
	item := svcs + "/vpn-service=" + id
	step := func(name string, do func() error, want ...string) {
		t.Helper()
		before := len(e.Requests())
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The first request of a connector finds the RESTCONF root.
		got := slicesDrop(calls(e.Requests()[before:]), "GET /.well-known/host-meta 404")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: requests\n got %q\nwant %q", name, got, want)
		}
	}
	create := func(p []connectors.ConnectionPoint, q connectors.QoS) func() error {
		return func() error {
			got, _, err := c.CreateService(ctx, connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: p, QoS: q})
			if err == nil && got != id {
				err = fmt.Errorf("id %q, want %q", got, id)
			}
			return err
		}
	}
	step("create", create(points(0), connectors.QoS{BandwidthMbps: 10}), "GET "+item+" 404", "POST "+svcs+" 201")
	step("create again", create(points(0), connectors.QoS{BandwidthMbps: 10}), "GET "+item+" 200")
	step("create with another bandwidth", create(points(0), connectors.QoS{BandwidthMbps: 20}), "GET "+item+" 200", "PUT "+item+" 204")
	if bw := l2nm.BandwidthOf(e.Service(id)); bw != 20 {
		t.Fatalf("after the replace the controller holds %d Mbit/s, want 20", bw)
	}
	step("edit", func() error { _, err := c.EditService(ctx, id, nil, connectors.Request{Points: points(7)}); return err }, "GET "+item+" 200", "PUT "+item+" 204")
	svc := e.Service(id)
	if bw := l2nm.BandwidthOf(svc); bw != 20 {
		t.Errorf("the edit changed the bandwidth to %d Mbit/s, want it kept (20)", bw)
	}
	if s := fmt.Sprint(svc); !strings.Contains(s, "cvlan-id:107") || strings.Contains(s, "cvlan-id:100") {
		t.Errorf("after the edit to VLAN 107 the service is %v", svc)
	}
	step("delete", func() error { return c.DeleteService(ctx, id, nil) }, "DELETE "+item+" 204")
	step("delete again", func() error { return c.DeleteService(ctx, id, nil) }, "DELETE "+item+" 404")
	for _, r := range e.Requests() {
		if emulator.IsMutation(r.Method) && r.Method != http.MethodDelete && r.ContentType != "application/yang-data+json" {
			t.Errorf("%s %s sent as %q, want application/yang-data+json", r.Method, r.Path, r.ContentType)
		}
		if r.User != user {
			t.Errorf("%s %s without the account's basic auth", r.Method, r.Path)
		}
	}
}

// TestDialectCNC: with dialect cnc a create is a PUT on the entry (201),
// the only create Cisco CNC's L2VPN API documents, with the body POST
// would carry; the default dialect POSTs under the list.
func TestDialectCNC(t *testing.T) {
	t.Parallel()
	const key = "k-cnc"
	id := l2nm.IDPrefix + key
	item := svcs + "/vpn-service=" + id
	tests := []struct {
		dialect string
		want    []string
	}{
		{"", []string{"GET " + item + " 404", "POST " + svcs + " 201"}},
		{"rfc9291", []string{"GET " + item + " 404", "POST " + svcs + " 201"}},
		{"cnc", []string{"GET " + item + " 404", "PUT " + item + " 201"}},
	}
	var bodies []string
	for _, tt := range tests {
		var account map[string]any
		if tt.dialect != "" {
			account = map[string]any{"dialect": tt.dialect}
		}
		c, e := setup(t, emu.Options{}, account)
		if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)}); err != nil {
			t.Fatalf("dialect %q: CreateService: %v", tt.dialect, err)
		}
		reqs := e.Requests()
		if got := slicesDrop(calls(reqs), "GET /.well-known/host-meta 404"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("dialect %q: requests\n got %q\nwant %q", tt.dialect, got, tt.want)
		}
		bodies = append(bodies, reqs[len(reqs)-1].Body)
	}
	for i := range bodies {
		if !connectortest.SameJSON(t, bodies[i], bodies[0]) {
			t.Errorf("dialect %q sent\n%s\nwant the body of the default dialect\n%s", tests[i].dialect, bodies[i], bodies[0])
		}
	}
	if _, err := l2nm.Factory(connectors.Config{URL: "http://127.0.0.1:1", AccountConfig: map[string]any{"dialect": "nso"}}); err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), `"dialect"`) {
		t.Errorf("dialect nso: Factory error %v, want Permanent naming \"dialect\"", err)
	}
}

func slicesDrop(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// TestBody: what a create writes, as the controller holds it: vpn-nodes
// per PE, accesses with their interface, encapsulation and bearer, the
// vpn-type of the setting, bandwidth in both directions.
func TestBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		account map[string]any
		typ     connectors.ServiceType
		points  []connectors.ConnectionPoint
		want    []string // in the stored service's fmt text
	}{
		{"eline dot1q", nil, connectors.ServiceELINE, points(0),
			[]string{"vpn-type:ietf-vpn-common:vpws", "ne-id:pe-1", "ne-id:pe-2", "interface-id:GigabitEthernet0/0/0/1", "cvlan-id:100", "encap-type:ietf-vpn-common:dot1q", "bearer-reference:bearer-2", "cir:50000000"}},
		{"eline untagged on one PE", nil, connectors.ServiceELINE,
			[]connectors.ConnectionPoint{point("1", 0), {ServiceEndpointID: "ep-1b", Encapsulation: connectors.EncapNone, MappingInfo: map[string]any{"ne-id": "pe-1", "interface-id": "ge-9"}}},
			[]string{"encap-type:ietf-vpn-common:untagged-int", "vpn-node-id:pe-1"}},
		{"evpn types", map[string]any{"eline_vpn_type": "vpws-evpn"}, connectors.ServiceELINE, points(0), []string{"vpn-type:ietf-vpn-common:vpws-evpn"}},
		{"elan vpls", nil, connectors.ServiceELAN, elanPoints(0), []string{"vpn-type:ietf-vpn-common:vpls", "ne-id:pe-3"}},
		{"elan evpn", map[string]any{"elan_vpn_type": "ietf-vpn-common:mpls-evpn"}, connectors.ServiceELAN, elanPoints(0), []string{"vpn-type:ietf-vpn-common:mpls-evpn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, tt.account)
			id, info, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: tt.typ, Points: tt.points, QoS: connectors.QoS{BandwidthMbps: 50}})
			if err != nil {
				t.Fatal(err)
			}
			svc := fmt.Sprint(e.Service(id))
			for _, w := range tt.want {
				if !strings.Contains(svc, w) {
					t.Errorf("the service holds no %q: %s", w, svc)
				}
			}
			if n := strings.Count(svc, "vpn-node-id:"); n != len(slicesUniq(tt.points)) {
				t.Errorf("%d vpn-nodes, want one per PE: %s", n, svc)
			}
			if info["service-type"] != string(tt.typ) || info["bandwidth"] != 50 {
				t.Errorf("connInfo %v", info)
			}
		})
	}
}

func slicesUniq(p []connectors.ConnectionPoint) map[any]bool {
	out := map[any]bool{}
	for _, x := range p {
		out[x.MappingInfo["ne-id"]] = true
	}
	return out
}

// TestStatus: oper-status where the controller reports it, else
// existence.
func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  emu.Options
		force string
		want  connectors.Status
		msg   string
	}{
		{"op-unknown while it builds", emu.Options{BuildPolls: 5}, "", connectors.StatusBuild, "op-unknown"},
		{"op-up", emu.Options{}, "", connectors.StatusActive, ""},
		{"op-down", emu.Options{}, "op-down", connectors.StatusDown, "vpn-network-access wimro-k-0 of pe-1"},
		{"no oper-status: existence", emu.Options{NoOperStatus: true}, "", connectors.StatusActive, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, tt.opts, nil)
			id, info, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.force != "" {
				e.SetOperStatus(id, tt.force)
			}
			st, err := c.GetServiceStatus(t.Context(), id, info)
			if err != nil || st.Status != tt.want || !strings.Contains(st.Message, tt.msg) {
				t.Fatalf("status = %+v, %v; want %s with %q", st, err, tt.want, tt.msg)
			}
		})
	}
}

// TestRefusals: what the controller or the connector refuses, by name:
// a latency (L2NM has no leaf for it), an interface the controller does
// not have (its ietf-restconf:errors message in the error), bad mappings
// and settings.
func TestRefusals(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{Devices: map[string][]string{"pe-1": {"GigabitEthernet0/0/0/1"}, "pe-2": {"ge-0/0/0"}}}, nil)
	ctx := t.Context()
	_, _, err := c.CreateService(ctx, connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0), QoS: connectors.QoS{LatencyMs: 5}})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(fmt.Sprint(err), "latency") {
		t.Errorf("a latency: %v, want Permanent naming it", err)
	}
	_, _, err = c.CreateService(ctx, connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(fmt.Sprint(err), `device pe-2 has no interface`) || !strings.Contains(fmt.Sprint(err), "invalid-value") {
		t.Errorf("an unknown interface: %v, want Permanent with the controller's RESTCONF error", err)
	}
	if got := e.Services(); len(got) != 0 {
		t.Errorf("refused creates left %v", got)
	}
	checker := c.(connectors.MappingChecker)
	for _, tt := range []struct {
		info map[string]any
		want string
	}{
		{map[string]any{"interface-id": "x"}, `no "ne-id"`},
		{map[string]any{"ne-id": "pe"}, `no "interface-id"`},
		{map[string]any{"ne-id": "pe", "interface-id": 7}, `"interface-id" must be a non-empty string`},
		{map[string]any{"ne-id": "pe", "interface-id": "x", "bearer-reference": ""}, `"bearer-reference" must be a non-empty string`},
	} {
		if err := checker.CheckMapping("ep", tt.info); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckMapping(%v) = %v, want %q", tt.info, err, tt.want)
		}
	}
	if err := checker.CheckMapping("ep", mapping("1")); err != nil {
		t.Errorf("CheckMapping of a good mapping: %v", err)
	}
	for setting, v := range map[string]any{"eline_vpn_type": "vpls", "elan_vpn_type": "vpws", "default_mtu": 0, "customer_name": ""} {
		r := connectors.NewRegistry()
		l2nm.Register(r)
		_, err := r.New(connectors.Config{Type: l2nm.Type, URL: "http://192.0.2.1", AccountConfig: map[string]any{setting: v}})
		if err == nil || !strings.Contains(err.Error(), `"`+setting+`"`) {
			t.Errorf("%s %v: %v, want an error naming it", setting, v, err)
		}
	}
}

// TestTransport: TLS (insecure, then a CA file), bearer token, and an
// overloaded controller's error.
func TestTransport(t *testing.T) {
	t.Parallel()
	connectortest.CheckTransport(t, build, emu.New(emu.Options{}))
	connectortest.CheckControllerError(t, build, emulator.RESTCONFErrors(emulator.RESTCONFError{Type: "application", Tag: "resource-denied", Message: connectortest.Unstorable}))

	e := emu.New(emu.Options{User: user, Password: password})
	t.Cleanup(e.Close)
	srv := connectortest.TLSServer(t, e)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c := build(t, connectors.Config{URL: srv.URL, User: user, Password: password, AccountConfig: map[string]any{"ca_file": ca}})
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatalf("with ca_file: %v", err)
	}
	if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)}); err != nil {
		t.Fatalf("create over TLS: %v", err)
	}
	if len(e.Services()) != 1 {
		t.Fatalf("services %v", e.Services())
	}
}
