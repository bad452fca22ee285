package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
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

	"go.yaml.in/yaml/v3"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit statuses. openmano used the HTTP status (which does not fit in a
// byte: 404 became 148) and negative numbers (which became 251..255); this
// client uses a small fixed table instead, printed by "openmano help".
const (
	exitOK          = 0   // the server answered 200
	exitServer      = 1   // the server answered an error; its description is on stderr
	exitUsage       = 2   // bad command line
	exitConnection  = 3   // the server could not be reached
	exitCLI         = 4   // client-side error: unreadable file, OPENMANO_TENANT unset, ...
	exitAborted     = 5   // a confirmation prompt was declined: nothing was changed
	exitInterrupted = 130 // Ctrl-C / SIGTERM
)

// CLI is the openmano command line: a testable type with injected streams,
// environment and HTTP client; main only wires it to the process.
type CLI struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	Getenv func(string) string
	HTTP   *http.Client // nil: a client with a 2 minute timeout
}

// masked replaces secrets in the debug output.
const masked = "********"

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

type cliError struct{ msg string }

func (e *cliError) Error() string { return e.msg }

func cliErrorf(format string, a ...any) error { return &cliError{msg: fmt.Sprintf(format, a...)} }

type connError struct {
	addr string
	err  error
}

func (e *connError) Error() string {
	msg := fmt.Sprintf("Connection error: not possible to contact OPENMANO-SERVER (wimd) at %s: %v", e.addr, e.err)
	if untrustedCertificate(e.err) {
		msg += "\nThe server's certificate is not trusted: give the CA that signed it with --ca-file or OPENMANO_CA_FILE."
	}
	return msg
}

// untrustedCertificate says whether err is a failed verification of the
// server's certificate.
func untrustedCertificate(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// apiError is a non-200 answer of the server.
type apiError struct {
	status int
	desc   string
}

func (e *apiError) Error() string { return e.desc }

var errAborted = errors.New("Aborted")

// globals are the flags every command takes.
type globals struct {
	verbose countFlag
	debug   bool
	output  string
	caFile  string
}

// countFlag is a repeatable boolean flag: -v -v (or -vv) is 2.
type countFlag int

func (c *countFlag) String() string   { return strconv.Itoa(int(*c)) }
func (c *countFlag) IsBoolFlag() bool { return true }
func (c *countFlag) Set(s string) error {
	if n, err := strconv.Atoi(s); err == nil && s != "1" && s != "0" {
		*c = countFlag(n)
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if b {
		*c++
	}
	return nil
}

// runFunc runs a command with its positional arguments.
type runFunc func(ctx context.Context, s *session, args []string) error

// command is one subcommand: setup defines its own flags on fs and returns
// the function that runs it.
type command struct {
	name    string
	args    string
	summary string
	min     int
	max     int // -1: no limit
	setup   func(fs *flag.FlagSet) runFunc
}

var aliases = map[string]string{
	"wim-port-mapping-set":   "wim-port-mapping-create",
	"wim-port-mapping-clear": "wim-port-mapping-delete",
}

func findCommand(name string) *command {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// Run runs the command in args and returns the process exit status.
func (c *CLI) Run(ctx context.Context, args []string) int {
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Stdin == nil {
		c.Stdin = strings.NewReader("")
	}
	name, cmdArgs, lead := splitCommand(args)
	if name == "" {
		for _, a := range lead {
			switch a {
			case "-h", "--help", "-help":
				c.usage(c.Stdout)
				return exitOK
			case "--version", "-version":
				fmt.Fprintf(c.Stdout, "openmano (wimro) %s\n", version)
				return exitOK
			}
		}
		c.usage(c.Stderr)
		return exitUsage
	}
	cmd := findCommand(name)
	if cmd == nil {
		fmt.Fprintf(c.Stderr, "openmano: unknown command %q\nRun 'openmano help' for the list of commands.\n", name)
		return exitUsage
	}
	return c.exit(cmd.name, c.runCommand(ctx, cmd, cmdArgs))
}

// splitCommand finds the command name; global flags given before it are
// moved after it.
func splitCommand(args []string) (name string, rest, lead []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o" || a == "--output" || a == "-output":
			lead = append(lead, a)
			if i+1 < len(args) {
				i++
				lead = append(lead, args[i])
			}
		case strings.HasPrefix(a, "-") && a != "-":
			lead = append(lead, a)
		default:
			return a, append(lead, args[i+1:]...), lead
		}
	}
	return "", nil, lead
}

// expandVerbose turns -vv and -vvv into repeated -v.
func expandVerbose(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && strings.Trim(a, "v") == "-" {
			for range len(a) - 1 {
				out = append(out, "-v")
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments (as argparse did); "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (c *CLI) newFlagSet(cmd *command, g *globals) *flag.FlagSet {
	fs := flag.NewFlagSet("openmano "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.Usage = func() {}
	fs.Var(&g.verbose, "v", "verbose output; repeat (-vv, -vvv) for more")
	fs.Var(&g.verbose, "verbose", "same as -v")
	fs.BoolVar(&g.debug, "d", false, "print the HTTP exchange on stderr (secrets masked)")
	fs.BoolVar(&g.debug, "debug", false, "same as -d")
	fs.StringVar(&g.output, "o", "table", "output format: table, json or yaml")
	fs.StringVar(&g.output, "output", "table", "same as -o")
	fs.StringVar(&g.caFile, "ca-file", c.Getenv("OPENMANO_CA_FILE"), "PEM file of the CA(s) to trust for an https:// OPENMANO_HOST, besides the system's (env OPENMANO_CA_FILE)")
	return fs
}

func (c *CLI) commandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: openmano %s %s\n\n%s\n\nFlags:\n", cmd.name, cmd.args, cmd.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(c.Stderr)
}

func (c *CLI) runCommand(ctx context.Context, cmd *command, args []string) error {
	g := &globals{}
	fs := c.newFlagSet(cmd, g)
	run := cmd.setup(fs)
	pos, err := parseInterspersed(fs, expandVerbose(args))
	if errors.Is(err, flag.ErrHelp) {
		c.commandUsage(c.Stdout, cmd, fs)
		return nil
	}
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	switch g.output {
	case "table", "json", "yaml":
	default:
		return &usageError{msg: fmt.Sprintf("--output %q: must be table, json or yaml", g.output)}
	}
	if len(pos) < cmd.min || (cmd.max >= 0 && len(pos) > cmd.max) {
		return &usageError{msg: fmt.Sprintf("wrong number of arguments (%d)\nUsage: openmano %s %s", len(pos), cmd.name, cmd.args)}
	}
	s, err := c.session(g)
	if err != nil {
		return err
	}
	return run(ctx, s, pos)
}

func (c *CLI) exit(name string, err error) int {
	var ue *usageError
	var ce *connError
	var ae *apiError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(c.Stderr, "openmano %s: %s\nRun 'openmano %s --help' for usage.\n", name, ue.msg, name)
		return exitUsage
	case errors.Is(err, errAborted):
		fmt.Fprintln(c.Stderr, "Aborted")
		return exitAborted
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(c.Stderr, "Interrupted")
		return exitInterrupted
	case errors.As(err, &ce):
		fmt.Fprintln(c.Stderr, ce.Error())
		return exitConnection
	case errors.As(err, &ae):
		fmt.Fprintln(c.Stderr, ae.desc)
		return exitServer
	}
	fmt.Fprintln(c.Stderr, err.Error())
	return exitCLI
}

// session is one command's connection settings and output options.
type session struct {
	c      *CLI
	g      *globals
	base   string // scheme://host:port
	token  string
	client *http.Client
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

func (s *session) verbose() int { return int(s.g.verbose) }

// response is a 200 answer of the server.
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

// do sends one request. A non-200 answer is an *apiError carrying the
// server's error.description.
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
	if resp.StatusCode != http.StatusOK {
		return nil, &apiError{status: resp.StatusCode, desc: errorDescription(resp, out)}
	}
	doc, err := decodeJSON(out)
	if err != nil {
		return nil, cliErrorf("cannot parse the server's answer: %v", err)
	}
	return &response{raw: out, doc: doc}, nil
}

func errorDescription(resp *http.Response, body []byte) string {
	var e struct {
		Error struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Description != "" {
		return e.Error.Description
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return resp.Status
	}
	return resp.Status + ": " + text
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
	doc, err := decodeJSON(body)
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

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// confirm asks a yes/no question on stderr and reads the answer from stdin;
// anything but an answer starting with y is errAborted.
func (s *session) confirm(force bool, question string) error {
	if force {
		return nil
	}
	fmt.Fprintf(s.c.Stderr, "%s (y/N)? ", question)
	line, _ := bufio.NewReader(s.c.Stdin).ReadString('\n')
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(line)), "y") {
		return nil
	}
	return errAborted
}

// loadFileOrYAML is openmano's _load_file_or_yaml: x is a file (YAML, or
// JSON when named .json or holding tabs), or inline YAML/JSON when it
// contains '{' or ':'.
func loadFileOrYAML(x string) (any, error) {
	var doc any
	if st, err := os.Stat(x); err == nil && !st.IsDir() {
		b, err := os.ReadFile(x)
		if err != nil {
			return nil, cliErrorf("%v", err)
		}
		if strings.HasSuffix(x, ".json") || bytes.ContainsRune(b, '\t') {
			if doc, err = decodeJSON(b); err != nil {
				return nil, cliErrorf("%s: invalid JSON: %v", x, err)
			}
			return doc, nil
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, cliErrorf("%s: invalid YAML: %v", x, err)
		}
		return jsonable(doc), nil
	}
	if !strings.ContainsAny(x, "{:") {
		return nil, cliErrorf("'%s' is neither a valid file nor a yaml/json content", x)
	}
	if err := yaml.Unmarshal([]byte(x), &doc); err != nil {
		return nil, cliErrorf("invalid YAML/JSON content: %v", err)
	}
	return jsonable(doc), nil
}

// jsonable turns YAML's generic values into JSON's: map keys become strings.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// yamlable turns json.Number into int64 or float64 for the YAML encoder.
func yamlable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = yamlable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = yamlable(e)
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	}
	return v
}

func (s *session) dumpYAML(doc any) {
	b, err := yaml.Marshal(yamlable(doc))
	if err != nil {
		fmt.Fprintln(s.c.Stdout, doc)
		return
	}
	s.c.Stdout.Write(b)
}

// emit prints a response: verbatim JSON, YAML, or the table form made by
// table (nil: printVerbose at the current verbosity).
func (s *session) emit(r *response, table func(doc any)) {
	switch s.g.output {
	case "json":
		s.c.Stdout.Write(r.raw)
		if len(r.raw) > 0 && r.raw[len(r.raw)-1] != '\n' {
			fmt.Fprintln(s.c.Stdout)
		}
	case "yaml":
		s.dumpYAML(r.doc)
	default:
		if table == nil {
			s.printVerbose(r.doc, s.verbose())
			return
		}
		table(r.doc)
	}
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// printVerbose is openmano's _print_verbose: one line per element,
// "uuid(38) name(20) [status(20)]", with created_at at -v, Type and
// Description at -vv, and the whole answer as YAML at -vvv.
func (s *session) printVerbose(doc any, verbose int) {
	m, ok := doc.(map[string]any)
	if !ok || len(m) != 1 || verbose >= 3 {
		s.dumpYAML(doc)
		return
	}
	for _, v := range m {
		switch x := v.(type) {
		case string:
			fmt.Fprintln(s.c.Stdout, x)
		case []any:
			for _, e := range x {
				s.printItem(e, verbose)
			}
		case map[string]any:
			s.printItem(x, verbose)
		default:
			s.dumpYAML(doc)
		}
	}
}

func (s *session) printItem(e any, verbose int) {
	m, ok := e.(map[string]any)
	if !ok {
		fmt.Fprintln(s.c.Stdout, str(e))
		return
	}
	id := m["uuid"]
	if id == nil {
		id = m["id"]
	}
	if id == nil {
		id = m["vim_id"]
	}
	line := fmt.Sprintf("%-38s %-20s", str(id), str(m["name"]))
	if st, ok := m["status"]; ok && st != nil {
		line += fmt.Sprintf(" %-20s", str(st))
	}
	if verbose >= 1 {
		if c, ok := m["created_at"]; ok && c != nil {
			line += " " + str(c)
		}
	}
	fmt.Fprintln(s.c.Stdout, strings.TrimRight(line, " "))
	if verbose >= 2 {
		if t, ok := m["type"]; ok && t != nil {
			fmt.Fprintf(s.c.Stdout, "  Type: %s\n", str(t))
		}
		if d, ok := m["description"]; ok && d != nil {
			fmt.Fprintf(s.c.Stdout, "  Description: %s\n", str(d))
		}
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// printActions prints instance actions with their progress counters and,
// for a single action, each task.
func (s *session) printActions(doc any) {
	for _, a := range asList(asMap(doc)["actions"]) {
		m := asMap(a)
		line := fmt.Sprintf("%-38s %-20s done=%s tasks=%s failed=%s", str(m["uuid"]), str(m["description"]),
			str(m["number_done"]), str(m["number_tasks"]), str(m["number_failed"]))
		if s.verbose() >= 1 {
			line += " " + str(m["created_at"])
		}
		fmt.Fprintln(s.c.Stdout, line)
		for _, t := range asList(m["vim_wim_actions"]) {
			tm := asMap(t)
			line := fmt.Sprintf("  task %-3s %-7s %-17s %-38s %-10s", str(tm["task_index"]), str(tm["action"]),
				str(tm["item"]), str(tm["item_id"]), str(tm["status"]))
			if e := str(tm["error_msg"]); e != "" {
				line += " " + e
			}
			fmt.Fprintln(s.c.Stdout, strings.TrimRight(line, " "))
		}
	}
}

// printInstance prints an instance line, then its networks, WAN links and
// creating action.
func (s *session) printInstance(doc any) {
	inst := asMap(asMap(doc)["instance"])
	s.printItem(inst, s.verbose())
	for _, n := range asList(inst["networks"]) {
		m := asMap(n)
		name := str(m["sce_net_id"])
		if name == "" {
			name = str(m["vim_name"])
		}
		fmt.Fprintf(s.c.Stdout, "  net      %-38s %-38s %-38s %s\n", str(m["uuid"]), name, str(m["datacenter_id"]), str(m["status"]))
	}
	for _, l := range asList(inst["wan_links"]) {
		m := asMap(l)
		line := fmt.Sprintf("  wan_link %-38s %-38s %s", str(m["uuid"]), str(m["sce_net_id"]), str(m["status"]))
		if e := str(m["error_msg"]); e != "" {
			line += " " + e
		}
		fmt.Fprintln(s.c.Stdout, line)
	}
	if a := str(inst["action_id"]); a != "" {
		fmt.Fprintf(s.c.Stdout, "  action   %s\n", a)
	}
}

// ---------------------------------------------------------------------------
// Commands

var commands []command

func init() {
	commands = []command{
		{name: "tenant-create", args: "NAME [--description D]", summary: "Create an NFVO tenant.", min: 1, max: 1, setup: setupTenantCreate},
		{name: "tenant-list", args: "[NAME]", summary: "List the tenants, or show one.", max: 1, setup: setupTenantList},
		{name: "tenant-delete", args: "NAME [-f]", summary: "Delete a tenant.", min: 1, max: 1, setup: setupTenantDelete},
		{name: "datacenter-create", args: "NAME URL [--type T] [--description D] [--config YAML|file]",
			summary: "Register a datacenter. config.external_connections holds its WAN exit rules, e.g.\n" +
				`--config '{external_connections: [{vim_external_port: {switch: "00:00:00:00:00:00:00:01", port: "1"}}]}'`,
			min: 2, max: 2, setup: setupDatacenterCreate},
		{name: "datacenter-list", args: "[NAME] [-a]", summary: "List the datacenters of OPENMANO_TENANT (all with -a), or show one.", max: 1, setup: setupDatacenterList},
		{name: "datacenter-attach", args: "NAME", summary: "Attach a datacenter to OPENMANO_TENANT.", min: 1, max: 1, setup: setupDatacenterAttach},
		{name: "datacenter-detach", args: "NAME", summary: "Detach a datacenter from OPENMANO_TENANT.", min: 1, max: 1, setup: setupDatacenterDetach},
		{name: "datacenter-delete", args: "NAME [-f]", summary: "Delete a datacenter and its port mappings.", min: 1, max: 1, setup: setupDatacenterDelete},
		{name: "wim-create", args: "NAME URL [--type T] [--description D] [--config YAML|file]",
			summary: "Create a WIM. The server requires a type (fake, dynpac, ietfl2vpn, tapi, onos, onos_vpls, odl, failing);\nconfig may carry wim_port_mapping.",
			min:     2, max: 2, setup: setupWIMCreate},
		{name: "wim-list", args: "[NAME] [-a]", summary: "List the WIMs of OPENMANO_TENANT (all with -a), or show one with its port mappings.", max: 1, setup: setupWIMList},
		{name: "wim-edit", args: "[WIM] --file YAML|file [-f]", summary: "Edit a WIM (PUT /openmano/wims/WIM); the content is wrapped in {\"wim\": ...} if needed.\nWIM defaults to OPENMANO_WIM.", max: 1, setup: setupWIMEdit},
		{name: "wim-delete", args: "NAME [-f]", summary: "Delete a WIM with its accounts and port mappings.", min: 1, max: 1, setup: setupWIMDelete},
		{name: "wim-account-create", args: "[WIM] [--account-name N] [--user U] [--password P] [--config YAML|file]",
			summary: "Attach OPENMANO_TENANT to a WIM through a new account. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupAccountCreate},
		{name: "wim-account-edit", args: "[WIM] [--account-name N] [--user U] [--password P] [--config YAML|file] [-a]",
			summary: "Edit the account attaching OPENMANO_TENANT (every tenant with -a) to a WIM. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupAccountEdit},
		{name: "wim-account-delete", args: "[WIM] [-a] [-f]", summary: "Detach OPENMANO_TENANT (every tenant with -a) from a WIM. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupAccountDelete},
		{name: "wim-port-mapping-create", args: "[WIM] FILE [-f]",
			summary: "Set the port mappings of a WIM from a YAML/JSON list (alias wim-port-mapping-set). Existing mappings are\nreplaced after confirmation. WIM defaults to OPENMANO_WIM.", min: 1, max: 2, setup: setupPortMappingCreate},
		{name: "wim-port-mapping-list", args: "[WIM]", summary: "Show the port mappings of a WIM. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupPortMappingList},
		{name: "wim-port-mapping-delete", args: "[WIM] [-f]", summary: "Delete every port mapping of a WIM (alias wim-port-mapping-clear). WIM defaults to OPENMANO_WIM.", max: 1, setup: setupPortMappingDelete},
		{name: "instance-scenario-create", args: "FILE [--dry-run]",
			summary: "Create an NS instance from a YAML/JSON file or inline content: {\"instance\": {...}} or the inner object.\n--dry-run only shows the WAN links it would create.", min: 1, max: 1, setup: setupInstanceCreate},
		{name: "instance-scenario-list", args: "[NAME]", summary: "List the instances of OPENMANO_TENANT, or show one with its networks and WAN links.", max: 1, setup: setupInstanceList},
		{name: "instance-scenario-delete", args: "NAME [-f]", summary: "Delete an NS instance (its WAN links are deleted by a new action).", min: 1, max: 1, setup: setupInstanceDelete},
		{name: "instance-net-update", args: "INSTANCE NET [--status S] [--encapsulation-type T] [--encapsulation-id N] [--error-msg M]",
			summary: "Report the status or encapsulation of a local network of an instance (NET: uuid, osm_id or VIM name).", min: 2, max: 2, setup: setupNetUpdate},
		{name: "action-list", args: "INSTANCE [ACTION_ID]", summary: "List the actions of an instance with done/tasks/failed counters, or show one with its tasks.", min: 1, max: 2, setup: setupActionList},
		{name: "cluster-list", args: "", summary: "Show the wimd cluster as the server sees it: coordinator, leader, members and the accounts\nassigned to each; the accounts the server owns now (holds the lease of).", setup: setupClusterList},
		{name: "config", args: "", summary: "Print the client configuration (environment).", setup: setupConfig},
		{name: "version", args: "", summary: "Print the client version.", setup: setupVersion},
		{name: "help", args: "[COMMAND]", summary: "Print the usage of openmano or of a command.", max: 1, setup: setupHelp},
	}
}

const usageHead = `openmano - command line client of wimd (openmano-compatible REST API)

Usage: openmano [GLOBAL FLAGS] COMMAND [ARGS] [FLAGS]

Commands:
`

const usageTail = `
Global flags (on every command):
  -v, --verbose        more output; repeatable (-vv, -vvv: the whole answer as YAML)
  -d, --debug          print the HTTP exchange on stderr (Authorization and passwords masked)
  -o, --output FORMAT  table (default), json (the server's answer verbatim) or yaml
  --ca-file FILE       CA(s) to trust for an https:// OPENMANO_HOST (env OPENMANO_CA_FILE)
  -h, --help           usage of the command

Environment:
  OPENMANO_HOST    server host (default localhost), or http[s]://host[:port]
  OPENMANO_PORT    server port (default 9090; a port in OPENMANO_HOST wins)
  OPENMANO_CA_FILE PEM file of the CA(s) to trust for https, besides the system's (or --ca-file)
  OPENMANO_TENANT  current tenant, name or uuid (required by tenant-scoped commands)
  OPENMANO_WIM     default WIM of the wim-edit, wim-account-* and wim-port-mapping-* commands
  WIMRO_API_TOKEN  bearer token sent as "Authorization: Bearer ..." (never printed)

A YAML|file argument is a file (YAML, or JSON when named .json or holding
tabs), or inline YAML/JSON content when it contains '{' or ':'.
Names are sent as typed: the server resolves names and uuids.
Confirmation prompts read stdin; -f/--force skips them.

Exit status:
  0    success (HTTP 200)
  1    the server answered an error; its description is printed on stderr
  2    usage error (unknown command or flag, wrong number of arguments)
  3    connection error: the server could not be reached, or its certificate is not trusted
  4    client error: unreadable file or content, OPENMANO_TENANT or OPENMANO_WIM unset
  5    aborted at a confirmation prompt: nothing was changed
  130  interrupted
`

func (c *CLI) usage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	for _, cmd := range commands {
		first, _, _ := strings.Cut(cmd.summary, "\n")
		fmt.Fprintf(w, "  %-25s %s\n", cmd.name, first)
	}
	fmt.Fprint(w, usageTail)
}

func forceFlag(fs *flag.FlagSet) *bool {
	f := fs.Bool("f", false, "do not ask for confirmation")
	fs.BoolVar(f, "force", false, "same as -f")
	return f
}

func allFlag(fs *flag.FlagSet, help string) *bool {
	a := fs.Bool("a", false, help)
	fs.BoolVar(a, "all", false, "same as -a")
	return a
}

// optional sets key in m when the flag was given on the command line.
func optional(fs *flag.FlagSet, m map[string]any, flagName, key, value string) {
	fs.Visit(func(f *flag.Flag) {
		if f.Name == flagName {
			m[key] = value
		}
	})
}

func setupTenantCreate(fs *flag.FlagSet) runFunc {
	desc := fs.String("description", "", "description of the tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t := map[string]any{"name": args[0]}
		optional(fs, t, "description", "description", *desc)
		r, err := s.do(ctx, "POST", seg("tenants"), map[string]any{"tenant": t})
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupTenantList(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		path := seg("tenants")
		if len(args) == 1 {
			path = seg("tenants", args[0])
		}
		r, err := s.do(ctx, "GET", path, nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupClusterList(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		r, err := s.do(ctx, "GET", "/cluster", nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) {
			m, _ := doc.(map[string]any)
			assigned, _ := m["assignments"].(map[string]any)
			fmt.Fprintf(s.c.Stdout, "coordinator %s, this process %s, leader %s\n", str(m["coordinator"]), str(m["instance_id"]), str(m["leader"]))
			members, _ := m["members"].([]any)
			for _, x := range members {
				mem, _ := x.(map[string]any)
				id := str(mem["id"])
				accts, _ := assigned[id].([]any)
				mark := " "
				if id == str(m["leader"]) {
					mark = "*"
				}
				fmt.Fprintf(s.c.Stdout, "%s %-30s %-24s %5d accounts  since %s\n", mark, id, str(mem["address"]), len(accts), str(mem["started_at"]))
			}
			owned, _ := m["owned"].([]any)
			fmt.Fprintf(s.c.Stdout, "owned by this process: %d accounts\n", len(owned))
		})
		return nil
	}
}

func setupTenantDelete(fs *flag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if err := s.confirm(*force, fmt.Sprintf("Delete tenant %s", args[0])); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg("tenants", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

// configFlag is a --config YAML|file flag: the loaded content.
func loadConfig(arg string) (map[string]any, error) {
	doc, err := loadFileOrYAML(arg)
	if err != nil {
		return nil, err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, cliErrorf("--config: expected a mapping, got %T", doc)
	}
	return m, nil
}

func setupDatacenterCreate(fs *flag.FlagSet) runFunc {
	typ := fs.String("type", "", "VIM type (server default: openvim)")
	desc := fs.String("description", "", "description of the datacenter")
	config := fs.String("config", "", "config as inline YAML/JSON or a file")
	return func(ctx context.Context, s *session, args []string) error {
		d := map[string]any{"name": args[0], "vim_url": args[1]}
		optional(fs, d, "type", "type", *typ)
		optional(fs, d, "description", "description", *desc)
		if *config != "" {
			m, err := loadConfig(*config)
			if err != nil {
				return err
			}
			d["config"] = m
		}
		r, err := s.do(ctx, "POST", seg("datacenters"), map[string]any{"datacenter": d})
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupDatacenterList(fs *flag.FlagSet) runFunc {
	all := allFlag(fs, "the datacenters of every tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		path := seg(t, "datacenters")
		if len(args) == 1 {
			path = seg(t, "datacenters", args[0])
		}
		r, err := s.do(ctx, "GET", path, nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupDatacenterAttach(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "POST", seg(t, "datacenters", args[0]), map[string]any{"datacenter": map[string]any{}})
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupDatacenterDetach(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg(t, "datacenters", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupDatacenterDelete(fs *flag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if err := s.confirm(*force, fmt.Sprintf("Delete datacenter %s", args[0])); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg("datacenters", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupWIMCreate(fs *flag.FlagSet) runFunc {
	typ := fs.String("type", "", "WIM type: fake, dynpac, ietfl2vpn, tapi, onos, onos_vpls, odl or failing (required by the server)")
	desc := fs.String("description", "", "description of the WIM")
	config := fs.String("config", "", "config as inline YAML/JSON or a file (may carry wim_port_mapping)")
	return func(ctx context.Context, s *session, args []string) error {
		w := map[string]any{"name": args[0], "wim_url": args[1]}
		optional(fs, w, "type", "type", *typ)
		optional(fs, w, "description", "description", *desc)
		if *config != "" {
			m, err := loadConfig(*config)
			if err != nil {
				return err
			}
			w["config"] = m
		}
		r, err := s.do(ctx, "POST", seg("wims"), map[string]any{"wim": w})
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupWIMList(fs *flag.FlagSet) runFunc {
	all := allFlag(fs, "the WIMs of every tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			r, err := s.do(ctx, "GET", seg(t, "wims"), nil)
			if err != nil {
				return err
			}
			s.emit(r, nil)
			return nil
		}
		r, err := s.do(ctx, "GET", seg(t, "wims", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) { s.printVerbose(doc, s.verbose()+1) })
		return nil
	}
}

func setupWIMEdit(fs *flag.FlagSet) runFunc {
	file := fs.String("file", "", "the new WIM fields as inline YAML/JSON or a file (required)")
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if *file == "" {
			return &usageError{msg: "At least one argument must be provided to modify the wim: --file"}
		}
		wim, err := s.wim(args)
		if err != nil {
			return err
		}
		doc, err := loadFileOrYAML(*file)
		if err != nil {
			return err
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return cliErrorf("--file: expected a mapping, got %T", doc)
		}
		if _, ok := m["wim"]; !ok {
			m = map[string]any{"wim": m}
		}
		if err := s.confirm(*force, fmt.Sprintf("Edit wim %s", wim)); err != nil {
			return err
		}
		r, err := s.do(ctx, "PUT", seg("wims", wim), m)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) { s.printVerbose(doc, s.verbose()+1) })
		return nil
	}
}

func setupWIMDelete(fs *flag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if err := s.confirm(*force, fmt.Sprintf("Delete wim %s", args[0])); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg("wims", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

// accountFlags defines the fields of a wim_account body.
func accountFlags(fs *flag.FlagSet) func() (map[string]any, error) {
	name := fs.String("account-name", "", "name of the account (server default: the tenant's name)")
	user := fs.String("user", "", "user on the WIM controller")
	password := fs.String("password", "", "password on the WIM controller (stored sealed; never printed)")
	config := fs.String("config", "", "account config as inline YAML/JSON or a file (connector settings)")
	return func() (map[string]any, error) {
		a := map[string]any{}
		optional(fs, a, "account-name", "name", *name)
		optional(fs, a, "user", "user", *user)
		optional(fs, a, "password", "password", *password)
		if *config != "" {
			m, err := loadConfig(*config)
			if err != nil {
				return nil, err
			}
			a["config"] = m
		}
		return a, nil
	}
}

func setupAccountCreate(fs *flag.FlagSet) runFunc {
	body := accountFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		a, err := body()
		if err != nil {
			return err
		}
		t, err := s.tenant()
		if err != nil {
			return err
		}
		wim, err := s.wim(args)
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "POST", seg(t, "wims", wim), map[string]any{"wim_account": a})
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupAccountEdit(fs *flag.FlagSet) runFunc {
	body := accountFlags(fs)
	all := allFlag(fs, "edit the accounts of every tenant attached to the WIM")
	return func(ctx context.Context, s *session, args []string) error {
		a, err := body()
		if err != nil {
			return err
		}
		if len(a) == 0 {
			return &usageError{msg: "At least one argument must be provided to modify the wim account: --account-name, --user, --password or --config"}
		}
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		wim, err := s.wim(args)
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "PUT", seg(t, "wims", wim), map[string]any{"wim_account": a})
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupAccountDelete(fs *flag.FlagSet) runFunc {
	all := allFlag(fs, "detach every tenant from the WIM")
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		wim, err := s.wim(args)
		if err != nil {
			return err
		}
		q := fmt.Sprintf("Detach wim %s from tenant %s", wim, t)
		if *all {
			q = fmt.Sprintf("Detach wim %s from every tenant", wim)
		}
		if err := s.confirm(*force, q); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg(t, "wims", wim), nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

// printMappings prints port mappings as openmano did: YAML.
func (s *session) printMappings(doc any) { s.dumpYAML(doc) }

func setupPortMappingCreate(fs *flag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		file := args[len(args)-1]
		t, err := s.tenant()
		if err != nil {
			return err
		}
		wim, err := s.wim(args[:len(args)-1])
		if err != nil {
			return err
		}
		doc, err := loadFileOrYAML(file)
		if err != nil {
			return err
		}
		if m, ok := doc.(map[string]any); ok && m["wim_port_mapping"] != nil {
			doc = m["wim_port_mapping"]
		}
		if _, ok := doc.([]any); !ok {
			return cliErrorf("%s: expected a list of port mappings", file)
		}
		cur, err := s.do(ctx, "GET", seg(t, "wims", wim, "port_mapping"), nil)
		if err != nil {
			return err
		}
		if len(asList(asMap(cur.doc)["wim_port_mapping"])) > 0 {
			if err := s.confirm(*force, fmt.Sprintf("WIM %s already contains a port mapping. Overwrite?", wim)); err != nil {
				return err
			}
			if _, err := s.do(ctx, "DELETE", seg(t, "wims", wim, "port_mapping"), nil); err != nil {
				return err
			}
		}
		r, err := s.do(ctx, "POST", seg(t, "wims", wim, "port_mapping"), map[string]any{"wim_port_mapping": doc})
		if err != nil {
			return err
		}
		s.emit(r, s.printMappings)
		return nil
	}
}

func setupPortMappingList(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		wim, err := s.wim(args)
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "GET", seg(t, "wims", wim, "port_mapping"), nil)
		if err != nil {
			return err
		}
		s.emit(r, s.printMappings)
		return nil
	}
}

func setupPortMappingDelete(fs *flag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		wim, err := s.wim(args)
		if err != nil {
			return err
		}
		if err := s.confirm(*force, fmt.Sprintf("Clear WIM port mapping for wim %s", wim)); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg(t, "wims", wim, "port_mapping"), nil)
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupInstanceCreate(fs *flag.FlagSet) runFunc {
	dry := fs.Bool("dry-run", false, "only show the WAN links the instance would get (nothing is created)")
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		doc, err := loadFileOrYAML(args[0])
		if err != nil {
			return err
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return cliErrorf("%s: expected a mapping", args[0])
		}
		if _, ok := m["instance"]; !ok {
			m = map[string]any{"instance": m}
		}
		path := seg(t, "instances")
		if *dry {
			path += "?dry_run=true"
		}
		r, err := s.do(ctx, "POST", path, m)
		if err != nil {
			return err
		}
		if *dry {
			s.emit(r, func(doc any) {
				for _, l := range asList(asMap(asMap(doc)["plan"])["wan_links"]) {
					lm := asMap(l)
					var dcs []string
					for _, d := range asList(lm["datacenters"]) {
						dcs = append(dcs, str(d))
					}
					fmt.Fprintf(s.c.Stdout, "%-38s %-20s %-38s %s\n", str(lm["sce_net_id"]), str(lm["wim_name"]), str(lm["wim_account_id"]), strings.Join(dcs, ","))
				}
			})
			return nil
		}
		s.emit(r, s.printInstance)
		return nil
	}
}

func setupInstanceList(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		if len(args) == 0 {
			r, err := s.do(ctx, "GET", seg(t, "instances"), nil)
			if err != nil {
				return err
			}
			s.emit(r, nil)
			return nil
		}
		r, err := s.do(ctx, "GET", seg(t, "instances", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, s.printInstance)
		return nil
	}
}

func setupInstanceDelete(fs *flag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		if err := s.confirm(*force, fmt.Sprintf("Delete scenario instance %s", args[0])); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg(t, "instances", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) {
			m := asMap(doc)
			fmt.Fprintln(s.c.Stdout, str(m["result"]))
			if a := str(m["action_id"]); a != "" {
				fmt.Fprintf(s.c.Stdout, "action %s\n", a)
			}
		})
		return nil
	}
}

func setupNetUpdate(fs *flag.FlagSet) runFunc {
	status := fs.String("status", "", "new status: ACTIVE, BUILD, DOWN, ERROR, ...")
	encType := fs.String("encapsulation-type", "", "none or vlan")
	encID := fs.Int("encapsulation-id", 0, "VLAN id")
	errMsg := fs.String("error-msg", "", "error message of the network")
	return func(ctx context.Context, s *session, args []string) error {
		n := map[string]any{}
		optional(fs, n, "status", "status", *status)
		optional(fs, n, "encapsulation-type", "encapsulation_type", *encType)
		optional(fs, n, "error-msg", "error_msg", *errMsg)
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "encapsulation-id" {
				n["encapsulation_id"] = *encID
			}
		})
		if len(n) == 0 {
			return &usageError{msg: "nothing to update: give --status, --encapsulation-type, --encapsulation-id or --error-msg"}
		}
		t, err := s.tenant()
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "PUT", seg(t, "instances", args[0], "networks", args[1]), map[string]any{"network": n})
		if err != nil {
			return err
		}
		s.emit(r, nil)
		return nil
	}
}

func setupActionList(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		path := seg(t, "instances", args[0], "action")
		if len(args) == 2 {
			path = seg(t, "instances", args[0], "action", args[1])
		}
		r, err := s.do(ctx, "GET", path, nil)
		if err != nil {
			return err
		}
		s.emit(r, s.printActions)
		return nil
	}
}

func setupConfig(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		token := "(unset)"
		if s.token != "" {
			token = "(set)"
		}
		for _, kv := range [][2]string{
			{"OPENMANO_HOST", s.c.env("OPENMANO_HOST", "localhost")},
			{"OPENMANO_PORT", s.c.env("OPENMANO_PORT", "9090")},
			{"OPENMANO_TENANT", s.c.Getenv("OPENMANO_TENANT")},
			{"OPENMANO_WIM", s.c.Getenv("OPENMANO_WIM")},
			{"WIMRO_API_TOKEN", token},
		} {
			fmt.Fprintf(s.c.Stdout, "%s: %s\n", kv[0], kv[1])
		}
		return nil
	}
}

func setupVersion(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		fmt.Fprintf(s.c.Stdout, "openmano (wimro) %s\n", version)
		return nil
	}
}

func setupHelp(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		if len(args) == 0 {
			s.c.usage(s.c.Stdout)
			return nil
		}
		cmd := findCommand(args[0])
		if cmd == nil {
			return &usageError{msg: fmt.Sprintf("unknown command %q", args[0])}
		}
		g := &globals{}
		cfs := s.c.newFlagSet(cmd, g)
		cmd.setup(cfs)
		s.c.commandUsage(s.c.Stdout, cmd, cfs)
		return nil
	}
}
