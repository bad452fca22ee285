package onos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/conformance"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/onos"
	emu "github.com/wimro/wimro/internal/testkit/emulators/onos"
)

const (
	user     = "onos"
	password = "rocks-s3cret"

	portA = "of:0000000000000001/1"
	portB = "of:0000000000000002/2"
	portC = "of:00000000000000ab/3"

	vplsPath  = "/onos/v1/network/configuration/apps/org.onosproject.vpls/vpls"
	portsPath = "/onos/v1/network/configuration/ports"
	appPath   = "/onos/v1/applications/org.onosproject.vpls"
)

// point is a dot1q connection point whose mapping names a switch port.
func point(endpoint string, vlan int, dpid, port any) connectors.ConnectionPoint {
	return connectors.ConnectionPoint{
		ServiceEndpointID: endpoint,
		Encapsulation:     connectors.EncapDot1Q,
		VLAN:              vlan,
		MappingInfo:       map[string]any{"switch_dpid": dpid, "switch_port": port},
	}
}

// points returns ELINE points on two switch ports (portA, portB), VLAN
// 100+i, with the dpid and port spelled two different ways.
func points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{
		point("dcA", 100+i, "of:0000000000000001", "1"),
		point("dcB", 100+i, "00:00:00:00:00:00:00:02", float64(2)),
	}
}

// elanPoints adds a third point on portC.
func elanPoints(i int) []connectors.ConnectionPoint {
	return append(points(i), point("dcC", 100+i, "AB", 3))
}

// env is one emulator on one server, and a connector on it.
type env struct {
	c   connectors.Connector
	e   *emu.Emulator
	srv *httptest.Server
}

// setup starts an emulator requiring user/password and builds a connector
// on it with the account config given.
func setup(t *testing.T, opts emu.Options, account map[string]any) env {
	t.Helper()
	opts.User, opts.Password = user, password
	e := emu.New(opts)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return env{c: build(t, connectors.Config{URL: srv.URL, User: user, Password: password, AccountConfig: account}), e: e, srv: srv}
}

// build makes the connector through a registry, as wimd does.
var build = connectortest.Builder(onos.Type, onos.Register)

// elan turns the 3-point ELINE requests of the conformance suite into ELAN
// requests, so that the whole suite (not only its ELAN case) runs on
// 3-point services: a VPLS is the same object for both types. Requests with any other number of points go through
// unchanged, so the suite's multipoint-ELINE check still applies.
type elan struct{ connectors.Connector }

func (c elan) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if req.Type == connectors.ServiceELINE && len(req.Points) == 3 {
		req.Type = connectors.ServiceELAN
	}
	return c.Connector.CreateService(ctx, req)
}

func (c elan) EditService(ctx context.Context, id string, connInfo map[string]any, req connectors.Request) (map[string]any, error) {
	if req.Type == connectors.ServiceELINE && len(req.Points) == 3 {
		req.Type = connectors.ServiceELAN
	}
	return c.Connector.EditService(ctx, id, connInfo, req)
}

func harness(pts func(int) []connectors.ConnectionPoint, wrap func(connectors.Connector) connectors.Connector) conformance.Harness {
	// pair builds two connectors on one fresh emulator. The WIM's port
	// mappings name the three ports, so listed VPLSs read back as
	// endpoints.
	pair := func(t *testing.T) (connectors.Connector, connectors.Connector) {
		e := setup(t, emu.Options{}, nil)
		var mappings []wimro.PortMapping
		for _, p := range elanPoints(0) {
			mappings = append(mappings, wimro.PortMapping{WANServiceEndpointID: p.ServiceEndpointID, WANServiceMappingInfo: p.MappingInfo})
		}
		cfg := connectors.Config{URL: e.srv.URL, User: user, Password: password, PortMappings: mappings}
		return wrap(build(t, cfg)), wrap(build(t, cfg))
	}
	return conformance.Harness{
		New: func(t *testing.T) connectors.Connector {
			c, _ := pair(t)
			return c
		},
		Pair:           pair,
		Capabilities:   connectortest.Capabilities(onos.Type, onos.Register, connectors.Config{}),
		Points:         pts,
		ListsEndpoints: true,
		ELANPoints:     elanPoints,
		MaxStatusPolls: 2,
		Unreachable: func(t *testing.T) connectors.Connector {
			return wrap(build(t, connectors.Config{URL: connectortest.Unreachable(t), User: user, Password: password, AccountConfig: map[string]any{"timeout_ms": 5000}}))
		},
		BadCredentials: func(t *testing.T) connectors.Connector {
			en := setup(t, emu.Options{}, nil)
			return wrap(build(t, connectors.Config{URL: en.srv.URL, User: user, Password: "wrong"}))
		},
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.Run(t, harness(points, func(c connectors.Connector) connectors.Connector { return c }))
}

func TestConformanceELAN(t *testing.T) {
	t.Parallel()
	conformance.Run(t, harness(elanPoints, func(c connectors.Connector) connectors.Connector { return elan{c} }))
}

func TestRegisterBothTypes(t *testing.T) {
	t.Parallel()
	r := connectors.NewRegistry()
	onos.Register(r)
	if got := r.Types(); !slices.Equal(got, []string{onos.Type, onos.TypeVPLS}) {
		t.Fatalf("registered types = %v", got)
	}
	en := setup(t, emu.Options{}, nil)
	for _, typ := range []string{onos.Type, onos.TypeVPLS} {
		c := build(t, connectors.Config{Type: typ, URL: en.srv.URL + "/onos/v1/", User: user, Password: password})
		if err := c.CheckCredentials(t.Context()); err != nil {
			t.Errorf("%s: CheckCredentials: %v", typ, err)
		}
	}
	// wim_url ending with /onos/v1 is not doubled.
	for _, r := range en.e.Requests() {
		if r.Path != "/onos/v1/applications/org.onosproject.vpls" {
			t.Errorf("request path %s", r.Path)
		}
	}
}

// tenant is configuration another tool owns on the controller.
var tenant = map[string]any{
	"ports": map[string]any{
		portA:                   map[string]any{"interfaces": []any{map[string]any{"name": "tenant-a", "vlan": "100", "mac": "00:00:00:00:00:01"}}},
		"of:0000000000000009/9": map[string]any{"interfaces": []any{map[string]any{"name": "tenant-z", "vlan": 300}}},
	},
	"apps": map[string]any{"org.onosproject.vpls": map[string]any{"vpls": map[string]any{"vplsList": []any{
		map[string]any{"name": "tenant-vpls", "interfaces": []any{"tenant-a", "tenant-z"}, "encapsulation": "VLAN"},
		map[string]any{"name": "wimro-not a key", "interfaces": []any{"tenant-z"}},
	}}}},
	"devices": map[string]any{"of:0000000000000001": map[string]any{"basic": map[string]any{"name": "edge-1"}}},
}

// seed loads the tenant's configuration.
func seed(t *testing.T, e *emu.Emulator) {
	t.Helper()
	if err := e.Load(tenant); err != nil {
		t.Fatalf("seeding: %v", err)
	}
}

// checkTenant asserts the tenant's configuration and VPLSs are untouched.
func checkTenant(t *testing.T, e *emu.Emulator, after string) {
	t.Helper()
	ifs := e.Interfaces()
	for _, want := range []emu.Interface{{Port: portA, Name: "tenant-a", VLAN: "100"}, {Port: "of:0000000000000009/9", Name: "tenant-z", VLAN: "300"}} {
		if !slices.Contains(ifs, want) {
			t.Errorf("after %s the tenant interface %+v is gone: %+v", after, want, ifs)
		}
	}
	app := e.AppVPLSs()
	if v := app["tenant-vpls"]; !slices.Equal(v.Interfaces, []string{"tenant-a", "tenant-z"}) || v.Encapsulation != "VLAN" {
		t.Errorf("after %s the tenant VPLS is %+v", after, v)
	}
	if _, ok := app["wimro-not a key"]; !ok {
		t.Errorf("after %s the VPLS %q (not a wimro key) is gone", after, "wimro-not a key")
	}
	if dev := e.Config()["devices"].(map[string]any)["of:0000000000000001"]; dev == nil {
		t.Errorf("after %s the device config is gone", after)
	}
}

// ours returns the interfaces of service key on the emulator.
func ours(e *emu.Emulator, key string) []emu.Interface {
	var out []emu.Interface
	for _, it := range e.Interfaces() {
		if strings.HasPrefix(it.Name, "wimro-"+key+"-") {
			out = append(out, it)
		}
	}
	return out
}

func create(t *testing.T, c connectors.Connector, key string, typ connectors.ServiceType, p []connectors.ConnectionPoint) map[string]any {
	t.Helper()
	id, info, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: typ, Points: p})
	if err != nil {
		t.Fatalf("CreateService(%s): %v", key, err)
	}
	if id != key {
		t.Fatalf("CreateService(%s) id = %s, want the key", key, id)
	}
	return info
}

func TestCreateRequests(t *testing.T) {
	t.Parallel()
	en := setup(t, emu.Options{}, map[string]any{"encapsulation": "mpls"})
	seed(t, en.e)
	key := uuid.NewString()
	info := create(t, en.c, key, connectors.ServiceELINE, points(3))

	var got []string
	for _, r := range en.e.Requests() {
		got = append(got, r.Method+" "+r.Path)
	}
	reqs := en.e.Requests()[1:] // the bodies below count from the first netcfg request
	want := []string{"GET " + appPath, "GET " + vplsPath, "GET " + portsPath, "POST " + portsPath, "GET " + vplsPath, "POST " + vplsPath, "GET " + portsPath, "GET " + vplsPath}
	if !slices.Equal(got, want) {
		t.Fatalf("requests =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var portsBody map[string]map[string][]map[string]any
	if err := json.Unmarshal([]byte(reqs[2].Body), &portsBody); err != nil {
		t.Fatal(err)
	}
	if len(portsBody) != 2 || portsBody[portA] == nil || portsBody[portB] == nil {
		t.Fatalf("ports POST = %s, want exactly the two ports used", reqs[2].Body)
	}
	if a := portsBody[portA]["interfaces"]; len(a) != 2 || a[0]["name"] != "tenant-a" || a[1]["name"] != onos.IfaceName(key, 0, portA, 103) || a[1]["vlan"] != "103" {
		t.Errorf("port A interfaces = %v, want the tenant's then ours with vlan \"103\"", a)
	}
	if b := portsBody[portB]["interfaces"]; len(b) != 1 || b[0]["name"] != onos.IfaceName(key, 1, portB, 103) || len(b[0]) != 2 {
		t.Errorf("port B interfaces = %v", b)
	}
	var vplsBody struct {
		List []struct {
			Name          string   `json:"name"`
			Interfaces    []string `json:"interfaces"`
			Encapsulation string   `json:"encapsulation"`
		} `json:"vplsList"`
	}
	if err := json.Unmarshal([]byte(reqs[4].Body), &vplsBody); err != nil {
		t.Fatal(err)
	}
	if n := len(vplsBody.List); n != 3 || vplsBody.List[2].Name != "wimro-"+key || vplsBody.List[2].Encapsulation != "MPLS" ||
		!slices.Equal(vplsBody.List[2].Interfaces, []string{onos.IfaceName(key, 0, portA, 103), onos.IfaceName(key, 1, portB, 103)}) {
		t.Errorf("VPLS POST = %s", reqs[4].Body)
	}

	wantInfo := map[string]any{"vpls": "wimro-" + key, "type": "ELINE", "encapsulation": "MPLS", "interfaces": []any{
		map[string]any{"name": onos.IfaceName(key, 0, portA, 103), "port": portA, "vlan": 103},
		map[string]any{"name": onos.IfaceName(key, 1, portB, 103), "port": portB, "vlan": 103},
	}}
	if g, w := connectortest.MustJSON(t, info), connectortest.MustJSON(t, wantInfo); g != w {
		t.Errorf("connInfo = %s, want %s", g, w)
	}
	if v := en.e.AppVPLSs()["wimro-"+key]; len(v.Interfaces) != 2 || v.Encapsulation != "MPLS" {
		t.Errorf("app VPLS = %+v", v)
	}
	checkTenant(t, en.e, "create")

	// A retried create adopts with reads only.
	n := len(en.e.Requests())
	create(t, en.c, key, connectors.ServiceELINE, points(3))
	for _, r := range en.e.Requests()[n:] {
		if r.Method != http.MethodGet {
			t.Errorf("adopting create sent %s %s", r.Method, r.Path)
		}
	}
}

// TestLastUpdateTimeStripped checks that no VPLS config the connector
// posts carries lastUpdateTime (the VPLS app would ignore it), through
// every kind of change, and that the app acted on each.
func TestLastUpdateTimeStripped(t *testing.T) {
	t.Parallel()
	en := setup(t, emu.Options{}, nil)
	seed(t, en.e)
	k1, k2 := uuid.NewString(), uuid.NewString()
	steps := []struct {
		name string
		do   func() error
		want []string // our VPLSs the app runs afterwards
	}{
		{"create 1", func() error {
			_, _, err := en.c.CreateService(t.Context(), connectors.Request{Key: k1, Type: connectors.ServiceELINE, Points: points(0)})
			return err
		}, []string{k1}},
		{"create 2", func() error {
			_, _, err := en.c.CreateService(t.Context(), connectors.Request{Key: k2, Type: connectors.ServiceELAN, Points: elanPoints(1)})
			return err
		}, []string{k1, k2}},
		{"edit 1", func() error {
			_, err := en.c.EditService(t.Context(), k1, nil, connectors.Request{Points: elanPoints(5)})
			return err
		}, []string{k1, k2}},
		{"delete 2", func() error { return en.c.DeleteService(t.Context(), k2, nil) }, []string{k1}},
		{"clear all", func() error { return en.c.ClearAll(t.Context()) }, nil},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var running []string
		for name := range en.e.AppVPLSs() {
			if key, ok := strings.CutPrefix(name, "wimro-"); ok && name != "wimro-not a key" {
				running = append(running, key)
			}
		}
		slices.Sort(running)
		want := slices.Sorted(slices.Values(s.want))
		if !slices.Equal(running, want) {
			t.Errorf("after %s the app runs %v, want %v", s.name, running, want)
		}
		checkTenant(t, en.e, s.name)
	}
	posts := 0
	for _, r := range en.e.Requests() {
		if r.Method == http.MethodPost && r.Path == vplsPath {
			posts++
			if strings.Contains(r.Body, "lastUpdateTime") {
				t.Errorf("VPLS POST carries lastUpdateTime: %s", r.Body)
			}
		}
	}
	if posts != len(steps) {
		t.Errorf("%d VPLS POSTs, want one per step (%d)", posts, len(steps))
	}
	if left := ours(en.e, k1); len(left) != 0 {
		t.Errorf("ClearAll left interfaces %+v", left)
	}
}

func TestTwoServicesOnOnePort(t *testing.T) {
	t.Parallel()
	en := setup(t, emu.Options{}, nil)
	k1, k2 := uuid.NewString(), uuid.NewString()
	i1 := create(t, en.c, k1, connectors.ServiceELINE, points(1))
	i2 := create(t, en.c, k2, connectors.ServiceELINE, points(2))
	want := []emu.Interface{
		{Port: portA, Name: onos.IfaceName(k1, 0, portA, 101), VLAN: "101"}, {Port: portB, Name: onos.IfaceName(k1, 1, portB, 101), VLAN: "101"},
		{Port: portA, Name: onos.IfaceName(k2, 0, portA, 102), VLAN: "102"}, {Port: portB, Name: onos.IfaceName(k2, 1, portB, 102), VLAN: "102"},
	}
	ifs := en.e.Interfaces()
	for _, w := range want {
		if !slices.Contains(ifs, w) {
			t.Errorf("interface %+v missing: %+v", w, ifs)
		}
	}
	if err := en.c.DeleteService(t.Context(), k1, i1); err != nil {
		t.Fatal(err)
	}
	if st, err := en.c.GetServiceStatus(t.Context(), k2, i2); err != nil || st.Status != connectors.StatusActive {
		t.Fatalf("status of the other service = %+v, %v", st, err)
	}
	if got := ours(en.e, k2); len(got) != 2 || len(ours(en.e, k1)) != 0 {
		t.Fatalf("after deleting %s: interfaces %+v", k1, en.e.Interfaces())
	}
}

func TestDeleteWithoutConnInfo(t *testing.T) {
	t.Parallel()
	en := setup(t, emu.Options{}, nil)
	seed(t, en.e)
	key := uuid.NewString()
	create(t, en.c, key, connectors.ServiceELAN, elanPoints(0))
	// An orphan interface of the key, left by a crashed create on another
	// port, goes too: delete finds interfaces by name.
	orphan := map[string]any{"ports": map[string]any{"of:0000000000000007/7": map[string]any{"interfaces": []any{map[string]any{"name": "wimro-" + key + "-9"}}}}}
	if err := en.e.Load(orphan); err != nil {
		t.Fatal(err)
	}
	if err := en.c.DeleteService(t.Context(), key, nil); err != nil {
		t.Fatalf("DeleteService(nil connInfo): %v", err)
	}
	if left := ours(en.e, key); len(left) != 0 {
		t.Fatalf("interfaces left: %+v", left)
	}
	if _, ok := en.e.AppVPLSs()["wimro-"+key]; ok {
		t.Fatal("VPLS still running")
	}
	checkTenant(t, en.e, "delete")
	if err := en.c.DeleteService(t.Context(), key, nil); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		nilInfo  bool
		breakIt  func(e *emu.Emulator, key string) error
		want     connectors.Status
		contains string
	}{
		{"active", false, func(*emu.Emulator, string) error { return nil }, connectors.StatusActive, ""},
		{"interface removed", false, func(e *emu.Emulator, key string) error {
			if !e.RemoveInterface(onos.IfaceName(key, 1, portB, 100)) {
				return errors.New("no such interface")
			}
			return nil
		}, connectors.StatusDown, "%s (not in the VPLS, not configured under ports)"},
		{"interface removed, no connInfo", true, func(e *emu.Emulator, key string) error {
			e.RemoveInterface(onos.IfaceName(key, 1, portB, 100))
			return nil
		}, connectors.StatusDown, "has 1 interface(s)"},
		{"vlan changed by someone else", false, func(e *emu.Emulator, key string) error {
			return e.Load(map[string]any{"ports": map[string]any{portB: map[string]any{"interfaces": []any{map[string]any{"name": onos.IfaceName(key, 1, portB, 100), "vlan": "999"}}}}})
		}, connectors.StatusDown, `not configured on ` + portB + ` with vlan "100"`},
		{"name dropped from the VPLS", true, func(e *emu.Emulator, key string) error {
			return e.Load(map[string]any{"apps": map[string]any{"org.onosproject.vpls": map[string]any{"vpls": map[string]any{
				"vplsList": []any{map[string]any{"name": "wimro-" + key, "interfaces": []any{onos.IfaceName(key, 0, portA, 100)}}},
			}}}})
		}, connectors.StatusDown, "%s (not in the VPLS)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			en := setup(t, emu.Options{}, nil)
			key := uuid.NewString()
			info := create(t, en.c, key, connectors.ServiceELINE, points(0))
			if tt.nilInfo {
				info = nil
			}
			if err := tt.breakIt(en.e, key); err != nil {
				t.Fatal(err)
			}
			st, err := en.c.GetServiceStatus(t.Context(), key, connectortest.RoundTrip(t, info))
			if err != nil {
				t.Fatalf("GetServiceStatus: %v", err)
			}
			if st.Status != tt.want {
				t.Fatalf("status = %s (%s), want %s", st.Status, st.Message, tt.want)
			}
			if want := strings.ReplaceAll(tt.contains, "%s", onos.IfaceName(key, 1, portB, 100)); !strings.Contains(st.Message, want) {
				t.Errorf("message %q does not contain %q", st.Message, want)
			}
			if st.Info["vpls"] != "wimro-"+key || st.Info["last_update_time"] == nil {
				t.Errorf("info = %v", st.Info)
			}
			connectortest.MustJSON(t, st.Info)
		})
	}
}

func TestCreateRepairsAndReplaces(t *testing.T) {
	t.Parallel()
	en := setup(t, emu.Options{}, nil)
	key := uuid.NewString()
	create(t, en.c, key, connectors.ServiceELINE, points(0))
	en.e.RemoveInterface(onos.IfaceName(key, 0, portA, 100))
	// The retried create puts the missing interface back.
	info := create(t, en.c, key, connectors.ServiceELINE, points(0))
	if st, err := en.c.GetServiceStatus(t.Context(), key, info); err != nil || st.Status != connectors.StatusActive {
		t.Fatalf("after the repairing create: %+v, %v", st, err)
	}
	// The same key with other points is replaced: point 1 moves to portC.
	p := points(0)
	p[1] = point("dcC", 100, "of:00000000000000AB", "3")
	info = create(t, en.c, key, connectors.ServiceELINE, p)
	want := []emu.Interface{{Port: portA, Name: onos.IfaceName(key, 0, portA, 100), VLAN: "100"}, {Port: portC, Name: onos.IfaceName(key, 1, portC, 100), VLAN: "100"}}
	if got := ours(en.e, key); !slices.Equal(got, want) {
		t.Fatalf("interfaces after replace = %+v, want %+v", got, want)
	}
	if st, err := en.c.GetServiceStatus(t.Context(), key, connectortest.RoundTrip(t, info)); err != nil || st.Status != connectors.StatusActive {
		t.Fatalf("after replace: %+v, %v", st, err)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	en := setup(t, emu.Options{}, nil)
	key := uuid.NewString()
	info := create(t, en.c, key, connectors.ServiceELINE, points(0))
	// An ELINE stays an ELINE.
	_, err := en.c.EditService(t.Context(), key, connectortest.RoundTrip(t, info), connectors.Request{Points: elanPoints(0)})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), connectors.MultipointNotSupported) {
		t.Fatalf("edit ELINE to 3 points: %v, want Permanent multipoint", err)
	}
	// Without connInfo VPLS's own rule applies: 3 points, then back to 2
	// on other VLANs; unused interfaces go.
	for _, p := range [][]connectors.ConnectionPoint{elanPoints(1), points(7)} {
		newInfo, err := en.c.EditService(t.Context(), key, nil, connectors.Request{Points: p})
		if err != nil {
			t.Fatalf("EditService: %v", err)
		}
		got := ours(en.e, key)
		if len(got) != len(p) {
			t.Fatalf("interfaces after edit = %+v", got)
		}
		if v := en.e.AppVPLSs()["wimro-"+key]; len(v.Interfaces) != len(p) {
			t.Fatalf("app VPLS after edit = %+v, want %d interfaces", v, len(p))
		}
		if st, err := en.c.GetServiceStatus(t.Context(), key, newInfo); err != nil || st.Status != connectors.StatusActive {
			t.Fatalf("status after edit: %+v, %v", st, err)
		}
	}
	if got := ours(en.e, key); got[0].VLAN != "107" || got[1].VLAN != "107" {
		t.Fatalf("interfaces after the last edit = %+v, want vlan 107", got)
	}
}

func TestCheckCredentials(t *testing.T) {
	t.Parallel()
	notInstalled := func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":404,"message":"App not found"}`))
	}
	tests := []struct {
		name     string
		opts     emu.Options
		handler  http.HandlerFunc
		password string
		kind     connectors.Kind // checked when contains is set
		contains string
	}{
		{name: "active", password: password},
		{name: "inactive", opts: emu.Options{VPLSInactive: true}, password: password, kind: connectors.KindPermanent, contains: "VPLS application is not active"},
		{name: "bad password", password: "nope", kind: connectors.KindUnauthorized, contains: "401"},
		{name: "not installed", handler: notInstalled, kind: connectors.KindPermanent, contains: "is not installed (App not found)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var url string
			if tt.handler != nil {
				srv := httptest.NewServer(tt.handler)
				t.Cleanup(srv.Close)
				url = srv.URL
			} else {
				url = setup(t, tt.opts, nil).srv.URL
			}
			err := build(t, connectors.Config{URL: url, User: user, Password: tt.password}).CheckCredentials(t.Context())
			if tt.contains == "" {
				if err != nil {
					t.Fatalf("CheckCredentials: %v", err)
				}
				return
			}
			if connectors.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CheckCredentials = %v (kind %s), want %s containing %q", err, connectors.KindOf(err), tt.kind, tt.contains)
			}
		})
	}
}

// failOn wraps the emulator: the first request matching method and path
// is applied by the emulator, then answered with status and body instead
// (ONOS applying part of a netcfg POST and reporting 207), or, with
// apply false, answered without being applied.
func failOn(e *emu.Emulator, method, path string, apply bool, status int, body string) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit := false
		if r.Method == method && r.URL.Path == path {
			once.Do(func() { hit = true })
		}
		if !hit {
			e.ServeHTTP(w, r)
			return
		}
		if apply {
			e.ServeHTTP(httptest.NewRecorder(), r)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
}

// TestFailedCreateUndoes checks the failures in the middle of a create:
// the error's kind and text, and that only what the create added is
// removed (the tenant's configuration stays).
func TestFailedCreateUndoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path string
		apply              bool
		status             int
		body               string
		kind               connectors.Kind
		contains           string
	}{
		{"207 on ports", http.MethodPost, portsPath, true, http.StatusMultiStatus,
			`{"code":207,"message":["Error parsing config ports/of:0000000000000001/1/interfaces","Error parsing config ports/of:0000000000000002/2/interfaces"]}`,
			connectors.KindPermanent, "HTTP 207: Error parsing config ports/of:0000000000000001/1/interfaces; Error parsing config ports/of:0000000000000002/2/interfaces"},
		{"207 on the VPLS", http.MethodPost, vplsPath, true, http.StatusMultiStatus,
			`{"code":207,"message":["Error parsing config apps/org.onosproject.vpls/vpls"]}`, connectors.KindPermanent, "apps/org.onosproject.vpls/vpls"},
		{"500 on the VPLS", http.MethodPost, vplsPath, false, http.StatusInternalServerError,
			`{"code":500,"message":"cluster churn"}`, connectors.KindRetryable, "cluster churn"},
		{"400 on ports", http.MethodPost, portsPath, false, http.StatusBadRequest,
			`{"code":400,"message":"Invalid config"}`, connectors.KindPermanent, "Invalid config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := emu.New(emu.Options{})
			seed(t, e)
			srv := httptest.NewServer(failOn(e, tt.method, tt.path, tt.apply, tt.status, tt.body))
			t.Cleanup(srv.Close)
			c := build(t, connectors.Config{URL: srv.URL})
			key := uuid.NewString()
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
			if connectors.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CreateService = %v (kind %s), want %s containing %q", err, connectors.KindOf(err), tt.kind, tt.contains)
			}
			if left := ours(e, key); len(left) != 0 {
				t.Errorf("the failed create left interfaces %+v", left)
			}
			if cfg, _ := e.ConfiguredVPLSs(); slices.ContainsFunc(cfg.VPLSs, func(v emu.VPLS) bool { return v.Name == "wimro-"+key }) {
				t.Errorf("the failed create left its VPLS entry: %+v", cfg)
			}
			checkTenant(t, e, "a failed create")
		})
	}
}

// clobber stands for a controller client that does not take wimro's lock
// (an operator, OSM): right after each of the first n VPLS POSTs that
// carry name, it posts the tenant's VPLS list back, without name.
func clobber(t *testing.T, e *emu.Emulator, name string, n int) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		e.ServeHTTP(w, r)
		if r.Method != http.MethodPost || r.URL.Path != vplsPath || !bytes.Contains(body, []byte(name)) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if n > 0 {
			n--
			if err := e.Load(map[string]any{"apps": tenant["apps"]}); err != nil {
				t.Errorf("clobbering: %v", err)
			}
		}
	})
}

// TestVerifyReapplies checks the verify-after-write: a VPLS entry removed
// right after the connector wrote it is written again, up to 3 times; a
// fourth loss is a Retryable failure, and the create undoes itself.
func TestVerifyReapplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		clobbers int
		fails    bool
	}{
		{clobbers: 1},
		{clobbers: 2},
		{clobbers: 3, fails: true},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.clobbers), func(t *testing.T) {
			t.Parallel()
			e := emu.New(emu.Options{})
			seed(t, e)
			key := uuid.NewString()
			srv := httptest.NewServer(clobber(t, e, "wimro-"+key, tt.clobbers))
			t.Cleanup(srv.Close)
			c := build(t, connectors.Config{URL: srv.URL})
			_, info, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
			writes := 0
			for _, r := range e.Requests() {
				if r.Method == http.MethodPost && r.Path == vplsPath && strings.Contains(r.Body, "wimro-"+key) {
					writes++
				}
			}
			if tt.fails {
				if !connectors.Retryable(err) || !strings.Contains(err.Error(), "not in place after 3 attempts") {
					t.Fatalf("CreateService = %v, want Retryable after 3 attempts", err)
				}
				if writes != 3 || len(ours(e, key)) != 0 {
					t.Fatalf("%d VPLS writes, interfaces left %+v; want 3 writes and the interfaces undone", writes, ours(e, key))
				}
				checkTenant(t, e, "a failed verify")
				return
			}
			if err != nil {
				t.Fatalf("CreateService: %v", err)
			}
			if writes != tt.clobbers+1 {
				t.Errorf("%d VPLS writes, want %d", writes, tt.clobbers+1)
			}
			if st, err := c.GetServiceStatus(t.Context(), key, info); err != nil || st.Status != connectors.StatusActive {
				t.Fatalf("status after the re-apply = %+v, %v", st, err)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		kind   connectors.Kind
	}{
		{http.StatusInternalServerError, connectors.KindRetryable},
		{http.StatusServiceUnavailable, connectors.KindRetryable},
		{http.StatusTooManyRequests, connectors.KindRetryable},
		{http.StatusBadRequest, connectors.KindPermanent},
		{http.StatusConflict, connectors.KindPermanent},
		{http.StatusUnauthorized, connectors.KindUnauthorized},
		{http.StatusForbidden, connectors.KindUnauthorized},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			en := setup(t, emu.Options{}, nil)
			calls := []struct {
				name string
				call func() error
			}{
				{"create", func() error {
					_, _, err := en.c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
					return err
				}},
				{"status", func() error { _, err := en.c.GetServiceStatus(t.Context(), uuid.NewString(), nil); return err }},
				{"delete", func() error { return en.c.DeleteService(t.Context(), uuid.NewString(), nil) }},
				{"list", func() error { _, err := en.c.ListServices(t.Context()); return err }},
				{"check", func() error { return en.c.CheckCredentials(t.Context()) }},
			}
			for _, c := range calls {
				en.e.FailNext(1, tt.status)
				err := c.call()
				if k := connectors.KindOf(err); k != tt.kind || !strings.Contains(err.Error(), "injected failure") {
					t.Errorf("%s: error %v has kind %s, want %s with ONOS's message", c.name, err, k, tt.kind)
				}
			}
			if n := len(en.e.Interfaces()); n != 0 {
				t.Errorf("failed calls left %d interfaces", n)
			}
		})
	}
}

func TestMalformedReplies(t *testing.T) {
	t.Parallel()
	reply := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	status := func(c connectors.Connector) error {
		_, err := c.GetServiceStatus(t.Context(), uuid.NewString(), nil)
		return err
	}
	tests := []struct {
		name  string
		serve http.HandlerFunc
		op    func(c connectors.Connector) error
		want  connectors.Kind
	}{
		{"VPLS config not JSON", reply(200, "<html>"), status, connectors.KindPermanent},
		{"vplsList not an array", reply(200, `{"vplsList":{"name":"x"}}`), status, connectors.KindPermanent},
		{"ports interfaces not an array", func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/ports") {
				_, _ = w.Write([]byte(`{"` + portA + `":{"interfaces":{"name":"x"}}}`))
				return
			}
			if strings.HasSuffix(r.URL.Path, "/applications/org.onosproject.vpls") {
				_, _ = w.Write([]byte(`{"state":"ACTIVE"}`))
				return
			}
			_, _ = w.Write([]byte(`{}`))
		}, func(c connectors.Connector) error {
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
			return err
		}, connectors.KindPermanent},
		{"application not JSON", reply(200, "ok"), func(c connectors.Connector) error { return c.CheckCredentials(t.Context()) }, connectors.KindPermanent},
		{"HTML error page", reply(502, "<html>bad gateway</html>"), status, connectors.KindRetryable},
		{"reply cut short", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"vplsList":`))
		}, status, connectors.KindRetryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.serve)
			t.Cleanup(srv.Close)
			if err := tt.op(build(t, connectors.Config{URL: srv.URL})); err == nil || connectors.KindOf(err) != tt.want {
				t.Fatalf("got error %v (%s), want a %s error", err, connectors.KindOf(err), tt.want)
			}
		})
	}
}

func TestInvalidInputNeverSent(t *testing.T) {
	t.Parallel()
	with := func(dpid, port any) []connectors.ConnectionPoint {
		p := points(0)
		p[1] = point("dcB", 100, dpid, port)
		return p
	}
	tests := []struct {
		name     string
		key      string
		points   []connectors.ConnectionPoint
		contains string
	}{
		{"no dpid", "", with(nil, 1), "connection point 1 (dcB): wan_service_mapping_info: switch_dpid is missing"},
		{"dpid a number", "", with(17.0, 1), "switch_dpid must be a string"},
		{"dpid too long", "", with("00000000000000001", 1), "not an OpenFlow datapath id"},
		{"dpid not hex", "", with("of:00000000000000zz", 1), "not an OpenFlow datapath id"},
		{"dpid bad bytes", "", with("0:1:2", 1), "not an OpenFlow datapath id"},
		{"dpid nine bytes", "", with("00:00:00:00:00:00:00:00:01", 1), "not an OpenFlow datapath id"},
		{"no port", "", with("1", nil), "switch_port is missing"},
		{"port zero", "", with("1", 0.0), "not an OpenFlow port number"},
		{"port fraction", "", with("1", 1.5), "not an OpenFlow port number"},
		{"port text", "", with("1", "eth0"), `switch_port "eth0" is not a port number`},
		{"port too big", "", with("1", "4294967041"), "not an OpenFlow port number"},
		{"port a bool", "", with("1", true), "switch_port must be a number or a string"},
		{"same port and VLAN twice", "", []connectors.ConnectionPoint{
			point("dcA", 100, "1", 1), point("dcA2", 100, "of:0000000000000001", "1"),
		}, "connection points 0 (dcA) and 1 (dcA2) are the same port and VLAN"},
		{"no mapping anywhere", "", func() []connectors.ConnectionPoint {
			p := points(0)
			p[0].MappingInfo = nil
			return p
		}(), `no port mapping for service endpoint "dcA"`},
		{"key with a slash", "a/b", points(0), "service key"},
		{"key starting with a dash", "-k", points(0), "service key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			en := setup(t, emu.Options{}, nil)
			key := tt.key
			if key == "" {
				key = uuid.NewString()
			}
			_, _, err := en.c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: tt.points})
			if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("error = %v (kind %s), want Permanent containing %q", err, connectors.KindOf(err), tt.contains)
			}
			if _, err := en.c.EditService(t.Context(), key, nil, connectors.Request{Points: tt.points}); err == nil {
				t.Fatal("EditService accepted the same input")
			}
			if n := len(en.e.Requests()); n != 0 {
				t.Fatalf("%d requests sent for invalid input", n)
			}
		})
	}
}

func TestMappingForms(t *testing.T) {
	t.Parallel()
	e := emu.New(emu.Options{})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	c := build(t, connectors.Config{URL: srv.URL, PortMappings: []wimro.PortMapping{
		{WANServiceEndpointID: "pm", WANServiceMappingInfo: map[string]any{"switch_dpid": "0x1F", "switch_port": json.Number("42")}},
	}})
	tests := []struct {
		dpid, port any
		want       string
	}{
		{"of:0000000000000011", "7", "of:0000000000000011/7"},
		{"OF:00000000000000AA", 7.0, "of:00000000000000aa/7"},
		{"11", 7, "of:0000000000000011/7"},
		{"00:00:00:00:00:00:00:11", int64(7), "of:0000000000000011/7"},
		{"de:ad:be:ef", " 07 ", "of:00000000deadbeef/7"},
	}
	for i, tt := range tests {
		key := uuid.NewString()
		fromMapping := connectors.ConnectionPoint{ServiceEndpointID: "pm", Encapsulation: connectors.EncapNone}
		create(t, c, key, connectors.ServiceELINE, []connectors.ConnectionPoint{point("x", 10+i, tt.dpid, tt.port), fromMapping})
		got := ours(e, key)
		want := []emu.Interface{{Port: tt.want, Name: onos.IfaceName(key, 0, tt.want, 10+i), VLAN: strconv.Itoa(10 + i)}, {Port: "of:000000000000001f/42", Name: onos.IfaceName(key, 1, "of:000000000000001f/42", 0)}}
		slices.SortFunc(want, func(a, b emu.Interface) int { return strings.Compare(a.Port, b.Port) })
		if !slices.Equal(got, want) {
			t.Errorf("dpid %v port %v: interfaces %+v, want %+v", tt.dpid, tt.port, got, want)
		}
	}
}

func TestListServicesOnlyOurs(t *testing.T) {
	t.Parallel()
	en := setup(t, emu.Options{}, nil)
	seed(t, en.e)
	key := uuid.NewString()
	create(t, en.c, key, connectors.ServiceELINE, points(0))
	list, err := en.c.ListServices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != key || list[0].Key != key || list[0].Info["vpls"] != "wimro-"+key {
		t.Fatalf("ListServices = %+v, want only %s", list, key)
	}
	if err := en.c.ClearAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkTenant(t, en.e, "ClearAll")
	if err := en.c.ClearAll(t.Context()); err != nil {
		t.Fatalf("ClearAll with nothing to clear: %v", err)
	}
}

func TestEncapsulationSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		wim, account map[string]any
		want         string
	}{
		{nil, nil, "NONE"},
		{map[string]any{"encapsulation": "vlan"}, nil, "VLAN"},
		{map[string]any{"encapsulation": "VLAN"}, map[string]any{"encapsulation": "MPLS"}, "MPLS"},
	}
	for _, tt := range tests {
		e := emu.New(emu.Options{})
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		c := build(t, connectors.Config{URL: srv.URL, WIMConfig: tt.wim, AccountConfig: tt.account})
		key := uuid.NewString()
		create(t, c, key, connectors.ServiceELINE, points(0))
		if v := e.AppVPLSs()["wimro-"+key]; v.Encapsulation != tt.want {
			t.Errorf("wim %v account %v: encapsulation %s, want %s", tt.wim, tt.account, v.Encapsulation, tt.want)
		}
	}
}

// TestFactoryErrors checks onos's own settings, including its rewriting
// of wim_url (an empty one must not become valid), and that an error of
// the shared REST client comes out of Factory; the client's settings are
// tested in connectors/rest.
func TestFactoryErrors(t *testing.T) {
	t.Parallel()
	onosURL := "http://onos.example:8181"
	bad := map[string]connectors.Config{
		"no url":                     {},
		"not http":                   {URL: "ftp://onos.example:8181"},
		"bad encapsulation":          {URL: onosURL, WIMConfig: map[string]any{"encapsulation": "QINQ"}},
		"encapsulation not a string": {URL: onosURL, AccountConfig: map[string]any{"encapsulation": 1}},
	}
	for name, cfg := range bad {
		c, err := onos.Factory(cfg)
		if c != nil || connectors.KindOf(err) != connectors.KindPermanent || err == nil {
			t.Errorf("%s: Factory = %v, %v; want a Permanent error", name, c, err)
		}
	}
}

// TestOverloadedController: a 503 with Retry-After whose text, raw or in
// ONOS's {code, message}, PostgreSQL would refuse, fails Retryable with
// the hint and quotes the controller storably.
func TestOverloadedController(t *testing.T) {
	t.Parallel()
	connectortest.CheckControllerError(t, build, map[string]any{"code": 503, "message": connectortest.Unstorable})
}

// TestTransport checks that onos, which rewrites the URL it hands the
// shared REST client, hands it the client's other settings too, through
// CheckCredentials.
func TestTransport(t *testing.T) {
	t.Parallel()
	t.Run("TLS and bearer token", func(t *testing.T) {
		t.Parallel()
		connectortest.CheckTransport(t, build, emu.New(emu.Options{}))
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		e := emu.New(emu.Options{})
		e.Delay(time.Minute) // ends when the client gives up
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		err := build(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"timeout_ms": 50}}).CheckCredentials(t.Context())
		if !connectors.Retryable(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("CheckCredentials = %v (kind %s), want a Retryable deadline", err, connectors.KindOf(err))
		}
	})
}

func TestSecretsNotLeaked(t *testing.T) {
	t.Parallel()
	logger, logged := connectortest.Logger(t)
	en := setup(t, emu.Options{}, nil)
	good := build(t, connectors.Config{URL: en.srv.URL, User: user, Password: password, Logger: logger})
	key := uuid.NewString()
	info := create(t, good, key, connectors.ServiceELINE, points(0))
	en.e.FailNext(1, http.StatusInternalServerError)
	_, statusErr := good.GetServiceStatus(t.Context(), key, info)

	bad := build(t, connectors.Config{URL: en.srv.URL, User: user, Password: "wrong-" + password, Logger: logger})
	credErr := bad.CheckCredentials(t.Context())
	// A password written into the URL stays out of errors too, including
	// the lock's (its name carries the URL).
	inURL := build(t, connectors.Config{URL: connectortest.WithUserInfo(en.srv.URL, "onos", password), Logger: logger})
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, lockErr := inURL.CreateService(cancelled, connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	_, unreachableErr := build(t, connectors.Config{URL: connectortest.WithUserInfo(connectortest.Unreachable(t), "onos", password), Logger: logger}).ListServices(t.Context())

	text := logged.String()
	connectortest.NoSecret(t, password, []error{statusErr, credErr, lockErr, unreachableErr}, text)
	if !strings.Contains(text, "onos VPLS in place") {
		t.Errorf("debug log = %q, want the create line", text)
	}
}
