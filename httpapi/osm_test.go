package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// scenarioFixture is fixture plus tenant0's account on wim0, dcA and dcB
// set to network_status_source none (dcA's VLANs 100-101), the VNF x,
// and the scenario sc1 of one network, wan, in openmano's v0.2 descriptor.
func (b *bundle) scenarioFixture() string {
	b.t.Helper()
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	b.call("PUT", "/openmano/datacenters/dcA", map[string]any{"datacenter": map[string]any{"config": map[string]any{"network_status_source": "none", "vlan_range": "100-101"}}}, 200)
	b.call("PUT", "/openmano/datacenters/dcB", map[string]any{"datacenter": map[string]any{"config": map[string]any{"network_status_source": "none"}}}, 200)
	b.call("POST", "/openmano/tenant0/vnfs", map[string]any{"vnf": map[string]any{"name": "x", "VNFC": []any{map[string]any{"name": "vm"}}}}, 200)
	r := b.do("POST", "/openmano/tenant0/scenarios", "application/yaml",
		"schema_version: 2\nscenario:\n  name: sc1\n  vnfs: {v1: {vnf_name: x}}\n  networks:\n    wan: {type: bridge, interfaces: [{v1: eth0}]}\n")
	if r.status != 200 || r.str("scenario", "nets", 0, "name") != "wan" || r.str("scenario", "vnfs", 0, "name") != "v1" {
		b.t.Fatalf("scenario create = %d %s", r.status, r.body)
	}
	return r.str("scenario", "uuid")
}

// osmInstance is openmano v6's instance body: the scenario by name, its
// net placed in dcA and dcB.
func osmInstance(name, scenario string) string {
	return `{"schema_version": "0.1", "instance": {"name": "` + name + `", "scenario": "` + scenario + `", "datacenter": "dcA",
		"networks": {"wan": {"sites": [{"datacenter": "dcA"}, {"datacenter": "dcB"}]}}}}`
}

// TestInstanceFromScenario (issue 32, points 1, 3 and 4): an instance of
// a scenario places its net in both datacenters, one WAN link; the answer
// is openmano's flat instance; the networks of datacenters nobody reports
// are ACTIVE with the lowest free VLAN of the range, which an instance's
// delete frees once its link's DELETE is DONE, and an exhausted range is
// a 409 that creates nothing.
func TestInstanceFromScenario(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	sc := b.scenarioFixture()
	r := b.do("POST", "/openmano/tenant0/instances", "", osmInstance("ns1", "sc1"))
	if r.status != 200 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	if r.json["instance"] != nil || r.str("uuid") == "" || r.str("scenario_id") != sc || r.str("scenario_name") != "sc1" ||
		len(get(r.json, "nets").([]any)) != 2 || len(get(r.json, "wan_links").([]any)) != 1 {
		t.Fatalf("create answer is not the flat instance of sc1 with 2 nets and 1 WAN link: %s", r.body)
	}
	if len(r.str("created_at")) != len("2006-01-02T15:04:05") {
		t.Fatalf("created_at %q is not openmano's form", r.str("created_at"))
	}
	for i := range 2 {
		if r.str("networks", i, "status") != "ACTIVE" || r.str("networks", i, "encapsulation_type") != "vlan" {
			t.Fatalf("network %d is not ACTIVE on a VLAN: %s", i, r.body)
		}
	}
	// In YAML too the timestamps stay text: PyYAML reads an unquoted
	// 2006-01-02T15:04:05 as a date (openmano's YAML quoted them).
	yr := b.getAccepting("GET", "/openmano/tenant0/instances/ns1", "application/yaml")
	if !strings.Contains(yr, `created_at: "`+r.str("created_at")+`"`) {
		t.Fatalf("YAML answer without a quoted created_at: %s", yr)
	}
	first := r.str("uuid")
	show := b.call("GET", "/openmano/tenant0/instances/ns1", nil, 200)
	if show.str("uuid") != first || show.str("scenario_name") != "sc1" {
		t.Fatalf("show = %s", show.body)
	}
	vlanOf := func(r response, dc string) float64 {
		for _, n := range get(r.json, "networks").([]any) {
			if m := n.(map[string]any); m["datacenter_id"] == dc {
				v, _ := m["encapsulation_id"].(float64)
				return v
			}
		}
		return 0
	}
	dcA := r.str("datacenter_id")
	if v := vlanOf(r, dcA); v != 100 {
		t.Fatalf("dcA VLAN %v, want 100", v)
	}
	r2 := b.call("POST", "/openmano/tenant0/instances", map[string]any{"instance": map[string]any{"name": "ns2", "scenario": sc, "datacenter": "dcA",
		"networks": map[string]any{"wan": map[string]any{"sites": []any{map[string]any{"datacenter": "dcA"}, map[string]any{"datacenter": "dcB"}}}}}}, 200)
	if v := vlanOf(r2, dcA); v != 101 {
		t.Fatalf("second dcA VLAN %v, want 101", v)
	}
	// dcA's range 100-101 is used up.
	before := b.snapshot()
	wantError(t, b.do("POST", "/openmano/tenant0/instances", "", osmInstance("ns3", "sc1")), 409, "VLAN")
	sameSnapshot(t, "an exhausted range", before, b.snapshot())
	// A delete frees its VLAN once its WAN link's DELETE is DONE (no
	// worker runs here: the statement plays its part), not before: the
	// controller holds the service on it until then.
	b.call("DELETE", "/openmano/tenant0/instances/ns1", nil, 200)
	wantError(t, b.do("POST", "/openmano/tenant0/instances", "", osmInstance("ns3", "sc1")), 409, "VLAN")
	if _, err := b.db.Pool().Exec(t.Context(), `UPDATE vim_wim_actions SET status = 'DONE' WHERE action = 'DELETE'`); err != nil {
		t.Fatal(err)
	}
	r3 := b.do("POST", "/openmano/tenant0/instances", "", osmInstance("ns3", "sc1"))
	if r3.status != 200 || vlanOf(r3, dcA) != 100 {
		t.Fatalf("after the delete: %d, VLAN %v, want 100", r3.status, vlanOf(r3, dcA))
	}
	// The scenario cannot go while instances of it live.
	wantError(t, b.do("DELETE", "/openmano/tenant0/scenarios/sc1", "", ""), 409, "instance")
}

// TestInstanceBodyErrors: an openmano instance body wimro cannot use is
// a 400 (404 for an unknown scenario) naming the field in words, and
// writes nothing.
func TestInstanceBodyErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.scenarioFixture()
	tests := []struct {
		name, body string
		status     int
		field      string
		words      string
	}{
		{"unknown scenario", osmInstance("x", "nosuch"), 404, "instance.scenario", `no scenario "nosuch"`},
		{"networks by name without a scenario", `{"instance": {"name": "x", "datacenter": "dcA", "networks": {"wan": {"sites": [{"datacenter": "dcB"}]}}}}`,
			400, "instance.scenario", "instance.scenario is required"},
		{"a net the scenario lacks", `{"instance": {"name": "x", "scenario": "sc1", "datacenter": "dcA", "networks": {"lan": {}}}}`,
			400, "instance.networks.lan", `has no network "lan"`},
		{"networks neither list nor object", `{"instance": {"name": "x", "networks": "wan"}}`, 400, "instance.networks", "must be a list of local networks"},
		{"a scenario given inline", `{"instance": {"name": "x", "datacenter": "dcA", "scenario": {"name": "s"}}}`, 400, "instance.scenario", "expected a string, got an object"},
		{"sites not a list", `{"instance": {"name": "x", "scenario": "sc1", "datacenter": "dcA", "networks": {"wan": {"sites": {"datacenter": "dcB"}}}}}`,
			400, "", "expected a list, got an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.t = t
			before := b.snapshot()
			r := b.do("POST", "/openmano/tenant0/instances", "", tt.body)
			wantError(t, r, tt.status, tt.words)
			if tt.field != "" && r.str("error", "field") != tt.field {
				t.Fatalf("field %q, want %q: %s", r.str("error", "field"), tt.field, r.body)
			}
			if strings.Contains(r.body, "engine.") || strings.Contains(r.body, "[]") {
				t.Fatalf("the error names a Go type: %s", r.body)
			}
			sameSnapshot(t, tt.name, before, b.snapshot())
		})
	}
}

// TestOpenmanoEditRoutes (issue 32, point 5): tenant-edit, the
// datacenter's VIM-tenant edit and action-list without an instance answer
// as openmano did (they were 405, 405 and 404).
func TestOpenmanoEditRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	ids := b.liveFixture()
	r := b.call("PUT", "/openmano/tenants/tenant0", map[string]any{"tenant": map[string]any{"description": "edited"}}, 200)
	if r.str("tenant", "description") != "edited" || r.str("tenant", "name") != "tenant0" {
		t.Fatalf("tenant edit = %s", r.body)
	}
	wantError(t, b.do("PUT", "/openmano/tenants/tenant0", "", `{"tenant": {"name": "a;b"}}`), 400, "tenant.name")
	r = b.call("PUT", "/openmano/tenant0/datacenters/dcA", map[string]any{"datacenter": map[string]any{"vim_username": "u", "vim_password": "p"}}, 200)
	if r.str("datacenter", "uuid") != ids["datacenter_id"] || strings.Contains(r.body, `"p"`) {
		t.Fatalf("VIM tenant edit = %s", r.body)
	}
	r = b.call("GET", "/openmano/tenant0/instances/any/action", nil, 200)
	if r.str("actions", 0, "uuid") != ids["action_id"] {
		t.Fatalf("actions of every instance = %s", r.body)
	}
	r = b.call("GET", "/openmano/any/instances/any/action/"+ids["action_id"], nil, 200)
	if r.str("actions", 0, "vim_wim_actions", 0, "action") != "CREATE" {
		t.Fatalf("an action by its id alone = %s", r.body)
	}
}

// TestOpenmanoVersionText (issue 32, point 7): LCM's start check
// (Accept: application/yaml) and a client asking nothing read openmano's
// text, "openmanod version X.Y.Z ..."; JSON is answered to JSON only.
func TestOpenmanoVersionText(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for _, accept := range []string{"application/yaml", "*/*", ""} {
		req, _ := http.NewRequest("GET", b.srv.URL+"/openmano/version", nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(raw), "openmanod version 6.0.4 ") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("Accept %q: version = %d %q (%s)", accept, resp.StatusCode, raw, resp.Header.Get("Content-Type"))
		}
	}
}

// getAccepting sends a request with an Accept header and returns the answer's text.
func (b *bundle) getAccepting(method, path, accept string) string {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.srv.URL+path, nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}
