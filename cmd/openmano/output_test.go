package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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
		{[]string{"tenant-list"}, "UUID                                   NAME                 AGE\nu1                                     t0                   2d3h\nu2                                     t1\n"},
		{[]string{"tenant-list", "-v"}, "UUID                                   NAME                 AGE      CREATED_AT\nu1                                     t0                   2d3h     2026-01-02\nu2                                     t1\n"},
		{[]string{"tenant-list", "t0"}, "u1                                     t0\n"},
		{[]string{"datacenter-list"}, ""},
		{[]string{"instance-scenario-list"}, "UUID                                   NAME                 STATUS\ni1                                     ns1                  ACTIVE\ni2                                     ns2\n"},
		{[]string{"action-list", "i1"}, "UUID                                   DESCRIPTION          PROGRESS                    AGE\na1                                     CREATE               done=1 tasks=1 failed=0     27h\n"},
		{[]string{"action-list", "i1", "-v"}, "UUID                                   DESCRIPTION          PROGRESS                    AGE      CREATED_AT\na1                                     CREATE               done=1 tasks=1 failed=0     27h      2026-01-03\n"},
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

// A WIM whose account is not ACTIVE shows why in the default table (the
// MESSAGE column); -o wide adds its type, URL and creation time.
func TestAccountReasonAndWideColumns(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"GET /openmano/t0/wims": {200, `{"wims": [{"uuid": "w1", "name": "wan1", "type": "onos", "wim_url": "http://onos:8181", "created_at": "2026-01-04T02:04:05Z"},
			{"uuid": "w2", "name": "wan2", "type": "tapi", "wim_url": "http://tapi", "created_at": "2026-01-04T03:03:00Z"}]}`},
		"GET /openmano/t0/wims/w1": {200, `{"wim": {"uuid": "w1", "name": "wan1", "wim_account": {"status": "ERROR", "status_msg": "401 Unauthorized:\n  bad credentials"}}}`},
		"GET /openmano/t0/wims/w2": {200, `{"wim": {"uuid": "w2", "name": "wan2", "wim_account": {"status": "ACTIVE", "status_msg": null}}}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0"})
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"wim-list"}, "" +
			"UUID                                   NAME                 STATUS               AGE      MESSAGE\n" +
			"w1                                     wan1                 ERROR                60m      401 Unauthorized: bad credentials\n" +
			"w2                                     wan2                 ACTIVE               65s\n"},
		{[]string{"wim-list", "-o", "wide"}, "" +
			"UUID                                   NAME                 STATUS               AGE      CREATED_AT                       TYPE         URL                            MESSAGE\n" +
			"w1                                     wan1                 ERROR                60m      2026-01-04T02:04:05Z             onos         http://onos:8181               401 Unauthorized: bad credentials\n" +
			"w2                                     wan2                 ACTIVE               65s      2026-01-04T03:03:00Z             tapi         http://tapi\n"},
	}
	for _, c := range cases {
		if r := runCLI(t, env, "", c.args...); r.code != 0 || r.stdout != c.want {
			t.Errorf("%v: exit %d, stderr %q, stdout\n%s\nwant\n%s", c.args, r.code, r.stderr, r.stdout, c.want)
		}
	}
}

// wim-list NAME shows what its help says: type, URL, the tenant's
// account with its status, the port mappings, datacenters by name; the
// port mapping commands print the same rows.
func TestWIMShowAndMappingRows(t *testing.T) {
	t.Parallel()
	mappings := `[{"wim_id": "w1", "datacenter_id": "d1", "pop_wan_mappings": [{"pop_switch_dpid": "00:01", "pop_switch_port": "1", "wan_service_endpoint_id": "ep-a"}]},
		{"wim_id": "w1", "datacenter_id": "d2", "pop_wan_mappings": [{"pop_switch_dpid": "00:02", "pop_switch_port": "7", "wan_service_endpoint_id": "ep-b"}]}]`
	f := newFakeServer(t, map[string]answer{
		"GET /openmano/any/datacenters": {200, `{"datacenters": [{"uuid": "d1", "name": "dcA"}, {"uuid": "d2", "name": "dcB"}]}`},
		"GET /openmano/t0/wims/wan1": {200, `{"wim": {"uuid": "w1", "name": "wan1", "type": "onos", "wim_url": "http://onos:8181", "description": "core",
			"config": {"wim_port_mapping": ` + mappings + `},
			"wim_account": {"uuid": "a1", "name": "t0", "user": "karaf", "status": "ERROR", "status_msg": "401 Unauthorized"}}}`},
		"GET /openmano/t0/wims/wan1/port_mapping": {200, `{"wim_port_mapping": ` + mappings + `}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0"})
	rows := "" +
		"DATACENTER           SWITCH_DPID              PORT     SERVICE_ENDPOINT_ID\n" +
		"dcA                  00:01                    1        ep-a\n" +
		"dcB                  00:02                    7        ep-b\n"
	want := "" +
		"w1                                     wan1\n" +
		"  Type:          onos\n" +
		"  URL:           http://onos:8181\n" +
		"  Description:   core\n" +
		"  Account:       t0 (a1), user karaf, ERROR: 401 Unauthorized\n" +
		"  Port mappings:\n" + strings.ReplaceAll("    "+strings.TrimSuffix(rows, "\n"), "\n", "\n    ") + "\n"
	if r := runCLI(t, env, "", "wim-list", "wan1"); r.code != 0 || r.stdout != want {
		t.Errorf("wim-list wan1: exit %d, stderr %q, stdout\n%s\nwant\n%s", r.code, r.stderr, r.stdout, want)
	}
	if r := runCLI(t, env, "", "wim-port-mapping-list", "wan1"); r.code != 0 || r.stdout != rows {
		t.Errorf("wim-port-mapping-list: exit %d, stderr %q, stdout\n%s", r.code, r.stderr, r.stdout)
	}
}

// An instance's tables name networks and datacenters: a WAN link by the
// networks it joins, a network's datacenter by its name. A network
// without a VIM name is named by its osm_id: the two accesses of an L2SM
// vpn-service at one site are told apart.
func TestInstanceNamesInTables(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"GET /openmano/any/datacenters": {200, `{"datacenters": [{"uuid": "d1", "name": "dcA"}, {"uuid": "d2", "name": "dcB"}]}`},
		"GET /openmano/t0/instances/ns1": {200, `{"uuid": "i1", "name": "ns1", "networks": [
			{"uuid": "n1", "sce_net_id": "v1", "vim_name": "data-a", "datacenter_id": "d1", "status": "ACTIVE"},
			{"uuid": "n2", "sce_net_id": "v1", "vim_name": "data-b", "datacenter_id": "d2", "status": "ACTIVE"}],
			"wan_links": [{"uuid": "l1", "sce_net_id": "v1", "status": "ACTIVE"}]}`},
		"GET /openmano/t0/instances/vpn1": {200, `{"uuid": "i2", "name": "vpn1", "networks": [
			{"uuid": "n3", "sce_net_id": "i2", "osm_id": "access-1", "datacenter_id": "d1", "status": "ACTIVE"},
			{"uuid": "n4", "sce_net_id": "i2", "osm_id": "access-2", "datacenter_id": "d1", "status": "ACTIVE"}],
			"wan_links": [{"uuid": "l2", "sce_net_id": "i2", "status": "ACTIVE"}]}`},
	})
	for _, tt := range []struct{ instance, want string }{
		{"ns1", "" +
			"i1                                     ns1\n" +
			"  net      n1                                     data-a                                 dcA                  ACTIVE\n" +
			"  net      n2                                     data-b                                 dcB                  ACTIVE\n" +
			"  wan_link l1                                     data-a,data-b                          ACTIVE\n"},
		{"vpn1", "" +
			"i2                                     vpn1\n" +
			"  net      n3                                     access-1                               dcA                  ACTIVE\n" +
			"  net      n4                                     access-2                               dcA                  ACTIVE\n" +
			"  wan_link l2                                     access-1,access-2                      ACTIVE\n"},
	} {
		r := runCLI(t, f.env(map[string]string{"OPENMANO_TENANT": "t0"}), "", "instance-scenario-list", tt.instance)
		if r.code != 0 || r.stdout != tt.want {
			t.Errorf("%s: exit %d, stderr %q, stdout\n%s\nwant\n%s", tt.instance, r.code, r.stderr, r.stdout, tt.want)
		}
	}
}

// --password-stdin sends the first line of stdin as the password; it
// excludes --password and refuses an empty stdin.
func TestPasswordStdin(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"POST /openmano/t0/wims/wan1": {200, `{"wim_account": {"uuid": "a1", "name": "t0"}}`},
		"PUT /openmano/t0/wims/wan1":  {200, `{"wim_account": {"uuid": "a1", "name": "t0"}}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0"})
	cases := []struct {
		stdin string
		args  []string
		code  int
		sent  string // the password in the request; "" none sent
		err   string
	}{
		{"s3cret pw\r\nnext line\n", []string{"wim-account-create", "wan1", "--password-stdin"}, 0, "s3cret pw", ""},
		{"rotated", []string{"wim-account-edit", "wan1", "--password-stdin"}, 0, "rotated", ""},
		{"", []string{"wim-account-create", "wan1", "--password-stdin"}, exitCLI, "", "--password-stdin: stdin holds no password"},
		{"x\n", []string{"wim-account-create", "wan1", "--password-stdin", "--password", "y"}, exitUsage, "", "--password and --password-stdin are exclusive"},
	}
	for _, c := range cases {
		before := len(f.requests())
		r := runCLI(t, env, c.stdin, c.args...)
		reqs := f.requests()[before:]
		switch {
		case r.code != c.code || !strings.Contains(r.stderr, c.err):
			t.Errorf("%v: exit %d, stderr %q", c.args, r.code, r.stderr)
		case c.sent == "" && len(reqs) != 0:
			t.Errorf("%v: sent %+v", c.args, reqs)
		case c.sent != "" && (len(reqs) != 1 || reqs[0].body["wim_account"].(map[string]any)["password"] != c.sent):
			t.Errorf("%v: sent %+v, want password %q", c.args, reqs, c.sent)
		case strings.Contains(r.stdout+r.stderr, "s3cret"):
			t.Errorf("%v: the password was printed", c.args)
		}
	}
}

// openmano version shows the client's and the server's versions, as
// text and as a document; --client asks the server nothing.
func TestVersionClientAndServer(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{"GET /openmano/version": {200, `{"version": "v1.2.3"}`}})
	env := f.env(nil)
	r := runCLI(t, env, "", "version")
	if want := "Client: openmano (wimro) dev\nServer: wimd v1.2.3 (" + f.srv.URL + ")\n"; r.code != 0 || r.stdout != want {
		t.Errorf("version: %+v, want %q", r, want)
	}
	r = runCLI(t, env, "", "version", "-o", "json")
	var doc map[string]map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc["client"]["version"] != "dev" || doc["server"]["version"] != "v1.2.3" {
		t.Errorf("version -o json: %+v (%v)", r, err)
	}
	before := len(f.requests())
	if r := runCLI(t, env, "", "version", "--client", "-o", "yaml"); r.code != 0 || r.stdout != "client:\n    version: dev\n" || len(f.requests()) != before {
		t.Errorf("version --client -o yaml: %+v", r)
	}
	// No server: the client's version, then the connection error (exit 3).
	r = runCLI(t, func(k string) string { return map[string]string{"OPENMANO_HOST": "127.0.0.1", "OPENMANO_PORT": "1"}[k] }, "", "version")
	if r.code != exitConnection || r.stdout != "Client: openmano (wimro) dev\n" || !strings.Contains(r.stderr, "Connection error") {
		t.Errorf("version without server: %+v", r)
	}
}

// The command list shows each command's first sentence whole: never a
// line of a summary cut where its text was wrapped.
func TestShortHelpIsWholeSentences(t *testing.T) {
	t.Parallel()
	for _, cmd := range (&CLI{Getenv: noEnv}).newTree().cmds {
		long := strings.Join(strings.Fields(cmd.Long), " ")
		short := cmd.Short
		if !strings.HasPrefix(long, short) || (short != long && !strings.HasSuffix(short, ".")) {
			t.Errorf("%s: short help %q is not the first sentence of %q", cmd.Name(), short, long)
		}
		if last := short[len(short)-1]; last != '.' && last != ')' {
			t.Errorf("%s: short help %q does not end a sentence", cmd.Name(), short)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 59 * time.Second: "59s", 119 * time.Second: "119s", 5*time.Minute + 12*time.Second: "5m12s",
		9 * time.Minute: "9m", 150 * time.Minute: "150m", 3*time.Hour + 20*time.Minute: "3h20m", 47 * time.Hour: "47h",
		50 * time.Hour: "2d2h", 30 * 24 * time.Hour: "30d", 800 * 24 * time.Hour: "2y70d", 9 * 365 * 24 * time.Hour: "9y",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
