package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// List commands print a header line; a single item does not.
func TestTableHeaders(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"GET /openmano/tenants":                {200, `{"tenants": [{"uuid": "u1", "name": "t0", "created_at": "2026-01-02"}, {"uuid": "u2", "name": "t1"}]}`},
		"GET /openmano/tenants/t0":             {200, `{"tenant": {"uuid": "u1", "name": "t0"}}`},
		"GET /openmano/t0/datacenters":         {200, `{"datacenters": []}`},
		"GET /openmano/t0/instances":           {200, `{"instances": [{"uuid": "i1", "name": "ns1", "status": "ACTIVE"}, {"uuid": "i2", "name": "ns2"}]}`},
		"GET /openmano/t0/instances/i1/action": {200, `{"actions": [{"uuid": "a1", "description": "CREATE", "number_tasks": 1, "number_done": 1, "number_failed": 0, "created_at": "2026-01-03"}]}`},
		"GET /cluster":                         {200, `{"coordinator": "none", "instance_id": "p1", "leader": "p1", "members": [{"id": "p1", "address": "127.0.0.1:9090", "started_at": "2026-01-01", "health": "passing", "last_seen": "2026-01-02T10:00:00Z"}, {"id": "p2", "address": "127.0.0.1:9091", "started_at": "2026-01-01"}], "assignments": {"p1": ["acc"]}, "owned": ["acc"]}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0"})
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tenant-list"}, "UUID                                   NAME\nu1                                     t0\nu2                                     t1\n"},
		{[]string{"tenant-list", "-v"}, "UUID                                   NAME                 CREATED_AT\nu1                                     t0                   2026-01-02\nu2                                     t1\n"},
		{[]string{"tenant-list", "t0"}, "u1                                     t0\n"},
		{[]string{"datacenter-list"}, ""},
		{[]string{"instance-scenario-list"}, "UUID                                   NAME                 STATUS\ni1                                     ns1                  ACTIVE\ni2                                     ns2\n"},
		{[]string{"action-list", "i1", "-v"}, "UUID                                   DESCRIPTION          PROGRESS                    CREATED_AT\na1                                     CREATE               done=1 tasks=1 failed=0 2026-01-03\n"},
		{[]string{"cluster-list"}, "coordinator none, this process p1, leader p1\n" +
			"  MEMBER (* leader)              ADDRESS                        ACCOUNTS  HEALTH    LAST SEEN                 SINCE\n" +
			"* p1                             127.0.0.1:9090               1 accounts  passing   2026-01-02T10:00:00Z      since 2026-01-01\n" +
			"  p2                             127.0.0.1:9091               0 accounts  -         -                         since 2026-01-01\n" +
			"owned by this process: 1 accounts\n"},
	}
	for _, c := range cases {
		r := runCLI(t, env, "", c.args...)
		if r.code != 0 || r.stdout != c.want {
			t.Errorf("%v: exit %d, stderr %q, stdout\n%s\nwant\n%s", c.args, r.code, r.stderr, r.stdout, c.want)
		}
	}
	// The documents carry the members' health and last seen as served.
	for _, format := range []string{"json", "yaml"} {
		r := runCLI(t, env, "", "cluster-list", "-o", format)
		if r.code != 0 || !strings.Contains(r.stdout, "passing") || !strings.Contains(r.stdout, "2026-01-02T10:00:00Z") || !strings.Contains(r.stdout, "last_seen") {
			t.Errorf("cluster-list -o %s: exit %d, stdout\n%s", format, r.code, r.stdout)
		}
	}
}

// With -o json or yaml every error is a document on stderr, the server's
// fields included; stdout stays empty.
func TestErrorsAsDocuments(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"POST /openmano/wims": {400, `{"error": {"code": 400, "type": "400 Bad Request", "description": "wim.type: unknown type \"x\"", "field": "wim.type"}}`},
	})
	env := f.env(nil)
	cases := []struct {
		args []string
		want errorDoc
	}{
		{[]string{"wim-create", "w", "http://c", "--type", "x", "-o", "json"}, errorDoc{Code: 400, Type: "400 Bad Request", Description: `wim.type: unknown type "x"`, Field: "wim.type", ExitStatus: exitServer}},
		{[]string{"-o", "json", "wim-delete", "-f", "nope"}, errorDoc{Code: 404, Type: "404 Not Found", Description: "No route for DELETE /openmano/wims/nope", ExitStatus: exitServer}},
		{[]string{"--output=json", "wim-list"}, errorDoc{Type: "client", Description: "'OPENMANO_TENANT' environment variable is not set", ExitStatus: exitCLI}},
		{[]string{"tenant-list", "--nope", "-o", "json"}, errorDoc{Type: "usage", Description: "unknown flag: --nope", ExitStatus: exitUsage}},
		{[]string{"-ojson", "bogus"}, errorDoc{Type: "usage", Description: `unknown command "bogus"`, ExitStatus: exitUsage}},
		{[]string{"wim-delete", "w", "-o", "json"}, errorDoc{Type: "aborted", Description: "Aborted", ExitStatus: exitAborted}},
	}
	for _, c := range cases {
		r := runCLI(t, env, "", c.args...)
		text := r.stderr
		if i := strings.Index(text, "{"); i > 0 { // after a confirmation prompt
			text = text[i:]
		}
		var got map[string]errorDoc
		if err := json.Unmarshal([]byte(text), &got); err != nil {
			t.Errorf("%v: stderr is not JSON (%v): %q", c.args, err, r.stderr)
			continue
		}
		if got["error"] != c.want || r.code != c.want.ExitStatus || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, error %+v; want %+v", c.args, r.code, r.stdout, got["error"], c.want)
		}
	}
	r := runCLI(t, env, "", "wim-list", "-o", "yaml")
	if r.code != exitCLI || r.stderr != "error:\n    code: 0\n    description: '''OPENMANO_TENANT'' environment variable is not set'\n    exit_status: 4\n    type: client\n" {
		t.Errorf("yaml: exit %d, stderr %q", r.code, r.stderr)
	}
	// Without -o json an error stays one line of text.
	if r := runCLI(t, env, "", "wim-list"); r.stderr != "'OPENMANO_TENANT' environment variable is not set\n" {
		t.Errorf("text: %q", r.stderr)
	}
}

// The server's warnings, in Warning headers, go to stderr, one line each
// and unquoted; stdout keeps the answer.
func TestWarningsOnStderr(t *testing.T) {
	t.Parallel()
	body := `{"tenant": {"uuid": "u1", "name": "t0"}}`
	f := newFakeServer(t, map[string]answer{
		"POST /openmano/tenants":      {200, body},
		"DELETE /openmano/tenants/t0": {409, `{"error": {"code": 409, "type": "409 Conflict", "description": "tenant t0 has instances"}}`},
	})
	f.mu.Lock()
	f.warnings = map[string][]string{
		"POST /openmano/tenants":      {`299 - "unknown key tenant.colour (ignored)"`, `299 - "a \"quoted\" word, a \\ backslash"`},
		"DELETE /openmano/tenants/t0": {`299 - "soon gone"`},
	}
	f.mu.Unlock()
	env := f.env(nil)
	want := "warning: unknown key tenant.colour (ignored)\nwarning: a \"quoted\" word, a \\ backslash\n"
	r := runCLI(t, env, "", "tenant-create", "t0")
	if r.code != 0 || r.stdout != "u1                                     t0\n" || r.stderr != want {
		t.Errorf("table: %+v", r)
	}
	r = runCLI(t, env, "", "tenant-create", "t0", "-o", "json")
	if r.code != 0 || r.stdout != body+"\n" || r.stderr != want {
		t.Errorf("json: %+v", r)
	}
	r = runCLI(t, env, "", "tenant-delete", "t0", "-f")
	if r.code != exitServer || r.stderr != "warning: soon gone\ntenant t0 has instances\n" {
		t.Errorf("error: %+v", r)
	}
}
