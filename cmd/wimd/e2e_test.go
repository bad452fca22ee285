package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
	dynpacemu "github.com/wimro/wimro/internal/testkit/emulators/dynpac"
	l2smemu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	tapiemu "github.com/wimro/wimro/internal/testkit/emulators/tapi"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/openapitest"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// e2eCase is one connector type driven through wimd: the WIM it registers,
// the mapping info of each datacenter's endpoint, and how to count the
// services on its controller.
type e2eCase struct {
	wimType       string
	url           string
	wimConfig     map[string]any
	accountConfig map[string]any
	user          string
	password      string
	mappingInfo   func(dc int) map[string]any
	services      func() int
	// leftovers, if set, describes what else the delete must have removed
	// from the controller (attachments, interfaces); "" when nothing is left.
	leftovers func() string
	// secrets are clear values (tokens, passwords in wim_url) that must
	// reach the controller but never be stored, answered or logged.
	secrets []string
	// apiToken, when set, is required by wimd on its API (WIMRO_API_TOKEN)
	// and is one more secret the log must not hold.
	apiToken string
	// qos, when set, is the QoS (bandwidth, latency keys) the networks of
	// the first VLD ask; the second asks none. qosStored then returns
	// what is wrong with the services on the controller ("" when one
	// carries qos and the other the default).
	qos       map[string]any
	qosStored func() string
	// qosRefused, when set, is a QoS the WIM's type cannot honour: the
	// create asking it is a 400 naming the field, and writes nothing.
	qosRefused map[string]any
	// edited, when set, has the test change the VLAN of the first VLD's
	// network in dcB (101) to 121 through the API once both links are
	// ACTIVE; it returns what is wrong with the controller then ("" when
	// it holds both services, that link's on VLANs 100 and 121).
	edited func() string
}

// api is a small JSON client of a running wimd.
type api struct {
	t     testing.TB
	addr  string
	token string // sent as a bearer token when set
	// unchecked: the answers are not checked against the OpenAPI
	// document (load runs: checking a large answer takes long enough to
	// change their timing).
	unchecked bool
}

// send sends a JSON request (no body when body is nil) and returns the
// status and the body of the answer.
func (c api) send(method, path string, body any) (int, string) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+c.addr+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	// Every answer follows the OpenAPI document (/metrics is not in it).
	if path != "/metrics" && !c.unchecked {
		doc, err := openAPI()
		if err != nil {
			c.t.Fatal(err)
		}
		if err := doc.Check(req, resp.StatusCode, resp.Header, raw); err != nil {
			c.t.Errorf("the answer does not follow the OpenAPI document: %v\nbody: %.2000s", err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

// openAPI is the document wimd serves at /openapi.json, loaded once: it
// depends on the code only.
var openAPI = sync.OnceValues(func() (*openapitest.Document, error) {
	raw, err := json.Marshal(httpapi.New(engine.New(nil, nil, nil), httpapi.Options{}).OpenAPI())
	if err != nil {
		return nil, err
	}
	return openapitest.Load(raw)
})

// call sends a JSON request and returns the decoded answer; anything but
// a 200 fails the test.
func (c api) call(method, path string, body any) map[string]any {
	c.t.Helper()
	status, raw := c.send(method, path, body)
	if status != 200 {
		c.t.Fatalf("%s %s = %d: %s", method, path, status, raw)
	}
	var out map[string]any
	json.Unmarshal([]byte(raw), &out)
	return out
}

// waitAction waits until every task of an instance action is DONE.
func (c api) waitAction(path string, tasks int) map[string]any {
	c.t.Helper()
	var last map[string]any
	eventually.Until(c.t, 60*time.Second, "every task DONE at "+path, func() (bool, string) {
		last = c.call("GET", path, nil)["actions"].([]any)[0].(map[string]any)
		list, _ := last["vim_wim_actions"].([]any)
		all := len(list) == tasks
		var st []any
		for _, x := range list {
			m := x.(map[string]any)
			st = append(st, m["status"], m["error_msg"])
			all = all && m["status"] == "DONE"
		}
		return all, fmt.Sprint(st)
	})
	return last
}

// activeInstance creates in tenant an instance of vlds VLDs across dcA
// and dcB (one WAN link each), waits until its action is done and every
// link ACTIVE, and returns its uuid and the create action.
func (c api) activeInstance(tenant string, vlds int) (string, map[string]any) {
	c.t.Helper()
	return c.activeInstanceQoS(tenant, vlds, nil)
}

// instanceBody is the create body of an instance of vlds VLDs across dcA
// and dcB; the networks of the first VLD carry the keys of qos.
func instanceBody(vlds int, qos map[string]any) map[string]any {
	var nets []any
	for v := range vlds {
		vld := uuid.NewString()
		for i, dc := range []string{"dcA", "dcB"} {
			n := map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE",
				"encapsulation_type": "vlan", "encapsulation_id": 100 + 10*v + i}
			if v == 0 {
				maps.Copy(n, qos)
			}
			nets = append(nets, n)
		}
	}
	return map[string]any{"instance": map[string]any{"name": "ns", "networks": nets}}
}

// activeInstanceQoS is activeInstance with the networks of the first VLD
// asking qos.
func (c api) activeInstanceQoS(tenant string, vlds int, qos map[string]any) (string, map[string]any) {
	c.t.Helper()
	return c.activeInstanceOf(tenant, vlds, instanceBody(vlds, qos))
}

// activeInstanceOf creates in tenant the instance of body, of vlds VLDs,
// and waits as activeInstance does.
func (c api) activeInstanceOf(tenant string, vlds int, body map[string]any) (string, map[string]any) {
	c.t.Helper()
	inst := c.call("POST", "/openmano/"+tenant+"/instances", body)
	id := inst["uuid"].(string)
	created := c.waitAction(fmt.Sprintf("/openmano/%s/instances/%s/action/%s", tenant, id, inst["action_id"]), vlds)
	eventually.Until(c.t, 60*time.Second, "links ACTIVE", func() (bool, string) {
		links := c.call("GET", "/openmano/"+tenant+"/instances/"+id+"/wan_links", nil)["wan_links"].([]any)
		var st []any
		ok := len(links) == vlds
		for _, l := range links {
			m := l.(map[string]any)
			st = append(st, m["status"], m["error_msg"])
			ok = ok && m["status"] == "ACTIVE"
		}
		return ok, fmt.Sprint(st)
	})
	return id, created
}

// runE2E creates an instance of two VLDs across two datacenters through
// the REST API of an in-process wimd, waits for its WAN links to be ACTIVE
// on the controller, deletes it, and waits for the services to be gone.
func runE2E(t *testing.T, c e2eCase) {
	t.Helper()
	// The case's QoS agrees with what the type declares in wimd's
	// registry: the fields it sees carried to the controller are
	// declared, the ones it sees refused are not.
	caps := newRegistry(true, t.TempDir()).Capabilities(connectors.Config{Type: c.wimType, WIMConfig: c.wimConfig, AccountConfig: c.accountConfig})
	for k := range c.qos {
		if !caps.Honours(connectors.QoSField(k)) {
			t.Fatalf("the %s case sees %s carried, but the type does not declare it (%+v)", c.wimType, k, caps)
		}
	}
	for k := range c.qosRefused {
		if caps.Honours(connectors.QoSField(k)) {
			t.Fatalf("the %s case sees %s refused, but the type declares it (%+v)", c.wimType, k, caps)
		}
	}
	b := setup(t)
	dbURL := pgtest.URL(t)
	b.env["WIMRO_DATABASE_URL"] = dbURL
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	if c.apiToken != "" {
		b.env["WIMRO_API_TOKEN"] = c.apiToken
	}
	if len(c.secrets) > 0 {
		b.env["WIMRO_LOG_LEVEL"] = "debug"
		logSecrets := append(append([]string(nil), c.secrets...), c.password)
		if c.apiToken != "" {
			logSecrets = append(logSecrets, c.apiToken)
		}
		defer func() { noSecrets(t, "the log", b.stderr.String(), logSecrets) }()
	}
	addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--status-refresh", "100ms")
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	}()
	a := api{t: t, addr: addr, token: c.apiToken}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	mappings := twoDatacenters(a.call, func(i int, _ string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i), "wan_service_mapping_info": c.mappingInfo(i)}
	})
	for _, dc := range []string{"dcA", "dcB"} {
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
	}
	wimConfig := map[string]any{"wim_port_mapping": mappings}
	for k, v := range c.wimConfig {
		wimConfig[k] = v
	}
	answers := []map[string]any{a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": c.wimType, "wim_url": c.url,
		"config": wimConfig}})}
	acct := map[string]any{"config": c.accountConfig}
	if c.user != "" {
		acct["user"], acct["password"] = c.user, c.password
	}
	answers = append(answers, a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": acct}))
	if len(c.secrets) > 0 {
		// An edit that sends back what it was shown keeps the secrets.
		shown := a.call("GET", "/openmano/t0/wims/wan1", nil)
		answers = append(answers, shown, a.call("GET", "/openmano/any/wims", nil),
			a.call("PUT", "/openmano/wims/wan1", map[string]any{"wim": map[string]any{"wim_url": shown["wim"].(map[string]any)["wim_url"], "description": "edited"}}),
			a.call("PUT", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"config": map[string]any{"timeout_ms": 20000}}}))
		for _, ans := range answers {
			b, _ := json.Marshal(ans)
			noSecrets(t, "an answer", string(b), c.secrets)
		}
		noSecrets(t, "the database", dumpSecretsTables(t, dbURL), c.secrets)
	}

	if c.qosRefused != nil {
		status, raw := a.send("POST", "/openmano/t0/instances", instanceBody(2, c.qosRefused))
		if status != 400 || !strings.Contains(raw, "instance.networks[0].bandwidth") || !strings.Contains(raw, "does not honour bandwidth") {
			t.Fatalf("create asking QoS of a %s WIM = %d %s, want a 400 naming instance.networks[0].bandwidth", c.wimType, status, raw)
		}
		if list := a.call("GET", "/openmano/t0/instances", nil)["instances"].([]any); len(list) != 0 {
			t.Fatalf("the refused create left instances: %v", list)
		}
	}
	id, created := a.activeInstanceQoS("t0", 2, c.qos)
	if created["number_done"] != 2.0 || created["number_failed"] != 0.0 {
		t.Fatalf("create counters: %v", created)
	}
	if n := c.services(); n != 2 {
		t.Fatalf("%d services on the controller, want 2", n)
	}
	if c.qos != nil {
		links := a.call("GET", "/openmano/t0/instances/"+id+"/wan_links", nil)["wan_links"].([]any)
		with := 0
		for _, l := range links {
			if m := l.(map[string]any); m["bandwidth"] == c.qos["bandwidth"] && m["latency"] == c.qos["latency"] {
				with++
			}
		}
		if with != 1 {
			t.Fatalf("%d links show the QoS %v, want 1: %v", with, c.qos, links)
		}
		if problem := c.qosStored(); problem != "" {
			t.Fatalf("QoS on the controller: %s", problem)
		}
	}
	if c.edited != nil {
		a.editVLAN(id, "dcB", 121)
		eventually.Until(t, 30*time.Second, "the controller holding the edit", func() (bool, string) {
			problem := c.edited()
			return problem == "", problem
		})
		a.apiNoDrift("after the edit")
	}
	del := a.call("DELETE", "/openmano/t0/instances/"+id, nil)
	a.waitAction(fmt.Sprintf("/openmano/t0/instances/%s/action/%s", id, del["action_id"]), 2)
	if n := c.services(); n != 0 {
		t.Fatalf("%d services left on the controller", n)
	}
	if c.leftovers != nil {
		if left := c.leftovers(); left != "" {
			t.Fatalf("left on the controller after the delete: %s", left)
		}
	}
}

func TestE2EFake(t *testing.T) {
	t.Parallel()
	url := "http://fake-" + uuid.NewString()
	ctrl := fake.ControllerFor(url)
	t.Cleanup(ctrl.Reset)
	runE2E(t, e2eCase{wimType: "fake", url: url, accountConfig: map[string]any{"build_polls": 1},
		mappingInfo: func(int) map[string]any { return map[string]any{"mapping_type": "fake"} },
		services:    ctrl.Count,
		qos:         map[string]any{"bandwidth": 250.0, "latency": 20.0},
		qosStored: func() string {
			var got []string
			for _, s := range ctrl.Services() {
				q, _ := ctrl.QoS(s.ID)
				got = append(got, fmt.Sprintf("%d/%d", q.BandwidthMbps, q.LatencyMs))
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"0/0", "250/20"}) {
				return fmt.Sprintf("bandwidth/latency of the services %v, want [0/0 250/20]", got)
			}
			return ""
		}})
}

func TestE2EDynPaC(t *testing.T) {
	t.Parallel()
	emu := dynpacemu.New(dynpacemu.Options{User: "admin", Password: "s3cret", BuildPolls: 1})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	runE2E(t, e2eCase{wimType: "dynpac", url: srv.URL, user: "admin", password: "s3cret",
		mappingInfo: func(dc int) map[string]any {
			return map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": dc + 1}
		},
		services: emu.Count,
		qos:      map[string]any{"bandwidth": 250.0},
		qosStored: func() string {
			var got []float64
			for _, s := range emu.Services() {
				got = append(got, s.Bandwidth)
			}
			slices.Sort(got)
			if !slices.Equal(got, []float64{100, 250}) {
				return fmt.Sprintf("bandwidths %v, want [100 250] (the default 100 where none is asked)", got)
			}
			return ""
		}})
}

// TestE2ETAPI maps each datacenter's VLANs to per-VLAN SIPs, as TAPI 2.1.x
// controllers expose them.
func TestE2ETAPI(t *testing.T) {
	t.Parallel()
	ports := []string{"R1-eth0", "R2-eth0"}
	var sips []tapiemu.SIP
	for dc, port := range ports {
		sips = append(sips, tapiemu.VLANSIPs(port, 100+dc, 110+dc)...)
	}
	emu := tapiemu.New(tapiemu.Options{SIPs: sips, BuildPolls: 1, User: "admin", Password: "s3cret"})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	runE2E(t, e2eCase{wimType: "tapi", url: srv.URL, user: "admin", password: "s3cret",
		mappingInfo: func(dc int) map[string]any {
			bySIP := map[string]any{}
			for _, v := range []int{100 + dc, 110 + dc} {
				bySIP[fmt.Sprint(v)] = tapiemu.VLANSIPUUID(ports[dc], v)
			}
			return map[string]any{"mapping_type": "tapi-sip", "sips": bySIP}
		},
		services: emu.Count,
		qos:      map[string]any{"bandwidth": 250.0},
		qosStored: func() string {
			var got []string
			for _, s := range emu.Services() {
				got = append(got, s.CapacityValue+" "+s.CapacityUnit)
			}
			slices.Sort(got)
			if !slices.Equal(got, []string{"1 GBPS", "250 MBPS"}) {
				return fmt.Sprintf("requested capacities %v, want [1 GBPS 250 MBPS] (the configured one where none is asked)", got)
			}
			return ""
		}})
}

// TestE2EIETFL2VPN runs against the strict RFC 8466 datastore: each
// datacenter's endpoint is a device of a pre-provisioned site.
func TestE2EIETFL2VPN(t *testing.T) {
	t.Parallel()
	sites := []string{"dc-a", "dc-b"}
	emu := l2smemu.New(l2smemu.Options{Sites: []l2smemu.Site{{ID: sites[0]}, {ID: sites[1]}}, BuildPolls: 1, User: "admin", Password: "s3cret",
		Features: append([]string{"input-bw"}, l2smemu.DefaultFeatures...)})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	runE2E(t, e2eCase{wimType: "ietfl2vpn", url: srv.URL, user: "admin", password: "s3cret",
		mappingInfo: func(dc int) map[string]any {
			return map[string]any{"mapping_type": "l2sm-site", "site-id": sites[dc], "device-id": sites[dc] + "-pe"}
		},
		services: func() int { return len(emu.ServiceIDs()) },
		leftovers: func() string {
			if a := emu.Accesses(); len(a) > 0 {
				return fmt.Sprintf("site-network-accesses %+v", a)
			}
			return ""
		},
		qos: map[string]any{"bandwidth": 250.0},
		qosStored: func() string {
			// Each attachment of the first VLD's service carries
			// svc-bandwidth (cir in bit/s), the other's none.
			var got []string
			for _, ref := range emu.Accesses() {
				a, _ := emu.Access(ref.Site, ref.ID)
				svc, _ := a["service"].(map[string]any)
				b, _ := json.Marshal(svc["svc-bandwidth"])
				got = append(got, string(b))
			}
			slices.Sort(got)
			want := `{"bandwidth":[{"cbs":"250000000","cir":"250000000","direction":"ietf-l2vpn-svc:input-bw","type":"ietf-l2vpn-svc:bw-per-port"},` +
				`{"cbs":"250000000","cir":"250000000","direction":"ietf-l2vpn-svc:output-bw","type":"ietf-l2vpn-svc:bw-per-port"}]}`
			if !slices.Equal(got, []string{"null", "null", want, want}) {
				return fmt.Sprintf("svc-bandwidth of the attachments %v, want two null and two %s", got, want)
			}
			return ""
		}})
}

// TestE2EONOS runs both type names of the ONOS VPLS connector; the VPLS
// app's own state (not only the posted config) must hold the services.
func TestE2EONOS(t *testing.T) {
	t.Parallel()
	for _, wimType := range []string{"onos", "onos_vpls"} {
		t.Run(wimType, func(t *testing.T) {
			t.Parallel()
			emu := onosemu.New(onosemu.Options{User: "onos", Password: "rocks"})
			srv := httptest.NewServer(emu)
			t.Cleanup(srv.Close)
			runE2E(t, e2eCase{wimType: wimType, url: srv.URL, user: "onos", password: "rocks", qosRefused: map[string]any{"bandwidth": 100},
				mappingInfo: func(dc int) map[string]any {
					return map[string]any{"mapping_type": "onos-port", "switch_dpid": fmt.Sprintf("of:%016x", dc+1), "switch_port": "1"}
				},
				services: func() int { return len(emu.AppVPLSs()) },
				leftovers: func() string {
					if ifs := emu.Interfaces(); len(ifs) > 0 {
						return fmt.Sprintf("interfaces %+v", ifs)
					}
					return ""
				}})
		})
	}
}

// noSecrets fails when text holds one of secrets.
func noSecrets(t *testing.T, where, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q", where, s)
		}
	}
}

// dumpSecretsTables returns the rows of the tables that hold connector
// settings, as text.
func dumpSecretsTables(t *testing.T, dbURL string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var out strings.Builder
	for _, q := range []string{`SELECT w::text FROM wims w`, `SELECT a::text FROM wim_accounts a`} {
		rows, err := conn.Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out.WriteString(s + "\n")
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	return out.String()
}

// bearer wraps an emulator so that it answers 401 to a request without the
// bearer token.
func bearer(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestE2ESecrets runs connectors whose credentials are a password in
// wim_url or a bearer token in the WIM's or the account's config: the
// controller authenticates them, and they are stored sealed, answered
// masked and never logged.
func TestE2ESecrets(t *testing.T) {
	t.Parallel()
	sips := func() []tapiemu.SIP {
		var sips []tapiemu.SIP
		for dc, port := range []string{"R1-eth0", "R2-eth0"} {
			sips = append(sips, tapiemu.VLANSIPs(port, 100+dc, 110+dc)...)
		}
		return sips
	}
	tapiMapping := func(dc int) map[string]any {
		port := []string{"R1-eth0", "R2-eth0"}[dc]
		bySIP := map[string]any{}
		for _, v := range []int{100 + dc, 110 + dc} {
			bySIP[fmt.Sprint(v)] = tapiemu.VLANSIPUUID(port, v)
		}
		return map[string]any{"mapping_type": "tapi-sip", "sips": bySIP}
	}
	tests := []struct {
		name, token         string
		wimConfig, acctConf map[string]any
	}{
		{"WIM bearer token", "wim-tok-5f1e2d", map[string]any{"bearer_token": "wim-tok-5f1e2d"}, nil}, // and an API token
		{"account bearer token", "acct-tok-9a8b7c", nil, map[string]any{"bearer_token": "acct-tok-9a8b7c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			emu := tapiemu.New(tapiemu.Options{SIPs: sips(), BuildPolls: 1})
			srv := httptest.NewServer(bearer(tt.token, emu))
			t.Cleanup(srv.Close)
			c := e2eCase{wimType: "tapi", url: srv.URL, wimConfig: tt.wimConfig, accountConfig: tt.acctConf,
				mappingInfo: tapiMapping, services: emu.Count, secrets: []string{tt.token}}
			if tt.wimConfig != nil {
				c.apiToken = "api-tok-7e6d5c"
			}
			runE2E(t, c)
		})
	}
	t.Run("password in wim_url", func(t *testing.T) {
		t.Parallel()
		emu := dynpacemu.New(dynpacemu.Options{User: "admin", Password: "url-pw-3c4d5e", BuildPolls: 1})
		srv := httptest.NewServer(emu)
		t.Cleanup(srv.Close)
		runE2E(t, e2eCase{wimType: "dynpac", url: strings.Replace(srv.URL, "http://", "http://admin:url-pw-3c4d5e@", 1),
			mappingInfo: func(dc int) map[string]any {
				return map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": dc + 1}
			},
			services: emu.Count, secrets: []string{"url-pw-3c4d5e"}})
	})
	// The account's password and the API token: runE2E greps the debug log
	// of the whole run for both.
	t.Run("account password and API token", func(t *testing.T) {
		t.Parallel()
		emu := dynpacemu.New(dynpacemu.Options{User: "admin", Password: "acct-pw-8f7e6d", BuildPolls: 1})
		srv := httptest.NewServer(emu)
		t.Cleanup(srv.Close)
		runE2E(t, e2eCase{wimType: "dynpac", url: srv.URL, user: "admin", password: "acct-pw-8f7e6d", apiToken: "api-tok-1a2b3c",
			mappingInfo: func(dc int) map[string]any {
				return map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": dc + 1}
			},
			services: emu.Count, secrets: []string{"acct-pw-8f7e6d"}})
	})
}

// twoDatacenters creates the datacenters dcA and dcB, each leaving by port
// 1 of its own PoP switch, through call, and returns the wim_port_mapping
// of a WIM that reaches both: wan(i, dc) adds, for the i-th datacenter,
// the WAN side of its mapping (endpoint id, mapping info).
func twoDatacenters(call func(method, path string, body any) map[string]any, wan func(i int, dc string) map[string]any) []any {
	var mappings []any
	for i, dc := range []string{"dcA", "dcB"} {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		m := map[string]any{"pop_switch_dpid": dpid, "pop_switch_port": "1"}
		maps.Copy(m, wan(i, dc))
		mappings = append(mappings, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{m}})
	}
	return mappings
}

// fakeWIM creates the tenant t0 with dcA and dcB attached, and the fake
// WIM wan1 at url reaching both (no account yet).
func (a api) fakeWIM(url string) {
	a.t.Helper()
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	mappings := twoDatacenters(a.call, fakeEndpoint)
	for _, dc := range []string{"dcA", "dcB"} {
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "fake", "wim_url": url,
		"config": map[string]any{"wim_port_mapping": mappings}}})
}

// fakeEndpoint is the WAN side of a fake WIM's mapping: endpoint ep-<i>.
func fakeEndpoint(i int, _ string) map[string]any {
	return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i), "wan_service_mapping_info": map[string]any{"mapping_type": "fake"}}
}
