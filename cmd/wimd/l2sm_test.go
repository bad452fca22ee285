package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// OSM NG-RO's ietfl2vpn SDN plugin against a built wimd, written from
// what the plugin sends: its paths (the fixed RESTCONF path after the WIM
// URL, with or without a trailing slash as the plugin writes each), its
// headers (python-requests' defaults, Content-Type: application/json on
// POST and PUT), its bodies, and HTTP Basic with the WIM account's user
// and password. The plugin reads nothing but the status of each answer;
// the tests read the bodies too, and check every GET body with yanglint
// against RFC 8466.

const l2sm = "/restconf/data/ietf-l2vpn-svc:l2vpn-svc"

// osmPlugin sends requests as the plugin does.
type osmPlugin struct {
	t          *testing.T
	addr       string
	user, pass string
	// contentType replaces the plugin's application/json (other clients
	// send RESTCONF's own type).
	contentType string
}

func (p osmPlugin) send(method, path string, body any) (int, []byte, http.Header) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			p.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, "http://"+p.addr+l2sm+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("User-Agent", "python-requests/2.31.0")
	req.Header.Set("Accept", "*/*")
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	req.Header.Set("Connection", "keep-alive")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		if p.contentType != "" {
			req.Header.Set("Content-Type", p.contentType)
		}
	}
	if p.user != "" {
		req.SetBasicAuth(p.user, p.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	doc, err := openAPI()
	if err != nil {
		p.t.Fatal(err)
	}
	// The document lists each path once, without the trailing slash the
	// plugin writes on some.
	checked := req.Clone(req.Context())
	checked.URL.Path = strings.TrimSuffix(checked.URL.Path, "/")
	if err := doc.Check(checked, resp.StatusCode, resp.Header, raw); err != nil {
		p.t.Errorf("%s %s: the answer does not follow the OpenAPI document: %v\nbody: %.2000s", method, path, err, raw)
	}
	// The exchange in the test's log: the session as OSM would see it.
	var sent []byte
	if body != nil {
		sent, _ = json.Marshal(body)
	}
	p.t.Logf("%s %s%s %s\n  -> %d %s %s", method, l2sm, path, sent, resp.StatusCode, resp.Header.Get("Location"), strings.Join(strings.Fields(string(raw)), " "))
	if resp.StatusCode >= 400 && !strings.Contains(string(raw), `"ietf-restconf:errors"`) {
		p.t.Errorf("%s %s = %d with %s, want an ietf-restconf:errors body", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, raw, resp.Header
}

// expect sends and requires the status.
func (p osmPlugin) expect(want int, method, path string, body any) []byte {
	p.t.Helper()
	status, raw, _ := p.send(method, path, body)
	if status != want {
		p.t.Fatalf("%s %s = %d: %s; want %d", method, path, status, raw, want)
	}
	return raw
}

// The plugin's bodies.
func vpnServiceBody(id, typ string) map[string]any {
	return map[string]any{"ietf-l2vpn-svc:vpn-service": []any{map[string]any{
		"vpn-id": id, "vpn-svc-type": typ, "svc-topo": "any-to-any", "customer-name": "osm"}}}
}

func accessBody(vpnID, accessID, bearer string, vlan any) map[string]any {
	conn := map[string]any{}
	if vlan != nil {
		conn = map[string]any{"encapsulation-type": "dot1q-vlan-tagged", "tagged-interface": map[string]any{"dot1q-vlan-tagged": map[string]any{"cvlan-id": vlan}}}
	}
	return map[string]any{"ietf-l2vpn-svc:site-network-access": []any{map[string]any{
		"connection":        conn,
		"vpn-attachment":    map[string]any{"vpn-id": vpnID, "site-role": "any-to-any-role"},
		"network-access-id": accessID,
		"bearer":            map[string]any{"bearer-reference": bearer}}}}
}

func siteAccesses(site string) string { return "/sites/site=" + site + "/site-network-accesses/" }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// yangValid has yanglint check an answer's body (a vpn-services
// container or a vpn-service list) against RFC 8466 with the features
// wimro serves.
func yangValid(t *testing.T, raw []byte) {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("GET body is not JSON: %v: %s", err, raw)
	}
	var services json.RawMessage
	switch {
	case doc["ietf-l2vpn-svc:vpn-services"] != nil:
		services = doc["ietf-l2vpn-svc:vpn-services"]
	case doc["ietf-l2vpn-svc:vpn-service"] != nil:
		services, _ = json.Marshal(map[string]json.RawMessage{"vpn-service": doc["ietf-l2vpn-svc:vpn-service"]})
	default:
		t.Fatalf("GET body holds neither vpn-services nor vpn-service: %s", raw)
	}
	tree, _ := json.Marshal(map[string]any{"ietf-l2vpn-svc:l2vpn-svc": map[string]json.RawMessage{"vpn-services": services}})
	bin, err := exec.LookPath("yanglint")
	if err != nil {
		t.Fatalf("yanglint is not on PATH (`make deps` installs it): %v", err)
	}
	file := filepath.Join(t.TempDir(), "answer.json")
	if err := os.WriteFile(file, tree, 0o600); err != nil {
		t.Fatal(err)
	}
	yang := filepath.Join("..", "..", "connectors", "ietfl2vpn", "testdata", "yang")
	out, err := exec.CommandContext(t.Context(), bin, "-p", yang, "-t", "config", "-F", "ietf-l2vpn-svc:bearer-reference,dot1q",
		filepath.Join(yang, "ietf-l2vpn-svc@2018-10-09.yang"), file).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Errorf("yanglint refuses the answer: %s\n%s", out, tree)
	} else if err != nil {
		t.Fatalf("running yanglint: %v", err)
	}
}

// onosServices is the controller's state: for each VPLS of the
// application, its interfaces as "<port> vlan <vlan>", sorted.
func onosServices(e *onosemu.Emulator) []string {
	byName := map[string]onosemu.Interface{}
	for _, it := range e.Interfaces() {
		byName[it.Name] = it
	}
	var out []string
	for _, v := range e.AppVPLSs() {
		var ends []string
		for _, name := range v.Interfaces {
			ends = append(ends, byName[name].Port+" vlan "+byName[name].VLAN)
		}
		sort.Strings(ends)
		out = append(out, strings.Join(ends, " + "))
	}
	sort.Strings(out)
	return out
}

// l2smSetup starts a wimd with an API token in front of an ONOS emulator:
// tenants t0 and t1, dcA and dcB attached to t0 (endpoints ep-0 and ep-1
// of WIM wan1), and t0's account on wan1.
func l2smSetup(t *testing.T, extraEnv ...string) (api, *onosemu.Emulator, []string) {
	bins := wimdtest.Build(t, "wimd", "openmano")
	onos := onosemu.New(onosemu.Options{User: "onos", Password: "rocks"})
	srv := httptest.NewServer(onos)
	t.Cleanup(srv.Close)
	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DATA_DIR=" + t.TempDir(), "WIMRO_API_TOKEN=tok-1"}
	env = append(env, extraEnv...)
	addr := wimdtest.Start(t, bins[0], env, "serve", "--listen", "127.0.0.1:0", "--status-refresh", "100ms", "--l2sm-wait", "20s")
	a := api{t: t, addr: addr, token: "tok-1"}
	for _, tn := range []string{"t0", "t1"} {
		a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": tn}})
	}
	mappings := twoDatacenters(a.call, func(i int, _ string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i),
			"wan_service_mapping_info": map[string]any{"mapping_type": "onos-port", "switch_dpid": fmt.Sprintf("of:%016x", i+1), "switch_port": "1"}}
	})
	for _, dc := range []string{"dcA", "dcB"} {
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "onos", "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": mappings}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1", "user": "onos", "password": "rocks"}})
	return a, onos, append(env, "WIMD_BIN="+bins[0], "OPENMANO_BIN="+bins[1])
}

// noDrift runs wimd reconcile (with args, e.g. --account) and requires
// no drift.
func noDrift(t *testing.T, env []string, args ...string) {
	t.Helper()
	if code, out := runReconcile(t, env, args...); code != 0 || !strings.Contains(out, "0 orphan(s), 0 missing, 0 mismatched") {
		t.Errorf("wimd reconcile: exit %d, want 0 and no drift\n%s", code, out)
	}
}

// osmMappingFile runs openmano wim-port-mapping-osm wan1 and returns the
// file it prints, as the plugin indexes it: by service_endpoint_id.
func osmMappingFile(t *testing.T, env []string, addr string) map[string]map[string]any {
	t.Helper()
	out := openmanoCLI(t, env, addr, "wim-port-mapping-osm", "wan1")
	var entries []map[string]any
	if err := yaml.Unmarshal(out, &entries); err != nil {
		t.Fatalf("openmano wim-port-mapping-osm: not a YAML list: %v\n%s", err, out)
	}
	byID := map[string]map[string]any{}
	for _, e := range entries {
		id, _ := e["service_endpoint_id"].(string)
		if id == "" {
			t.Fatalf("an entry without service_endpoint_id (the plugin's constructor fails): %s", out)
		}
		byID[id] = e
	}
	return byID
}

// openmanoCLI runs the built openmano as tenant t0 against the wimd at
// addr and returns what it printed; a failure fails the test.
func openmanoCLI(t *testing.T, env []string, addr string, args ...string) []byte {
	t.Helper()
	var bin string
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "OPENMANO_BIN="); ok {
			bin = v
		}
	}
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(append(os.Environ(), env...), "OPENMANO_HOST="+host, "OPENMANO_PORT="+port, "OPENMANO_TENANT=t0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openmano %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestL2SMOSMSession drives the plugin's whole life cycle: check
// credentials, create (a vpn-service, then one access per connection
// point), status, edit, delete and clear-all, checking the controller,
// wimro's own view and reconcile after each step, then the error paths
// the plugin meets.
func TestL2SMOSMSession(t *testing.T) {
	t.Parallel()
	a, onos, env := l2smSetup(t)
	osm := osmPlugin{t: t, addr: a.addr, user: "t0", pass: "tok-1"}

	// The operator's mapping file, from openmano: what the plugin puts in
	// the path (site-id), sends (bearer) and needs for edit (device-id).
	mapping := osmMappingFile(t, env, a.addr)
	for ep, want := range map[string]map[string]any{
		"ep-0": {"service_endpoint_id": "ep-0", "device-id": "00:00:00:00:00:00:00:01",
			"service_mapping_info": map[string]any{"site-id": "dcA", "bearer": map[string]any{"bearer-reference": "ep-0"}}},
		"ep-1": {"service_endpoint_id": "ep-1", "device-id": "00:00:00:00:00:00:00:02",
			"service_mapping_info": map[string]any{"site-id": "dcB", "bearer": map[string]any{"bearer-reference": "ep-1"}}},
	} {
		if got, _ := json.Marshal(mapping[ep]); string(got) != string(must(json.Marshal(want))) {
			t.Errorf("mapping entry %s: %s, want %s", ep, got, must(json.Marshal(want)))
		}
	}

	// check_credentials: 200, and the empty list is valid RFC 8466.
	yangValid(t, osm.expect(http.StatusOK, "GET", "/vpn-services", nil))

	// create_connectivity_service("ELINE", [dcA vlan 301, dcB vlan 302]).
	vpn := uuid.NewString()
	_, _, hdr := osm.send("POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	if loc := hdr.Get("Location"); loc != l2sm+"/vpn-services/vpn-service="+vpn {
		t.Errorf("Location %q, want the vpn-service's path", loc)
	}
	osm.expect(http.StatusConflict, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	acc1, acc2 := uuid.NewString(), uuid.NewString()
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpn, acc1, "ep-0", 301))
	// One access: pending, 200, nothing on the controller.
	yangValid(t, osm.expect(http.StatusOK, "GET", "/vpn-services/vpn-service="+vpn+"/", nil))
	if got := onosServices(onos); len(got) != 0 {
		t.Errorf("controller after one access: %v, want nothing", got)
	}
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcB"), accessBody(vpn, acc2, "ep-1", 302))
	// The POST waited for the link: the controller has it already.
	want := []string{"of:0000000000000001/1 vlan 301 + of:0000000000000002/1 vlan 302"}
	if got := onosServices(onos); !slices.Equal(got, want) {
		t.Fatalf("controller after the second access: %v, want %v", got, want)
	}
	// get_connectivity_service_status: 200 and valid RFC 8466.
	body := osm.expect(http.StatusOK, "GET", "/vpn-services/vpn-service="+vpn+"/", nil)
	yangValid(t, body)
	if !strings.Contains(string(body), `"ietf-l2vpn-svc:vpws"`) || !strings.Contains(string(body), `"customer-name": "osm"`) {
		t.Errorf("GET vpn-service: %s, want vpws and the customer name kept", body)
	}
	// wimro's own view: an instance named after the vpn-id, one ACTIVE
	// WAN link of t0's account.
	inst := a.call("GET", "/openmano/t0/instances/"+vpn, nil)
	links := a.call("GET", "/openmano/t0/instances/"+inst["uuid"].(string)+"/wan_links", nil)["wan_links"].([]any)
	if len(links) != 1 || links[0].(map[string]any)["status"] != "ACTIVE" {
		t.Errorf("instance %s's WAN links: %v, want one ACTIVE", vpn, links)
	}
	noDrift(t, env)

	// edit_connectivity_service: the plugin PUTs each point again, by
	// position, with its conn_info's access id; dcB's VLAN becomes 310.
	osm.expect(http.StatusNoContent, "PUT", siteAccesses("dcA"), accessBody(vpn, acc1, "ep-0", 301))
	if got := onosServices(onos); !slices.Equal(got, want) {
		t.Errorf("controller after a PUT that changes nothing: %v, want %v", got, want)
	}
	osm.expect(http.StatusNoContent, "PUT", siteAccesses("dcB"), accessBody(vpn, acc2, "ep-1", "310"))
	want = []string{"of:0000000000000001/1 vlan 301 + of:0000000000000002/1 vlan 310"}
	eventually.Until(t, 60*time.Second, "one service with the new VLAN", func() (bool, string) {
		got := onosServices(onos)
		return slices.Equal(got, want), fmt.Sprint(got)
	})
	yangValid(t, osm.expect(http.StatusOK, "GET", "/vpn-services/vpn-service="+vpn+"/", nil))
	deletesDone(t, a, vpn)
	noDrift(t, env)

	// delete_connectivity_service: 204, then 404 (NG-RO's "already
	// deleted"), and the controller's service goes.
	osm.expect(http.StatusNoContent, "DELETE", "/vpn-services/vpn-service="+vpn+"/", nil)
	osm.expect(http.StatusNotFound, "DELETE", "/vpn-services/vpn-service="+vpn+"/", nil)
	osm.expect(http.StatusNotFound, "GET", "/vpn-services/vpn-service="+vpn+"/", nil)
	eventually.Until(t, 60*time.Second, "the controller empty", func() (bool, string) {
		got := onosServices(onos)
		return len(got) == 0, fmt.Sprint(got)
	})
	if st, raw := a.send("GET", "/openmano/t0/instances/"+vpn, nil); st != http.StatusNotFound {
		t.Errorf("openmano GET of the deleted vpn-service's instance = %d %s, want 404", st, raw)
	}
	noDrift(t, env)

	// Error paths of the create, each followed by the plugin's clean-up
	// DELETE, which must answer 204 and leave nothing.
	errorPaths := []struct {
		name   string
		site   string
		bearer string
		vlan   any
		want   int
		says   string
	}{
		{"unknown site", "dcZ", "ep-0", 301, http.StatusBadRequest, "site-id"},
		{"unknown bearer", "dcA", "ep-9", 301, http.StatusBadRequest, "bearer-reference"},
		{"VLAN out of range", "dcA", "ep-0", 5000, http.StatusBadRequest, "cvlan-id"},
	}
	for _, tt := range errorPaths {
		vpn := uuid.NewString()
		osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
		raw := osm.expect(tt.want, "POST", siteAccesses(tt.site), accessBody(vpn, uuid.NewString(), tt.bearer, tt.vlan))
		if !strings.Contains(string(raw), tt.says) {
			t.Errorf("%s: %s, want it to name %s", tt.name, raw, tt.says)
		}
		osm.expect(http.StatusNoContent, "DELETE", "/vpn-services/vpn-service="+vpn+"/", nil)
	}
	// The same access id twice at a site: 409, then the clean-up.
	vpn = uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	dup := uuid.NewString()
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpn, dup, "ep-0", 401))
	osm.expect(http.StatusConflict, "POST", siteAccesses("dcA"), accessBody(vpn, dup, "ep-0", 401))
	osm.expect(http.StatusNoContent, "DELETE", "/vpn-services/vpn-service="+vpn+"/", nil)

	// A link the controller refuses: the completing POST answers 500 with
	// the reason, the plugin deletes, nothing remains anywhere.
	vpn = uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpn, uuid.NewString(), "ep-0", 501))
	onos.FailNext(1, http.StatusBadRequest) // the CREATE's first request
	raw := osm.expect(http.StatusInternalServerError, "POST", siteAccesses("dcB"), accessBody(vpn, uuid.NewString(), "ep-1", 502))
	if !strings.Contains(string(raw), "Impossible to stablish WAN connectivity") {
		t.Errorf("failed link: %s, want the controller's reason", raw)
	}
	// Status answers the failure too, until the plugin deletes.
	osm.expect(http.StatusInternalServerError, "GET", "/vpn-services/vpn-service="+vpn+"/", nil)
	osm.expect(http.StatusNoContent, "DELETE", "/vpn-services/vpn-service="+vpn+"/", nil)
	if got := onosServices(onos); len(got) != 0 {
		t.Errorf("controller after the failed create: %v, want nothing", got)
	}
	if list := osm.expect(http.StatusOK, "GET", "/vpn-services", nil); strings.Contains(string(list), `"vpn-id"`) {
		t.Errorf("vpn-services after the failed creates: %s, want none", list)
	}

	// A vpls over two sites is one ELAN on the controller, a link wimro
	// holds as multipoint (TestL2SMELAN has three sites).
	vpn = uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpls"))
	// A PUT that creates an access answers 201 with its Location (RFC
	// 8040 §4.5), one that replaces it 204.
	accA := uuid.NewString()
	if status, raw, hdr := osm.send("PUT", siteAccesses("dcA"), accessBody(vpn, accA, "ep-0", 601)); status != http.StatusCreated ||
		!strings.HasSuffix(hdr.Get("Location"), "/sites/site=dcA/site-network-accesses/site-network-access="+accA) {
		t.Fatalf("PUT creating access %s = %d %s, Location %q; want 201 with its Location", accA, status, raw, hdr.Get("Location"))
	}
	osm.expect(http.StatusNoContent, "PUT", siteAccesses("dcA"), accessBody(vpn, accA, "ep-0", 601))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcB"), accessBody(vpn, uuid.NewString(), "ep-1", 602))
	if got := onosServices(onos); len(got) != 1 || got[0] != "of:0000000000000001/1 vlan 601 + of:0000000000000002/1 vlan 602" {
		t.Errorf("controller after a vpls over two sites: %v, want one service 601+602", got)
	}
	if links, _ := a.call("GET", "/openmano/t0/instances/"+vpn, nil)["wan_links"].([]any); len(links) != 1 {
		t.Errorf("vpls over two sites: %d WAN links, want one", len(links))
	} else if l, _ := links[0].(map[string]any); l["multipoint"] != true || !strings.Contains(fmt.Sprint(l["wim_info"]), "type:ELAN") {
		t.Errorf("vpls over two sites: WAN link %v, want multipoint, made as an ELAN", l)
	}
	yangValid(t, osm.expect(http.StatusOK, "GET", "/vpn-services/vpn-service="+vpn+"/", nil))
	osm.expect(http.StatusNoContent, "DELETE", "/vpn-services/vpn-service="+vpn+"/", nil)
	eventually.Until(t, 60*time.Second, "the vpls gone from the controller", func() (bool, string) {
		got := onosServices(onos)
		return len(got) == 0, fmt.Sprint(got)
	})

	// clear_all_connectivity_services: the tenant's vpn-services (a live
	// one, a pending one) go; an instance made through the openmano API
	// stays.
	live, pending := uuid.NewString(), uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(live, "vpws"))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(live, uuid.NewString(), "ep-0", 701))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcB"), accessBody(live, uuid.NewString(), "ep-1", 702))
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(pending, "vpws"))
	own, _ := a.activeInstance("t0", 1)
	osm.expect(http.StatusNoContent, "DELETE", "/vpn-services", nil)
	list := osm.expect(http.StatusOK, "GET", "/vpn-services", nil)
	yangValid(t, list)
	if strings.Contains(string(list), `"vpn-id"`) {
		t.Errorf("vpn-services after clear-all: %s, want none", list)
	}
	if st, raw := a.send("GET", "/openmano/t0/instances/"+own, nil); st != http.StatusOK {
		t.Errorf("the openmano API's instance after clear-all = %d %s, want it kept", st, raw)
	}
	eventually.Until(t, 60*time.Second, "only the openmano instance's service on the controller", func() (bool, string) {
		got := onosServices(onos)
		return len(got) == 1 && !strings.Contains(got[0], "vlan 70"), fmt.Sprint(got)
	})

	// Deleting the vpn-service's instance through the openmano API: the
	// NBI answers 404.
	vpn = uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	a.call("DELETE", "/openmano/t0/instances/"+vpn, nil)
	osm.expect(http.StatusNotFound, "GET", "/vpn-services/vpn-service="+vpn, nil)
	noDrift(t, env)
}

// TestL2SMAuthAndTenants: the Basic user is the tenant and the password an
// API token; each tenant sees, reads and deletes only its own
// vpn-services, and clear-all deletes only the caller's.
func TestL2SMAuthAndTenants(t *testing.T) {
	t.Parallel()
	a, _, _ := l2smSetup(t)
	t0 := osmPlugin{t: t, addr: a.addr, user: "t0", pass: "tok-1"}
	t1 := osmPlugin{t: t, addr: a.addr, user: "t1", pass: "tok-1"}
	for _, tt := range []struct {
		name      string
		p         osmPlugin
		want      int
		challenge bool
	}{
		{"wrong password", osmPlugin{t: t, addr: a.addr, user: "t0", pass: "nope"}, http.StatusUnauthorized, true},
		{"no credentials", osmPlugin{t: t, addr: a.addr}, http.StatusUnauthorized, true},
		{"a user that names no tenant", osmPlugin{t: t, addr: a.addr, user: "nobody", pass: "tok-1"}, http.StatusForbidden, false},
	} {
		status, raw, hdr := tt.p.send("GET", "/vpn-services", nil)
		if status != tt.want || (hdr.Get("WWW-Authenticate") == `Basic realm="wimro"`) != tt.challenge {
			t.Errorf("%s: %d %s (WWW-Authenticate %q), want %d (challenge %v)", tt.name, status, raw, hdr.Get("WWW-Authenticate"), tt.want, tt.challenge)
		}
	}

	vpn := uuid.NewString()
	t0.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	t1.expect(http.StatusNotFound, "GET", "/vpn-services/vpn-service="+vpn+"/", nil)
	t1.expect(http.StatusNotFound, "DELETE", "/vpn-services/vpn-service="+vpn+"/", nil)
	if list := t1.expect(http.StatusOK, "GET", "/vpn-services", nil); strings.Contains(string(list), vpn) {
		t.Errorf("t1's list shows t0's vpn-service: %s", list)
	}
	// t1 may use the same vpn-id: ids are per tenant. (Sent as
	// application/yang-data+json, RESTCONF's own type.)
	yangT1 := t1
	yangT1.contentType = "application/yang-data+json"
	yangT1.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	// t0's datacenters are not t1's sites.
	t1.expect(http.StatusBadRequest, "POST", siteAccesses("dcA"), accessBody(vpn, uuid.NewString(), "ep-0", 301))
	t1.expect(http.StatusNoContent, "DELETE", "/vpn-services", nil)
	yangValid(t, t0.expect(http.StatusOK, "GET", "/vpn-services/vpn-service="+vpn, nil))
	t1.expect(http.StatusNotFound, "GET", "/vpn-services/vpn-service="+vpn, nil)
}

// TestL2SMStatusDown: once monitoring finds the controller's service gone,
// the plugin's status GET answers 503 (NG-RO marks its task failed)
// instead of the 200 it reads as ACTIVE.
func TestL2SMStatusDown(t *testing.T) {
	t.Parallel()
	a, onos, _ := l2smSetup(t, "WIMRO_MONITOR_INTERVAL=200ms")
	osm := osmPlugin{t: t, addr: a.addr, user: "t0", pass: "tok-1"}
	vpn := uuid.NewString()
	osm.expect(http.StatusCreated, "POST", "/vpn-services", vpnServiceBody(vpn, "vpws"))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcA"), accessBody(vpn, uuid.NewString(), "ep-0", 301))
	osm.expect(http.StatusCreated, "POST", siteAccesses("dcB"), accessBody(vpn, uuid.NewString(), "ep-1", 302))
	osm.expect(http.StatusOK, "GET", "/vpn-services/vpn-service="+vpn+"/", nil)
	// Behind wimd's back: the service's interfaces go.
	for _, it := range onos.Interfaces() {
		if !onos.RemoveInterface(it.Name) {
			t.Fatalf("remove interface %s", it.Name)
		}
	}
	var raw []byte
	eventually.Until(t, 60*time.Second, "the status GET 503", func() (bool, string) {
		var status int
		status, raw, _ = osm.send("GET", "/vpn-services/vpn-service="+vpn+"/", nil)
		return status == http.StatusServiceUnavailable, fmt.Sprintf("%d %s", status, raw)
	})
	if !strings.Contains(string(raw), "DOWN") {
		t.Errorf("503 answer: %s, want the link DOWN named", raw)
	}
}
