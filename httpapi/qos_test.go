package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// instanceWithQoS is instanceBody with raw JSON for the bandwidth of the
// networks (the same on both) and for the latency of the second only.
func instanceWithQoS(t *testing.T, name, bandwidth, latency string) string {
	t.Helper()
	raw, err := json.Marshal(instanceBody(name))
	if err != nil {
		t.Fatal(err)
	}
	// The markers are replaced by raw text, so a value may be any JSON.
	var doc map[string]any
	json.Unmarshal(raw, &doc)
	nets := doc["instance"].(map[string]any)["networks"].([]any)
	nets[0].(map[string]any)["bandwidth"] = "\u0001BW\u0001"
	nets[1].(map[string]any)["bandwidth"] = "\u0001BW\u0001"
	nets[1].(map[string]any)["latency"] = "\u0001LAT\u0001"
	out, _ := json.Marshal(doc)
	s := strings.ReplaceAll(string(out), `"\u0001BW\u0001"`, bandwidth)
	return strings.ReplaceAll(s, `"\u0001LAT\u0001"`, latency)
}

func TestInstanceQoSBody(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)

	bad := []struct{ name, bandwidth, latency, field string }{
		{"string", `"100"`, `5`, "instance.networks[0].bandwidth"},
		{"negative", `-100`, `5`, "instance.networks[0].bandwidth"},
		{"fraction", `100.5`, `5`, "instance.networks[0].bandwidth"},
		{"huge", `1e300`, `5`, "instance.networks[0].bandwidth"},
		{"2^64", `18446744073709551616`, `5`, "instance.networks[0].bandwidth"},
		{"list", `[100]`, `5`, "instance.networks[0].bandwidth"},
		{"latency bool", `100`, `true`, "instance.networks[1].latency"},
		{"latency zero", `100`, `0`, "instance.networks[1].latency"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := b.do("POST", "/openmano/tenant0/instances", "application/json", instanceWithQoS(t, "ns", c.bandwidth, c.latency))
			wantError(t, r, 400, c.field)
		})
	}

	r := b.do("POST", "/openmano/tenant0/instances", "application/json", instanceWithQoS(t, "ns", "100", "5"))
	if r.status != 200 {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	id := r.str("uuid")
	if get(r.json, "wan_links", 0, "bandwidth") != 100.0 || get(r.json, "wan_links", 0, "latency") != 5.0 {
		t.Fatalf("created link = %s", r.body)
	}
	r = b.call("GET", "/openmano/tenant0/instances/"+id+"/wan_links", nil, 200)
	if get(r.json, "wan_links", 0, "bandwidth") != 100.0 || get(r.json, "wan_links", 0, "latency") != 5.0 {
		t.Fatalf("links = %s", r.body)
	}
	r = b.do("POST", "/openmano/tenant0/instances?dry_run=true", "application/json", instanceWithQoS(t, "ns2", "100", "5"))
	if r.status != 200 || get(r.json, "plan", "wan_links", 0, "bandwidth") != 100.0 {
		t.Fatalf("plan = %d %s", r.status, r.body)
	}
}
