package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer records the requests it gets and answers from a table of
// "METHOD path" → (status, body).
type fakeServer struct {
	mu      sync.Mutex
	reqs    []recorded
	answers map[string]answer
	// warnings are sent as Warning headers, verbatim, by "METHOD /path".
	warnings map[string][]string
	srv      *httptest.Server
}

type recorded struct {
	method, path, auth string
	body               map[string]any
}

type answer struct {
	status int
	body   string
}

func newFakeServer(t *testing.T, answers map[string]answer) *fakeServer {
	t.Helper()
	f := &fakeServer{answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{method: r.Method, path: r.URL.RequestURI(), auth: r.Header.Get("Authorization"), body: body})
		f.mu.Unlock()
		a, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			a = answer{404, `{"error": {"code": 404, "type": "404 Not Found", "description": "No route for ` + r.Method + " " + r.URL.Path + `"}}`}
		}
		w.Header().Set("Content-Type", "application/json")
		f.mu.Lock()
		for _, h := range f.warnings[r.Method+" "+r.URL.Path] {
			w.Header().Add("Warning", h)
		}
		f.mu.Unlock()
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fakeServer) env(extra map[string]string) func(string) string {
	u, _ := url.Parse(f.srv.URL)
	m := map[string]string{"OPENMANO_HOST": u.Hostname(), "OPENMANO_PORT": u.Port()}
	for k, v := range extra {
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, getenv func(string) string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	c := &CLI{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(stdin), Getenv: getenv, Now: func() time.Time { return testNow }}
	code := c.Run(context.Background(), args)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func noEnv(string) string { return "" }

// testNow is the clock of the AGE column in the tests that run the CLI
// in process.
var testNow = time.Date(2026, 1, 4, 3, 4, 5, 0, time.UTC)

func TestDebugMasksPasswordAndToken(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"POST /openmano/t0/wims/wan1": {200, `{"wim_account": {"uuid": "11111111-1111-1111-1111-111111111111", "name": "acc", "user": "admin", "password": "********"}}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0", "WIMRO_API_TOKEN": "tok-s3cr3t-value"})
	r := runCLI(t, env, "", "wim-account-create", "wan1", "-d", "--user", "admin", "--password", "hunter2-pw",
		"--account-name", "acc", "--config", `{password: also-secret, x: 1}`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, secret := range []string{"hunter2-pw", "tok-s3cr3t-value", "also-secret"} {
		if strings.Contains(r.stderr, secret) || strings.Contains(r.stdout, secret) {
			t.Errorf("%q printed:\n%s%s", secret, r.stdout, r.stderr)
		}
	}
	for _, want := range []string{"> POST http://", "> Authorization: Bearer ********", `"password": "********"`, "< 200 OK", `"user": "admin"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("debug output lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.HasPrefix(r.stdout, "11111111-1111-1111-1111-111111111111   acc") {
		t.Errorf("stdout %q", r.stdout)
	}
	// The server got the real values.
	req := f.requests()[0]
	acct := req.body["wim_account"].(map[string]any)
	if req.auth != "Bearer tok-s3cr3t-value" || acct["password"] != "hunter2-pw" || acct["name"] != "acc" ||
		acct["config"].(map[string]any)["password"] != "also-secret" {
		t.Fatalf("request %+v", req)
	}
	// Without a token no Authorization header is sent.
	runCLI(t, f.env(map[string]string{"OPENMANO_TENANT": "t0"}), "", "wim-account-create", "wan1")
	if reqs := f.requests(); reqs[1].auth != "" {
		t.Fatalf("Authorization sent without a token: %q", reqs[1].auth)
	}
}

func TestMaskSecretsNonJSON(t *testing.T) {
	got := maskSecrets([]byte("password: abc\nuser: u\n"))
	if strings.Contains(got, "abc") || !strings.Contains(got, "user: u") {
		t.Fatal(got)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{nil, "Usage: openmano"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"tenant-create"}, "wrong number of arguments"},
		{[]string{"tenant-create", "a", "b"}, "wrong number of arguments"},
		{[]string{"tenant-list", "--nope"}, "unknown flag: --nope"},
		{[]string{"tenant-list", "-o", "xml"}, `--output "xml"`},
		{[]string{"wim-edit", "wan1"}, "--file"},
		{[]string{"wim-account-edit", "wan1"}, "At least one argument"},
		{[]string{"instance-net-update", "i", "n"}, "nothing to update"},
		{[]string{"instance-net-add", "i", "--vld", "v"}, "give --vld and --datacenter"},
		{[]string{"instance-net-delete", "i"}, "wrong number of arguments"},
		{[]string{"help", "nope"}, `unknown command "nope"`},
	}
	for _, c := range cases {
		r := runCLI(t, noEnv, "", c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	r := runCLI(t, noEnv, "", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Exit status:") {
		t.Fatalf("--help: %d %q", r.code, r.stdout)
	}
	for _, cmd := range (&CLI{Getenv: noEnv}).newTree().cmds {
		if !strings.Contains(r.stdout, "  "+cmd.Name()+" ") {
			t.Errorf("usage lacks %s", cmd.Name())
		}
		for _, args := range [][]string{{cmd.Name(), "--help"}, {cmd.Name(), "-h"}, {"help", cmd.Name()}} {
			r := runCLI(t, noEnv, "", args...)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage: openmano "+cmd.Name()) || !strings.Contains(r.stdout, "-output") {
				t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
			}
		}
	}
	if r := runCLI(t, noEnv, "", "version", "--client"); r.code != 0 || r.stdout != "Client: openmano (wimro) dev\n" {
		t.Errorf("version --client: %+v", r)
	}
}

func TestMissingTenantAndWIM(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, nil)
	for _, args := range [][]string{
		{"wim-list"}, {"datacenter-attach", "dc"}, {"instance-scenario-list"}, {"action-list", "i"},
		{"wim-account-create", "wan1"}, {"wim-port-mapping-list", "wan1"},
	} {
		r := runCLI(t, f.env(nil), "", args...)
		if r.code != exitCLI || !strings.Contains(r.stderr, "'OPENMANO_TENANT' environment variable is not set") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	r := runCLI(t, f.env(map[string]string{"OPENMANO_TENANT": "t0"}), "", "wim-port-mapping-list")
	if r.code != exitCLI || !strings.Contains(r.stderr, "OPENMANO_WIM") {
		t.Errorf("no WIM: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	// wim-list -a needs no tenant; OPENMANO_WIM is the default WIM.
	runCLI(t, f.env(nil), "", "wim-list", "-a")
	runCLI(t, f.env(map[string]string{"OPENMANO_TENANT": "t0", "OPENMANO_WIM": "wan9"}), "", "wim-port-mapping-list")
	reqs := f.requests()
	if len(reqs) != 3 || reqs[0].path != "/openmano/any/wims" || reqs[2].path != "/openmano/t0/wims/wan9/port_mapping" {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestConfirmation(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"DELETE /openmano/wims/wan1": {200, `{"result": "wim 'x wan1' deleted"}`},
	})
	env := f.env(nil)
	for _, in := range []string{"", "n\n", "no\n", "whatever\n"} {
		r := runCLI(t, env, in, "wim-delete", "wan1")
		if r.code != exitAborted || !strings.Contains(r.stderr, "Delete wim wan1 (y/N)?") || !strings.Contains(r.stderr, "Aborted") {
			t.Errorf("answer %q: exit %d, stderr %q", in, r.code, r.stderr)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("aborted prompts sent %d requests", n)
	}
	r := runCLI(t, env, "y\n", "wim-delete", "wan1")
	if r.code != 0 || r.stdout != "wim 'x wan1' deleted\n" {
		t.Fatalf("accepted: %+v", r)
	}
	// -f skips the prompt, before or after the name, or as a leading flag.
	for _, args := range [][]string{{"wim-delete", "-f", "wan1"}, {"wim-delete", "wan1", "--force"}, {"-f", "wim-delete", "wan1"}} {
		r := runCLI(t, env, "", args...)
		if r.code != 0 || strings.Contains(r.stderr, "(y/N)") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if n := len(f.requests()); n != 4 {
		t.Fatalf("%d DELETEs, want 4", n)
	}
}

func TestPortMappingOverwritePrompt(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"GET /openmano/t0/wims/wan1/port_mapping":    {200, `{"wim_port_mapping": [{"wim_id": "w", "datacenter_id": "d", "pop_wan_mappings": []}]}`},
		"DELETE /openmano/t0/wims/wan1/port_mapping": {200, `{"result": "port mapping for wim w deleted."}`},
		"POST /openmano/t0/wims/wan1/port_mapping":   {200, `{"wim_port_mapping": [{"datacenter_name": "dcA", "wim_name": "wan1", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": "1", "wan_service_endpoint_id": "ep-a"}]}]}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0"})
	file := filepath.Join(t.TempDir(), "pm.yaml")
	os.WriteFile(file, []byte("- datacenter_name: dcA\n  pop_wan_mappings:\n  - {pop_switch_dpid: \"00:01\", pop_switch_port: 1, wan_service_endpoint_id: ep-a}\n"), 0o600)

	r := runCLI(t, env, "N\n", "wim-port-mapping-create", "wan1", file)
	if r.code != exitAborted || !strings.Contains(r.stderr, "WIM wan1 already contains a port mapping. Overwrite? (y/N)?") {
		t.Fatalf("abort: %+v", r)
	}
	if reqs := f.requests(); len(reqs) != 1 || reqs[0].method != "GET" {
		t.Fatalf("abort sent %+v", reqs)
	}
	r = runCLI(t, env, "y\n", "wim-port-mapping-create", "wan1", file)
	if r.code != 0 || r.stdout != "DATACENTER           SWITCH_DPID              PORT     SERVICE_ENDPOINT_ID\ndcA                  00:01                    1        ep-a\n" {
		t.Fatalf("accept: %+v", r)
	}
	reqs := f.requests()[1:]
	if len(reqs) != 4 || reqs[0].method != "GET" || reqs[1].method != "DELETE" || reqs[2].path != "/openmano/any/datacenters" || reqs[3].method != "POST" {
		t.Fatalf("accept sent %+v", reqs)
	}
	pm := reqs[3].body["wim_port_mapping"].([]any)[0].(map[string]any)
	if pm["datacenter_name"] != "dcA" || pm["pop_wan_mappings"].([]any)[0].(map[string]any)["pop_switch_port"] != 1.0 {
		t.Fatalf("body %v", reqs[3].body)
	}
}

func TestServerErrorAndOutputs(t *testing.T) {
	t.Parallel()
	list := `{"wims": [{"uuid": "22222222-2222-2222-2222-222222222222", "name": "wan1", "type": "fake", "created_at": "2026-01-02T03:04:05Z"}]}`
	f := newFakeServer(t, map[string]answer{
		"GET /openmano/any/wims":              {200, list},
		"DELETE /openmano/wims/nope":          {404, `{"error": {"code": 404, "type": "404 Not Found", "description": "No record was found in the database: wims - name=nope"}}`},
		"DELETE /openmano/wims/boom":          {502, `bad gateway`},
		"GET /openmano/t0/instances/i/action": {200, `{"actions": [{"uuid": "a1", "description": "CREATE", "number_tasks": 2, "number_done": 1, "number_failed": 0}]}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0"})
	r := runCLI(t, env, "", "wim-delete", "-f", "nope")
	if r.code != exitServer || r.stderr != "No record was found in the database: wims - name=nope\n" || r.stdout != "" {
		t.Fatalf("404: %+v", r)
	}
	if r := runCLI(t, env, "", "wim-delete", "-f", "boom"); r.code != exitServer || !strings.Contains(r.stderr, "502 Bad Gateway: bad gateway") {
		t.Fatalf("502: %+v", r)
	}
	r = runCLI(t, env, "", "wim-list", "-a")
	if r.stdout != "UUID                                   NAME                 AGE\n22222222-2222-2222-2222-222222222222   wan1                 2d\n" {
		t.Fatalf("table: %q", r.stdout)
	}
	r = runCLI(t, env, "", "wim-list", "-a", "-vv")
	if !strings.Contains(r.stdout, "wan1                 2d       2026-01-02T03:04:05Z\n  Type: fake\n") {
		t.Fatalf("-vv: %q", r.stdout)
	}
	r = runCLI(t, env, "", "-o", "json", "wim-list", "-a")
	if r.stdout != list+"\n" {
		t.Fatalf("json: %q", r.stdout)
	}
	r = runCLI(t, env, "", "wim-list", "-a", "--output=yaml")
	if !strings.Contains(r.stdout, "wims:\n    - created_at:") && !strings.Contains(r.stdout, "wims:\n  - created_at:") {
		t.Fatalf("yaml: %q", r.stdout)
	}
	r = runCLI(t, env, "", "action-list", "i")
	if r.code != 0 || !strings.Contains(r.stdout, "done=1 tasks=2 failed=0") {
		t.Fatalf("action-list: %+v", r)
	}
	// Connection refused.
	dead := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(dead.URL)
	dead.Close()
	r = runCLI(t, func(k string) string {
		return map[string]string{"OPENMANO_HOST": u.Hostname(), "OPENMANO_PORT": u.Port()}[k]
	}, "", "tenant-list")
	if r.code != exitConnection || !strings.Contains(r.stderr, "Connection error: not possible to contact OPENMANO-SERVER (wimd)") {
		t.Fatalf("refused: %+v", r)
	}
}

func TestLoadFileOrYAML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	y := filepath.Join(dir, "a.yaml")
	j := filepath.Join(dir, "b.json")
	os.WriteFile(y, []byte("instance:\n  name: ns\n"), 0o600)
	os.WriteFile(j, []byte(`{"instance": {"name": "ns"}}`), 0o600)
	for _, in := range []string{y, j, `{instance: {name: ns}}`, `instance: {name: ns}`, `{"instance": {"name": "ns"}}`} {
		doc, err := loadFileOrYAML(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if asMap(asMap(doc)["instance"])["name"] != "ns" {
			t.Fatalf("%s: %v", in, doc)
		}
	}
	_, err := loadFileOrYAML(filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "is neither a valid file nor a yaml/json content") {
		t.Fatal(err)
	}
	r := runCLI(t, func(k string) string { return map[string]string{"OPENMANO_TENANT": "t0"}[k] }, "", "instance-scenario-create", "nofile")
	if r.code != exitCLI {
		t.Fatalf("%+v", r)
	}
}

func TestInstanceCreateWrapsAndDryRun(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"POST /openmano/t0/instances": {200, `{"plan": {"wan_links": [{"sce_net_id": "vld1", "datacenters": ["d1", "d2"], "wim_name": "wan1", "wim_account_id": "acc",
			"service_type": "L3VPN", "wims": [{"wim_name": "wan0", "reason": "does not make L3VPN (type dynpac makes ELINE)"}, {"wim_name": "wan1", "chosen": true, "reason": "chosen: the oldest"}]}]}}`},
	})
	r := runCLI(t, f.env(map[string]string{"OPENMANO_TENANT": "t0"}), "", "instance-scenario-create", "--dry-run", `{name: ns, networks: []}`)
	if r.code != 0 || !strings.Contains(r.stdout, "vld1") || !strings.Contains(r.stdout, "d1,d2") || !strings.Contains(r.stdout, " L3VPN ") ||
		!strings.Contains(r.stdout, "wan0:                does not make L3VPN (type dynpac makes ELINE)") || !strings.Contains(r.stdout, "wan1:                chosen: the oldest") {
		t.Fatalf("%+v", r)
	}
	req := f.requests()[0]
	if req.path != "/openmano/t0/instances?dry_run=true" || asMap(req.body["instance"])["name"] != "ns" {
		t.Fatalf("%+v", req)
	}
}
