package httpapi_test

import (
	"testing"
)

// TestInstanceL3FromScenario: in openmano's form an instance gives each
// site of a scenario network its l3; the WAN link is an L3VPN, each
// network shows its site, and a bad site is a 400 naming
// instance.networks.<net>.sites[i].l3, writing nothing.
func TestInstanceL3FromScenario(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.scenarioFixture()
	site := func(dc, prefix, pe, ce string) map[string]any {
		return map[string]any{"datacenter": dc, "l3": map[string]any{"prefix": prefix, "pe_address": pe, "ce_address": ce}}
	}
	body := func(name string, sites ...any) map[string]any {
		return map[string]any{"instance": map[string]any{"name": name, "scenario": "sc1", "datacenter": "dcA",
			"networks": map[string]any{"wan": map[string]any{"sites": sites}}}}
	}
	before := b.snapshot()
	wantError(t, b.call("POST", "/openmano/tenant0/instances",
		body("bad", site("dcA", "10.1.0.0/24", "192.0.2.1/30", "192.0.2.2"), site("dcB", "10.2.0.0/24", "192.0.2.5/30", "192.0.2.9")), 400),
		400, "instance.networks.wan.sites[1].l3: l3 ce_address 192.0.2.9 is not another address of the access link")
	sameSnapshot(t, "a bad l3 site", before, b.snapshot())

	r := b.call("POST", "/openmano/tenant0/instances",
		body("ns", site("dcA", "10.1.0.0/24", "192.0.2.1/30", "192.0.2.2"), site("dcB", "10.2.0.0/24", "192.0.2.5/30", "192.0.2.6")), 200)
	if r.str("wan_links", 0, "service_type") != "L3VPN" {
		t.Fatalf("WAN link is not an L3VPN: %s", r.body)
	}
	prefixes := map[string]bool{}
	for i := range 2 {
		prefixes[r.str("networks", i, "l3", "prefix")] = true
	}
	if !prefixes["10.1.0.0/24"] || !prefixes["10.2.0.0/24"] {
		t.Fatalf("networks do not show their l3 sites: %s", r.body)
	}
}
