package rest_test

import (
	"encoding/json"
	"testing"

	"github.com/wimro/wimro/connectors/rest"
)

// TestCovers: a document read back covers what was written when it holds
// every leaf (defaults and state added are fine), lists of one length,
// identities with or without their module.
func TestCovers(t *testing.T) {
	t.Parallel()
	const want = `{"vpn-id":"v","vpn-type":"vpws","nodes":[{"id":"a","vlan":100}]}`
	tests := []struct {
		name, got string
		covers    bool
	}{
		{"same", want, true},
		{"defaults and a qualified identity", `{"vpn-id":"v","vpn-type":"m:vpws","mtu":1500,"nodes":[{"id":"a","vlan":100,"role":"x"}]}`, true},
		{"another module's prefix", `{"vpn-id":"v","vpn-type":"other:vpws","nodes":[{"id":"a","vlan":100}]}`, false},
		{"another vlan", `{"vpn-id":"v","vpn-type":"vpws","nodes":[{"id":"a","vlan":101}]}`, false},
		{"one list entry more", `{"vpn-id":"v","vpn-type":"vpws","nodes":[{"id":"a","vlan":100},{"id":"b"}]}`, false},
		{"a leaf missing", `{"vpn-id":"v","nodes":[{"id":"a","vlan":100}]}`, false},
	}
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		var g any
		if err := json.Unmarshal([]byte(tt.got), &g); err != nil {
			t.Fatal(err)
		}
		if got := rest.Covers(g, w, "m"); got != tt.covers {
			t.Errorf("%s: Covers = %v, want %v", tt.name, got, tt.covers)
		}
	}
}
