package connectors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// AddressFlag names the operator's setting in the errors of an
// AddressPolicy, so that a refusal says what to change.
const AddressFlag = "--controller-allow (WIMRO_CONTROLLER_ALLOW)"

// metadataAddrs are the cloud instance metadata services: a controller URL
// reaching one would hand the cloud's credentials to whoever may write a
// WIM. They are refused whatever the policy, unless listed by exact IP.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP (metadata.google.internal), Azure, OpenStack, DigitalOcean
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure wire server
}

// linkLocal are refused by the default policy: nothing a controller
// should live on, and where the metadata services do.
var linkLocal = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
}

// AddressPolicy says which addresses the connectors may connect to: the
// operator's --controller-allow. It is checked on the addresses a host
// name resolves to, when a connection is made (DialContext), so a name
// that resolves elsewhere later (DNS rebinding) gains nothing, and on
// every redirect (CheckRedirect).
//
// With no entries (the default) every address is allowed but link-local
// ones (169.254.0.0/16, fe80::/10). Loopback is allowed: a controller, a
// tunnel or a proxy on wimd's own host is a normal set-up (and the one of
// the tests and the emulators); list addresses to refuse it. With
// entries, only the addresses in a listed prefix and the host names
// listed (by name, whatever they resolve to) are allowed. Whatever the
// entries, the cloud metadata addresses are refused unless one is listed
// as an exact address, and unspecified (0.0.0.0, ::), multicast and
// broadcast addresses are always refused. An IPv6 address that carries an
// IPv4 one (NAT64 64:ff9b::/96, 6to4 2002::/16) is refused when the IPv4
// one would be for these reasons.
//
// The zero value and nil are the default policy. An AddressPolicy is
// immutable and safe for concurrent use.
type AddressPolicy struct {
	prefixes []netip.Prefix
	hosts    []string
	// exact are the addresses listed alone (a.b.c.d, a.b.c.d/32): the
	// only way to allow a metadata address.
	exact []netip.Addr
	// lookup resolves host names; nil uses net.DefaultResolver.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// ParseAddressPolicy reads the entries of --controller-allow: each an
// address, a CIDR prefix or a host name; an entry may hold several
// separated by commas, and blanks are ignored. No entry at all gives the
// default policy.
func ParseAddressPolicy(entries ...string) (*AddressPolicy, error) {
	p := &AddressPolicy{}
	for _, e := range entries {
		for _, s := range strings.Split(e, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if err := p.add(s); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

func (p *AddressPolicy) add(s string) error {
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("controller address %q: not a CIDR prefix: %w", s, err)
		}
		if pfx.Addr().Zone() != "" {
			return fmt.Errorf("controller address %q: zones are not supported", s)
		}
		if pfx.Addr().Is4In6() && pfx.Bits() >= 96 {
			// Addresses are checked unmapped (::ffff:10.0.0.1 is 10.0.0.1).
			pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
		}
		if pfx.Masked() != pfx {
			return fmt.Errorf("controller address %q: host bits set (did you mean %s?)", s, pfx.Masked())
		}
		p.prefixes = append(p.prefixes, pfx)
		if pfx.IsSingleIP() {
			p.exact = append(p.exact, pfx.Addr())
		}
		return nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("controller address %q: zones are not supported", s)
		}
		ip = ip.Unmap()
		p.prefixes = append(p.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
		p.exact = append(p.exact, ip)
		return nil
	}
	host := normHost(s)
	if !validHostName(host) {
		return fmt.Errorf("controller address %q: not an address, a CIDR prefix or a host name", s)
	}
	p.hosts = append(p.hosts, host)
	return nil
}

func normHost(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }

// validHostName accepts DNS names: labels of letters, digits, '-' and '_'.
func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// WithLookup returns a copy of p resolving host names with lookup
// instead of the system resolver: tests map names to addresses with it,
// without DNS.
func (p *AddressPolicy) WithLookup(lookup func(ctx context.Context, host string) ([]netip.Addr, error)) *AddressPolicy {
	q := AddressPolicy{}
	if p != nil {
		q = *p
	}
	q.lookup = lookup
	return &q
}

// String lists the entries, "default" for none.
func (p *AddressPolicy) String() string {
	if p.isDefault() {
		return "default"
	}
	var out []string
	for _, pfx := range p.prefixes {
		out = append(out, pfx.String())
	}
	return strings.Join(append(out, p.hosts...), ",")
}

func (p *AddressPolicy) isDefault() bool {
	return p == nil || len(p.prefixes) == 0 && len(p.hosts) == 0
}

// Check returns nil when the policy allows connecting to ip for host (the
// name in the URL, "" when the URL holds the address itself), else a
// Permanent *Error naming the address, the reason and the setting.
func (p *AddressPolicy) Check(host string, ip netip.Addr) error {
	ip = ip.WithZone("").Unmap()
	if reason := p.refusal(normHost(host), ip); reason != "" {
		return p.refused(host, ip, reason)
	}
	return nil
}

func (p *AddressPolicy) refused(host string, ip netip.Addr, reason string) *Error {
	what := ip.String()
	if host != "" && host != what {
		what = fmt.Sprintf("%s (%s)", ip, host)
	}
	return Errorf(KindPermanent, "controller address %s refused: %s; the operator's %s decides which addresses wimd may reach", what, reason, AddressFlag)
}

func (p *AddressPolicy) refusal(host string, ip netip.Addr) string {
	if reason := p.classRefusal(ip); reason != "" {
		return reason
	}
	// An IPv6 address that carries an IPv4 one (NAT64, 6to4) reaches it
	// through a translator: the IPv4 address must pass too.
	if v4, ok := embeddedV4(ip); ok {
		if reason := p.classRefusal(v4); reason != "" {
			return reason + ", inside " + ip.String()
		}
	}
	if p.isDefault() {
		return ""
	}
	if host != "" && slices.Contains(p.hosts, host) {
		return ""
	}
	for _, pfx := range p.prefixes {
		if pfx.Contains(ip) {
			return ""
		}
	}
	return "not in the allowed list " + p.String()
}

// classRefusal refuses the kinds of addresses no list makes reachable
// (but metadata addresses listed exactly), and link-local ones by
// default.
func (p *AddressPolicy) classRefusal(ip netip.Addr) string {
	switch {
	case !ip.IsValid() || ip.IsUnspecified():
		return "an unspecified address"
	case ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "a multicast or broadcast address"
	}
	if slices.Contains(metadataAddrs, ip) && (p == nil || !slices.Contains(p.exact, ip)) {
		return "a cloud metadata address (allowed only when listed by exact address)"
	}
	if p.isDefault() {
		for _, pfx := range linkLocal {
			if pfx.Contains(ip) {
				return "a link-local address (not allowed by default)"
			}
		}
	}
	return ""
}

// nat64 and sixToFour are the IPv6 prefixes that carry an IPv4 address.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embeddedV4 returns the IPv4 address a NAT64 or 6to4 address carries.
func embeddedV4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// Resolve returns the addresses of host (the address itself for a
// literal), with the policy's resolver.
func (p *AddressPolicy) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{ip}, nil
	}
	if p != nil && p.lookup != nil {
		return p.lookup(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Allowed filters the addresses of host the policy allows, and returns
// the refusal of the first one when it allows none.
func (p *AddressPolicy) Allowed(host string, ips []netip.Addr) ([]netip.Addr, error) {
	var ok []netip.Addr
	var first error
	for _, ip := range ips {
		if err := p.Check(host, ip); err != nil {
			first = cmpOr(first, err)
			continue
		}
		ok = append(ok, ip)
	}
	if len(ok) == 0 && first == nil {
		first = Errorf(KindRetryable, "controller host %s: no address", host)
	}
	if len(ok) == 0 {
		return nil, first
	}
	return ok, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// CheckHost is the check when a URL is written: it resolves host and
// refuses it when the policy allows none of its addresses. A name that
// does not resolve passes: DNS at that time is only advice, the check
// when connecting (DialContext) is the guard.
func (p *AddressPolicy) CheckHost(ctx context.Context, host string) error {
	ips, err := p.Resolve(ctx, host)
	if err != nil || len(ips) == 0 {
		return nil
	}
	_, err = p.Allowed(host, ips)
	return err
}

// DialContext returns a dial function for an http.Transport that resolves
// the host itself, keeps the addresses the policy allows and connects to
// those only, in order, with d. A host none of whose addresses is allowed
// gets the Permanent refusal: no connection is attempted.
func (p *AddressPolicy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := p.Resolve(ctx, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		if _, err := netip.ParseAddr(host); err == nil {
			host = "" // the URL names the address, not a host
		}
		ok, err := p.Allowed(host, ips)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, ip := range ok {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		return nil, errors.Join(errs...)
	}
}
