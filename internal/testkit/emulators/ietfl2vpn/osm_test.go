package ietfl2vpn

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// osmService is the vpn-service body of OSM's connector (upstream
// v6.0.4 with vpn-svc-type spelt right); edits change its
// entry.
func osmService(id string, edits ...func(m map[string]any)) string {
	m := map[string]any{"vpn-id": id, "vpn-svc-type": "vpws", "svc-topo": "any-to-any", "customer-name": "osm"}
	return wrap("vpn-service", m, edits)
}

// osmAccess is the site-network-access body of OSM's connector for vpn v1
// on VLAN 100; edits change its entry.
func osmAccess(id string, edits ...func(m map[string]any)) string {
	m := map[string]any{
		"connection": map[string]any{"encapsulation-type": "dot1q-vlan-tagged",
			"tagged-interface": map[string]any{"dot1q-vlan-tagged": map[string]any{"cvlan-id": 100}}},
		"vpn-attachment":    map[string]any{"vpn-id": "v1", "site-role": "any-to-any-role"},
		"network-access-id": id,
		"bearer":            map[string]any{"bearer-reference": "dc-a-pe:xe-0/0/1"},
	}
	return wrap("site-network-access", m, edits)
}

func untagged(m map[string]any) { m["connection"] = map[string]any{} }

// TestDialectGap: OSM's bodies are refused by the strict server and
// accepted by the osm dialect; strict bodies
// are accepted by both; what TeraFlowSDN's rewrite does not fix is refused
// by both.
func TestDialectGap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body string
		strictTag        string // "" when the strict server accepts it
		strictMsg        string
		osmMsg           string // in the osm dialect's refusal; "" when it accepts it
	}{
		{"OSM vpn-service", Root + "/vpn-services", osmService("v2"), "missing-element", "ce-vlan-cos-preservation", ""},
		{"OSM dot1q attachment", sitesA, osmAccess("v1-0"), "invalid-value", "encapsulation-type", ""},
		{"OSM untagged attachment", sitesA, osmAccess("v1-0", untagged), "missing-element", "svc-mtu", ""},
		{"v6 typo vpn-scv-type", Root + "/vpn-services", osmService("v2", func(m map[string]any) {
			m["vpn-scv-type"] = m["vpn-svc-type"]
			delete(m, "vpn-svc-type")
		}), "unknown-element", "vpn-scv-type", "vpn-scv-type"},
		{"5GCity's unqualified top member", Root + "/vpn-services", `{"vpn-service":[{"vpn-id":"v2","vpn-svc-type":"vpws"}]}`, "unknown-element", "module-qualified", "module-qualified"},
		{"OSM attachment without a bearer", sitesA, osmAccess("v1-0", func(m map[string]any) { delete(m, "bearer") }), "invalid-value", "encapsulation-type", "device:endpoint"},
		{"OSM attachment to an unknown vpn-id", sitesA, osmAccess("v1-0", func(m map[string]any) { sub(m, "vpn-attachment")["vpn-id"] = "nope" }), "invalid-value", "encapsulation-type", "require-instance"},
		{"strict vpn-service", Root + "/vpn-services", service("v2"), "", "", ""},
		{"strict attachment", sitesA, access("v1-0", "dc-a-pe"), "", "", ""},
		{"strict untagged attachment", sitesA, access("v1-0", "dc-a-pe", func(m map[string]any) {
			m["connection"] = map[string]any{"encapsulation-type": "ietf-l2vpn-svc:ethernet", "eth-inf-type": "ietf-l2vpn-svc:untagged"}
		}), "", "", ""},
	}
	for _, tt := range tests {
		for _, dialect := range []string{DialectRFC8466, DialectOSM} {
			t.Run(tt.name+" on "+dialect, func(t *testing.T) {
				t.Parallel()
				e := setup(t, Options{Dialect: dialect})
				r := do(t, e, http.MethodPost, tt.path, tt.body)
				wantTag, wantMsg := tt.strictTag, tt.strictMsg
				if dialect == DialectOSM {
					wantTag, wantMsg = "", tt.osmMsg
				}
				if wantMsg == "" {
					if r.status != http.StatusCreated {
						t.Fatalf("POST = %d %s, want 201", r.status, r.body)
					}
					return
				}
				tag, path, msg := rcErr(t, r)
				if r.status != http.StatusBadRequest || (wantTag != "" && tag != wantTag) || !strings.Contains(msg+" "+path, wantMsg) {
					t.Fatalf("POST = %d %s %q at %q, want 400 %s about %s", r.status, tag, msg, path, wantTag, wantMsg)
				}
				if len(e.ServiceIDs()) != 1 || len(e.Accesses()) != 0 {
					t.Fatalf("a refused POST stored %v %+v", e.ServiceIDs(), e.Accesses())
				}
			})
		}
	}
}

// stored returns what the osm dialect stored for body, posted on sitesA
// or, for a vpn-service, on the list of services.
func stored(t *testing.T, opts Options, body string) map[string]any {
	t.Helper()
	opts.Dialect = DialectOSM
	e := setup(t, opts)
	isService := strings.Contains(body, `"ietf-l2vpn-svc:vpn-service"`)
	path := sitesA
	if isService {
		path = Root + "/vpn-services"
	}
	if r := do(t, e, http.MethodPost, path, body); r.status != http.StatusCreated {
		t.Fatalf("POST = %d %s", r.status, r.body)
	}
	got, ok := e.Access("dc-a", "v1-0")
	if isService {
		got, ok = e.Service("v2")
	}
	if !ok {
		t.Fatal("nothing stored")
	}
	return got
}

func sameJSON(t *testing.T, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("stored\n got %s\nwant %s", g, w)
	}
}

func TestOSMRewrite(t *testing.T) {
	t.Parallel()
	const q = Module + ":"
	oam := map[string]any{"md-name": FakeMDName, "md-level": 0}
	dot1q := map[string]any{"encapsulation-type": q + "vlan", "eth-inf-type": q + "tagged",
		"tagged-interface": map[string]any{"type": q + "dot1q", "dot1q-vlan-tagged": map[string]any{"cvlan-id": 100}}, "oam": oam}
	access := func(device string, conn map[string]any, mtu int) map[string]any {
		return map[string]any{
			"network-access-id": "v1-0", "device-reference": device, "connection": conn,
			"vpn-attachment": map[string]any{"vpn-id": "v1", "site-role": q + "any-to-any-role"},
			"bearer":         map[string]any{"bearer-reference": "dc-a-pe:xe-0/0/1"},
			"service":        map[string]any{"svc-mtu": mtu},
		}
	}
	svc := func(preserve bool, fd map[string]any) map[string]any {
		m := map[string]any{"vpn-id": "v2", "vpn-svc-type": q + "vpws", "svc-topo": q + "any-to-any", "customer-name": "osm",
			"ce-vlan-preservation": preserve, "ce-vlan-cos-preservation": true}
		if fd != nil {
			m["frame-delivery"] = fd
		}
		return m
	}
	static := map[string]any{"multicast-gp-port-mapping": q + "static-mapping"}
	tests := []struct {
		name     string
		features []string
		body     string
		want     map[string]any
	}{
		{"vpn-service", nil, osmService("v2"), svc(true, static)},
		{"vpn-service with its own values", nil, osmService("v2", func(m map[string]any) {
			m["ce-vlan-preservation"] = false
			m["frame-delivery"] = map[string]any{"multicast-gp-port-mapping": "dynamic-mapping"}
		}), svc(false, map[string]any{"multicast-gp-port-mapping": q + "dynamic-mapping"})},
		{"vpn-service without feature bum", DefaultFeatures, osmService("v2"), svc(true, nil)},
		{"dot1q attachment", nil, osmAccess("v1-0"), access(FakeDevice, dot1q, 1500)},
		{"untagged attachment", nil, osmAccess("v1-0", untagged), access(FakeDevice, map[string]any{"oam": oam}, 1500)},
		{"untagged attachment without feature ethernet-oam", DefaultFeatures, osmAccess("v1-0", untagged), access(FakeDevice, map[string]any{}, 1500)},
		{"the client's device, mtu and OAM", nil, osmAccess("v1-0", func(m map[string]any) {
			m["device-reference"] = "dc-a-pe"
			m["service"] = map[string]any{"svc-mtu": 9000}
			m["connection"] = map[string]any{"oam": map[string]any{"md-name": "md", "md-level": 3}}
		}), access("dc-a-pe", map[string]any{"oam": map[string]any{"md-name": "md", "md-level": 3}}, 9000)},
		{"location-reference dropped", nil, osmAccess("v1-0", func(m map[string]any) { m["location-reference"] = "dc-a-loc" }), access(FakeDevice, dot1q, 1500)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sameJSON(t, stored(t, Options{Features: tt.features}, tt.body), tt.want)
		})
	}
}

func TestOSMSites(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{Dialect: DialectOSM})
	// A seeded provider-managed site also has TeraFlowSDN's device.
	r := do(t, e, http.MethodGet, Root+"/sites/site=dc-a", "")
	if !strings.Contains(r.body, `{"device-id":"dc-a-pe","location":"dc-a-loc"},{"device-id":"fake-device","location":"fake-location"}`) {
		t.Fatalf("GET site dc-a = %s, want its device and the fake one", r.body)
	}
	// A write to a site nobody seeded makes it up, if it succeeds.
	bad := osmAccess("v1-0", func(m map[string]any) { sub(m, "vpn-attachment")["vpn-id"] = "nope" })
	if r := do(t, e, http.MethodPost, Root+"/sites/site=other/site-network-accesses", bad); r.status != http.StatusBadRequest {
		t.Fatalf("refused POST = %d %s", r.status, r.body)
	}
	if r := do(t, e, http.MethodGet, Root+"/sites/site=other", ""); r.status != http.StatusNotFound {
		t.Fatalf("a refused write made up site other: %d %s", r.status, r.body)
	}
	if r := do(t, e, http.MethodPost, Root+"/sites/site=new%201/site-network-accesses", osmAccess("v1-0")); r.status != http.StatusCreated {
		t.Fatalf("POST on a new site = %d %s", r.status, r.body)
	}
	var doc map[string][]map[string]any
	r = do(t, e, http.MethodGet, Root+"/sites/site=new%201", "")
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil || len(doc[Module+":site"]) != 1 {
		t.Fatalf("GET the new site = %d %s", r.status, r.body)
	}
	site := doc[Module+":site"][0]
	delete(site, "site-network-accesses")
	sameJSON(t, site, map[string]any{
		"default-ce-vlan-id": 1,
		"devices":            map[string]any{"device": []any{map[string]any{"device-id": FakeDevice, "location": FakeLocation}}},
		"locations":          map[string]any{"location": []any{map[string]any{"location-id": FakeLocation}}},
		"management":         map[string]any{"type": Module + ":provider-managed"},
		"site-id":            "new 1",
	})
	// A customer-managed site has no device for the rewrite to name.
	r = do(t, e, http.MethodPost, Root+"/sites/site=cust/site-network-accesses", osmAccess("v1-1"))
	if tag, _, msg := rcErr(t, r); r.status != http.StatusBadRequest || !strings.Contains(msg, "customer-managed") {
		t.Fatalf("POST on a customer-managed site = %d %s %s", r.status, tag, msg)
	}
}

func TestOSMReplies(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{Dialect: DialectOSM, BuildPolls: 1})
	other := Root + "/vpn-services/vpn-service=v2"
	steps := []struct {
		method, path, body string
		status             int
		reply              string // the whole reply body, when set
	}{
		{http.MethodGet, svcPath, "", http.StatusGatewayTimeout, `{"service-id":"v1"}`},
		{http.MethodGet, svcPath, "", http.StatusOK, `{"service-id":"v1"}`},
		{http.MethodGet, other, "", http.StatusInternalServerError, `{"error":"VPN(v2) not found in database"}`},
		{http.MethodPost, Root + "/vpn-services", osmService("v1"), http.StatusConflict, ""},
		{http.MethodPost, sitesA, osmAccess("v1-0"), http.StatusCreated, ""},
		// Posted again, an attachment is replaced (TeraFlowSDN updates its
		// service).
		{http.MethodPost, sitesA, osmAccess("v1-0", untagged), http.StatusCreated, ""},
		{http.MethodPut, accessA, access("v1-0", "dc-a-pe"), http.StatusNoContent, ""},
		{http.MethodDelete, other, "", http.StatusNoContent, ""},
		// The attachments go with their service.
		{http.MethodDelete, svcPath, "", http.StatusNoContent, ""},
		{http.MethodDelete, svcPath, "", http.StatusNoContent, ""},
		{http.MethodDelete, accessA, "", http.StatusNotFound, ""},
	}
	for i, s := range steps {
		r := do(t, e, s.method, s.path, s.body)
		if r.status != s.status || (s.reply != "" && r.body != s.reply) {
			t.Fatalf("step %d: %s %s = %d %s, want %d %s", i, s.method, s.path, r.status, r.body, s.status, s.reply)
		}
		if i == 5 {
			if a, _ := e.Access("dc-a", "v1-0"); sub(a, "connection")["tagged-interface"] != nil {
				t.Fatalf("the second POST did not replace the attachment: %v", a)
			}
		}
	}
	if len(e.ServiceIDs()) != 0 || len(e.Accesses()) != 0 {
		t.Fatalf("left %v %+v", e.ServiceIDs(), e.Accesses())
	}
}

func TestNewRefusesUnknownDialect(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"teraflow"`) {
			t.Fatalf("New with Dialect teraflow: recovered %v, want a panic naming it", r)
		}
	}()
	New(Options{Dialect: "teraflow"})
}
