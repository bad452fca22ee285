package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/wimro/wimro"
)

// A connection is read in OSM's dialect and in RFC 8466's own spelling,
// the VLAN as a number or a numeric string; anything else is a 400 naming
// the field.
func TestConnectionVLAN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		vlan       int    // 0: untagged
		field      string // the refused field, "" when accepted
	}{
		{"no connection", `null`, 0, ""},
		{"empty (OSM's encapsulation none)", `{}`, 0, ""},
		{"OSM's dot1q-vlan-tagged", `{"encapsulation-type": "dot1q-vlan-tagged", "tagged-interface": {"dot1q-vlan-tagged": {"cvlan-id": 301}}}`, 301, ""},
		{"RFC 8466's vlan-type", `{"encapsulation-type": "ietf-l2vpn-svc:vlan-type", "tagged-interface": {"type": "ietf-l2vpn-svc:dot1q", "dot1q-vlan-tagged": {"cvlan-id": 302}}}`, 302, ""},
		{"a numeric string", `{"encapsulation-type": "vlan-type", "tagged-interface": {"type": "dot1q", "dot1q-vlan-tagged": {"cvlan-id": "303"}}}`, 303, ""},
		{"ethernet-type", `{"encapsulation-type": "ethernet-type"}`, 0, ""},
		{"tagged without a VLAN", `{"encapsulation-type": "vlan-type"}`, 0, "c.tagged-interface.dot1q-vlan-tagged.cvlan-id"},
		{"VLAN 0", `{"encapsulation-type": "vlan-type", "tagged-interface": {"dot1q-vlan-tagged": {"cvlan-id": 0}}}`, 0, "c.tagged-interface.dot1q-vlan-tagged.cvlan-id"},
		{"VLAN not a number", `{"encapsulation-type": "vlan-type", "tagged-interface": {"dot1q-vlan-tagged": {"cvlan-id": "x"}}}`, 0, "c.tagged-interface.dot1q-vlan-tagged.cvlan-id"},
		{"qinq", `{"encapsulation-type": "vlan-type", "tagged-interface": {"type": "qinq", "dot1q-vlan-tagged": {"cvlan-id": 5}}}`, 0, "c.tagged-interface.type"},
		{"vxlan encapsulation", `{"encapsulation-type": "vxlan"}`, 0, "c.encapsulation-type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c *l2smConnection
			if err := json.Unmarshal([]byte(tt.body), &c); err != nil {
				t.Fatal(err)
			}
			vlan, err := connectionVLAN("c", c)
			if tt.field != "" {
				if wimro.ErrorCode(err) != wimro.EINVALID || wimro.ErrorField(err) != tt.field {
					t.Fatalf("%v (field %q), want 400 naming %s", err, wimro.ErrorField(err), tt.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := 0; vlan != nil {
				got = *vlan
				if got != tt.vlan {
					t.Errorf("VLAN %d, want %d", got, tt.vlan)
				}
			} else if tt.vlan != 0 {
				t.Errorf("untagged, want VLAN %d", tt.vlan)
			}
		})
	}
}
