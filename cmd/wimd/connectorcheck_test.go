package main

import (
	"strings"
	"testing"

	"github.com/wimro/wimro"
)

// TestConnectorCheck checks that wimd refuses, at write time, the settings
// its connectors' factories refuse, and passes types it has no connector
// for.
func TestConnectorCheck(t *testing.T) {
	t.Parallel()
	check := connectorCheck(newRegistry())
	tests := []struct {
		name    string
		wim     wimro.WIM
		account map[string]any
		want    string // "" for accepted
	}{
		{"tapi ok", wimro.WIM{Type: "tapi", URL: "http://ctl:8181"}, nil, ""},
		{"tapi bad mode", wimro.WIM{Type: "tapi", URL: "http://ctl", Config: map[string]any{"create_mode": "sometimes"}}, nil, "create_mode"},
		{"onos bad url", wimro.WIM{Type: "onos_vpls", URL: "ftp://ctl"}, nil, "wim_url"},
		{"onos bad encapsulation", wimro.WIM{Type: "onos", URL: "http://ctl"}, map[string]any{"encapsulation": "GRE"}, "encapsulation"},
		{"ietfl2vpn bad mtu", wimro.WIM{Type: "ietfl2vpn", URL: "https://ctl"}, map[string]any{"default_mtu": 0}, "default_mtu"},
		{"dynpac account timeout", wimro.WIM{Type: "dynpac", URL: "http://ctl"}, map[string]any{"timeout_ms": "soon"}, "timeout_ms"},
		{"account overrides a bad WIM default", wimro.WIM{Type: "dynpac", URL: "http://ctl", Config: map[string]any{"timeout_ms": -1}}, map[string]any{"timeout_ms": 100}, ""},
		{"no connector for odl", wimro.WIM{Type: "odl", URL: "anything"}, nil, ""},
		{"fake", wimro.WIM{Type: "fake", URL: "http://fake"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := check(tt.wim, tt.account)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error = %v, want one naming %q", err, tt.want)
			}
		})
	}
}
