package ietfl2vpn_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
)

// osm is the account config of the osm dialect.
var osm = map[string]any{"dialect": "osm"}

// osmSetup returns an osm-dialect connector on a fresh emulator in the osm
// dialect (TeraFlowSDN's NBI).
func osmSetup(t *testing.T, opts emu.Options) (connectors.Connector, *emu.Emulator) {
	t.Helper()
	opts.Dialect = emu.DialectOSM
	return setup(t, opts, osm)
}

func TestOSMCreateRequests(t *testing.T) {
	t.Parallel()
	c, e := osmSetup(t, emu.Options{})
	id, connInfo, err := c.CreateService(t.Context(), connectors.Request{Key: "k1", Type: connectors.ServiceELINE, Points: []connectors.ConnectionPoint{point("dc-a", 103), point("dc-b", 0)}})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	reqs := e.Requests()
	// The look-up first: TeraFlowSDN refuses a vpn-service it holds.
	wantCalls(t, reqs, "GET "+svcs+"wimro-k1 500", "POST /vpn-services 201", "POST /sites/site=dc-a/site-network-accesses 201", "POST /sites/site=dc-b/site-network-accesses 201", "GET /sites 200")
	reqs = reqs[1:]
	for _, r := range reqs[:3] {
		if r.ContentType != "application/json" || r.User != user {
			t.Errorf("%s %s: Content-Type %q, user %q; want OSM's application/json", r.Method, r.Path, r.ContentType, r.User)
		}
	}
	// What OSM's connector sends (its vpn-service and site bodies), with wimro's ids.
	sameJSON(t, "vpn-service body", body(t, reqs[0]), map[string]any{"ietf-l2vpn-svc:vpn-service": []any{map[string]any{
		"vpn-id": "wimro-k1", "vpn-svc-type": "vpws", "svc-topo": "any-to-any", "customer-name": "wimro",
	}}})
	osmAccess := func(n int, site string, conn map[string]any) map[string]any {
		return map[string]any{"ietf-l2vpn-svc:site-network-access": []any{map[string]any{
			"network-access-id": fmt.Sprintf("wimro-k1-%d", n),
			"connection":        conn,
			"vpn-attachment":    map[string]any{"vpn-id": "wimro-k1", "site-role": "any-to-any-role"},
			"bearer":            map[string]any{"bearer-reference": site + "-pe:ge-0/0/1"},
		}}}
	}
	sameJSON(t, "dot1q site-network-access body", body(t, reqs[1]), osmAccess(0, "dc-a", map[string]any{
		"encapsulation-type": "dot1q-vlan-tagged", "tagged-interface": map[string]any{"dot1q-vlan-tagged": map[string]any{"cvlan-id": 103}},
	}))
	sameJSON(t, "untagged site-network-access body", body(t, reqs[2]), osmAccess(1, "dc-b", map[string]any{}))

	// What the server stores after TeraFlowSDN's rewrite.
	svc, _ := e.Service(id)
	sameJSON(t, "stored vpn-service", svc, map[string]any{
		"vpn-id": "wimro-k1", "vpn-svc-type": "ietf-l2vpn-svc:vpws", "svc-topo": "ietf-l2vpn-svc:any-to-any", "customer-name": "wimro",
		"ce-vlan-preservation": true, "ce-vlan-cos-preservation": true,
		"frame-delivery": map[string]any{"multicast-gp-port-mapping": "ietf-l2vpn-svc:static-mapping"},
	})
	a, _ := e.Access("dc-a", id+"-0")
	sameJSON(t, "stored dot1q site-network-access", a, map[string]any{
		"network-access-id": "wimro-k1-0", "device-reference": emu.FakeDevice,
		"bearer": map[string]any{"bearer-reference": "dc-a-pe:ge-0/0/1"},
		"connection": map[string]any{
			"encapsulation-type": "ietf-l2vpn-svc:vlan", "eth-inf-type": "ietf-l2vpn-svc:tagged",
			"tagged-interface": map[string]any{"type": "ietf-l2vpn-svc:dot1q", "dot1q-vlan-tagged": map[string]any{"cvlan-id": 103}},
			"oam":              map[string]any{"md-name": emu.FakeMDName, "md-level": 0},
		},
		"vpn-attachment": map[string]any{"vpn-id": "wimro-k1", "site-role": "ietf-l2vpn-svc:any-to-any-role"},
		"service":        map[string]any{"svc-mtu": 1500},
	})
	delete(connInfo, "requested_at") // checked by TestCreateRequests
	sameJSON(t, "connInfo", connInfo, map[string]any{"vpn-id": "wimro-k1", "service-type": "ELINE", "site-network-accesses": []any{
		map[string]any{"site-id": "dc-a", "network-access-id": "wimro-k1-0", "service-endpoint-id": "ep-dc-a", "encapsulation": "dot1q", "vlan": 103},
		map[string]any{"site-id": "dc-b", "network-access-id": "wimro-k1-1", "service-endpoint-id": "ep-dc-b", "encapsulation": "none"},
	}})
}

// TestDialectGap documents the dialect gap: OSM's bodies need
// TeraFlowSDN's rewrite, a strict server refuses them; the strict bodies
// suit both.
func TestDialectGap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dialect, server string
		refused         string // in the error; "" when the server accepts
	}{
		{emu.DialectRFC8466, emu.DialectRFC8466, ""},
		{emu.DialectRFC8466, emu.DialectOSM, ""},
		{emu.DialectOSM, emu.DialectOSM, ""},
		{emu.DialectOSM, emu.DialectRFC8466, "HTTP 400: missing-element: mandatory node ce-vlan-cos-preservation is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+" bodies on a "+tt.server+" server", func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{Dialect: tt.server}, map[string]any{"dialect": tt.dialect})
			for i, p := range [][]connectors.ConnectionPoint{points(0), {point("dc-a", 0), point("dc-c", 0)}} {
				_, _, err := c.CreateService(t.Context(), connectors.Request{Key: fmt.Sprint("gap", i), Type: connectors.ServiceELINE, Points: p})
				if tt.refused == "" && err != nil {
					t.Fatalf("create %d: %v", i, err)
				}
				if tt.refused != "" && (connectors.KindOf(err) != connectors.KindPermanent || err == nil || !strings.Contains(err.Error(), tt.refused)) {
					t.Fatalf("create %d = %v (kind %s), want Permanent: %s", i, err, connectors.KindOf(err), tt.refused)
				}
			}
			want := 4
			if tt.refused != "" {
				want = 0
			}
			if n := len(e.Accesses()); n != want || len(e.ServiceIDs()) != want/2 {
				t.Fatalf("the server holds %v and %+v, want %d attachments", e.ServiceIDs(), e.Accesses(), want)
			}
		})
	}
}

func TestOSMRetryAdopts(t *testing.T) {
	t.Parallel()
	for _, server := range []string{emu.DialectOSM, emu.DialectTFS} {
		for _, building := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s building=%v", server, building), func(t *testing.T) {
				t.Parallel()
				opts := emu.Options{Dialect: server}
				getStatus := 200
				if building {
					opts.BuildPolls, getStatus = 5, 504
				}
				c, e := setup(t, opts, osm)
				id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "r", Type: connectors.ServiceELINE, Points: points(0)})
				if err != nil {
					t.Fatal(err)
				}
				n := len(e.Requests())
				// The same key with its second point moved: the service is
				// looked up and adopted, the attachments posted again, the
				// stale one deleted where the server lists its sites
				// (TeraFlowSDN has none: it stays until the service goes).
				moved := []connectors.ConnectionPoint{point("dc-a", 100), point("dc-c", 100)}
				if id2, _, err := c.CreateService(t.Context(), connectors.Request{Key: "r", Type: connectors.ServiceELINE, Points: moved}); err != nil || id2 != id {
					t.Fatalf("retried create = %s, %v; want %s", id2, err, id)
				}
				calls := []string{fmt.Sprintf("GET %s%s %d", svcs, id, getStatus),
					"POST /sites/site=dc-a/site-network-accesses 201", "POST /sites/site=dc-c/site-network-accesses 201"}
				want := []emu.AccessRef{{Site: "dc-a", ID: id + "-0", VPNID: id}, {Site: "dc-c", ID: id + "-1", VPNID: id}}
				if server == emu.DialectTFS {
					calls = append(calls, "GET /sites 404")
					want = []emu.AccessRef{want[0], {Site: "dc-b", ID: id + "-1", VPNID: id}, want[1]}
				} else {
					calls = append(calls, "GET /sites 200", "DELETE "+siteB+id+"-1 204")
				}
				wantCalls(t, e.Requests()[n:], calls...)
				if got := e.Accesses(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("accesses = %+v, want %+v", got, want)
				}
			})
		}
	}
}

// TestOSMAttachmentConflict: an attachment a server refuses with 409 is
// ours (its id derives from the key): it is deleted and posted again.
func TestOSMAttachmentConflict(t *testing.T) {
	t.Parallel()
	c, e := osmSetup(t, emu.Options{})
	e.FailOn(http.MethodPost, "site=dc-b/site-network-accesses", http.StatusConflict)
	id, _, err := c.CreateService(t.Context(), connectors.Request{Key: "c", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	wantCalls(t, e.Requests(), "GET "+svcs+id+" 500", "POST /vpn-services 201", "POST /sites/site=dc-a/site-network-accesses 201",
		"POST /sites/site=dc-b/site-network-accesses 409", "DELETE "+siteB+id+"-1 404", "POST /sites/site=dc-b/site-network-accesses 201", "GET /sites 200")
	if n := len(e.Accesses()); n != 2 {
		t.Fatalf("accesses = %+v, want 2", e.Accesses())
	}
}

func TestOSMDelete(t *testing.T) {
	t.Parallel()
	t.Run("the server deletes the attachments with the service", func(t *testing.T) {
		t.Parallel()
		c, e := osmSetup(t, emu.Options{})
		id, ci, err := c.CreateService(t.Context(), connectors.Request{Key: "d", Type: connectors.ServiceELINE, Points: points(0)})
		if err != nil {
			t.Fatal(err)
		}
		n := len(e.Requests())
		for range 2 {
			if err := c.DeleteService(t.Context(), id, ci); err != nil {
				t.Fatalf("DeleteService: %v", err)
			}
		}
		wantCalls(t, e.Requests()[n:], "DELETE "+svcs+id+" 204", "DELETE "+svcs+id+" 204")
		if len(e.ServiceIDs()) != 0 || len(e.Accesses()) != 0 {
			t.Fatalf("left %v %+v", e.ServiceIDs(), e.Accesses())
		}
	})
	t.Run("a server that refuses gets the attachments deleted first", func(t *testing.T) {
		t.Parallel()
		// A strict server, on which the service was made in the rfc8466
		// dialect.
		strict, e := setup(t, emu.Options{}, nil)
		id, ci, err := strict.CreateService(t.Context(), connectors.Request{Key: "d", Type: connectors.ServiceELINE, Points: points(0)})
		if err != nil {
			t.Fatal(err)
		}
		c := build(t, connectors.Config{URL: serverURL(t, e), User: user, Password: password, AccountConfig: osm})
		n := len(e.Requests())
		if err := c.DeleteService(t.Context(), id, ci); err != nil {
			t.Fatalf("DeleteService: %v", err)
		}
		wantCalls(t, e.Requests()[n:], "DELETE "+svcs+id+" 409", "GET /sites 200",
			"DELETE "+siteA+id+"-0 204", "DELETE "+siteB+id+"-1 204", "DELETE "+svcs+id+" 204")
	})
}

// serverURL serves e on a server of its own.
func serverURL(t *testing.T, e *emu.Emulator) string {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOSMOnTeraFlowSDN drives every method against the emulator in the
// tfs dialect: TeraFlowSDN's routes and answers.
func TestOSMOnTeraFlowSDN(t *testing.T) {
	t.Parallel()
	e, srv := server(t, emu.Options{Dialect: emu.DialectTFS})
	c := build(t, connectors.Config{URL: srv.URL, AccountConfig: osm, PortMappings: []wimro.PortMapping{{
		WANServiceEndpointID:  "ep-1",
		WANServiceMappingInfo: map[string]any{"site-id": "any-site", "bearer": map[string]any{"bearer-reference": "R1:1/1"}},
	}}})
	ctx := t.Context()
	if err := c.CheckCredentials(ctx); err != nil {
		t.Fatalf("CheckCredentials: %v", err)
	}
	id, ci, err := c.CreateService(ctx, connectors.Request{Key: "t", Type: connectors.ServiceELINE, Points: points(0)})
	if err != nil {
		t.Fatalf("CreateService: %v", err)
	}
	st, err := c.GetServiceStatus(ctx, id, ci)
	if err != nil || st.Status != connectors.StatusActive || st.Info["service-id"] != id || st.Info["service-type"] != "ELINE" {
		t.Fatalf("status = %+v, %v; want ACTIVE with TeraFlowSDN's service-id", st, err)
	}
	if _, err := c.GetServiceStatus(ctx, "wimro-gone", nil); !connectors.IsNotFound(err) || !strings.Contains(err.Error(), "not found in database") {
		t.Fatalf("status of an unknown VPN = %v (kind %s), want NotFound", err, connectors.KindOf(err))
	}
	if _, err := c.EditService(ctx, "wimro-gone", nil, connectors.Request{Points: points(1)}); !connectors.IsNotFound(err) {
		t.Fatalf("edit of an unknown VPN = %v (kind %s), want NotFound", err, connectors.KindOf(err))
	}
	if _, err := c.EditService(ctx, id, ci, connectors.Request{Points: points(1)}); err != nil {
		t.Fatalf("EditService: %v", err)
	}
	if list, err := c.ListServices(ctx); err != nil || len(list) != 0 {
		t.Fatalf("ListServices = %+v, %v; want none (TeraFlowSDN lists nothing)", list, err)
	}
	if lists("osm") {
		t.Fatalf("the osm dialect's connector declares it can list")
	}
	if err := c.ClearAll(ctx); connectors.KindOf(err) != connectors.KindPermanent {
		t.Fatalf("ClearAll = %v, want a Permanent error: nothing can be listed to clear", err)
	}
	if err := c.DeleteService(ctx, id, ci); err != nil {
		t.Fatalf("DeleteService: %v", err)
	}
	wantCalls(t, e.Requests(),
		"GET /vpn-services 200",
		"GET "+svcs+id+" 500", "POST /vpn-services 201", "POST /sites/site=dc-a/site-network-accesses 201", "POST /sites/site=dc-b/site-network-accesses 201", "GET /sites 404",
		"GET "+svcs+id+" 200", "GET "+svcs+"wimro-gone 500",
		"GET "+svcs+"wimro-gone 500",
		"GET "+svcs+id+" 200", "GET /sites 404", "POST /sites/site=dc-a/site-network-accesses 201", "POST /sites/site=dc-b/site-network-accesses 201",
		"GET /vpn-services 200",
		"DELETE "+svcs+id+" 204",
	)
	if len(e.ServiceIDs()) != 0 || len(e.Accesses()) != 0 {
		t.Fatalf("left %v %+v", e.ServiceIDs(), e.Accesses())
	}
}

func TestOSMCheckMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dialect  string
		info     map[string]any
		contains string // "" for a usable mapping
	}{
		{"osm", map[string]any{"site-id": "s", "bearer": map[string]any{"bearer-reference": "R1:1/1"}}, ""},
		{"osm", map[string]any{"site-id": "s", "bearer-reference": "R1:1/1"}, ""},
		{"osm", map[string]any{"site-id": "s", "device-id": "pe1"}, `"bearer-reference"`},
		{"osm", map[string]any{"bearer-reference": "R1:1/1"}, `"site-id"`},
		{"rfc8466", map[string]any{"site-id": "s", "device-id": "pe1"}, ""},
		{"rfc8466", map[string]any{"site-id": "s", "bearer-reference": "R1:1/1"}, `"device-id"`},
	}
	for _, tt := range tests {
		c := build(t, connectors.Config{URL: "http://ctl", AccountConfig: map[string]any{"dialect": tt.dialect}})
		err := c.(connectors.MappingChecker).CheckMapping("ep", tt.info)
		if tt.contains == "" && err != nil || tt.contains != "" && (err == nil || !strings.Contains(err.Error(), tt.contains)) {
			t.Errorf("%s CheckMapping(%v) = %v, want %q", tt.dialect, tt.info, err, tt.contains)
		}
	}
}
