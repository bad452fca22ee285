package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wimro/wimro/internal/yamljson"
)

// masked replaces secrets in the debug output.
const masked = "********"

// session is one command's connection settings and output options.
type session struct {
	c      *CLI
	g      *globals
	base   string // scheme://host:port
	token  string
	client *http.Client
	// dcNames are the datacenters' names by uuid, once loadNames read them.
	dcNames map[string]string
}

func (c *CLI) env(key, def string) string {
	if v := c.Getenv(key); v != "" {
		return v
	}
	return def
}

func (c *CLI) session(g *globals) (*session, error) {
	base, err := c.baseURL()
	if err != nil {
		return nil, err
	}
	client, err := c.httpClient(g.caFile)
	if err != nil {
		return nil, err
	}
	return &session{c: c, g: g, base: base, token: c.Getenv("WIMRO_API_TOKEN"), client: client}, nil
}

// baseURL is the server's scheme://host:port. OPENMANO_HOST is a host name
// or address (http, port OPENMANO_PORT), or a URL http[s]://host[:port]
// whose port defaults to OPENMANO_PORT.
func (c *CLI) baseURL() (string, error) {
	host, port := c.env("OPENMANO_HOST", "localhost"), c.env("OPENMANO_PORT", "9090")
	if !strings.Contains(host, "://") {
		return "http://" + net.JoinHostPort(host, port), nil
	}
	u, err := url.Parse(host)
	if err == nil && u.User != nil {
		host = u.Redacted() // never print a password
	}
	switch {
	case err != nil:
		return "", cliErrorf("OPENMANO_HOST %q: %v", host, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", cliErrorf("OPENMANO_HOST %q: the scheme must be http or https", host)
	case u.Hostname() == "":
		return "", cliErrorf("OPENMANO_HOST %q: no host", host)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", cliErrorf("OPENMANO_HOST %q: only scheme://host[:port] is allowed", host)
	}
	if u.Port() != "" {
		port = u.Port()
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port), nil
}

// httpClient is CLI.HTTP, else a client with a 2 minute timeout trusting
// the system's CAs and those of caFile.
func (c *CLI) httpClient(caFile string) (*http.Client, error) {
	if c.HTTP != nil {
		return c.HTTP, nil
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, cliErrorf("--ca-file: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, cliErrorf("--ca-file %s: no PEM certificate in it", caFile)
		}
		tlsConf.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	return &http.Client{Timeout: 2 * time.Minute, Transport: tr}, nil
}

func (s *session) tenant() (string, error) {
	t := s.c.Getenv("OPENMANO_TENANT")
	if t == "" {
		return "", cliErrorf("'OPENMANO_TENANT' environment variable is not set")
	}
	return t, nil
}

// tenantOrAny is "any" with --all, else the current tenant.
func (s *session) tenantOrAny(all bool) (string, error) {
	if all {
		return "any", nil
	}
	return s.tenant()
}

// wim returns the WIM named on the command line, else OPENMANO_WIM.
func (s *session) wim(args []string) (string, error) {
	if len(args) > 0 && args[0] != "" {
		return args[0], nil
	}
	if w := s.c.Getenv("OPENMANO_WIM"); w != "" {
		return w, nil
	}
	return "", cliErrorf("neither 'OPENMANO_WIM' environment variable is set nor a WIM argument was given")
}

// tenantWIM is tenantOrAny(all) and the WIM of wim(args).
func (s *session) tenantWIM(all bool, args []string) (tenant, wim string, err error) {
	if tenant, err = s.tenantOrAny(all); err != nil {
		return "", "", err
	}
	if wim, err = s.wim(args); err != nil {
		return "", "", err
	}
	return tenant, wim, nil
}

func (s *session) verbose() int { return s.g.verbose }

// response is a 200 answer of the server: the body as sent, and decoded.
type response struct {
	raw []byte
	doc any
}

func seg(parts ...string) string {
	var b strings.Builder
	b.WriteString("/openmano")
	for _, p := range parts {
		b.WriteString("/")
		b.WriteString(url.PathEscape(p))
	}
	return b.String()
}

// call sends one request and prints its answer with table (see emit).
func (s *session) call(ctx context.Context, method, path string, body any, table func(doc any)) error {
	r, err := s.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	s.emit(r, table)
	return nil
}

// do sends one request. A non-200 answer is an *apiError carrying the
// server's error. The warnings of any answer are printed on stderr.
func (s *session) do(ctx context.Context, method, path string, body any) (*response, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, cliErrorf("encode request: %v", err)
		}
	}
	u := s.base + path
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(raw))
	if err != nil {
		return nil, cliErrorf("%v", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if s.g.debug {
		s.debugRequest(req, raw)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &connError{addr: s.base, err: err}
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &connError{addr: s.base, err: err}
	}
	if s.g.debug {
		fmt.Fprintf(s.c.Stderr, "< %s\n", resp.Status)
		for _, k := range sortedKeys(resp.Header) {
			fmt.Fprintf(s.c.Stderr, "< %s: %s\n", k, strings.Join(resp.Header[k], ", "))
		}
		s.debugBody("<", out)
	}
	s.printWarnings(resp.Header.Values("Warning"))
	doc, docErr := yamljson.DecodeJSON(out)
	if resp.StatusCode != http.StatusOK {
		return nil, newAPIError(resp, out)
	}
	if docErr != nil {
		return nil, cliErrorf("cannot parse the server's answer: %v", docErr)
	}
	return &response{raw: out, doc: doc}, nil
}

// printWarnings prints the text of each Warning header of the answer
// (299 - "unknown key ... (ignored)", ...) as "warning: ..." on stderr, so
// that stdout keeps only the answer.
func (s *session) printWarnings(headers []string) {
	for _, h := range headers {
		fmt.Fprintf(s.c.Stderr, "warning: %s\n", warningText(h))
	}
}

// warningText is the quoted text of a Warning header value (code, agent,
// "text"), unescaped; a value of another shape is shown whole.
func warningText(h string) string {
	_, rest, ok := strings.Cut(h, ` "`)
	if !ok {
		return h
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case c == '\\' && i+1 < len(rest):
			i++
			b.WriteByte(rest[i])
		case c == '"':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// newAPIError reads the server's {"error": {...}} answer; an answer
// without one (a proxy's page, ...) is described by its status and text.
func newAPIError(resp *http.Response, body []byte) *apiError {
	var e struct {
		Error struct {
			Type        string `json:"type"`
			Description string `json:"description"`
			Field       string `json:"field"`
		} `json:"error"`
	}
	ae := &apiError{status: resp.StatusCode, errorType: resp.Status, retryAfter: -1}
	if secs, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && secs >= 0 {
		ae.retryAfter = time.Duration(secs) * time.Second
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Description != "" {
		ae.desc, ae.field = e.Error.Description, e.Error.Field
		if e.Error.Type != "" {
			ae.errorType = e.Error.Type
		}
		return ae
	}
	ae.desc = resp.Status
	if text := strings.TrimSpace(string(body)); text != "" {
		ae.desc += ": " + text
	}
	return ae
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (s *session) debugRequest(req *http.Request, body []byte) {
	fmt.Fprintf(s.c.Stderr, "> %s %s\n", req.Method, req.URL)
	for _, k := range sortedKeys(req.Header) {
		v := strings.Join(req.Header[k], ", ")
		if k == "Authorization" {
			v = "Bearer " + masked
		}
		fmt.Fprintf(s.c.Stderr, "> %s: %s\n", k, v)
	}
	if len(body) > 0 {
		s.debugBody(">", body)
	}
}

// debugBody prints a body with every "password" value and the token masked.
func (s *session) debugBody(prefix string, body []byte) {
	text := maskSecrets(body)
	if s.token != "" {
		text = strings.ReplaceAll(text, s.token, masked)
	}
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(s.c.Stderr, "%s %s\n", prefix, line)
	}
}

var passwordText = regexp.MustCompile(`(?i)("?[a-z_-]*password"?\s*[:=]\s*)("(?:[^"\\]|\\.)*"|[^\s,}]+)`)

// maskSecrets returns body with the value of every key containing
// "password" replaced by ********.
func maskSecrets(body []byte) string {
	doc, err := yamljson.DecodeJSON(body)
	if err != nil {
		return passwordText.ReplaceAllString(string(body), `${1}"`+masked+`"`)
	}
	b, err := json.MarshalIndent(maskValue(doc), "", "    ")
	if err != nil {
		return passwordText.ReplaceAllString(string(body), `${1}"`+masked+`"`)
	}
	return string(b)
}

func maskValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if strings.Contains(strings.ToLower(k), "password") && e != nil && e != "" {
				out[k] = masked
				continue
			}
			out[k] = maskValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(e)
		}
		return out
	}
	return v
}
