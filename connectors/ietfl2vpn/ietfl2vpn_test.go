package ietfl2vpn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
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
	"github.com/wimro/wimro/connectors/ietfl2vpn"
	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
)

const (
	user     = "netops"
	password = "l2sm-pa55"
	root     = emu.Root
)

// sites are the sites every emulator starts with.
var sites = []emu.Site{
	{ID: "dc-a"}, {ID: "dc-b"}, {ID: "dc-c", Management: "co-managed"}, {ID: "edge 3/b"},
	{ID: "cust-1", Management: "customer-managed"}, {ID: "cust-2", Management: "customer-managed"},
}

// mapping is the wan_service_mapping_info of a seeded site: it names both
// the device and the location, so that either location_flavor works.
func mapping(site string) map[string]any {
	return map[string]any{"mapping_type": "l2sm", "site-id": site, "device-id": site + "-pe", "location-id": site + "-loc", "bearer-reference": site + "-pe:ge-0/0/1"}
}

// point is a connection point on a seeded site, dot1q when vlan > 0.
func point(site string, vlan int) connectors.ConnectionPoint {
	p := connectors.ConnectionPoint{ServiceEndpointID: "ep-" + site, Encapsulation: connectors.EncapNone, MappingInfo: mapping(site)}
	if vlan > 0 {
		p.Encapsulation, p.VLAN = connectors.EncapDot1Q, vlan
	}
	return p
}

// points returns an ELINE between dc-a and dc-b on VLAN 100+i.
func points(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{point("dc-a", 100+i), point("dc-b", 100+i)}
}

// build makes the connector through a registry, as wimd does.
var build = connectortest.Builder(ietfl2vpn.Type, ietfl2vpn.Register)

// server starts an emulator with the seeded sites (unless opts has some).
func server(t *testing.T, opts emu.Options) (*emu.Emulator, *httptest.Server) {
	t.Helper()
	if opts.Sites == nil {
		opts.Sites = sites
	}
	e := emu.New(opts)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv
}

// setup returns a connector with the given account config on a fresh
// emulator that requires user/password.
func setup(t *testing.T, opts emu.Options, account map[string]any) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	opts.User, opts.Password = user, password
	e, srv := server(t, opts)
	return build(t, connectors.Config{URL: srv.URL + "/", User: user, Password: password, AccountConfig: account}), e
}

// calls renders the request log as "METHOD path status", paths relative to
// the module's root.
func calls(reqs []emu.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = fmt.Sprintf("%s %s %d", r.Method, strings.TrimPrefix(r.Path, root), r.Status)
	}
	return out
}

func wantCalls(t *testing.T, got []emu.Request, want ...string) {
	t.Helper()
	if g := calls(got); !reflect.DeepEqual(g, want) {
		t.Fatalf("requests\n got %q\nwant %q", g, want)
	}
}

// none stands for "no error" in tables of error kinds.
const none = connectors.Kind(255)

const (
	svcs  = "/vpn-services/vpn-service="
	siteA = "/sites/site=dc-a/site-network-accesses/site-network-access="
	siteB = "/sites/site=dc-b/site-network-accesses/site-network-access="
	siteC = "/sites/site=dc-c/site-network-accesses/site-network-access="
)

// elanPoints returns an ELAN on three sites on VLAN 300+i.
func elanPoints(i int) []connectors.ConnectionPoint {
	return []connectors.ConnectionPoint{point("dc-a", 300+i), point("dc-b", 300+i), point("edge 3/b", 300+i)}
}

// TestConformance runs the shared suite in each dialect, against the
// emulator in the same dialect (osm: TeraFlowSDN's rewrite in front of a
// datastore), and the osm dialect against the emulator in the tfs dialect
// (TeraFlowSDN's own routes and answers: no listing, 500 ALREADY_EXISTS
// where a datastore answers 409), where what the controller holds is read
// from the emulator.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ dialect, server string }{
		{ietfl2vpn.DialectRFC8466, emu.DialectRFC8466},
		{ietfl2vpn.DialectOSM, emu.DialectOSM},
		{ietfl2vpn.DialectOSM, emu.DialectTFS},
	} {
		t.Run(tc.dialect+" on "+tc.server, func(t *testing.T) {
			t.Parallel()
			account := map[string]any{"dialect": tc.dialect}
			osm := tc.dialect == ietfl2vpn.DialectOSM
			var emulators sync.Map // connector → its emulator
			// pair builds two connectors on one fresh emulator. The WIM's
			// port mappings name the three sites, so listed services read
			// back as endpoints.
			pair := func(t *testing.T) (connectors.Connector, connectors.Connector) {
				e, srv := server(t, emu.Options{BuildPolls: 2, Dialect: tc.server, User: user, Password: password})
				var mappings []wimro.PortMapping
				for _, p := range elanPoints(0) {
					mappings = append(mappings, wimro.PortMapping{WANServiceEndpointID: p.ServiceEndpointID, WANServiceMappingInfo: p.MappingInfo})
				}
				cfg := connectors.Config{URL: srv.URL + "/", User: user, Password: password, AccountConfig: account, PortMappings: mappings}
				a, b := build(t, cfg), build(t, cfg)
				emulators.Store(a, e)
				emulators.Store(b, e)
				return a, b
			}
			h := conformance.Harness{
				New: func(t *testing.T) connectors.Connector {
					c, _ := pair(t)
					return c
				},
				Pair: pair,
				// The osm dialect declares no bandwidth (OSM's bodies carry
				// none) and no listing (TeraFlowSDN cannot list): the suite
				// checks that a bandwidth is refused.
				Capabilities:        connectortest.Capabilities(ietfl2vpn.Type, ietfl2vpn.Register, connectors.Config{WIMConfig: account}),
				ListsEndpoints:      tc.dialect == ietfl2vpn.DialectRFC8466,
				ClearAllUnsupported: osm,
				Points:              points,
				ELANPoints:          elanPoints,
				MaxStatusPolls:      5,
				Unreachable: func(t *testing.T) connectors.Connector {
					return build(t, connectors.Config{URL: connectortest.Unreachable(t), User: user, Password: password, AccountConfig: account})
				},
				BadCredentials: func(t *testing.T) connectors.Connector {
					_, srv := server(t, emu.Options{User: user, Password: password, Dialect: tc.server})
					return build(t, connectors.Config{URL: srv.URL, User: user, Password: "not-" + password, AccountConfig: account})
				},
				QoS: func(t *testing.T) (connectors.Connector, func(string) connectors.QoS) {
					c, e := setup(t, emu.Options{Dialect: tc.server, Features: append([]string{"input-bw"}, emu.DefaultFeatures...)}, account)
					emulators.Store(c, e)
					return c, func(id string) connectors.QoS { return storedQoS(t, e, id) }
				},
			}
			if tc.server == emu.DialectTFS {
				h.Inventory = func(t *testing.T, c connectors.Connector) []connectors.Service {
					e, ok := emulators.Load(c)
					if !ok {
						t.Fatal("Inventory of a connector New did not build")
					}
					var out []connectors.Service
					for _, id := range e.(*emu.Emulator).ServiceIDs() {
						out = append(out, connectors.Service{ID: id, Key: strings.TrimPrefix(id, ietfl2vpn.IDPrefix)})
					}
					return out
				}
			}
			conformance.Run(t, h)
		})
	}
}

// storedQoS is the bandwidth the attachments of vpn-service id carry in
// svc-bandwidth (cir, bit/s); every direction of every attachment must
// agree, else the test fails.
func storedQoS(t *testing.T, e *emu.Emulator, id string) connectors.QoS {
	t.Helper()
	seen := map[string]bool{}
	for _, ref := range e.Accesses() {
		if ref.VPNID != id {
			continue
		}
		a, _ := e.Access(ref.Site, ref.ID)
		svc, _ := a["service"].(map[string]any)
		bw, _ := svc["svc-bandwidth"].(map[string]any)
		list, _ := bw["bandwidth"].([]any)
		if len(list) == 0 {
			seen[""] = true
		}
		for _, x := range list {
			cir, _ := x.(map[string]any)["cir"].(string)
			seen[cir] = true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("the attachments of %s carry different bandwidths: %v", id, seen)
	}
	for cir := range seen {
		bps, _ := strconv.Atoi(cir)
		return connectors.QoS{BandwidthMbps: bps / 1_000_000}
	}
	return connectors.QoS{}
}

// body decodes a logged request body.
func body(t *testing.T, r emu.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("%s %s body %q: %v", r.Method, r.Path, r.Body, err)
	}
	return m
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := connectortest.MustJSON(t, got), connectortest.MustJSON(t, want); g != w {
		t.Errorf("%s\n got %s\nwant %s", what, g, w)
	}
}

func TestCreateRequests(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceELINE, Points: points(3)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	if id != "wimro-k1" {
		t.Fatalf("id = %q, want wimro-k1", id)
	}
	reqs := e.Requests()
	wantCalls(t, reqs, "PUT "+svcs+"wimro-k1 201", "PUT "+siteA+"wimro-k1-0 201", "PUT "+siteB+"wimro-k1-1 201", "GET /sites 200")
	for _, r := range reqs[:3] {
		if r.ContentType != "application/yang-data+json" || r.User != user {
			t.Errorf("%s %s: Content-Type %q, user %q", r.Method, r.Path, r.ContentType, r.User)
		}
	}
	sameJSON(t, "vpn-service body", body(t, reqs[0]), map[string]any{"ietf-l2vpn-svc:vpn-service": []any{map[string]any{
		"vpn-id": "wimro-k1", "customer-name": "wimro", "vpn-svc-type": "ietf-l2vpn-svc:vpws", "svc-topo": "ietf-l2vpn-svc:any-to-any",
		"ce-vlan-preservation": true, "ce-vlan-cos-preservation": true,
	}}})
	sameJSON(t, "site-network-access body", body(t, reqs[1]), map[string]any{"ietf-l2vpn-svc:site-network-access": []any{map[string]any{
		"network-access-id": "wimro-k1-0",
		"device-reference":  "dc-a-pe",
		"bearer":            map[string]any{"bearer-reference": "dc-a-pe:ge-0/0/1"},
		"connection": map[string]any{
			"encapsulation-type": "ietf-l2vpn-svc:vlan", "eth-inf-type": "ietf-l2vpn-svc:tagged",
			"tagged-interface": map[string]any{"type": "ietf-l2vpn-svc:dot1q",
				"dot1q-vlan-tagged": map[string]any{"tg-type": "ietf-l2vpn-svc:c-vlan", "cvlan-id": 103}},
		},
		"vpn-attachment": map[string]any{"vpn-id": "wimro-k1", "site-role": "ietf-l2vpn-svc:any-to-any-role"},
		"service":        map[string]any{"svc-mtu": 1500},
	}}})
	if at, _ := connInfo["requested_at"].(string); at == "" {
		t.Errorf("connInfo has no requested_at: %v", connInfo)
	} else if _, err := time.Parse(time.RFC3339, at); err != nil {
		t.Errorf("connInfo requested_at %q: %v", at, err)
	}
	delete(connInfo, "requested_at")
	sameJSON(t, "connInfo", connInfo, map[string]any{"vpn-id": "wimro-k1", "service-type": "ELINE", "site-network-accesses": []any{
		map[string]any{"site-id": "dc-a", "network-access-id": "wimro-k1-0", "service-endpoint-id": "ep-dc-a", "encapsulation": "dot1q", "vlan": 103},
		map[string]any{"site-id": "dc-b", "network-access-id": "wimro-k1-1", "service-endpoint-id": "ep-dc-b", "encapsulation": "dot1q", "vlan": 103},
	}})
}

func TestCreateCompensates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		kind   connectors.Kind
	}{
		{http.StatusInternalServerError, connectors.KindRetryable},
		{http.StatusBadRequest, connectors.KindPermanent},
		{http.StatusConflict, connectors.KindPermanent}, // a 409 that cannot be adopted
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			e.FailOn(http.MethodPut, "site-network-access=wimro-k1-1", tt.status)
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceELINE, Points: points(0)})
			if connectors.KindOf(err) != tt.kind || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("error = %v (kind %s), want %s with the controller's message", err, connectors.KindOf(err), tt.kind)
			}
			if ids, refs := e.ServiceIDs(), e.Accesses(); len(ids) != 0 || len(refs) != 0 {
				t.Fatalf("after compensation the emulator holds %v and %+v, want nothing", ids, refs)
			}
			got := calls(e.Requests())
			tail := got[len(got)-3:]
			if want := []string{"DELETE " + siteA + "wimro-k1-0 204", "DELETE " + siteB + "wimro-k1-1 404", "DELETE " + svcs + "wimro-k1 204"}; !reflect.DeepEqual(tail, want) {
				t.Fatalf("compensation requests = %q, want %q", tail, want)
			}
		})
	}
}

func TestDeleteOrder(t *testing.T) {
	t.Parallel()
	for _, withConnInfo := range []bool{true, false} {
		t.Run(fmt.Sprintf("connInfo=%v", withConnInfo), func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			keep, _, err := c.CreateService(t.Context(), connectors.Request{Key: "keep", Type: connectors.ServiceELINE, Points: points(1)})
			if err != nil {
				t.Fatal(err)
			}
			id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatal(err)
			}
			if !withConnInfo {
				ci = nil
			}
			n := len(e.Requests())
			if err := c.DeleteService(t.Context(), id, ci); err != nil {
				t.Fatalf("DeleteService: %v", err)
			}
			wantCalls(t, e.Requests()[n:], "GET /sites 200", "DELETE "+siteA+"wimro-k1-0 204", "DELETE "+siteB+"wimro-k1-1 204", "DELETE "+svcs+"wimro-k1 204")
			if ids := e.ServiceIDs(); !reflect.DeepEqual(ids, []string{keep}) || len(e.Accesses()) != 2 {
				t.Fatalf("after delete: services %v, accesses %+v; want only %s and its two", ids, e.Accesses(), keep)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		remove   []string // sites whose access of the service is removed behind the connector
		nilInfo  bool
		want     connectors.Status
		contains string
	}{
		{"all there", nil, false, connectors.StatusActive, ""},
		{"all there, no connInfo", nil, true, connectors.StatusActive, ""},
		{"one attachment vanished", []string{"dc-b"}, false, connectors.StatusDown, "wimro-k1-1 of site dc-b is missing"},
		{"every attachment vanished, no connInfo", []string{"dc-a", "dc-b"}, true, connectors.StatusDown, "no site-network-access"},
		{"attachment moved to another VPN", []string{"moved"}, false, connectors.StatusDown, "wimro-k1-1 of site dc-b is no longer attached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceELINE, Points: points(0)})
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range []string{"dc-a", "dc-b"} {
				if slicesContains(tt.remove, s) && !e.RemoveAccess(s, fmt.Sprintf("%s-%d", id, i)) {
					t.Fatalf("no access on %s", s)
				}
			}
			if slicesContains(tt.remove, "moved") {
				seed(t, e, http.MethodPost, root+"/vpn-services", `{"ietf-l2vpn-svc:vpn-service":[{"vpn-id":"tenant-x","ce-vlan-preservation":true,"ce-vlan-cos-preservation":true}]}`)
				seed(t, e, http.MethodPut, root+siteB+id+"-1", `{"ietf-l2vpn-svc:site-network-access":[{"network-access-id":"`+id+`-1","device-reference":"dc-b-pe","vpn-attachment":{"vpn-id":"tenant-x"},"service":{"svc-mtu":1500}}]}`)
			}
			if tt.nilInfo {
				ci = nil
			}
			st, err := c.GetServiceStatus(t.Context(), id, ci)
			if err != nil {
				t.Fatalf("GetServiceStatus: %v", err)
			}
			if st.Status != tt.want || !strings.Contains(st.Message, tt.contains) {
				t.Fatalf("status = %s %q, want %s mentioning %q", st.Status, st.Message, tt.want, tt.contains)
			}
			if st.Info["vpn-svc-type"] != "ietf-l2vpn-svc:vpws" {
				t.Errorf("info = %v", st.Info)
			}
		})
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestStatusBuildThenActive(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{BuildPolls: 2}, nil)
	id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []connectors.Status{connectors.StatusBuild, connectors.StatusBuild, connectors.StatusActive} {
		st, err := c.GetServiceStatus(t.Context(), id, ci)
		if err != nil || st.Status != want {
			t.Fatalf("status read %d = %s (%s), %v; want %s", i, st.Status, st.Message, err, want)
		}
	}
	// An edit while the controller still builds the service works.
	e.SetPending(id, 1)
	if _, err := c.EditService(t.Context(), id, ci, connectors.Request{Points: points(4)}); err != nil {
		t.Fatalf("EditService during build: %v", err)
	}
}

func TestRetryAdopts(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	key := uuid.NewString()
	id1, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.Requests())
	// The retry after a crash between the controller's reply and the
	// database write: the same key again.
	id2, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil || id2 != id1 {
		t.Fatalf("second create = %s, %v; want %s", id2, err, id1)
	}
	wantCalls(t, e.Requests()[n:], "PUT "+svcs+id1+" 204", "PUT "+siteA+id1+"-0 204", "PUT "+siteB+id1+"-1 204", "GET /sites 200")
	if ids := e.ServiceIDs(); len(ids) != 1 || len(e.Accesses()) != 2 {
		t.Fatalf("services %v, accesses %+v; want one service with two accesses", ids, e.Accesses())
	}
	// The same key with its second point moved: the stale attachment goes.
	moved := []connectors.ConnectionPoint{point("dc-a", 100), point("dc-c", 100)}
	if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: moved}); err != nil {
		t.Fatal(err)
	}
	want := []emu.AccessRef{{Site: "dc-a", ID: id1 + "-0", VPNID: id1}, {Site: "dc-c", ID: id1 + "-1", VPNID: id1}}
	if got := e.Accesses(); !reflect.DeepEqual(got, want) {
		t.Fatalf("accesses = %+v, want %+v", got, want)
	}
}

func TestELAN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		account  map[string]any
		points   []connectors.ConnectionPoint
		svcType  string
		preserve bool
	}{
		{"default type, one VLAN", nil, []connectors.ConnectionPoint{point("dc-a", 300), point("dc-b", 300), point("edge 3/b", 300)}, "ietf-l2vpn-svc:ldp-l2tp-vpls", true},
		{"bgp-vpls, mixed encapsulation", map[string]any{"elan_svc_type": "bgp-vpls"}, []connectors.ConnectionPoint{point("dc-a", 300), point("dc-b", 0), point("edge 3/b", 301)}, "ietf-l2vpn-svc:bgp-vpls", false},
		{"qualified setting", map[string]any{"elan_svc_type": "ietf-l2vpn-svc:pbb-evpn"}, []connectors.ConnectionPoint{point("dc-a", 0), point("dc-b", 0)}, "ietf-l2vpn-svc:pbb-evpn", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, tt.account)
			id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "lan", Type: connectors.ServiceELAN, Points: tt.points})
			if err != nil {
				t.Fatalf("CreateService(ELAN): %v", err)
			}
			svc, _ := e.Service(id)
			if svc["vpn-svc-type"] != tt.svcType || svc["ce-vlan-preservation"] != tt.preserve {
				t.Fatalf("service = %v, want type %s and ce-vlan-preservation %v", svc, tt.svcType, tt.preserve)
			}
			if n := len(e.Accesses()); n != len(tt.points) {
				t.Fatalf("%d accesses, want %d", n, len(tt.points))
			}
			if st, err := c.GetServiceStatus(t.Context(), id, ci); err != nil || st.Status != connectors.StatusActive {
				t.Fatalf("status = %+v, %v", st, err)
			}
			if err := c.DeleteService(t.Context(), id, ci); err != nil || len(e.Accesses()) != 0 {
				t.Fatalf("delete: %v, left %+v", err, e.Accesses())
			}
		})
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	e, srv := server(t, emu.Options{Features: []string{"dot1q", "bearer-reference", "bum"}})
	c := build(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{
		"customer_name": "acme", "default_mtu": 9000, "location_flavor": "location", "send_frame_delivery": true,
	}})
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "s", Type: connectors.ServiceELINE, Points: []connectors.ConnectionPoint{point("cust-1", 0), point("cust-2", 0)}})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	svc, _ := e.Service(id)
	if svc["customer-name"] != "acme" || svc["frame-delivery"] == nil {
		t.Fatalf("service = %v, want customer acme and frame-delivery", svc)
	}
	a, _ := e.Access("cust-1", id+"-0")
	if a["location-reference"] != "cust-1-loc" || a["device-reference"] != nil || fmt.Sprint(a["service"]) != "map[svc-mtu:9000]" {
		t.Fatalf("access = %v, want location-reference and svc-mtu 9000", a)
	}
	conn := a["connection"].(map[string]any)
	if conn["encapsulation-type"] != "ietf-l2vpn-svc:ethernet" || conn["eth-inf-type"] != "ietf-l2vpn-svc:untagged" || conn["tagged-interface"] != nil {
		t.Fatalf("untagged connection = %v", conn)
	}
}

// TestFactoryErrors checks ietfl2vpn's own settings, and that an error of
// the shared REST client (wim_url) comes out of Factory; the client's
// settings are tested in connectors/rest.
func TestFactoryErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     connectors.Config
		setting string
	}{
		{"no url", connectors.Config{}, "wim_url"},
		{"empty customer", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"customer_name": ""}}, "customer_name"},
		{"mtu zero", connectors.Config{URL: "http://x", WIMConfig: map[string]any{"default_mtu": 0}}, "default_mtu"},
		{"mtu too big", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"default_mtu": 70000}}, "default_mtu"},
		{"mtu not a number", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"default_mtu": "big"}}, "default_mtu"},
		{"unknown flavor", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"location_flavor": "site"}}, "location_flavor"},
		{"frame delivery not bool", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"send_frame_delivery": "yes please"}}, "send_frame_delivery"},
		{"point-to-point elan type", connectors.Config{URL: "http://x", WIMConfig: map[string]any{"elan_svc_type": "vpws"}}, "elan_svc_type"},
		{"other module's elan type", connectors.Config{URL: "http://x", WIMConfig: map[string]any{"elan_svc_type": "x:bgp-vpls"}}, "elan_svc_type"},
		{"unknown dialect", connectors.Config{URL: "http://x", WIMConfig: map[string]any{"dialect": "tfs"}}, "dialect"},
		{"dialect not a string", connectors.Config{URL: "http://x", AccountConfig: map[string]any{"dialect": 8466}}, "dialect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ietfl2vpn.Factory(tt.cfg)
			if connectors.KindOf(err) != connectors.KindPermanent || err == nil || !strings.Contains(err.Error(), tt.setting) {
				t.Fatalf("Factory error = %v, want Permanent naming %s", err, tt.setting)
			}
		})
	}
	// The account overrides the WIM.
	if _, err := ietfl2vpn.Factory(connectors.Config{URL: "http://x", WIMConfig: map[string]any{"location_flavor": "bad"}, AccountConfig: map[string]any{"location_flavor": "location"}}); err != nil {
		t.Fatalf("account setting should override the WIM's: %v", err)
	}
}

func TestInvalidInputNeverSent(t *testing.T) {
	t.Parallel()
	without := func(key string) map[string]any {
		m := mapping("dc-b")
		delete(m, key)
		return m
	}
	tests := []struct {
		name     string
		account  map[string]any
		typ      connectors.ServiceType
		info     map[string]any // point 1's mapping info; nil: no mapping at all
		contains string
	}{
		{"missing site-id", nil, connectors.ServiceELINE, without("site-id"), `"site-id"`},
		{"site-id not a string", nil, connectors.ServiceELINE, map[string]any{"site-id": 7, "device-id": "x"}, `"site-id" must be a non-empty string`},
		{"missing device-id", nil, connectors.ServiceELINE, without("device-id"), `"device-id"`},
		{"missing location-id", map[string]any{"location_flavor": "location"}, connectors.ServiceELINE, without("location-id"), `"location-id"`},
		{"osm dialect without a bearer", map[string]any{"dialect": "osm"}, connectors.ServiceELINE, without("bearer-reference"), `"bearer-reference"`},
		{"no port mapping", nil, connectors.ServiceELINE, nil, `no port mapping for service endpoint "ep-dc-b"`},
		{"ELINE with three points", nil, "ELINE3", mapping("dc-b"), connectors.MultipointNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, tt.account)
			p := points(0)
			p[1].MappingInfo = tt.info
			typ := tt.typ
			if typ == "ELINE3" {
				typ, p = connectors.ServiceELINE, append(p, point("dc-c", 100))
			}
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: typ, Points: p})
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("error = %v, want Permanent containing %s", err, tt.contains)
			}
			if tt.info != nil && tt.typ == connectors.ServiceELINE && !strings.Contains(err.Error(), "ep-dc-b") {
				t.Errorf("error %q does not name the endpoint", err)
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
	c := build(t, connectors.Config{URL: srv.URL, PortMappings: []wimro.PortMapping{{
		WANServiceEndpointID: "ep-dc-b",
		// OSM's shape: the bearer as an object.
		WANServiceMappingInfo: map[string]any{"site-id": "dc-b", "device-id": "dc-b-pe", "bearer": map[string]any{"bearer-reference": "osm-bearer"}},
	}}})
	p := points(0)
	p[1].MappingInfo = nil
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "pm", Type: connectors.ServiceELINE, Points: p})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := e.Access("dc-b", id+"-1"); !ok || fmt.Sprint(a["bearer"]) != "map[bearer-reference:osm-bearer]" {
		t.Fatalf("access on dc-b = %v, %v; want the port mapping's bearer", a, ok)
	}
}

func TestPOSTFallback(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{RejectPUT: true}, nil)
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "p", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatalf("CreateService on a POST-only server: %v", err)
	}
	wantCalls(t, e.Requests(),
		"PUT "+svcs+id+" 405", "POST /vpn-services 201",
		"PUT "+siteA+id+"-0 405", "POST /sites/site=dc-a/site-network-accesses 201",
		"PUT "+siteB+id+"-1 405", "POST /sites/site=dc-b/site-network-accesses 201",
		"GET /sites 200")
	// The retry: POST answers 409, the entries match and are adopted.
	n := len(e.Requests())
	if id2, _, err := c.CreateService(t.Context(), connectors.Request{Key: "p", Type: connectors.ServiceELINE, Points: points(0)}); err != nil || id2 != id {
		t.Fatalf("retried create = %s, %v", id2, err)
	}
	got := calls(e.Requests()[n:])
	if want := []string{"PUT " + svcs + id + " 405", "POST /vpn-services 409", "GET " + svcs + id + " 200"}; !reflect.DeepEqual(got[:3], want) {
		t.Fatalf("retry requests = %q, want to start with %q", got, want)
	}
	if len(e.ServiceIDs()) != 1 || len(e.Accesses()) != 2 {
		t.Fatalf("after the retry: %v %+v", e.ServiceIDs(), e.Accesses())
	}
	// The same key with another VLAN: the existing attachment differs.
	_, _, err = c.CreateService(t.Context(), connectors.Request{Key: "p", Type: connectors.ServiceELINE, Points: points(5)})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "already exists with other settings") {
		t.Fatalf("create over a different entry: %v (kind %s), want Permanent", err, connectors.KindOf(err))
	}
}

func TestCheckCredentials(t *testing.T) {
	t.Parallel()
	pm := func(endpoint string, info map[string]any) wimro.PortMapping {
		return wimro.PortMapping{WANServiceEndpointID: endpoint, WANServiceMappingInfo: info}
	}
	tests := []struct {
		name     string
		account  map[string]any
		mappings []wimro.PortMapping
		contains string // "" for success
	}{
		{"sites exist", nil, []wimro.PortMapping{pm("a", mapping("dc-a")), pm("b", mapping("dc-b")), pm("a2", mapping("dc-a")), pm("other", map[string]any{"wan_switch_dpid": "x"})}, ""},
		{"escaped site id", nil, []wimro.PortMapping{pm("e", mapping("edge 3/b"))}, ""},
		{"location flavor", map[string]any{"location_flavor": "location"}, []wimro.PortMapping{pm("c", mapping("cust-1"))}, ""},
		{"unknown site", nil, []wimro.PortMapping{pm("a", mapping("dc-a")), pm("zz", mapping("dc-zz"))}, `port mapping "zz": site "dc-zz" does not exist`},
		{"unknown device", nil, []wimro.PortMapping{pm("a", map[string]any{"site-id": "dc-a", "device-id": "pe-9"})}, `site "dc-a" has no device "pe-9"`},
		{"unknown location", map[string]any{"location_flavor": "location"}, []wimro.PortMapping{pm("c", map[string]any{"site-id": "cust-1", "location-id": "l-9"})}, `has no location "l-9"`},
		{"mapping without device-id", nil, []wimro.PortMapping{pm("a", map[string]any{"site-id": "dc-a"})}, `port mapping "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, srv := server(t, emu.Options{User: user, Password: password})
			c := build(t, connectors.Config{URL: srv.URL, User: user, Password: password, AccountConfig: tt.account, PortMappings: tt.mappings})
			err := c.CheckCredentials(t.Context())
			if tt.contains == "" {
				if err != nil {
					t.Fatalf("CheckCredentials: %v", err)
				}
				return
			}
			if connectors.KindOf(err) != connectors.KindPermanent || err == nil || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("CheckCredentials = %v, want Permanent containing %s", err, tt.contains)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status   int
		kind     connectors.Kind
		contains string
	}{
		{400, connectors.KindPermanent, "HTTP 400: invalid-value: injected failure"},
		{401, connectors.KindUnauthorized, "access-denied"},
		{403, connectors.KindUnauthorized, "403"},
		{404, connectors.KindNotFound, "404"},
		{429, connectors.KindRetryable, "429"},
		{500, connectors.KindRetryable, "operation-failed: injected failure"},
		{501, connectors.KindPermanent, "operation-not-supported"},
		{503, connectors.KindRetryable, "503"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{}, nil)
			e.FailNext(1, tt.status)
			_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: points(0)})
			if connectors.KindOf(err) != tt.kind || err == nil || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("error = %v (kind %s), want %s containing %q", err, connectors.KindOf(err), tt.kind, tt.contains)
			}
			if len(e.ServiceIDs()) != 0 {
				t.Fatalf("a failed create left %v", e.ServiceIDs())
			}
		})
	}
}

func TestRepliesFromOtherServers(t *testing.T) {
	t.Parallel()
	restconf404 := `{"ietf-restconf:errors":{"error":[{"error-type":"application","error-tag":"invalid-value","error-message":"no data"}]}}`
	tests := []struct {
		name   string
		status int
		body   string
		kind   connectors.Kind // of ListServices' error; none: success with no service
	}{
		{"empty container as 204", 204, "", none},
		{"empty container as RESTCONF 404", 404, restconf404, none},
		{"404 from something else", 404, "<html>not here</html>", connectors.KindNotFound},
		{"200 that is not JSON", 200, "<html>proxy</html>", connectors.KindPermanent},
		{"200 without the container", 200, `{"something":"else"}`, connectors.KindPermanent},
		{"bare member names", 200, `{"vpn-services":{"vpn-service":[{"vpn-id":"other"}]}}`, none},
		{"502 from a proxy", 502, "bad gateway", connectors.KindRetryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			c := build(t, connectors.Config{URL: srv.URL})
			list, err := c.ListServices(t.Context())
			if tt.kind == none {
				if err != nil || len(list) != 0 {
					t.Fatalf("ListServices = %v, %v; want none", list, err)
				}
				return
			}
			if err == nil || connectors.KindOf(err) != tt.kind {
				t.Fatalf("ListServices error = %v (kind %s), want %s", err, connectors.KindOf(err), tt.kind)
			}
		})
	}
}

func TestListAndClearAllOnlyOurs(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	// Another tenant's service with an attachment on a shared site.
	other := []struct{ path, body string }{
		{root + "/vpn-services", `{"ietf-l2vpn-svc:vpn-service":[{"vpn-id":"tenant-x","ce-vlan-preservation":true,"ce-vlan-cos-preservation":true}]}`},
		{root + "/sites/site=dc-a/site-network-accesses", `{"ietf-l2vpn-svc:site-network-access":[{"network-access-id":"tx-0","device-reference":"dc-a-pe","vpn-attachment":{"vpn-id":"tenant-x"},"service":{"svc-mtu":1500}}]}`},
	}
	for _, o := range other {
		seed(t, e, http.MethodPost, o.path, o.body)
	}
	keys := []string{uuid.NewString(), uuid.NewString()}
	for i, k := range keys {
		if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: k, Type: connectors.ServiceELINE, Points: points(i)}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.ListServices(t.Context())
	if err != nil || len(list) != 2 {
		t.Fatalf("ListServices = %+v, %v; want wimro's two", list, err)
	}
	for _, s := range list {
		if s.ID != "wimro-"+s.Key || !slicesContains(keys, s.Key) || len(s.Info["site-network-accesses"].([]any)) != 2 {
			t.Errorf("listed %+v", s)
		}
	}
	if err := c.ClearAll(t.Context()); err != nil {
		t.Fatalf("ClearAll: %v", err)
	}
	if ids, refs := e.ServiceIDs(), e.Accesses(); !reflect.DeepEqual(ids, []string{"tenant-x"}) || len(refs) != 1 || refs[0].ID != "tx-0" {
		t.Fatalf("after ClearAll: %v %+v; want only tenant-x and its attachment", ids, refs)
	}
}

// seed writes to the emulator as another tool would.
func seed(t *testing.T, e *emu.Emulator, method, path, body string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", emu.MediaType)
	req.SetBasicAuth(user, password)
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	if w.Code != http.StatusCreated && w.Code != http.StatusNoContent {
		t.Fatalf("seeding %s %s: %d %s", method, path, w.Code, w.Body)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "ed", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.Requests())
	moved := []connectors.ConnectionPoint{point("dc-a", 100), point("dc-c", 200)}
	newInfo, err := c.EditService(t.Context(), id, ci, connectors.Request{Points: moved})
	if err != nil {
		t.Fatalf("EditService: %v", err)
	}
	wantCalls(t, e.Requests()[n:], "GET "+svcs+id+" 200", "PUT "+svcs+id+" 204", "GET /sites 200",
		"DELETE "+siteB+id+"-1 204", "PUT "+siteA+id+"-0 204", "PUT "+siteC+id+"-1 201")
	if svc, _ := e.Service(id); svc["ce-vlan-preservation"] != false {
		t.Errorf("VLANs now differ between ends, ce-vlan-preservation = %v", svc["ce-vlan-preservation"])
	}
	if refs := attachmentSites(newInfo); !reflect.DeepEqual(refs, []string{"dc-a", "dc-c"}) {
		t.Errorf("new connInfo sites = %v", refs)
	}
	// An ELINE stays an ELINE: three points are refused, nothing changes.
	three := append(moved, point("dc-b", 100))
	if _, err := c.EditService(t.Context(), id, newInfo, connectors.Request{Points: three}); err == nil || !strings.Contains(err.Error(), connectors.MultipointNotSupported) {
		t.Fatalf("edit to three points = %v, want %q", err, connectors.MultipointNotSupported)
	}
	if len(e.Accesses()) != 2 {
		t.Fatalf("accesses = %+v", e.Accesses())
	}
}

func attachmentSites(connInfo map[string]any) []string {
	var out []string
	for _, a := range connInfo["site-network-accesses"].([]any) {
		out = append(out, a.(map[string]any)["site-id"].(string))
	}
	return out
}

func TestEscapedKeys(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, nil)
	key := "a/b c,d"
	id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: []connectors.ConnectionPoint{point("edge 3/b", 7), point("dc-a", 7)}})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.Requests()[1]; r.Path != root+"/sites/site=edge%203%2Fb/site-network-accesses/site-network-access=wimro-a%2Fb%20c%2Cd-0" {
		t.Fatalf("path = %s", r.Path)
	}
	if st, err := c.GetServiceStatus(t.Context(), id, ci); err != nil || st.Status != connectors.StatusActive {
		t.Fatalf("status = %+v, %v", st, err)
	}
	list, err := c.ListServices(t.Context())
	if err != nil || len(list) != 1 || list[0].Key != key {
		t.Fatalf("ListServices = %+v, %v", list, err)
	}
	if err := c.DeleteService(t.Context(), id, nil); err != nil || len(e.ServiceIDs()) != 0 {
		t.Fatalf("delete: %v, left %v", err, e.ServiceIDs())
	}
}

func TestTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	c, e := setup(t, emu.Options{}, map[string]any{"timeout_ms": 50})
	e.Delay(time.Minute) // ends when the client gives up
	_, err := c.GetServiceStatus(t.Context(), "wimro-x", nil)
	if !connectors.Retryable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v (kind %s), want Retryable deadline exceeded", err, connectors.KindOf(err))
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	e, srv := server(t, emu.Options{Token: "tok-123"})
	c := build(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"bearer_token": "tok-123"}})
	if err := c.CheckCredentials(t.Context()); err != nil {
		t.Fatalf("CheckCredentials with the token: %v", err)
	}
	bad := build(t, connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"bearer_token": "tok-999"}})
	if err := bad.CheckCredentials(t.Context()); !connectors.IsUnauthorized(err) || strings.Contains(err.Error(), "tok-999") {
		t.Fatalf("wrong token: %v, want Unauthorized without the token", err)
	}
	if reqs := e.Requests(); !reqs[0].Bearer || reqs[0].User != "" {
		t.Fatalf("request = %+v, want a bearer token", reqs[0])
	}
}

// TestOverloadedController: a 503 with Retry-After whose text, raw or as
// an ietf-restconf:errors error-message, PostgreSQL would refuse, fails
// Retryable with the hint and quotes the controller storably.
func TestOverloadedController(t *testing.T) {
	t.Parallel()
	connectortest.CheckControllerError(t, build, emulator.RESTCONFErrors(emulator.RESTCONFError{Type: "application", Tag: "resource-denied", Message: connectortest.Unstorable}))
}

// TestTLSAndBearerToken: ietfl2vpn hands TLS and token settings to the
// shared REST client.
func TestTLSAndBearerToken(t *testing.T) {
	t.Parallel()
	connectortest.CheckTransport(t, build, emu.New(emu.Options{Sites: sites}))
}

func TestSecretsNotInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	logger, logs := connectortest.Logger(t)
	e, srv := server(t, emu.Options{User: user, Password: password})
	c := build(t, connectors.Config{URL: srv.URL, User: user, Password: password, Logger: logger})
	var errs []error
	id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "sec", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatal(err)
	}
	e.FailOn(http.MethodPut, "site-network-access=wimro-sec2-1", http.StatusInternalServerError)
	_, _, err = c.CreateService(t.Context(), connectors.Request{Key: "sec2", Type: connectors.ServiceELINE, Points: points(1)}) // failure, compensation, logs
	errs = append(errs, err)
	e.FailNext(1, http.StatusServiceUnavailable)
	_, err = c.GetServiceStatus(t.Context(), id, ci)
	errs = append(errs, err)
	withURL := build(t, connectors.Config{URL: connectortest.WithUserInfo(srv.URL, user, password), User: user, Password: "wrong-" + password, Logger: logger})
	err = withURL.CheckCredentials(t.Context())
	if !connectors.IsUnauthorized(err) {
		t.Fatalf("bad credentials: %v", err)
	}
	errs = append(errs, err)
	// A create whose context ends while it waits for its lock: the lock
	// name (which quotes the controller) must not carry the URL password.
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = withURL.CreateService(cancelled, connectors.Request{Key: "sec3", Type: connectors.ServiceELINE, Points: points(2)})
	errs = append(errs, err)
	if !strings.Contains(logs.String(), "ietfl2vpn service created") || !strings.Contains(logs.String(), "what it wrote is deleted") {
		t.Fatalf("debug log = %s, want the create and compensation lines", logs.String())
	}
	connectortest.NoSecret(t, password, errs, logs.String())
}

// TestDeleteReplies drives DeleteService against servers that answer a
// DELETE in other ways than the emulator.
func TestDeleteReplies(t *testing.T) {
	t.Parallel()
	errBody := func(tag string) string {
		return `{"ietf-restconf:errors":{"error":[{"error-type":"application","error-tag":"` + tag + `","error-message":"m"}]}}`
	}
	tests := []struct {
		name   string
		status int
		body   string
		kind   connectors.Kind // none: success
	}{
		{"409 data-missing is gone", 409, errBody("data-missing"), none},
		{"404 is gone", 404, errBody("invalid-value"), none},
		{"409 in-use is refused", 409, errBody("in-use"), connectors.KindPermanent},
		{"503 is retried", 503, errBody("operation-failed"), connectors.KindRetryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var deletes []string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet { // the sites: no attachment
					w.WriteHeader(http.StatusNoContent)
					return
				}
				mu.Lock()
				deletes = append(deletes, r.URL.Path)
				mu.Unlock()
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			c := build(t, connectors.Config{URL: srv.URL})
			ci := map[string]any{"site-network-accesses": []any{map[string]any{"site-id": "dc-a", "network-access-id": "wimro-d-0"}}}
			err := c.DeleteService(t.Context(), "wimro-d", ci)
			if tt.kind == none {
				if err != nil {
					t.Fatalf("DeleteService = %v, want success", err)
				}
				if len(deletes) != 2 {
					t.Fatalf("deletes = %v, want the attachment then the service", deletes)
				}
				return
			}
			if err == nil || connectors.KindOf(err) != tt.kind || !strings.Contains(err.Error(), "m") {
				t.Fatalf("DeleteService = %v (kind %s), want %s", err, connectors.KindOf(err), tt.kind)
			}
		})
	}
}

// TestCancelledCreateDoesNotCompensate: once the caller gives up, create
// returns without more requests; the retry adopts what was written.
func TestCancelledCreateDoesNotCompensate(t *testing.T) {
	t.Parallel()
	e, _ := server(t, emu.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hold := false
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "-1") {
			once.Do(func() { hold = true })
		}
		if !hold {
			e.ServeHTTP(w, r)
			return
		}
		// The caller gives up while the second attachment is written. The
		// body is read so that the server notices the client leaving.
		_, _ = io.Copy(io.Discard, r.Body)
		cancel()
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second): // hang guard only
		}
	}))
	t.Cleanup(srv.Close)
	c := build(t, connectors.Config{URL: srv.URL})
	_, _, err := c.CreateService(ctx, connectors.Request{Key: "cx", Type: connectors.ServiceELINE, Points: points(0)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	wantCalls(t, e.Requests(), "PUT "+svcs+"wimro-cx 201", "PUT "+siteA+"wimro-cx-0 201")
	if id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "cx", Type: connectors.ServiceELINE, Points: points(0)}); err != nil || len(e.Accesses()) != 2 || len(e.ServiceIDs()) != 1 {
		t.Fatalf("retry = %s, %v; accesses %+v", id, err, e.Accesses())
	}
}

// TestCheckCredentialsWrongURL: a URL where nothing speaks L2SM is a
// configuration error, not a missing service.
func TestCheckCredentialsWrongURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	err := build(t, connectors.Config{URL: srv.URL}).CheckCredentials(t.Context())
	if err == nil || connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "no ietf-l2vpn-svc RESTCONF datastore") {
		t.Fatalf("CheckCredentials on a plain 404 = %v (kind %s), want Permanent", err, connectors.KindOf(err))
	}
}
