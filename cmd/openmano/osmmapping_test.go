package main

import (
	"encoding/json"
	"testing"
)

// OSM's entries from wimro's port mapping groups: the site is the
// datacenter's name unless the plugin could not put it in a URL path,
// and a mapping without service endpoint (no bearer-reference possible)
// is left out, named.
func TestOSMMappingEntries(t *testing.T) {
	t.Parallel()
	group := func(dc string, mappings ...map[string]any) any {
		list := make([]any, len(mappings))
		for i, m := range mappings {
			list[i] = m
		}
		return map[string]any{"datacenter_id": dc, "pop_wan_mappings": list}
	}
	names := map[string]string{"u-a": "dcA", "u-b": "dc/B", "u-c": "dc C"}
	tests := []struct {
		name    string
		group   any
		want    string
		skipped int
	}{
		{"by name", group("u-a", map[string]any{"pop_switch_dpid": "00:01", "pop_switch_port": "1", "wan_service_endpoint_id": "ep-a"}),
			`[{"device-id":"00:01","service_endpoint_id":"ep-a","service_mapping_info":{"bearer":{"bearer-reference":"ep-a"},"site-id":"dcA"}}]`, 0},
		{"a slash in the name: the uuid", group("u-b", map[string]any{"pop_switch_dpid": "00:02", "pop_switch_port": "1", "wan_service_endpoint_id": "ep-b"}),
			`[{"device-id":"00:02","service_endpoint_id":"ep-b","service_mapping_info":{"bearer":{"bearer-reference":"ep-b"},"site-id":"u-b"}}]`, 0},
		{"a space in the name: the uuid", group("u-c", map[string]any{"pop_switch_dpid": "00:03", "pop_switch_port": "1", "wan_service_endpoint_id": "ep-c"}),
			`[{"device-id":"00:03","service_endpoint_id":"ep-c","service_mapping_info":{"bearer":{"bearer-reference":"ep-c"},"site-id":"u-c"}}]`, 0},
		{"no service endpoint: left out", group("u-a", map[string]any{"pop_switch_dpid": "00:01", "pop_switch_port": "2"}), `null`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, skipped := osmMappingEntries([]any{tt.group}, names)
			b, _ := json.Marshal(got)
			if string(b) != tt.want || len(skipped) != tt.skipped {
				t.Errorf("entries %s (left out %v), want %s (%d left out)", b, skipped, tt.want, tt.skipped)
			}
		})
	}
}
