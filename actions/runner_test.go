package actions_test

import (
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
)

func TestExitPort(t *testing.T) {
	t.Parallel()
	dc := wimro.Datacenter{Config: map[string]any{"external_connections": []any{
		map[string]any{"condition": map[string]any{"provider:physical_network": "physnet1", "encapsulation_type": "vlan"},
			"vim_external_port": map[string]any{"switch": "00:0a", "port": 1.0}},
		map[string]any{"condition": map[string]any{"provider:physical_network": "physnet2"}},
		map[string]any{"vim_external_port": map[string]any{"switch": "00:ff", "port": "9"}},
	}}}
	s := func(v string) *string { return &v }
	cases := []struct {
		name       string
		net        wimro.InstanceNet
		dpid, port string
		ok         bool
	}{
		{"explicit wins", wimro.InstanceNet{PopSwitchDPID: s("00:01"), PopSwitchPort: s("3"), VimInfo: map[string]any{"provider:physical_network": "physnet1"}}, "00:01", "3", true},
		{"first matching rule", wimro.InstanceNet{VimInfo: map[string]any{"provider:physical_network": "physnet1", "encapsulation_type": "vlan"}}, "00:0a", "1", true},
		{"a match without a port falls through to the catch-all", wimro.InstanceNet{VimInfo: map[string]any{"provider:physical_network": "physnet2"}}, "00:ff", "9", true},
		{"partial condition does not match", wimro.InstanceNet{VimInfo: map[string]any{"provider:physical_network": "physnet1"}}, "00:ff", "9", true},
	}
	for _, c := range cases {
		d, p, ok := actions.ExitPort(c.net, dc)
		if d != c.dpid || p != c.port || ok != c.ok {
			t.Errorf("%s: %q %q %v", c.name, d, p, ok)
		}
	}
	if _, _, ok := actions.ExitPort(wimro.InstanceNet{}, wimro.Datacenter{}); ok {
		t.Error("no rules and no explicit port still found a port")
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	p := actions.Policy{RetryBase: time.Second, RetryMax: 10 * time.Second}
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := p.Backoff(i); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i, got, w)
		}
	}
}
