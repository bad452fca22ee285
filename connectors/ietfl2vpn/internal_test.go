package ietfl2vpn

import (
	"testing"

	"github.com/wimro/wimro/connectors/rest"
)

func TestCovers(t *testing.T) {
	t.Parallel()
	want := map[string]any{"vpn-id": "v", "vpn-svc-type": "ietf-l2vpn-svc:vpws", "ce-vlan-preservation": true,
		"list": []any{float64(1), "ietf-l2vpn-svc:c-vlan"}, "sub": map[string]any{"svc-mtu": float64(1500)}}
	tests := []struct {
		name string
		got  any
		ok   bool
	}{
		{"equal", map[string]any{"vpn-id": "v", "vpn-svc-type": "ietf-l2vpn-svc:vpws", "ce-vlan-preservation": true,
			"list": []any{float64(1), "c-vlan"}, "sub": map[string]any{"svc-mtu": float64(1500)}}, true},
		{"server defaults added, prefix dropped", map[string]any{"vpn-id": "v", "vpn-svc-type": "vpws", "ce-vlan-preservation": true, "svc-topo": "any-to-any",
			"list": []any{float64(1), "c-vlan"}, "sub": map[string]any{"svc-mtu": float64(1500), "x": "y"}}, true},
		{"other leaf value", map[string]any{"vpn-id": "v", "vpn-svc-type": "bgp-vpls", "ce-vlan-preservation": true,
			"list": []any{float64(1), "c-vlan"}, "sub": map[string]any{"svc-mtu": float64(1500)}}, false},
		{"missing leaf", map[string]any{"vpn-id": "v", "vpn-svc-type": "vpws",
			"list": []any{float64(1), "c-vlan"}, "sub": map[string]any{"svc-mtu": float64(1500)}}, false},
		{"list length", map[string]any{"vpn-id": "v", "vpn-svc-type": "vpws", "ce-vlan-preservation": true,
			"list": []any{float64(1)}, "sub": map[string]any{"svc-mtu": float64(1500)}}, false},
		{"number as string", map[string]any{"vpn-id": "v", "vpn-svc-type": "vpws", "ce-vlan-preservation": true,
			"list": []any{"1", "c-vlan"}, "sub": map[string]any{"svc-mtu": float64(1500)}}, false},
		{"container as leaf", map[string]any{"vpn-id": "v", "vpn-svc-type": "vpws", "ce-vlan-preservation": true,
			"list": []any{float64(1), "c-vlan"}, "sub": "1500"}, false},
		{"not an object", []any{}, false},
	}
	for _, tt := range tests {
		if got := covers(tt.got, want); got != tt.ok {
			t.Errorf("%s: covers = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func TestGoneAndEmpty(t *testing.T) {
	t.Parallel()
	errs := func(tag string) []byte {
		return []byte(`{"ietf-restconf:errors":{"error":[{"error-type":"application","error-tag":"` + tag + `"}]}}`)
	}
	tests := []struct {
		reply       rest.Reply
		gone, empty bool
	}{
		{rest.Reply{Status: 404, Body: errs("data-missing")}, true, true},
		{rest.Reply{Status: 404, Body: []byte("not found")}, true, false},
		{rest.Reply{Status: 409, Body: errs("data-missing")}, true, false},
		{rest.Reply{Status: 409, Body: errs("in-use")}, false, false},
		{rest.Reply{Status: 204}, false, true},
		{rest.Reply{Status: 200, Body: []byte("{}")}, false, false},
	}
	for _, tt := range tests {
		if g, e := gone(tt.reply), empty(tt.reply); g != tt.gone || e != tt.empty {
			t.Errorf("%d %s: gone %v empty %v, want %v %v", tt.reply.Status, tt.reply.Body, g, e, tt.gone, tt.empty)
		}
	}
}
