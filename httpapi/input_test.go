package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// liveFixture is fixture plus tenant0's account on wim0 (acc0) and an
// instance ns1 with its CREATE action; it returns the uuid of each of
// tenant0's things by the path parameter that names it.
func (b *bundle) liveFixture() map[string]string {
	b.t.Helper()
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{"name": "acc0"}}, 200)
	r := b.call("POST", "/openmano/tenant0/instances", instanceBody("ns1"), 200)
	return map[string]string{
		"tenant_id":     b.call("GET", "/openmano/tenants/tenant0", nil, 200).str("tenant", "uuid"),
		"instance_id":   r.str("uuid"),
		"action_id":     r.str("action_id"),
		"net_id":        r.str("networks", 0, "uuid"),
		"wim_id":        b.call("GET", "/openmano/tenant0/wims/wim0", nil, 200).str("wim", "uuid"),
		"datacenter_id": b.call("GET", "/openmano/tenant0/datacenters/dcA", nil, 200).str("datacenter", "uuid"),
	}
}

// snapshot is a digest of every table of the bundle's database but the
// audit trail (which records refused requests too), to prove
// that a refused request wrote nothing.
func (b *bundle) snapshot() map[string]string {
	b.t.Helper()
	ctx := context.Background()
	pool := b.db.Pool()
	rows, err := pool.Query(ctx, `SELECT quote_ident(table_name) FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
		  AND table_name <> 'api_audit' -- the audit trail records refused requests too
		ORDER BY 1`)
	if err != nil {
		b.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			b.t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil {
		b.t.Fatal(err)
	}
	out := make(map[string]string, len(tables))
	for _, tbl := range tables {
		var sum *string
		if err := pool.QueryRow(ctx, `SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM `+tbl+` t`).Scan(&sum); err != nil {
			b.t.Fatal(err)
		}
		out[tbl] = "empty"
		if sum != nil {
			out[tbl] = *sum
		}
	}
	return out
}

// sameSnapshot fails the test with the tables that changed.
func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	var changed []string
	for k, v := range after {
		if before[k] != v {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		t.Errorf("%s changed tables %v", what, changed)
	}
}

// raw sends one request line, headers and body as bytes on a fresh
// connection (so that paths Go's client would refuse, raw 0xff bytes
// among them, reach the server) and returns the status and body (none
// for an event stream, which is left at its headers). A dropped
// connection fails the test.
func (b *bundle) raw(method, target string, headers map[string]string, body string) response {
	b.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.srv.URL, "http://"))
	if err != nil {
		b.t.Fatal(err)
	}
	defer conn.Close()
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: wimd\r\nConnection: close\r\n", method, target)
	if b.tok != "" {
		fmt.Fprintf(&req, "Authorization: Bearer %s\r\n", b.tok)
	}
	for k, v := range headers {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	if body != "" || method == "POST" || method == "PUT" {
		fmt.Fprintf(&req, "Content-Length: %d\r\n", len(body))
	}
	req.WriteString("\r\n")
	req.WriteString(body)
	if _, err := io.WriteString(conn, req.String()); err != nil {
		b.t.Fatalf("%s %q: write: %v", method, target, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		b.t.Fatalf("%s %q: connection dropped: %v", method, target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// An event stream that started: it runs until its action settles,
		// and closing the connection ends it (first: closing the body
		// would read it to its end).
		conn.Close()
		return response{status: resp.StatusCode, header: resp.Header}
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatalf("%s %q: body cut: %v", method, target, err)
	}
	r := response{status: resp.StatusCode, body: string(raw), header: resp.Header}
	json.Unmarshal(raw, &r.json)
	return r
}

// wantField checks a 4xx answer with the error body naming field.
func wantField(t *testing.T, what string, r response, status int, field string) {
	t.Helper()
	code, _ := get(r.json, "error", "code").(float64)
	got, _ := get(r.json, "error", "field").(string)
	desc, _ := get(r.json, "error", "description").(string)
	if r.status != status || int(code) != status || (field != "" && got != field && !strings.Contains(desc, field)) {
		t.Fatalf("%s = %d %s, want %d naming %q", what, r.status, r.body, status, field)
	}
}

// The cases of issue 14 point 1: each answered 400 naming the field or
// parameter, nothing written.
func TestHostileInputCases(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	inst := b.call("POST", "/openmano/tenant0/instances", instanceBody("ns1"), 200).str("uuid")
	mapping := `{"wim_port_mapping": [{"datacenter_name": "dcA", "pop_wan_mappings": [{"pop_switch_dpid": "00:00:00:00:00:00:00:0c", "pop_switch_port": 9, "wan_service_mapping_info": {"x": %s}}]}]}`
	cases := []struct {
		name, method, target, ct, body string
		status                         int
		field                          string
	}{
		{"NUL in tenant name", "POST", "/openmano/tenants", "", `{"tenant": {"name": "a\u0000b"}}`, 400, "tenant.name"},
		{"NUL in tenant key", "POST", "/openmano/tenants", "", `{"tenant": {"name": "t9", "x\u0000": 1}}`, 400, "tenant.x\x00"},
		{"NUL in datacenter config", "POST", "/openmano/datacenters", "", `{"datacenter": {"name": "dcN", "vim_url": "http://n", "config": {"k": ["\u0000"]}}}`, 400, "datacenter.config.k[0]"},
		{"NUL in PUT datacenter", "PUT", "/openmano/datacenters/dcA", "", `{"datacenter": {"description": "\u0000"}}`, 400, "datacenter.description"},
		{"NUL in wim", "POST", "/openmano/wims", "", `{"wim": {"name": "w\u0000", "type": "fake", "wim_url": "http://w"}}`, 400, "wim.name"},
		{"NUL in PUT wim", "PUT", "/openmano/wims/wim0", "", `{"wim": {"description": "\u0000"}}`, 400, "wim.description"},
		{"NUL in account", "POST", "/openmano/tenant0/wims/wim0", "", `{"wim_account": {"name": "\u0000"}}`, 400, "wim_account.name"},
		{"NUL in PUT account", "PUT", "/openmano/tenant0/wims/wim0", "", `{"wim_account": {"user": "\u0000"}}`, 400, "wim_account.user"},
		{"NUL in instance", "POST", "/openmano/tenant0/instances", "", `{"instance": {"name": "i\u0000", "networks": []}}`, 400, "instance.name"},
		{"NUL in port mapping", "POST", "/openmano/tenant0/wims/wim0/port_mapping", "", fmt.Sprintf(mapping, `"\u0000"`), 400, "wan_service_mapping_info.x"},
		{"NUL in YAML", "POST", "/openmano/tenants", "application/yaml", "tenant:\n  name: \"a\\0b\"\n", 400, "tenant.name"},
		{"invalid UTF-8 in JSON", "POST", "/openmano/tenants", "", "{\"tenant\": {\"name\": \"a\xffb\"}}", 400, "tenant.name"},
		{"invalid UTF-8 in a JSON key", "POST", "/openmano/tenants", "", "{\"tenant\": {\"n\xff\": 1}}", 400, "tenant.n"},
		{"invalid UTF-8 in YAML", "POST", "/openmano/tenants", "application/yaml", "tenant:\n  name: a\xffb\n", 400, ""},
		{"1e400 in mapping info", "POST", "/openmano/tenant0/wims/wim0/port_mapping", "", fmt.Sprintf(mapping, `1e400`), 400, "wan_service_mapping_info.x"},
		{"-1e400 in datacenter config", "POST", "/openmano/datacenters", "", `{"datacenter": {"name": "dcN", "vim_url": "http://n", "config": {"k": -1e400}}}`, 400, "datacenter.config.k"},
		{"trailing brace", "POST", "/openmano/tenants", "", `{"tenant": {"name": "t9"}} }`, 400, ""},
		{"trailing bracket", "POST", "/openmano/tenants", "", `{"tenant": {"name": "t9"}}]`, 400, ""},
		{"trailing document", "POST", "/openmano/tenants", "", `{"tenant": {"name": "t9"}} {}`, 400, ""},
		{"trailing YAML document", "POST", "/openmano/tenants", "application/yaml", "tenant:\n  name: t9\n---\nx: 1\n", 400, ""},
		{"too deep", "POST", "/openmano/datacenters", "", `{"datacenter": {"name": "dcN", "vim_url": "http://n", "config": {"k": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`, 400, "datacenter.config.k"},
		{"NUL in a path parameter", "GET", "/openmano/tenants/%00", "", "", 400, "tenant_id"},
		{"NUL in POST path parameter", "POST", "/openmano/%00/instances", "", `{"instance": {"name": "x", "networks": []}}`, 400, "tenant_id"},
		{"raw 0xff in a path", "GET", "/openmano/tenant0/instances/\xff/wan_links", "", "", 400, "instance_id"},
		{"escaped 0xff in a path", "GET", "/openmano/tenant0/instances/%ff/wan_links", "", "", 400, "instance_id"},
		{"invalid UTF-8 filter", "GET", "/openmano/tenant0/wims?name=%ff", "", "", 400, "name"},
		{"NUL filter", "GET", "/openmano/tenant0/wims?name=%00", "", "", 400, "name"},
		{"bad time filter", "GET", "/openmano/tenant0/wims?created_at=notadate", "", "", 400, "created_at"},
		{"malformed query", "GET", "/openmano/tenant0/wims?name=%zz", "", "", 400, "query"},
		{"NUL in a query key", "GET", "/openmano/tenant0/wims?%00=1", "", "", 400, "query parameter"},
		{"bad instance actions id", "GET", "/openmano/tenant0/instances/" + inst + "%00/action", "", "", 400, "instance_id"},
	}
	before := b.snapshot()
	for _, c := range cases {
		h := map[string]string{"Content-Type": "application/json"}
		if c.ct != "" {
			h["Content-Type"] = c.ct
		}
		r := b.raw(c.method, c.target, h, c.body)
		wantField(t, c.name, r, c.status, c.field)
	}
	sameSnapshot(t, "refused requests", before, b.snapshot())
	// A good time filter still works.
	b.call("GET", "/openmano/tenant0/wims?created_at=2020-01-02T03:04:05Z", nil, 200)
}

// Point 2 of issue 14: a body needs a JSON or YAML Content-Type (charset
// allowed), else 415 naming what is accepted; a POST without a body needs
// none; no CORS header is ever sent.
func TestContentTypeAndNoCORS(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	before := b.snapshot()
	refused := []struct{ name, ct string }{
		{"no Content-Type", "-"},
		{"text/plain", "text/plain"},
		{"form", "application/x-www-form-urlencoded"},
		{"multipart", "multipart/form-data; boundary=x"},
		{"garbage", "%%%"},
	}
	for _, c := range refused {
		r := b.do("POST", "/openmano/tenants", c.ct, `{"tenant": {"name": "t1"}}`)
		wantError(t, r, 415, "application/json or application/yaml")
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%s: CORS header sent: %v", c.name, r.header)
		}
	}
	wantError(t, b.do("PUT", "/openmano/datacenters/x", "text/plain", `{}`), 415, "application/json")
	sameSnapshot(t, "refused content types", before, b.snapshot())
	for i, ct := range []string{"application/json", "application/json; charset=utf-8", "application/JSON;charset=UTF-8", "application/yaml", "application/x-yaml", "text/yaml; charset=utf-8"} {
		body := fmt.Sprintf(`{"tenant": {"name": "t%d"}}`, i)
		if strings.Contains(ct, "yaml") {
			body = fmt.Sprintf("tenant:\n  name: t%d\n", i)
		}
		if r := b.do("POST", "/openmano/tenants", ct, body); r.status != 200 {
			t.Fatalf("%s = %d %s", ct, r.status, r.body)
		}
	}
	b.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": "dc0", "vim_url": "http://dc0"}}, 200)
	// Attaching has no body and needs no Content-Type.
	if r := b.do("POST", "/openmano/t0/datacenters/dc0", "-", ""); r.status != 200 {
		t.Fatalf("attach without a body = %d %s", r.status, r.body)
	}
	for _, path := range []string{"/openmano/tenants", "/nowhere", "/healthz"} {
		if r := b.do("GET", path, "-", ""); r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("GET %s: CORS header sent", path)
		}
	}
	if r := b.do("OPTIONS", "/openmano/tenants", "-", ""); r.status < 400 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Methods") != "" {
		t.Fatalf("OPTIONS = %d %v", r.status, r.header)
	}
}
