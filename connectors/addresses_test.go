package connectors_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wimro/wimro/connectors"
)

// The policies of TestAddressPolicy, as --controller-allow gives them.
const (
	def    = ""
	strict = "10.0.0.0/8, 2001:db8::/32,ctl.example.net."
	meta   = "169.254.169.254,fd00:ec2::254"
	wide   = "0.0.0.0/0,::/0"
)

func TestAddressPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy, host, ip string
		reason           string // "" allowed, else a word of the refusal
	}{
		// The default: anything but link-local, metadata, unspecified, multicast.
		{def, "", "192.0.2.10", ""},
		{def, "", "10.1.2.3", ""},
		{def, "", "2001:db8::1", ""},
		{def, "", "127.0.0.1", ""},
		{def, "", "::1", ""},
		{def, "localhost", "127.0.0.1", ""},
		{def, "", "169.254.1.1", "link-local"},
		{def, "", "fe80::1", "link-local"},
		{def, "", "169.254.169.254", "metadata"},
		{def, "metadata.google.internal", "169.254.169.254", "metadata"},
		{def, "", "::ffff:169.254.169.254", "metadata"},
		{def, "", "fd00:ec2::254", "metadata"},
		{def, "", "100.100.100.200", "metadata"},
		{def, "", "0.0.0.0", "unspecified"},
		{def, "", "::", "unspecified"},
		{def, "", "224.0.0.1", "multicast"},
		{def, "", "ff02::1", "multicast"},
		{def, "", "255.255.255.255", "broadcast"},
		{def, "", "64:ff9b::a9fe:a9fe", "metadata"},
		{def, "", "2002:a9fe:a9fe::1", "metadata"},
		{def, "", "64:ff9b::a9fe:101", "link-local"},
		{def, "", "64:ff9b::c000:20a", ""},
		{wide, "", "64:ff9b::a9fe:a9fe", "metadata"},
		// Set: only what is listed, by prefix or by host name.
		{strict, "", "10.9.9.9", ""},
		{strict, "", "::ffff:10.9.9.9", ""},
		{strict, "", "2001:db8:1::1", ""},
		{strict, "", "192.0.2.10", "not in the allowed list"},
		{strict, "", "127.0.0.1", "not in the allowed list"},
		{strict, "", "::1", "not in the allowed list"},
		{strict, "", "169.254.1.1", "not in the allowed list"},
		{strict, "CTL.example.net", "192.0.2.10", ""},
		{strict, "ctl.example.net", "127.0.0.1", ""},
		{strict, "other.example.net", "192.0.2.10", "not in the allowed list"},
		{strict, "ctl.example.net", "169.254.169.254", "metadata"},
		// A prefix holding a metadata address does not allow it.
		{wide, "", "169.254.169.254", "metadata"},
		{wide, "", "169.254.1.1", ""},
		{wide, "", "0.0.0.0", "unspecified"},
		{"169.254.0.0/16", "", "169.254.169.254", "metadata"},
		// Listed by exact address, it is.
		{meta, "", "169.254.169.254", ""},
		{meta, "", "fd00:ec2::254", ""},
		{meta, "", "100.100.100.200", "metadata"},
		{"169.254.169.254/32", "", "169.254.169.254", ""},
		{"127.0.0.1/32", "", "127.0.0.2", "not in the allowed list"},
	}
	for _, tt := range tests {
		t.Run(tt.policy+"/"+tt.host+"/"+tt.ip, func(t *testing.T) {
			t.Parallel()
			p, err := connectors.ParseAddressPolicy(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Check(tt.host, netip.MustParseAddr(tt.ip))
			switch {
			case tt.reason == "" && err != nil:
				t.Fatalf("Check(%q, %s) under %q = %v, want allowed", tt.host, tt.ip, tt.policy, err)
			case tt.reason != "" && err == nil:
				t.Fatalf("Check(%q, %s) under %q allowed, want refused (%s)", tt.host, tt.ip, tt.policy, tt.reason)
			case err != nil:
				msg := err.Error()
				if !strings.Contains(msg, tt.reason) || !strings.Contains(msg, "--controller-allow") || !strings.Contains(msg, netip.MustParseAddr(tt.ip).Unmap().String()) {
					t.Fatalf("refusal %q does not name the reason %q, the address and the flag", msg, tt.reason)
				}
				if connectors.KindOf(err) != connectors.KindPermanent {
					t.Fatalf("refusal kind %s, want permanent", connectors.KindOf(err))
				}
			}
		})
	}
}

func TestParseAddressPolicyRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"10.0.0.1/33", "10.0.0.1/8", "not a host", "ctl..example", "fe80::1%eth0", "http://ctl"} {
		if _, err := connectors.ParseAddressPolicy(s); err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("ParseAddressPolicy(%q) = %v, want an error quoting it", s, err)
		}
	}
	p, err := connectors.ParseAddressPolicy("10.0.0.0/8", " ctl.example , ::1", "")
	if err != nil || p.String() != "10.0.0.0/8,::1/128,ctl.example" {
		t.Fatalf("ParseAddressPolicy = %v, %v", p, err)
	}
}

// TestAddressPolicyDial checks the dial function: a name is resolved,
// only allowed addresses are dialed, and a name resolving to refused
// addresses only is refused without any connection attempt.
func TestAddressPolicyDial(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	names := map[string][]netip.Addr{
		"metadata.test": {netip.MustParseAddr("169.254.169.254")},
		"mixed.test":    {netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("127.0.0.1")},
		"ctl.test":      {netip.MustParseAddr("127.0.0.1")},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if ips, ok := names[host]; ok {
			return ips, nil
		}
		return nil, errors.New("no such host")
	}
	var dialed []string
	d := &net.Dialer{ControlContext: func(_ context.Context, _, addr string, _ syscall.RawConn) error {
		dialed = append(dialed, addr)
		return nil
	}}
	def, err := connectors.ParseAddressPolicy()
	if err != nil {
		t.Fatal(err)
	}
	dial := def.WithLookup(lookup).DialContext(d)
	for _, tt := range []struct {
		host    string
		refused bool
	}{{"ctl.test", false}, {"mixed.test", false}, {"metadata.test", true}} {
		dialed = nil
		c, err := dial(t.Context(), "tcp", net.JoinHostPort(tt.host, strconv.Itoa(port)))
		if tt.refused {
			if err == nil || connectors.KindOf(err) != connectors.KindPermanent || len(dialed) != 0 {
				t.Fatalf("dial %s = %v (dialed %v), want a permanent refusal and no attempt", tt.host, err, dialed)
			}
			continue
		}
		if err != nil {
			t.Fatalf("dial %s: %v", tt.host, err)
		}
		c.Close()
		if len(dialed) != 1 || !strings.HasPrefix(dialed[0], "127.0.0.1:") {
			t.Fatalf("dial %s connected to %v, want 127.0.0.1 only", tt.host, dialed)
		}
	}
}
