package onos

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	port1 = "of:0000000000000001/1"
	port2 = "of:0000000000000002/2"
	cfgP  = "/onos/v1/network/configuration"
	vplsP = cfgP + "/apps/org.onosproject.vpls/vpls"
)

type result struct {
	status int
	body   string
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("reply %d %q is not a JSON object: %v", r.status, r.body, err)
	}
	return m
}

// setup returns an emulator with no credentials required.
func setup(t *testing.T, opts Options) *Emulator {
	t.Helper()
	return New(opts)
}

func do(t *testing.T, e *Emulator, method, path, body string, auth ...string) result {
	t.Helper()
	var in io.Reader
	if body != "" {
		in = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, in)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return result{status: rec.Code, body: rec.Body.String()}
}

// onosError checks an ONOS {code, message} error reply and returns the
// message.
func onosError(t *testing.T, r result) string {
	t.Helper()
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Code != r.status || e.Message == "" {
		t.Fatalf("error reply %d %q is not {code, message} with code %d", r.status, r.body, r.status)
	}
	return e.Message
}

func portPath(subject string) string { return cfgP + "/ports/" + url.PathEscape(subject) }

func ifacesJSON(entries ...string) string {
	return `{"interfaces":[` + strings.Join(entries, ",") + `]}`
}

func TestNetcfgScopes(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	// Root scope: two subjects, two keys on one.
	root := `{"ports":{"` + port1 + `":{"interfaces":[{"name":"a","vlan":"10"}],"optical":{"x":1}}},` +
		`"devices":{"of:0000000000000001":{"basic":{"name":"sw1"}}}}`
	if r := do(t, e, http.MethodPost, cfgP, root); r.status != http.StatusOK {
		t.Fatalf("POST root = %d %s", r.status, r.body)
	}
	// Config-key scope replaces only that key.
	if r := do(t, e, http.MethodPost, portPath(port1)+"/interfaces", `[{"name":"b"}]`); r.status != http.StatusOK {
		t.Fatalf("POST key = %d %s", r.status, r.body)
	}
	got := do(t, e, http.MethodGet, portPath(port1), "").json(t)
	if _, ok := got["optical"]; !ok {
		t.Errorf("POST of interfaces removed the optical key: %v", got)
	}
	if ifs := e.Interfaces(); len(ifs) != 1 || ifs[0].Name != "b" {
		t.Errorf("interfaces = %+v, want only b", ifs)
	}
	// Class and subject scopes.
	if r := do(t, e, http.MethodPost, cfgP+"/ports", `{"`+port2+`":`+ifacesJSON(`{"name":"c","vlan":20}`)+`}`); r.status != http.StatusOK {
		t.Fatalf("POST class = %d %s", r.status, r.body)
	}
	if r := do(t, e, http.MethodPost, portPath(port2), ifacesJSON(`{"name":"d","vlan":"30"}`)); r.status != http.StatusOK {
		t.Fatalf("POST subject = %d %s", r.status, r.body)
	}
	want := []Interface{{Port: port1, Name: "b"}, {Port: port2, Name: "d", VLAN: "30"}}
	if got := e.Interfaces(); !slices.Equal(got, want) {
		t.Errorf("interfaces = %+v, want %+v", got, want)
	}

	gets := []struct {
		path   string
		status int
		msg    string
	}{
		{cfgP, http.StatusOK, ""},
		{cfgP + "/ports", http.StatusOK, ""},
		{cfgP + "/links", http.StatusOK, ""},
		{portPath(port2) + "/interfaces", http.StatusOK, ""},
		{cfgP + "/nope", http.StatusNotFound, "Config for 'nope' not found"},
		{portPath("of:00000000000000ff/9"), http.StatusNotFound, "Config for 'ports/of:00000000000000ff/9' not found"},
		{portPath(port2) + "/optical", http.StatusNotFound, "Config for 'ports/" + port2 + "/optical' not found"},
		{vplsP, http.StatusNotFound, "Config for 'apps/org.onosproject.vpls/vpls' not found"},
		{cfgP + "/ports/of:0000000000000001/1/interfaces", http.StatusNotFound, "HTTP 404 Not Found"},
	}
	for _, g := range gets {
		r := do(t, e, http.MethodGet, g.path, "")
		if r.status != g.status {
			t.Errorf("GET %s = %d %s, want %d", g.path, r.status, r.body, g.status)
			continue
		}
		if g.msg != "" {
			if m := onosError(t, r); m != g.msg {
				t.Errorf("GET %s message %q, want %q", g.path, m, g.msg)
			}
		}
	}
	if links := do(t, e, http.MethodGet, cfgP+"/links", ""); strings.TrimSpace(links.body) != "{}" {
		t.Errorf("empty known class = %q, want {}", links.body)
	}

	// Delete scopes.
	deletes := []struct {
		path  string
		check func() bool
	}{
		{portPath(port1) + "/optical", func() bool {
			return do(t, e, http.MethodGet, portPath(port1)+"/optical", "").status == http.StatusNotFound
		}},
		{portPath(port2), func() bool { return len(e.Interfaces()) == 1 }},
		{cfgP + "/ports", func() bool { return len(e.Interfaces()) == 0 }},
		{cfgP, func() bool { return len(e.Config()["devices"].(map[string]any)) == 0 }},
	}
	for _, d := range deletes {
		if r := do(t, e, http.MethodDelete, d.path, ""); r.status != http.StatusNoContent {
			t.Fatalf("DELETE %s = %d", d.path, r.status)
		}
		if !d.check() {
			t.Errorf("DELETE %s did not remove its scope: %v", d.path, e.Config())
		}
	}
}

func TestPostValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body, contains string
	}{
		{"unknown interface field", cfgP + "/ports", `{"` + port1 + `":` + ifacesJSON(`{"name":"a","color":"red"}`) + `}`, `unknown field "color"`},
		{"vlan number out of range", portPath(port1), ifacesJSON(`{"name":"a","vlan":4096}`), "vlan must be in 0..4095"},
		{"negative vlan", portPath(port1), ifacesJSON(`{"name":"a","vlan":-1}`), "vlan must be in 0..4095"},
		{"empty vlan-tagged", portPath(port1), ifacesJSON(`{"name":"a","vlan-tagged":[]}`), "at least one"},
		{"vlan-native alone", portPath(port1), ifacesJSON(`{"name":"a","vlan-native":5}`), "only allowed with vlan-tagged"},
		{"bad mac", portPath(port1), ifacesJSON(`{"name":"a","mac":"zz"}`), "invalid mac"},
		{"bad ips", portPath(port1), ifacesJSON(`{"name":"a","ips":["10.0.0.1"]}`), "invalid ip"},
		{"name not a string", portPath(port1), ifacesJSON(`{"name":5}`), "name must be a string"},
		{"interfaces not an array", portPath(port1), `{"interfaces":{"name":"a"}}`, "must be an array"},
		{"port subject not of:", cfgP + "/ports", `{"eth0":` + ifacesJSON(`{"name":"a"}`) + `}`, "invalid port subject"},
		{"port subject upper-case", cfgP + "/ports", `{"of:00000000000000AB/1":` + ifacesJSON(`{"name":"a"}`) + `}`, "invalid port subject"},
		{"short dpid", cfgP + "/ports", `{"of:01/1":` + ifacesJSON(`{"name":"a"}`) + `}`, "invalid port subject"},
		{"unknown class", cfgP, `{"widgets":{"w":{"k":{}}}}`, "unknown subject class"},
		{"vpls unknown field", vplsP, `{"vplsList":[],"owner":"x"}`, `unknown field "owner"`},
		{"vpls bad encapsulation", vplsP, `{"vplsList":[{"name":"v","interfaces":[],"encapsulation":"QINQ"}]}`, "NONE, VLAN or MPLS"},
		{"vpls without name", vplsP, `{"vplsList":[{"interfaces":["a"]}]}`, "name must be"},
		{"vpls duplicate", vplsP, `{"vplsList":[{"name":"v"},{"name":"v"}]}`, "duplicate VPLS name"},
		{"vpls interfaces not names", vplsP, `{"vplsList":[{"name":"v","interfaces":[1]}]}`, "interface names"},
		{"null config", portPath(port1) + "/interfaces", `null`, "config is null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, Options{})
			r := do(t, e, http.MethodPost, tt.path, tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status = %d %s, want 400", r.status, r.body)
			}
			if m := onosError(t, r); !strings.Contains(m, tt.contains) {
				t.Errorf("message %q does not contain %q", m, tt.contains)
			}
			if cfg := e.Config(); len(cfg["ports"].(map[string]any))+len(cfg["apps"].(map[string]any)) != 0 {
				t.Errorf("a refused POST changed the config: %v", cfg)
			}
		})
	}
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	if r := do(t, e, http.MethodPost, cfgP, `{"ports":`); r.status != http.StatusBadRequest {
		t.Errorf("malformed JSON = %d, want 400", r.status)
	} else {
		onosError(t, r)
	}
	if r := do(t, e, http.MethodPost, cfgP+"/ports", `[1]`); r.status != http.StatusBadRequest {
		t.Errorf("array at class scope = %d, want 400", r.status)
	}
	req := httptest.NewRequest(http.MethodPost, cfgP, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	if w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST = %d, want 415", w.Code)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodPut, cfgP, http.StatusMethodNotAllowed},
		{http.MethodGet, "/onos/v1/intents", http.StatusNotFound},
		{http.MethodGet, "/elsewhere", http.StatusNotFound},
		{http.MethodGet, cfgP + "/a/b/c/d", http.StatusNotFound},
	} {
		if r := do(t, e, tc.method, tc.path, ""); r.status != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, r.status, tc.want)
		}
	}
}

func TestMultiStatus(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{MultiStatus: true})
	body := `{"` + port1 + `":` + ifacesJSON(`{"name":"ok"}`) + `,"` + port2 + `":` + ifacesJSON(`{"name":"bad","speed":1}`) + `}`
	r := do(t, e, http.MethodPost, cfgP+"/ports", body)
	if r.status != http.StatusMultiStatus {
		t.Fatalf("status = %d %s, want 207", r.status, r.body)
	}
	var reply struct {
		Code    int      `json:"code"`
		Message []string `json:"message"`
	}
	if err := json.Unmarshal([]byte(r.body), &reply); err != nil || reply.Code != 207 || len(reply.Message) != 1 ||
		!strings.Contains(reply.Message[0], "Error parsing config ports/"+port2+"/interfaces") {
		t.Fatalf("207 body = %s", r.body)
	}
	if ifs := e.Interfaces(); len(ifs) != 1 || ifs[0].Name != "ok" {
		t.Fatalf("interfaces = %+v, want the valid part applied", ifs)
	}
}

// seedVPLS configures two ports with interfaces and posts a vpls config.
func seedVPLS(t *testing.T, e *Emulator, vpls string) {
	t.Helper()
	ports := `{"` + port1 + `":` + ifacesJSON(`{"name":"a","vlan":"10"}`, `{"name":"badvlan","vlan":"ten"}`) +
		`,"` + port2 + `":` + ifacesJSON(`{"name":"b","vlan":10}`) + `}`
	if r := do(t, e, http.MethodPost, cfgP+"/ports", ports); r.status != http.StatusOK {
		t.Fatalf("POST ports = %d %s", r.status, r.body)
	}
	if r := do(t, e, http.MethodPost, vplsP, vpls); r.status != http.StatusOK {
		t.Fatalf("POST vpls = %d %s", r.status, r.body)
	}
}

func TestVPLSEngine(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	seedVPLS(t, e, `{"vplsList":[{"name":"v1","interfaces":["a","b","ghost","badvlan"],"encapsulation":"vlan"},{"name":"v2","interfaces":["a"]}]}`)

	app := e.AppVPLSs()
	if v := app["v1"]; !slices.Equal(v.Interfaces, []string{"a", "b"}) || v.Encapsulation != "VLAN" {
		t.Fatalf("app v1 = %+v, want interfaces a, b (unknown and bad-VLAN names dropped) and VLAN", v)
	}
	if v := app["v2"]; !slices.Equal(v.Interfaces, []string{"a"}) || v.Encapsulation != "NONE" {
		t.Fatalf("app v2 = %+v", v)
	}
	cfg, ok := e.ConfiguredVPLSs()
	if !ok || !cfg.HasLastUpdateTime || len(cfg.VPLSs) != 2 || !slices.Equal(cfg.VPLSs[0].Interfaces, []string{"a", "b"}) {
		t.Fatalf("written-back config = %+v, want the app's view with a lastUpdateTime", cfg)
	}
	firstTime := cfg.LastUpdateTime

	// A config posted with a lastUpdateTime is stored but ignored.
	stale := `{"vplsList":[{"name":"other","interfaces":["a"]}],"lastUpdateTime":1}`
	if r := do(t, e, http.MethodPost, vplsP, stale); r.status != http.StatusOK {
		t.Fatalf("POST stale = %d", r.status)
	}
	if app := e.AppVPLSs(); len(app) != 2 || app["other"].Name != "" {
		t.Fatalf("the app acted on a config with lastUpdateTime: %+v", app)
	}
	if cfg, _ := e.ConfiguredVPLSs(); cfg.LastUpdateTime != 1 || cfg.VPLSs[0].Name != "other" {
		t.Fatalf("stale config not stored as posted: %+v", cfg)
	}

	// Without lastUpdateTime: v2 removed, v1 kept.
	if r := do(t, e, http.MethodPost, vplsP, `{"vplsList":[{"name":"v1","interfaces":["a","b"]}]}`); r.status != http.StatusOK {
		t.Fatalf("POST = %d", r.status)
	}
	app = e.AppVPLSs()
	if _, ok := app["v2"]; ok || len(app) != 1 || app["v1"].Encapsulation != "NONE" {
		t.Fatalf("app after removing v2 = %+v", app)
	}
	if cfg, _ := e.ConfiguredVPLSs(); cfg.LastUpdateTime <= firstTime {
		t.Fatalf("lastUpdateTime %d did not move past %d", cfg.LastUpdateTime, firstTime)
	}

	// An interface removed under ports leaves its VPLS.
	if !e.RemoveInterface("b") {
		t.Fatal("RemoveInterface(b) found nothing")
	}
	if v := e.AppVPLSs()["v1"]; !slices.Equal(v.Interfaces, []string{"a"}) {
		t.Fatalf("app v1 after removing b = %+v", v)
	}
	if cfg, _ := e.ConfiguredVPLSs(); !slices.Equal(cfg.VPLSs[0].Interfaces, []string{"a"}) {
		t.Fatalf("config not written back after an interface removal: %+v", cfg)
	}
	if e.RemoveInterface("b") {
		t.Fatal("RemoveInterface(b) twice found it again")
	}

	// Deleting the vpls config key removes every VPLS.
	if r := do(t, e, http.MethodDelete, vplsP, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE vpls = %d", r.status)
	}
	if app := e.AppVPLSs(); len(app) != 0 {
		t.Fatalf("app after deleting the vpls config = %+v", app)
	}
	if _, ok := e.ConfiguredVPLSs(); ok {
		t.Fatal("vpls config still present after DELETE")
	}
}

func TestApplications(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{VPLSInactive: true})
	appPath := "/onos/v1/applications/" + VPLSApp
	if got := do(t, e, http.MethodGet, appPath, "").json(t); got["state"] != StateInstalled || got["name"] != VPLSApp {
		t.Fatalf("app = %v, want INSTALLED", got)
	}
	// Inactive: configs are stored, nothing runs.
	seedVPLS(t, e, `{"vplsList":[{"name":"v1","interfaces":["a","b"]}]}`)
	if app := e.AppVPLSs(); len(app) != 0 {
		t.Fatalf("inactive app runs %+v", app)
	}
	if got := do(t, e, http.MethodPost, appPath+"/active", "").json(t); got["state"] != StateActive {
		t.Fatalf("activate = %v", got)
	}
	if v := e.AppVPLSs()["v1"]; len(v.Interfaces) != 2 {
		t.Fatalf("activation did not load the config: %+v", e.AppVPLSs())
	}
	if r := do(t, e, http.MethodDelete, appPath+"/active", ""); r.status != http.StatusOK || e.AppState(VPLSApp) != StateInstalled {
		t.Fatalf("deactivate = %d, state %s", r.status, e.AppState(VPLSApp))
	}
	if len(e.AppVPLSs()) != 0 {
		t.Fatal("deactivation left VPLSs running")
	}
	if !e.SetAppState(VPLSApp, StateActive) || len(e.AppVPLSs()) != 1 {
		t.Fatalf("SetAppState(ACTIVE) did not reload: %+v", e.AppVPLSs())
	}
	if e.SetAppState("org.example.none", StateActive) || e.AppState("org.example.none") != "" {
		t.Fatal("an unknown application has a state")
	}
	r := do(t, e, http.MethodGet, "/onos/v1/applications/org.example.none", "")
	if r.status != http.StatusNotFound || onosError(t, r) != "App not found" {
		t.Fatalf("unknown app = %d %s", r.status, r.body)
	}
	if got := do(t, e, http.MethodPost, appPath+"/register", "").json(t); got["name"] != VPLSApp || got["id"] == nil {
		t.Fatalf("register = %v", got)
	}
	if r := do(t, e, http.MethodPut, appPath, ""); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("PUT app = %d", r.status)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		auth []string
		want int
	}{
		{"right", []string{"onos", "rocks"}, http.StatusOK},
		{"wrong password", []string{"onos", "nope"}, http.StatusUnauthorized},
		{"wrong user", []string{"karaf", "rocks"}, http.StatusUnauthorized},
		{"none", nil, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, Options{User: "onos", Password: "rocks"})
			r := do(t, e, http.MethodGet, cfgP, "", tt.auth...)
			if r.status != tt.want {
				t.Fatalf("status = %d, want %d", r.status, tt.want)
			}
			if r.status != http.StatusOK {
				onosError(t, r)
			}
			reqs := e.Requests()
			if len(reqs) != 1 || reqs[0].HasAuth != (tt.auth != nil) || reqs[0].Status != tt.want {
				t.Fatalf("request log = %+v", reqs)
			}
		})
	}
}

func TestFaultsAndLog(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	e.FailNext(2, http.StatusServiceUnavailable)
	body := `{"` + port1 + `":` + ifacesJSON(`{"name":"a"}`) + `}`
	for range 2 {
		r := do(t, e, http.MethodPost, cfgP+"/ports", body)
		if r.status != http.StatusServiceUnavailable || onosError(t, r) != "injected failure" {
			t.Fatalf("injected: %d %s", r.status, r.body)
		}
	}
	if len(e.Interfaces()) != 0 {
		t.Fatal("a failed request took effect")
	}
	if r := do(t, e, http.MethodPost, cfgP+"/ports", body); r.status != http.StatusOK {
		t.Fatalf("after faults: %d", r.status)
	}
	reqs := e.Requests()
	if len(reqs) != 3 || reqs[2].Body != body || reqs[2].Path != cfgP+"/ports" || reqs[2].ContentType != "application/json" {
		t.Fatalf("request log = %+v", reqs)
	}
	if got := []int{reqs[0].Status, reqs[1].Status, reqs[2].Status}; !slices.Equal(got, []int{503, 503, 200}) {
		t.Fatalf("logged statuses = %v", got)
	}
}

func TestDelayEndsWithClient(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	e.Delay(time.Hour)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 50 * time.Millisecond}
	if resp, err := client.Get(srv.URL + cfgP); err == nil {
		_ = resp.Body.Close()
		t.Fatal("a delayed request answered before the client's timeout")
	}
	e.Delay(0)
	resp, err := http.Get(srv.URL + cfgP)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET after Delay(0) = %d", resp.StatusCode)
	}
}

func TestLoadAndBeforeWrite(t *testing.T) {
	t.Parallel()
	seen := make(chan Write, 1)
	var e *Emulator
	e = setup(t, Options{BeforeWrite: func(w Write) {
		// The change is not applied yet when the hook runs.
		w.Body = append(w.Body, []byte(" applied="+boolString(len(e.Interfaces()) > 0))...)
		seen <- w
	}})
	if err := e.Load(map[string]any{"ports": map[string]any{port1: map[string]any{"interfaces": []any{map[string]any{"name": "seed"}}}}}); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := e.Load(map[string]any{"ports": map[string]any{"bad": map[string]any{"interfaces": []any{}}}}); err == nil {
		t.Fatal("Load accepted an invalid port subject")
	}
	if len(e.Requests()) != 0 || len(e.Interfaces()) != 1 {
		t.Fatalf("Load logged requests or did not apply: %+v %+v", e.Requests(), e.Interfaces())
	}
	r := do(t, e, http.MethodDelete, portPath(port1), "")
	if r.status != http.StatusNoContent {
		t.Fatalf("DELETE = %d", r.status)
	}
	select {
	case w := <-seen:
		if w.Method != http.MethodDelete || w.Path != portPath(port1) || !strings.HasSuffix(string(w.Body), "applied=true") {
			t.Fatalf("BeforeWrite got %+v (%s), want the DELETE before it was applied", w, w.Body)
		}
	default:
		t.Fatal("BeforeWrite was not called")
	}
	if len(e.Interfaces()) != 0 {
		t.Fatal("DELETE not applied after the hook")
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestVPLSReloadRule: the application binds interfaces when its own config
// changes; a VLAN or port changed under ports alone is not seen, a vpls
// config posted again (or naming other interfaces) is.
func TestVPLSReloadRule(t *testing.T) {
	t.Parallel()
	const vpls = `{"vplsList":[{"name":"v1","interfaces":["a","b"]}]}`
	tests := []struct {
		name string
		// ports replaces port1's interfaces after the seed.
		ports      string
		repostVPLS bool
		want       Attachment // a's attachment in the app afterwards
	}{
		{name: "vlan changed under ports only", ports: ifacesJSON(`{"name":"a","vlan":"20"}`), want: Attachment{Port: port1, VLAN: "10"}},
		{name: "vlan changed, vpls posted again", ports: ifacesJSON(`{"name":"a","vlan":"20"}`), repostVPLS: true, want: Attachment{Port: port1, VLAN: "20"}},
		{name: "vlan removed under ports only", ports: ifacesJSON(`{"name":"a"}`), want: Attachment{Port: port1, VLAN: "10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, Options{})
			seedVPLS(t, e, vpls)
			if got := e.AppVPLSs()["v1"].Attachments["a"]; got != (Attachment{Port: port1, VLAN: "10"}) {
				t.Fatalf("after the seed a is bound to %+v", got)
			}
			if r := do(t, e, http.MethodPost, cfgP+"/ports", `{"`+port1+`":`+tt.ports+`}`); r.status != http.StatusOK {
				t.Fatalf("POST ports = %d %s", r.status, r.body)
			}
			if tt.repostVPLS {
				if r := do(t, e, http.MethodPost, vplsP, vpls); r.status != http.StatusOK {
					t.Fatalf("POST vpls = %d %s", r.status, r.body)
				}
			}
			if got := e.AppVPLSs()["v1"].Attachments["a"]; got != tt.want {
				t.Fatalf("a is bound to %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestVPLSKeyWhileInactive: the vpls config class belongs to the VPLS
// application, so its key answers 404 while the application is inactive,
// though a posted config is kept and loaded on activation.
func TestVPLSKeyWhileInactive(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{VPLSInactive: true})
	seedVPLS(t, e, `{"vplsList":[{"name":"v1","interfaces":["a","b"]}]}`)
	if r := do(t, e, http.MethodGet, vplsP, ""); r.status != http.StatusNotFound {
		t.Fatalf("GET vpls while inactive = %d %s, want 404", r.status, r.body)
	}
	e.SetAppState(VPLSApp, StateActive)
	if r := do(t, e, http.MethodGet, vplsP, ""); r.status != http.StatusOK {
		t.Fatalf("GET vpls once active = %d %s, want 200", r.status, r.body)
	}
}
