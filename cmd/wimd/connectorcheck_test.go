package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors/accountconn"
)

// TestConnectorCheck checks that wimd refuses, at write time, the settings
// its connectors' factories refuse, and passes types it has no connector
// for.
func TestConnectorCheck(t *testing.T) {
	t.Parallel()
	check := newConnectors(accountconn.Config{Registry: newRegistry(true, t.TempDir())}).CheckSettings
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

// TestTypeCheck checks that a WIM type is one of the registry's: the
// refusal lists the registered types, and a development type names the
// flag that offers it.
func TestTypeCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, typ string
		dev       bool
		want      string // "" for accepted
	}{
		{"registered", "tapi", false, ""},
		{"dev registered", "fake", true, ""},
		{"no connector", "odl", false, `no connector for WIM type "odl": use one of dynpac, ietfl2vpn, ietfl3vpn, l2nm, l3nm, onos, onos_vpls, tapi`},
		{"no connector, dev", "odl", true, "use one of dynpac, failing, fake, ietfl2vpn, ietfl3vpn, l2nm, l3nm, onos, onos_vpls, tapi"},
		{"dev type without the flag", "failing", false, "--dev-connectors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := newConnectors(accountconn.Config{Registry: newRegistry(tt.dev, t.TempDir())}).CheckType(tt.typ)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// TestMappingCheck checks that wimd refuses, when port mappings are
// written, a wan_service_mapping_info the WIM's connector cannot use.
func TestMappingCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	check := newConnectors(accountconn.Config{Registry: newRegistry(true, dir)}).CheckMapping
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "ctl.json")); err == nil {
			t.Error("the mapping check created the state file")
		}
	})
	location := map[string]any{"location_flavor": "location"}
	tests := []struct {
		name string
		wim  wimro.WIM
		info map[string]any
		want string // "" for accepted
	}{
		{"dynpac ok", wimro.WIM{Type: "dynpac", URL: "http://c"}, map[string]any{"wan_switch_dpid": "BB:BB", "wan_switch_port": 1.0}, ""},
		{"dynpac no port", wimro.WIM{Type: "dynpac", URL: "http://c"}, map[string]any{"wan_switch_dpid": "BB:BB"}, "wan_switch_port"},
		{"onos ok", wimro.WIM{Type: "onos_vpls", URL: "http://c"}, map[string]any{"switch_dpid": "of:0000000000000001", "switch_port": "3"}, ""},
		{"onos bad dpid", wimro.WIM{Type: "onos", URL: "http://c"}, map[string]any{"switch_dpid": "not-hex", "switch_port": "3"}, "dpid"},
		{"tapi endpoint id as SIP", wimro.WIM{Type: "tapi", URL: "http://c"}, map[string]any{"mapping_type": "sip"}, ""},
		{"tapi bad sips", wimro.WIM{Type: "tapi", URL: "http://c"}, map[string]any{"sips": []any{"x"}}, "sips"},
		{"ietfl2vpn ok", wimro.WIM{Type: "ietfl2vpn", URL: "http://c"}, map[string]any{"site-id": "s1", "device-id": "pe1"}, ""},
		{"ietfl2vpn no site", wimro.WIM{Type: "ietfl2vpn", URL: "http://c"}, map[string]any{"device-id": "pe1"}, "site-id"},
		{"ietfl2vpn location flavor", wimro.WIM{Type: "ietfl2vpn", URL: "http://c", Config: location}, map[string]any{"site-id": "s1", "device-id": "pe1"}, "location-id"},
		{"fake", wimro.WIM{Type: "fake", URL: "http://fake"}, map[string]any{}, ""},
		// Inside the transaction no file is read: a FIFO would hang.
		{"ca_file not read", wimro.WIM{Type: "onos", URL: "http://c", Config: map[string]any{"ca_file": fifo}}, map[string]any{"switch_dpid": "of:0000000000000001", "switch_port": "3"}, ""},
		{"state_file not touched", wimro.WIM{Type: "fake", URL: "http://fake", Config: map[string]any{"state_file": filepath.Join(dir, "ctl.json")}}, map[string]any{}, ""},
		{"no connector for odl", wimro.WIM{Type: "odl", URL: "x"}, map[string]any{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := check(tt.wim, "ep-1", tt.info)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "ep-1")):
				t.Fatalf("error = %v, want one naming %q and the endpoint", err, tt.want)
			}
		})
	}
}
