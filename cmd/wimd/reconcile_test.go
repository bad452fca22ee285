package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/builtin"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	dynpacemu "github.com/wimro/wimro/internal/testkit/emulators/dynpac"
	l2smemu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
	l2nmemu "github.com/wimro/wimro/internal/testkit/emulators/l2nm"
	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	tapiemu "github.com/wimro/wimro/internal/testkit/emulators/tapi"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// driftCase is one listing connector and its controller for the drift
// tests: the WIM it registers, the mapping info of each datacenter's
// endpoint (VLANs 100+dc and 110+dc for the instance, 120+dc for the
// orphan), and, when its controller can hold services that are not
// wimro's, foreign: it puts one there and returns a check that it is
// still there.
type driftCase struct {
	name, wimType, url, user, password string
	mappingInfo                        func(dc int) map[string]any
	foreign                            func(t *testing.T) func() bool
	// wimConfig is added to the WIM's config (a dialect).
	wimConfig map[string]any
}

func driftCases(t *testing.T) []driftCase {
	serve := func(h http.Handler) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	fakeURL := "http://fake-" + uuid.NewString()
	t.Cleanup(fake.ControllerFor(fakeURL).Reset)

	ports := []string{"R1-eth0", "R2-eth0"}
	var sips []tapiemu.SIP
	for dc, port := range ports {
		sips = append(sips, tapiemu.VLANSIPs(port, 100+dc, 110+dc, 120+dc, 130+dc)...)
	}
	tapi := tapiemu.New(tapiemu.Options{SIPs: sips, BuildPolls: 1, User: "admin", Password: "s3cret"})
	sites := []string{"dc-a", "dc-b"}
	l2sm := l2smemu.New(l2smemu.Options{Sites: []l2smemu.Site{{ID: sites[0]}, {ID: sites[1]}}, BuildPolls: 1, User: "admin", Password: "s3cret"})
	onos := onosemu.New(onosemu.Options{User: "onos", Password: "rocks"})
	l2nmCtl := l2nmemu.New(l2nmemu.Options{BuildPolls: 1, User: "nso", Password: "s3cret"})
	t.Cleanup(l2nmCtl.Close)

	return []driftCase{
		{name: "fake", wimType: "fake", url: fakeURL,
			mappingInfo: func(int) map[string]any { return map[string]any{"mapping_type": "fake"} }},
		{name: "tapi", wimType: "tapi", url: serve(tapi), user: "admin", password: "s3cret",
			mappingInfo: func(dc int) map[string]any {
				bySIP := map[string]any{}
				for _, v := range []int{100 + dc, 110 + dc, 120 + dc} {
					bySIP[fmt.Sprint(v)] = tapiemu.VLANSIPUUID(ports[dc], v)
				}
				return map[string]any{"mapping_type": "tapi-sip", "sips": bySIP}
			},
			foreign: func(t *testing.T) func() bool {
				id := uuid.NewString()
				s := tapiemu.Service{UUID: id, ServiceType: "POINT_TO_POINT_CONNECTIVITY", ConnectivityDirection: "BIDIRECTIONAL"}
				for i, port := range ports {
					s.EndPoints = append(s.EndPoints, tapiemu.EndPoint{LocalID: fmt.Sprint("ep", i), LayerProtocolName: "DSR", SIP: tapiemu.VLANSIPUUID(port, 130+i)})
				}
				if err := tapi.AddService(s); err != nil {
					t.Fatal(err)
				}
				return func() bool { _, ok := tapi.Service(id); return ok }
			}},
		{name: "ietfl2vpn", wimType: "ietfl2vpn", url: serve(l2sm), user: "admin", password: "s3cret",
			mappingInfo: func(dc int) map[string]any {
				return map[string]any{"mapping_type": "l2sm-site", "site-id": sites[dc], "device-id": sites[dc] + "-pe"}
			},
			foreign: func(t *testing.T) func() bool {
				req := httptest.NewRequest("POST", l2smemu.Root+"/vpn-services",
					strings.NewReader(`{"ietf-l2vpn-svc:vpn-service":[{"vpn-id":"tenant-x","ce-vlan-preservation":true,"ce-vlan-cos-preservation":true}]}`))
				req.Header.Set("Content-Type", l2smemu.MediaType)
				req.SetBasicAuth("admin", "s3cret")
				w := httptest.NewRecorder()
				l2sm.ServeHTTP(w, req)
				if w.Code != http.StatusCreated {
					t.Fatalf("seed a foreign vpn-service: %d %s", w.Code, w.Body)
				}
				return func() bool { return slices.Contains(l2sm.ServiceIDs(), "tenant-x") }
			}},
		{name: "l2nm", wimType: "l2nm", url: serve(l2nmCtl), user: "nso", password: "s3cret", mappingInfo: l2nmMapping,
			foreign: func(t *testing.T) func() bool {
				req := httptest.NewRequest("POST", l2nmemu.DefaultRoot+"/data/"+l2nmemu.Top+"/vpn-services",
					strings.NewReader(`{"ietf-l2vpn-ntw:vpn-service":[{"vpn-id":"tenant-x","vpn-type":"ietf-vpn-common:vpws"}]}`))
				req.Header.Set("Content-Type", "application/yang-data+json")
				req.SetBasicAuth("nso", "s3cret")
				w := httptest.NewRecorder()
				l2nmCtl.ServeHTTP(w, req)
				if w.Code != http.StatusCreated {
					t.Fatalf("seed a foreign vpn-service: %d %s", w.Code, w.Body)
				}
				return func() bool { return slices.Contains(l2nmCtl.Services(), "tenant-x") }
			}},
		{name: "onos", wimType: "onos", url: serve(onos), user: "onos", password: "rocks",
			mappingInfo: func(dc int) map[string]any {
				return map[string]any{"mapping_type": "onos-port", "switch_dpid": fmt.Sprintf("of:%016x", dc+1), "switch_port": "1"}
			},
			foreign: func(t *testing.T) func() bool {
				// Another tool's VPLS, written before wimro writes its own
				// (a netcfg POST replaces the app's config).
				req := httptest.NewRequest("POST", "/onos/v1/network/configuration/apps/org.onosproject.vpls/vpls",
					strings.NewReader(`{"vplsList":[{"name":"tenant-x","interfaces":[]}]}`))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth("onos", "rocks")
				w := httptest.NewRecorder()
				onos.ServeHTTP(w, req)
				if w.Code/100 != 2 {
					t.Fatalf("seed a foreign VPLS: %d %s", w.Code, w.Body)
				}
				return func() bool { _, ok := onos.AppVPLSs()["tenant-x"]; return ok }
			}},
	}
}

// driftBundle is a wimd serving one WIM account of a listing connector,
// with the connector itself to act on the controller behind wimd's back.
type driftBundle struct {
	*bundle
	api  api
	conn connectors.Connector
	c    driftCase
}

func setupDrift(t *testing.T, c driftCase, serveArgs ...string) *driftBundle {
	t.Helper()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	b.env["WIMRO_DATA_DIR"] = t.TempDir()
	addr, stop := b.serve(t, append([]string{"--status-refresh", "100ms", "--reconcile-interval", "0"}, serveArgs...)...)
	t.Cleanup(func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	})
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	mappings := twoDatacenters(a.call, func(i int, _ string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i), "wan_service_mapping_info": c.mappingInfo(i)}
	})
	for _, dc := range []string{"dcA", "dcB"} {
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
	}
	cfg := map[string]any{"wim_port_mapping": mappings}
	maps.Copy(cfg, c.wimConfig)
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": c.wimType, "wim_url": c.url, "config": cfg}})
	acct := map[string]any{"name": "acct1"}
	if c.user != "" {
		acct["user"], acct["password"] = c.user, c.password
	}
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": acct})
	r := connectors.NewRegistry()
	fake.Register(r)
	builtin.Register(r)
	conn, err := r.New(connectors.Config{Type: c.wimType, URL: c.url, User: c.user, Password: c.password, WIMConfig: c.wimConfig})
	if err != nil {
		t.Fatal(err)
	}
	return &driftBundle{bundle: b, api: a, conn: conn, c: c}
}

// points are connection points of the WIM's two endpoints on VLAN
// base+dc, for a service made behind wimd's back.
func (d *driftBundle) points(base int) []connectors.ConnectionPoint {
	var out []connectors.ConnectionPoint
	for dc := range 2 {
		out = append(out, connectors.ConnectionPoint{ServiceEndpointID: fmt.Sprintf("ep-%d", dc), Encapsulation: connectors.EncapDot1Q,
			VLAN: base + dc, MappingInfo: d.c.mappingInfo(dc)})
	}
	return out
}

// reconcile runs wimd reconcile in this process (the fake controller
// lives here) with args, and returns its exit status and JSON report.
func (d *driftBundle) reconcile(t *testing.T, args ...string) (int, engine.DriftReport) {
	t.Helper()
	out, errb := &syncBuffer{}, &syncBuffer{}
	app := &App{Stdout: out, Stderr: errb, Getenv: func(k string) string { return d.env[k] }}
	code := app.Run(t.Context(), append([]string{"reconcile", "-o", "json"}, args...))
	var rep engine.DriftReport
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil && code != 1 {
		t.Fatalf("wimd reconcile %v: exit %d, the report is not JSON (%v):\n%s\nstderr:\n%s", args, code, err, out, errb)
	}
	return code, rep
}

// links returns the instance's WAN links.
func (d *driftBundle) links(inst string) []map[string]any {
	var out []map[string]any
	for _, l := range d.api.call("GET", "/openmano/t0/instances/"+inst+"/wan_links", nil)["wan_links"].([]any) {
		out = append(out, l.(map[string]any))
	}
	return out
}

// serviceKeys lists the keys of the services the controller holds.
func (d *driftBundle) serviceKeys(t *testing.T) []string {
	t.Helper()
	list, err := d.conn.ListServices(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range list {
		keys = append(keys, s.Key)
	}
	return keys
}

func driftOf(rep engine.DriftReport) []engine.Drift {
	var out []engine.Drift
	for _, a := range rep.Accounts {
		out = append(out, a.Drift...)
	}
	return out
}

// TestReconcile, per listing connector: an orphan made on the controller
// with wimro's key and a link whose service was deleted behind wimd's
// back are reported (wimd reconcile exit 3, and the API), and --fix
// deletes the orphan and re-queues the link, which goes ACTIVE again
// through a normal CREATE; a service without wimro's key is never
// touched.
func TestReconcile(t *testing.T) {
	t.Parallel()
	for _, c := range driftCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := setupDrift(t, c)
			var foreignThere func() bool
			if c.foreign != nil {
				foreignThere = c.foreign(t)
			}
			inst, _ := d.api.activeInstance("t0", 2)
			if code, rep := d.reconcile(t); code != 0 || len(driftOf(rep)) != 0 || rep.Accounts[0].Links != 2 {
				t.Fatalf("clean start: exit %d, report %+v; want exit 0, two links and no drift", code, rep)
			}

			orphanKey := uuid.NewString()
			orphanID, _, err := d.conn.CreateService(t.Context(), connectors.Request{Key: orphanKey, Type: connectors.ServiceELINE, Points: d.points(120)})
			if err != nil {
				t.Fatalf("create the orphan on the controller: %v", err)
			}
			gone := d.links(inst)[0]
			goneID := gone["uuid"].(string)
			if err := d.conn.DeleteService(t.Context(), gone["wim_internal_id"].(string), nil); err != nil {
				t.Fatalf("delete link %s's service behind wimd's back: %v", goneID, err)
			}

			code, rep := d.reconcile(t)
			if code != exitDrift {
				t.Errorf("wimd reconcile with drift: exit %d, want %d", code, exitDrift)
			}
			want := map[string]string{engine.DriftOrphan: orphanKey, engine.DriftMissing: goneID}
			checkDrift := func(where string, drift []engine.Drift, fixed bool) {
				t.Helper()
				got := map[string]string{}
				for _, x := range drift {
					got[x.Kind] = x.WANLinkID
					if x.Fixed != fixed {
						t.Errorf("%s: %s %s fixed=%v (%s), want %v", where, x.Kind, x.WANLinkID, x.Fixed, x.FixError, fixed)
					}
					if x.Kind == engine.DriftOrphan && x.ServiceID != orphanID {
						t.Errorf("%s: orphan service %q, want %q", where, x.ServiceID, orphanID)
					}
				}
				if len(drift) != 2 || got[engine.DriftOrphan] != want[engine.DriftOrphan] || got[engine.DriftMissing] != want[engine.DriftMissing] {
					t.Fatalf("%s: drift %+v, want orphan %s and missing %s", where, drift, orphanKey, goneID)
				}
			}
			checkDrift("wimd reconcile", driftOf(rep), false)
			var viaAPI struct{ Reconcile engine.DriftReport }
			raw, _ := json.Marshal(d.api.call("POST", "/openmano/reconcile?account=acct1", nil))
			json.Unmarshal(raw, &viaAPI)
			checkDrift("POST /openmano/reconcile", driftOf(viaAPI.Reconcile), false)

			code, rep = d.reconcile(t, "--fix", "--account", "acct1")
			if code != 0 {
				t.Errorf("wimd reconcile --fix that fixed everything: exit %d, want 0", code)
			}
			checkDrift("wimd reconcile --fix", driftOf(rep), true)
			eventually.Until(t, 60*time.Second, "the re-queued link ACTIVE again", func() (bool, string) {
				for _, l := range d.links(inst) {
					if l["uuid"] == goneID {
						return l["status"] == "ACTIVE", fmt.Sprint(l["status"], " ", l["error_msg"])
					}
				}
				return false, "link gone"
			})
			keys := d.serviceKeys(t)
			if slices.Contains(keys, orphanKey) || !slices.Contains(keys, goneID) || len(keys) != 2 {
				t.Errorf("after --fix the controller lists keys %v: want the instance's two links, the orphan %s gone", keys, orphanKey)
			}
			if foreignThere != nil && !foreignThere() {
				t.Errorf("the service without wimro's key was touched")
			}
			if code, rep := d.reconcile(t); code != 0 || len(driftOf(rep)) != 0 {
				t.Errorf("after --fix: exit %d, drift %+v; want 0 and none", code, driftOf(rep))
			}

			// The other link's service replaced behind wimd's back by one of
			// the same key on other VLANs: a mismatch, which the
			// connector's listing shows, and --fix repairs through an
			// EDIT of the link (in place, or a replace).
			other := d.links(inst)[1]
			if err := d.conn.DeleteService(t.Context(), other["wim_internal_id"].(string), nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err := d.conn.CreateService(t.Context(), connectors.Request{Key: other["uuid"].(string), Type: connectors.ServiceELINE, Points: d.points(120)}); err != nil {
				t.Fatal(err)
			}
			code, rep = d.reconcile(t, "--fix")
			drift := driftOf(rep)
			if code != 0 || len(drift) != 1 || drift[0].Kind != engine.DriftMismatch || drift[0].WANLinkID != other["uuid"] || !drift[0].Fixed || drift[0].ActionID == "" {
				t.Fatalf("a replaced service: exit %d, drift %+v; want 0 and one mismatch of %s fixed by a queued action", code, drift, other["uuid"])
			}
			if have := []string{"ep-0/vlan=120", "ep-1/vlan=121"}; !slices.Equal(drift[0].Have, have) || len(drift[0].Want) != 2 {
				t.Errorf("mismatch: want %v, have %v; the controller has %v", drift[0].Want, drift[0].Have, have)
			}
			d.api.waitAction(fmt.Sprintf("/openmano/t0/instances/%s/action/%s", inst, drift[0].ActionID), 1)
			eventually.Until(t, 60*time.Second, "the link's service in line again, no drift", func() (bool, string) {
				code, rep := d.reconcile(t)
				return code == 0 && len(driftOf(rep)) == 0, fmt.Sprintf("exit %d, drift %+v", code, driftOf(rep))
			})
			if keys := d.serviceKeys(t); len(keys) != 2 {
				t.Errorf("after the EDIT the controller lists keys %v, want the instance's two links only", keys)
			}
		})
	}
}

// TestReconcileProbesTeraFlowSDN: TeraFlowSDN (the IETF L2VPN emulator
// in its tfs dialect, the connector in its osm one) answers every list
// with {}, so reconcile looks each link up by its service id instead of
// refusing the account or finding every link missing: live links are in
// sync, one whose service was deleted behind wimd's back is missing and
// --fix re-queues it, and the report says orphans are not searched (a
// service no link knows stays unseen).
func TestReconcileProbesTeraFlowSDN(t *testing.T) {
	t.Parallel()
	sites := []string{"dc-a", "dc-b"}
	emu := l2smemu.New(l2smemu.Options{Dialect: l2smemu.DialectTFS, Sites: []l2smemu.Site{{ID: sites[0]}, {ID: sites[1]}}, BuildPolls: 1,
		User: "admin", Password: "s3cret"})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	d := setupDrift(t, driftCase{name: "tfs", wimType: "ietfl2vpn", url: srv.URL, user: "admin", password: "s3cret",
		wimConfig: map[string]any{"dialect": "osm"},
		mappingInfo: func(dc int) map[string]any {
			return map[string]any{"mapping_type": "l2sm-site", "site-id": sites[dc], "bearer-reference": sites[dc] + "-pe:ge-0/0/1"}
		}})
	inst, _ := d.api.activeInstance("t0", 2)
	const note = "orphans (services no link knows) cannot be found"
	code, rep := d.reconcile(t)
	if code != 0 || len(rep.Accounts) != 1 || rep.Accounts[0].Error != "" || len(driftOf(rep)) != 0 || rep.Accounts[0].Links != 2 || rep.Accounts[0].Services != 2 {
		t.Fatalf("two live links: exit %d, report %+v; want exit 0, two links found and no drift", code, rep)
	}
	if a := rep.Accounts[0]; !a.Probed || !strings.Contains(a.Note, note) {
		t.Errorf("report of a controller that cannot list: probed %v, note %q; want probed and a note that orphans are not searched", a.Probed, a.Note)
	}

	// A service no link knows: a probe cannot see it, and says so.
	if _, _, err := d.conn.CreateService(t.Context(), connectors.Request{Key: uuid.NewString(), Type: connectors.ServiceELINE, Points: d.points(120)}); err != nil {
		t.Fatalf("create a service no link knows: %v", err)
	}
	gone := d.links(inst)[0]
	goneID := gone["uuid"].(string)
	if err := d.conn.DeleteService(t.Context(), gone["wim_internal_id"].(string), nil); err != nil {
		t.Fatalf("delete link %s's service behind wimd's back: %v", goneID, err)
	}
	code, rep = d.reconcile(t)
	drift := driftOf(rep)
	if code != exitDrift || len(drift) != 1 || drift[0].Kind != engine.DriftMissing || drift[0].WANLinkID != goneID || drift[0].Fixed {
		t.Fatalf("a deleted service: exit %d, drift %+v; want %d and one unfixed missing %s", code, drift, exitDrift, goneID)
	}

	// The table says it too.
	out, errb := &syncBuffer{}, &syncBuffer{}
	app := &App{Stdout: out, Stderr: errb, Getenv: func(k string) string { return d.env[k] }}
	if code := app.Run(t.Context(), []string{"reconcile"}); code != exitDrift || !strings.Contains(out.String(), note) {
		t.Errorf("wimd reconcile (table): exit %d, stdout %q; want %d and the note", code, out, exitDrift)
	}

	code, rep = d.reconcile(t, "--fix")
	if drift = driftOf(rep); code != 0 || len(drift) != 1 || !drift[0].Fixed || drift[0].ActionID == "" {
		t.Fatalf("--fix: exit %d, drift %+v; want 0 and the missing link re-queued", code, drift)
	}
	eventually.Until(t, 60*time.Second, "the re-queued link ACTIVE again", func() (bool, string) {
		for _, l := range d.links(inst) {
			if l["uuid"] == goneID {
				return l["status"] == "ACTIVE", fmt.Sprint(l["status"], " ", l["error_msg"])
			}
		}
		return false, "link gone"
	})
	if !slices.Contains(emu.ServiceIDs(), "wimro-"+goneID) {
		t.Errorf("after --fix the controller holds %v, want wimro-%s back", emu.ServiceIDs(), goneID)
	}
	if code, rep := d.reconcile(t); code != 0 || len(driftOf(rep)) != 0 {
		t.Errorf("after --fix: exit %d, drift %+v; want 0 and none", code, driftOf(rep))
	}
}

// TestReconcileRefusesDynPaC: DynPaC's connector lists only what its own
// process made, so reconcile refuses it, saying why; naming the account
// is an error (exit 1, 400 naming account), a run over every account
// reports it as not reconciled.
func TestReconcileRefusesDynPaC(t *testing.T) {
	t.Parallel()
	emu := dynpacemu.New(dynpacemu.Options{User: "admin", Password: "s3cret"})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	d := setupDrift(t, driftCase{name: "dynpac", wimType: "dynpac", url: srv.URL, user: "admin", password: "s3cret",
		mappingInfo: func(dc int) map[string]any {
			return map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": dc + 1}
		}})
	out, errb := &syncBuffer{}, &syncBuffer{}
	app := &App{Stdout: out, Stderr: errb, Getenv: func(k string) string { return d.env[k] }}
	if code := app.Run(t.Context(), []string{"reconcile", "--account", "acct1"}); code != 1 || !strings.Contains(errb.String(), "does not support WIM type dynpac") {
		t.Errorf("wimd reconcile --account <dynpac>: exit %d, stderr %q; want 1 and why", code, errb)
	}
	status, body := d.api.send("POST", "/openmano/reconcile?account=acct1", nil)
	if status != http.StatusBadRequest || !strings.Contains(body, "does not declare that it lists every service") {
		t.Errorf("POST /openmano/reconcile?account=<dynpac> = %d %s, want 400 saying why", status, body)
	}
	code, rep := d.reconcile(t)
	if code != 1 || len(rep.Accounts) != 1 || !strings.Contains(rep.Accounts[0].Error, "dynpac") {
		t.Errorf("wimd reconcile over every account: exit %d, report %+v; want 1 and the account's error", code, rep)
	}
}

// TestReconcileBinaries drives the built wimd and openmano: wimd
// reconcile's exit status (3 with drift, 0 once fixed, 2 on bad usage)
// and openmano reconcile's report, against an ONOS emulator.
func TestReconcileBinaries(t *testing.T) {
	t.Parallel()
	bins := wimdtest.Build(t, "wimd", "openmano")
	onos := onosemu.New(onosemu.Options{User: "onos", Password: "rocks"})
	srv := httptest.NewServer(onos)
	t.Cleanup(srv.Close)
	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_DATA_DIR=" + t.TempDir()}
	addr := wimdtest.Start(t, bins[0], env, "serve", "--listen", "127.0.0.1:0", "--status-refresh", "100ms")
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	mapping := func(dc int) map[string]any {
		return map[string]any{"mapping_type": "onos-port", "switch_dpid": fmt.Sprintf("of:%016x", dc+1), "switch_port": "1"}
	}
	mappings := twoDatacenters(a.call, func(i int, _ string) map[string]any {
		return map[string]any{"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i), "wan_service_mapping_info": mapping(i)}
	})
	for _, dc := range []string{"dcA", "dcB"} {
		a.call("POST", "/openmano/t0/datacenters/"+dc, nil)
	}
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "onos", "wim_url": srv.URL,
		"config": map[string]any{"wim_port_mapping": mappings}}})
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct1", "user": "onos", "password": "rocks"}})
	a.activeInstance("t0", 1)

	run := func(bin string, extra []string, args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(append(os.Environ(), env...), extra...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String(), errb.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String(), errb.String()
	}
	om := []string{"OPENMANO_HOST=" + strings.Split(addr, ":")[0], "OPENMANO_PORT=" + strings.Split(addr, ":")[1], "OPENMANO_TENANT=t0"}

	if code, out, errs := run(bins[0], nil, "reconcile"); code != 0 || !strings.Contains(out, "0 orphan(s), 0 missing, 0 mismatched, 0 abandoned; 0 left") {
		t.Fatalf("wimd reconcile, no drift: exit %d\n%s\n%s", code, out, errs)
	}
	r := connectors.NewRegistry()
	builtin.Register(r)
	conn, err := r.New(connectors.Config{Type: "onos", URL: srv.URL, User: "onos", Password: "rocks"})
	if err != nil {
		t.Fatal(err)
	}
	key := uuid.NewString()
	points := []connectors.ConnectionPoint{
		{ServiceEndpointID: "ep-0", Encapsulation: connectors.EncapDot1Q, VLAN: 300, MappingInfo: mapping(0)},
		{ServiceEndpointID: "ep-1", Encapsulation: connectors.EncapDot1Q, VLAN: 300, MappingInfo: mapping(1)},
	}
	if _, _, err := conn.CreateService(t.Context(), connectors.Request{Key: key, Type: connectors.ServiceELINE, Points: points}); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(bins[0], nil, "reconcile"); code != exitDrift || !strings.Contains(out, key) || !strings.Contains(out, "1 orphan(s)") {
		t.Errorf("wimd reconcile with an orphan: exit %d, want %d and the orphan %s\n%s\n%s", code, exitDrift, key, out, errs)
	}
	if code, out, errs := run(bins[0], nil, "reconcile", "-o", "yaml"); code != 2 {
		t.Errorf("wimd reconcile -o yaml: exit %d, want 2 (usage)\n%s\n%s", code, out, errs)
	}
	code, out, errs := run(bins[1], om, "reconcile", "-o", "json")
	var doc struct{ Reconcile engine.DriftReport }
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("openmano reconcile -o json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if drift := driftOf(doc.Reconcile); len(drift) != 1 || drift[0].Kind != engine.DriftOrphan || drift[0].WANLinkID != key {
		t.Errorf("openmano reconcile: drift %+v, want the orphan %s", drift, key)
	}
	if code, out, errs := run(bins[1], om, "reconcile", "--fix"); code != 0 || !strings.Contains(out, "deleted") {
		t.Errorf("openmano reconcile --fix: exit %d, want 0 and the orphan deleted\n%s\n%s", code, out, errs)
	}
	if _, ok := onos.AppVPLSs()["wimro-"+key]; ok {
		t.Errorf("the orphan VPLS is still on the controller after openmano reconcile --fix")
	}
	if code, out, errs := run(bins[0], nil, "reconcile"); code != 0 {
		t.Errorf("wimd reconcile after the fix: exit %d, want 0\n%s\n%s", code, out, errs)
	}
	if code, _, errs := run(bins[1], om, "reconcile", "--account", "nobody"); code != 1 || !strings.Contains(errs, "nobody") {
		t.Errorf("openmano reconcile --account nobody: exit %d, want 1 naming the account\n%s", code, errs)
	}
}

// TestReconcileMismatchAndPeriodic: a service edited behind wimd's back
// is a mismatch, which the periodic run reports (WARN with account_id,
// the metrics) and --fix leaves alone (exit 3, the endpoints shown).
func TestReconcileMismatchAndPeriodic(t *testing.T) {
	t.Parallel()
	url := "http://fake-" + uuid.NewString()
	t.Cleanup(fake.ControllerFor(url).Reset)
	d := setupDrift(t, driftCase{name: "fake", wimType: "fake", url: url,
		mappingInfo: func(int) map[string]any { return map[string]any{"mapping_type": "fake"} }}, "--reconcile-interval", "200ms")
	inst, _ := d.api.activeInstance("t0", 1)
	l := d.links(inst)[0]
	if _, err := d.conn.EditService(t.Context(), l["wim_internal_id"].(string), nil, connectors.Request{Points: d.points(120)}); err != nil {
		t.Fatal(err)
	}
	eventually.Until(t, 30*time.Second, "the periodic run reports the mismatch", func() (bool, string) {
		_, text := d.api.send("GET", "/metrics", nil)
		n, _ := sample(text, "wimro_reconcile_drift", "kind", "mismatch")
		runs, _ := sample(text, "wimro_reconcile_runs_total", "result", "drift")
		return n == 1 && runs >= 1, fmt.Sprintf("mismatch gauge %v, runs with drift %v", n, runs)
	})
	log := d.stderr.String()
	if !strings.Contains(log, "level=WARN msg=\"drift between the database and the controller\"") || !strings.Contains(log, "kind=mismatch") ||
		!strings.Contains(log, "account_id=") || !strings.Contains(log, "wan_link_id="+l["uuid"].(string)) {
		t.Errorf("no WARN line for the mismatch with account_id and wan_link_id in the log:\n%s", lastLines(log, 20))
	}
	// --fix repairs a mismatch through an EDIT of the link (issue 38).
	code, rep := d.reconcile(t, "--fix")
	drift := driftOf(rep)
	if code != 0 || len(drift) != 1 || drift[0].Kind != engine.DriftMismatch || !drift[0].Fixed || drift[0].ActionID == "" {
		t.Fatalf("wimd reconcile --fix with a mismatch: exit %d, drift %+v; want 0 and one mismatch fixed by a queued action", code, drift)
	}
	want := []string{"ep-0/vlan=100", "ep-1/vlan=101"}
	if have := []string{"ep-0/vlan=120", "ep-1/vlan=121"}; !slices.Equal(drift[0].Want, want) || !slices.Equal(drift[0].Have, have) {
		t.Errorf("mismatch endpoints want %v have %v, expected %v and %v", drift[0].Want, drift[0].Have, want, have)
	}
	eventually.Until(t, 30*time.Second, "the EDIT brings the service back to the link's endpoints", func() (bool, string) {
		svcs, err := d.conn.ListServices(t.Context())
		if err != nil || len(svcs) != 1 {
			return false, fmt.Sprintf("%d services, %v", len(svcs), err)
		}
		st := d.links(inst)[0]["status"]
		return slices.Equal(svcs[0].Endpoints, want) && st == "ACTIVE", fmt.Sprintf("endpoints %v, link %v", svcs[0].Endpoints, st)
	})
}

// TestReconcileSharedController (issue 30, point 1): accounts share one
// controller, as two tenants' accounts on one WIM or two WIM records at
// one URL. Each account's reconcile lists the other's service, which
// carries wimro's key but is not its own: it is the other account's, not
// an orphan. Reconciling one account with fix leaves the other's service
// in place, reconciling the other shows its link fine, and the leader's
// periodic reconcile reports no orphan.
func TestReconcileSharedController(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"two tenants on one WIM", "two WIMs at one URL"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			var c driftCase
			for _, x := range driftCases(t) {
				if x.name == "tapi" {
					c = x
				}
			}
			d := setupDrift(t, c, "--reconcile-interval", "150ms")
			a := d.api
			a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t1"}})
			wim, dcs := "wan1", []string{"dcA", "dcB"}
			if layout == "two WIMs at one URL" {
				// A PoP port is mapped by one WIM: the second WIM reaches
				// the same controller endpoints from datacenters of its own.
				wim, dcs = "wan2", []string{"dcC", "dcD"}
				var mappings []any
				for i, dc := range dcs {
					dpid := fmt.Sprintf("00:00:00:00:00:00:00:1%d", i+1)
					a.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
						"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
					mappings = append(mappings, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{
						"pop_switch_dpid": dpid, "pop_switch_port": "1",
						"wan_service_endpoint_id": fmt.Sprintf("ep-%d", i), "wan_service_mapping_info": c.mappingInfo(i)}}})
				}
				a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": wim, "type": c.wimType, "wim_url": c.url,
					"config": map[string]any{"wim_port_mapping": mappings}}})
			}
			for _, dc := range dcs {
				a.call("POST", "/openmano/t1/datacenters/"+dc, nil)
			}
			a.call("POST", "/openmano/t1/wims/"+wim, map[string]any{"wim_account": map[string]any{"name": "acct2", "user": c.user, "password": c.password}})

			// t0's link on VLANs 100/101 (acct1), t1's on 110/111 (acct2).
			a.activeInstance("t0", 1)
			body := instanceBody(1, nil)
			for i, n := range body["instance"].(map[string]any)["networks"].([]any) {
				n.(map[string]any)["encapsulation_id"] = n.(map[string]any)["encapsulation_id"].(int) + 10
				n.(map[string]any)["datacenter"] = dcs[i]
			}
			inst1, _ := a.activeInstanceOf("t1", 1, body)
			link1 := a.call("GET", "/openmano/t1/instances/"+inst1+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)
			key1 := link1["uuid"].(string)

			// The periodic reconcile, with both links ACTIVE: two whole runs
			// later no orphan was reported, nor any drift.
			metrics := func() (float64, float64, float64) {
				_, text := a.send("GET", "/metrics", nil)
				clean, _ := sample(text, "wimro_reconcile_runs_total", "result", "clean")
				drift, _ := sample(text, "wimro_reconcile_runs_total", "result", "drift")
				orphans, _ := sample(text, "wimro_reconcile_drift", "kind", "orphan")
				return clean, drift, orphans
			}
			c0, d0, _ := metrics()
			eventually.Until(t, 30*time.Second, "two periodic reconciles after both links are ACTIVE", func() (bool, string) {
				clean, drift, orphans := metrics()
				return clean+drift >= c0+d0+2, fmt.Sprintf("runs clean %v drift %v, orphans %v", clean, drift, orphans)
			})
			if _, drift, orphans := metrics(); drift != 0 || orphans != 0 {
				t.Errorf("the periodic reconcile reported drift: %v run(s) with drift, orphan gauge %v; want none:\n%s", drift, orphans, lastLines(d.stderr.String(), 10))
			}

			// acct1 reconciled with fix: t1's service is acct2's, not an orphan.
			var ans struct{ Reconcile engine.DriftReport }
			raw, _ := json.Marshal(a.call("POST", "/openmano/reconcile?account=acct1&fix=true", nil))
			if err := json.Unmarshal(raw, &ans); err != nil {
				t.Fatal(err)
			}
			if drift := driftOf(ans.Reconcile); len(drift) != 0 || ans.Reconcile.Accounts[0].OtherAccounts != 1 {
				t.Errorf("reconcile acct1 with fix: drift %+v, other accounts' services %d; want no drift and acct2's one service", drift, ans.Reconcile.Accounts[0].OtherAccounts)
			}
			keys := d.serviceKeys(t)
			if !slices.Contains(keys, key1) {
				t.Fatalf("reconcile of acct1 with fix deleted t1's live service %s: the controller lists %v", key1, keys)
			}
			raw, _ = json.Marshal(a.call("POST", "/openmano/reconcile?account=acct2", nil))
			ans = struct{ Reconcile engine.DriftReport }{}
			if err := json.Unmarshal(raw, &ans); err != nil {
				t.Fatal(err)
			}
			if drift := driftOf(ans.Reconcile); len(drift) != 0 || ans.Reconcile.Accounts[0].Links != 1 {
				t.Errorf("reconcile acct2: drift %+v, links %d; want its one link fine", drift, ans.Reconcile.Accounts[0].Links)
			}
			if st := a.call("GET", "/openmano/t1/instances/"+inst1+"/wan_links", nil)["wan_links"].([]any)[0].(map[string]any)["status"]; st != "ACTIVE" {
				t.Errorf("t1's link is %v after acct1's reconcile, want ACTIVE", st)
			}
		})
	}
}
