// Package rest is the HTTP client the controller connectors share: one
// place that turns a connectors.Config into an http.Client (per-request
// timeout, TLS with an optional CA file or no verification, basic or bearer
// auth), sends a request, reads the reply in full, and classifies transport
// failures and HTTP statuses into connectors.Error kinds, with the
// controller's Retry-After hint on 429 and 503. It connects only where
// the Config's connectors.AddressPolicy allows, checked on the resolved
// addresses of every connection and on every redirect; controller text
// reaches errors only through Clip. A request that changes the
// controller (POST, PUT, PATCH, DELETE) is sent only if the fence its
// context carries (connectors.WithFence) holds as its first byte is
// written, whatever the way to the controller (direct, TLS, an HTTP or
// SOCKS proxy; fence.go); such requests speak HTTP/1.1 on connections of
// their own. The RESTCONF helpers (media type, key escaping,
// ietf-restconf:errors bodies, reading a member back) live here too, for
// the ietfl2vpn, tapi, l2nm, l3nm and ietfl3vpn connectors.
//
// Connector settings read from the account config, then the WIM config:
//
//	timeout_ms            per-request timeout (default 30000)
//	ca_file               PEM file of CA certificates to trust
//	insecure_skip_verify  do not verify the controller's TLS certificate (false)
//	bearer_token          bearer token, sent when the account has no user
//	auth                  "crosswork": a JWT from Cisco Crosswork's single sign-on,
//	                      bought with the account's user and password (sso.go)
//
// The password and the token never appear in an error or a log line.
package rest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
)

// MaxReply bounds the bytes read from one reply; a controller answering
// more is cut short (the connectors only read small documents).
const MaxReply = 4 << 20

// DefaultTimeout is the per-request timeout when timeout_ms is not set.
const DefaultTimeout = 30 * time.Second

// Client sends requests to one controller. It is safe for concurrent use.
type Client struct {
	// Name prefixes every error message (the connector's type).
	name string
	base string
	http *http.Client
	// writes sends the requests that change the controller (fence.go).
	writes   *http.Client
	timeout  time.Duration
	user     string
	password string
	token    string
	agent    string
	// sso, when set (setting auth "crosswork"), gets the bearer token
	// from Crosswork's single sign-on.
	sso *sso
}

// New builds the client for cfg, named name in its errors. It contacts
// nothing; a URL that is not http(s) and invalid settings are Permanent
// errors naming the setting.
func New(name string, cfg connectors.Config) (*Client, error) {
	base := strings.TrimRight(cfg.URL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, connectors.Errorf(connectors.KindPermanent, "%s: wim_url %q is not an http(s) URL", name, redact(cfg.URL))
	}
	timeoutMS, err := cfg.IntSetting("timeout_ms", int(DefaultTimeout/time.Millisecond))
	if err != nil {
		return nil, err
	}
	if timeoutMS <= 0 {
		return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"timeout_ms\" must be positive, got %d", name, timeoutMS)
	}
	caFile, err := cfg.StringSetting("ca_file", "")
	if err != nil {
		return nil, err
	}
	insecure, err := cfg.BoolSetting("insecure_skip_verify", false)
	if err != nil {
		return nil, err
	}
	token, err := cfg.StringSetting("bearer_token", "")
	if err != nil {
		return nil, err
	}
	auth, err := cfg.StringSetting("auth", "")
	if err != nil {
		return nil, err
	}
	switch {
	case auth != "" && auth != AuthCrosswork:
		return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"auth\" must be %q or absent, got %q", name, AuthCrosswork, auth)
	case auth == AuthCrosswork && cfg.User == "":
		return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"auth\" %q needs the account's user and password", name, AuthCrosswork)
	}
	policy := cfg.Addresses
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		// A literal address is refused now, not at the first request.
		if err := policy.Check("", ip); err != nil {
			return nil, connectors.Errorf(connectors.KindPermanent, "%s: wim_url: %w", name, err)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Every connection, redirects and proxies included, goes through the
	// address policy after DNS resolution (connectors.AddressPolicy).
	dial := policy.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	tr.DialContext = dial
	tr.Proxy = checkedProxy(policy, tr.Proxy)
	if caFile != "" || insecure {
		tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // the operator's explicit choice
		if caFile != "" {
			pem, err := ReadCAFile(caFile)
			if err != nil {
				return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"ca_file\": %w", name, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, connectors.Errorf(connectors.KindPermanent, "%s: config \"ca_file\": %s holds no PEM certificate", name, caFile)
			}
			tlsCfg.RootCAs = pool
		}
		tr.TLSClientConfig = tlsCfg
	}
	c := &Client{
		name:     name,
		base:     base,
		http:     &http.Client{Transport: tr, CheckRedirect: checkRedirect(policy)},
		writes:   &http.Client{Transport: fencedTransport(tr, dial), CheckRedirect: checkRedirect(policy)},
		timeout:  time.Duration(timeoutMS) * time.Millisecond,
		user:     cfg.User,
		password: cfg.Password,
		agent:    cmp.Or(cfg.UserAgent, connectors.DefaultUserAgent),
		token:    token,
	}
	if auth == AuthCrosswork {
		c.sso = newSSO(base)
	}
	return c, nil
}

// MaxCAFile is the largest ca_file read: a bundle of every public CA is
// about 200 KiB.
const MaxCAFile = 1 << 20

// ReadCAFile reads a CA file: a regular file of at most MaxCAFile bytes.
// It is opened without blocking and checked before a byte is read, so a
// FIFO, a device such as /dev/zero or a directory is refused at once
// instead of hanging or filling the memory.
func ReadCAFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Check again what was opened: the path may have been replaced.
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxCAFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxCAFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxCAFile)
	}
	return b, nil
}

// Base returns the controller's base URL, without a trailing slash.
func (c *Client) Base() string { return c.base }

// Controller names the controller for lock names (which are hashed into
// database lock keys and quoted in errors): the base URL without user info
// (it may hold a password), the host lower-cased and the scheme's default
// port made explicit, so that WIMs spelling one controller's URL
// differently share its locks.
func (c *Client) Controller() string {
	u, err := url.Parse(c.base)
	if err != nil {
		return redact(c.base)
	}
	u.User = nil
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	u.Host = net.JoinHostPort(strings.ToLower(u.Hostname()), port)
	u.Path = strings.TrimRight(u.Path, "/")
	return u.String()
}

// Request is one request to the controller.
type Request struct {
	Method string
	// Path is appended to the base URL; it must be escaped already.
	Path string
	// Body is sent as is; JSON sets it from a value.
	Body        []byte
	ContentType string
	// Accept defaults to application/json.
	Accept string
}

// Reply is a controller reply read in full.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// OK reports a 2xx reply.
func (r Reply) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// Do sends req with the per-request timeout and the account's credentials
// (with auth "crosswork" the JWT of Crosswork's single sign-on, sent once
// more with a fresh one when refused; else basic auth when the account has
// a user, else the bearer token, if any).
// Every reply, whatever its status, is returned for the caller to judge;
// the error is for a request that got no complete reply, classified by
// connectors.KindOf (Retryable for timeouts, refused or reset
// connections and a cancelled ctx). op names the operation in messages.
func (c *Client) Do(ctx context.Context, op string, req Request) (Reply, error) {
	if c.sso == nil {
		return c.send(ctx, op, req, "")
	}
	jwt, err := c.sso.token(ctx, c, op, "")
	if err != nil {
		return Reply{}, err
	}
	r, err := c.send(ctx, op, req, jwt)
	if err == nil && (r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden) {
		// Refused before anything was done: safe to send again, once,
		// with a fresh token.
		if jwt, err = c.sso.token(ctx, c, op, jwt); err != nil {
			return Reply{}, err
		}
		r, err = c.send(ctx, op, req, jwt)
	}
	return r, err
}

// send is Do with bearer, when not empty, as the credentials.
func (c *Client) send(ctx context.Context, op string, req Request, bearer string) (Reply, error) {
	if err := ctx.Err(); err != nil {
		return Reply{}, connectors.Errorf(connectors.KindRetryable, "%s %s: %w", c.name, op, err)
	}
	client, write := c.http, mutating(req.Method)
	if write {
		// A process that lost its lease while it waited (a pause, a slow
		// step before) sends nothing, and dials nothing; the connection
		// checks again right before the first byte leaves (fence.go).
		if err := connectors.Fence(ctx); err != nil {
			return Reply{}, c.notSent(connectors.KindRetryable, op, req, err)
		}
		client = c.writes
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var fence *sendFence
	if write {
		var cancelFence context.CancelCauseFunc
		ctx, cancelFence, fence = withSendFence(ctx)
		defer cancelFence(nil)
	}
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.base+req.Path, body)
	if err != nil {
		return Reply{}, connectors.Errorf(connectors.KindPermanent, "%s %s: building the request: %w", c.name, op, err)
	}
	if req.ContentType != "" {
		hr.Header.Set("Content-Type", req.ContentType)
	}
	accept := req.Accept
	if accept == "" {
		accept = "application/json"
	}
	hr.Header.Set("Accept", accept)
	hr.Header.Set("User-Agent", c.agent)
	switch {
	case bearer != "":
		hr.Header.Set("Authorization", "Bearer "+bearer)
	case c.user != "":
		hr.SetBasicAuth(c.user, c.password)
	case c.token != "":
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := client.Do(hr)
	if err != nil {
		if fence != nil {
			if kind, ferr := fence.refused(); ferr != nil {
				return Reply{}, c.notSent(kind, op, req, ferr)
			}
		}
		return Reply{}, connectors.Errorf(connectors.KindOf(err), "%s %s: %s %s: %w", c.name, op, req.Method, req.Path, stripURL(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxReply))
	if err != nil {
		return Reply{}, connectors.Errorf(connectors.KindOf(err), "%s %s: reading the reply: %w", c.name, op, err)
	}
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// notSent is the error of a request its fence (or its connection) kept
// from being sent: nothing reached the controller.
func (c *Client) notSent(kind connectors.Kind, op string, req Request, err error) error {
	return connectors.Errorf(kind, "%s %s: %s %s not sent: %w", c.name, op, req.Method, req.Path, err)
}

// mutating reports whether a request of method may change the controller.
func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// JSON sends in (nil for no body) as JSON with the given content type
// ("application/json" when empty) and returns the reply.
func (c *Client) JSON(ctx context.Context, op, method, path, contentType string, in any) (Reply, error) {
	req := Request{Method: method, Path: path, Accept: contentType}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return Reply{}, connectors.Errorf(connectors.KindPermanent, "%s %s: encoding the request: %w", c.name, op, err)
		}
		req.Body = b
		req.ContentType = contentType
		if req.ContentType == "" {
			req.ContentType = "application/json"
		}
	}
	return c.Do(ctx, op, req)
}

// Decode unmarshals a reply body into out, with a Permanent error naming op
// when the controller sent something that is not the expected JSON.
func (c *Client) Decode(op string, r Reply, out any) error {
	if err := json.Unmarshal(r.Body, out); err != nil {
		return connectors.Errorf(connectors.KindPermanent, "%s %s: the controller replied %d with a body that is not the expected JSON (%s): %v", c.name, op, r.Status, c.Snippet(r.Body), err)
	}
	return nil
}

// Error returns the classified error for a non-2xx reply: its kind comes
// from connectors.KindForStatus, and its text carries detail, or the start
// of the body when detail is empty. Controller text in detail must have
// been through Clip already. On 429 and 503 the error carries the reply's
// Retry-After (see RetryAfter).
func (c *Client) Error(op string, r Reply, detail string) error {
	if detail == "" {
		detail = c.Snippet(r.Body)
	}
	detail = c.mask(detail)
	var e *connectors.Error
	if detail == "" {
		e = connectors.HTTPError(r.Status, "%s %s: HTTP %d %s", c.name, op, r.Status, http.StatusText(r.Status))
	} else {
		e = connectors.HTTPError(r.Status, "%s %s: HTTP %d: %s", c.name, op, r.Status, detail)
	}
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		e.RetryAfter = RetryAfter(r.Header, time.Now())
	}
	return e
}

// RetryAfter reads the Retry-After header of a reply received at now
// (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date taken relative to the
// reply's Date header when it has a valid one (the controller's clock),
// else to now. A date in the past, a missing header and anything else
// (negative or fractional numbers, units, garbage) give 0; a delay above
// connectors.MaxRetryAfter, including numbers too big for any integer,
// gives connectors.MaxRetryAfter.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	// ParseUint takes digits only: no sign, point, unit or underscore.
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if err != nil || n > uint64(connectors.MaxRetryAfter/time.Second) {
			return connectors.MaxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if date, err := http.ParseTime(h.Get("Date")); err == nil {
		now = date
	}
	// Sub saturates instead of overflowing on absurd dates.
	return min(max(at.Sub(now), 0), connectors.MaxRetryAfter)
}

// MaxSnippet bounds, in bytes, the controller text Clip quotes: an
// excerpt to recognise the answer by, not the answer itself (a URL
// pointing where it should not must not turn wimd into a reader of that
// place: issue #30).
const MaxSnippet = 200

// Snippet returns the start of a body for an error message: Clip with
// MaxSnippet.
func Snippet(b []byte) string { return Clip(string(b), MaxSnippet) }

// Snippet is the package's Snippet with the account's password and
// bearer token (and their basic-auth encoding) masked, in case the
// controller echoes them; masked before the cut, so that no head of a
// secret is left at the end.
func (c *Client) Snippet(b []byte) string { return Snippet([]byte(c.mask(string(b)))) }

// mask replaces the client's secrets in s.
func (c *Client) mask(s string) string {
	var tickets []string
	if c.sso != nil {
		tickets = c.sso.secrets()
	}
	return c.maskWith(s, tickets...)
}

// maskWith replaces the password, the bearer token and more secrets in s.
func (c *Client) maskWith(s string, more ...string) string {
	var secrets []string
	if c.password != "" {
		secrets = append(secrets, c.password, base64.StdEncoding.EncodeToString([]byte(c.user+":"+c.password)), url.QueryEscape(c.password))
	}
	if c.token != "" {
		secrets = append(secrets, c.token)
	}
	for _, x := range append(secrets, more...) {
		if x != "" {
			s = strings.ReplaceAll(s, x, "********")
		}
	}
	return s
}

// Clip is the one helper that makes controller text s fit to quote in an
// error message, which ends up in error_msg, status_msg, events and
// reconcile output: valid UTF-8 without NUL bytes (wimro.CleanText:
// PostgreSQL refuses both), one line (every run of white space, control
// and format characters, such as newlines, escapes and bidi overrides,
// becomes one space), trimmed; when longer than n bytes, its first n
// bytes at most, cut on a rune boundary, then "…".
func Clip(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(wimro.CleanText(s, 0), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}), " ")
	if len(s) > n {
		s = wimro.Truncate(s, n) + "…"
	}
	return s
}

// stripURL keeps a *url.Error's cause without the URL, which may carry
// credentials in its user info and is already named by the path.
func stripURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// maxRedirects is how many redirects a request follows, as net/http.
const maxRedirects = 10

// checkRedirect refuses a redirect to an address the policy refuses
// before it is followed: a literal address is checked here, a name when
// it is resolved to connect (DialContext).
func checkRedirect(policy *connectors.AddressPolicy) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return connectors.Errorf(connectors.KindPermanent, "stopped after %d redirects", maxRedirects)
		}
		if ip, err := netip.ParseAddr(strings.Trim(req.URL.Hostname(), "[]")); err == nil {
			if err := policy.Check("", ip); err != nil {
				return connectors.Errorf(connectors.KindPermanent, "redirect refused: %w", err)
			}
		}
		return nil
	}
}

// checkedProxy keeps the environment's proxy (HTTPS_PROXY, ...) but
// refuses a request whose target the policy refuses: through a proxy
// wimd does not connect to the target itself, so the target's addresses
// are checked as wimd resolves them (the proxy is checked when dialed).
func checkedProxy(policy *connectors.AddressPolicy, proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		if proxy == nil {
			return nil, nil
		}
		u, err := proxy(req)
		if u == nil || err != nil {
			return u, err
		}
		host := req.URL.Hostname()
		ips, err := policy.Resolve(req.Context(), host)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			host = ""
		}
		for _, ip := range ips {
			if err := policy.Check(host, ip); err != nil {
				return nil, err
			}
		}
		return u, nil
	}
}
