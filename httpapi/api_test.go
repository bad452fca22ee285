package httpapi_test

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/openapitest"
	"github.com/wimro/wimro/internal/pgtest"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	t   testing.TB
	srv *httptest.Server
	db  *persistence.DB
	tok string
}

// setup starts the API over a fresh database; with a token, every request
// of the bundle carries it.
func setup(t testing.TB, token string) *bundle {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	db := persistence.NewDB(pgtest.NewPool(t), nil)
	api := httpapi.New(engine.New(db, box, nil), httpapi.Options{Token: token})
	// Every answer of every test on the bundle, errors included, must
	// follow the OpenAPI document the server serves. Benchmarks time the
	// server alone.
	h := api.Handler()
	if _, bench := t.(*testing.B); !bench {
		h = openapitest.MustLoad(t, api.OpenAPI()).Handler(t, h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &bundle{t: t, srv: srv, db: db, tok: token}
}

type response struct {
	status int
	body   string
	json   map[string]any
	header http.Header
}

// do sends body with contentType: "" is application/json when there is a
// body, "-" sends no Content-Type.
func (b *bundle) do(method, path, contentType, body string) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	switch {
	case contentType == "-": // no Content-Type at all
	case contentType != "":
		req.Header.Set("Content-Type", contentType)
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	if b.tok != "" {
		req.Header.Set("Authorization", "Bearer "+b.tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, body: string(raw), header: resp.Header}
	json.Unmarshal(raw, &r.json)
	return r
}

// call sends v as JSON and fails the test unless the status is want.
func (b *bundle) call(method, path string, v any, want int) response {
	b.t.Helper()
	body := ""
	if v != nil {
		raw, err := json.Marshal(v)
		if err != nil {
			b.t.Fatal(err)
		}
		body = string(raw)
	}
	r := b.do(method, path, "", body)
	if r.status != want {
		b.t.Fatalf("%s %s = %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// get walks a decoded JSON value by keys and indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func (r response) str(path ...any) string {
	s, _ := get(r.json, path...).(string)
	return s
}

// wantError checks the one error body format.
func wantError(t *testing.T, r response, status int, contains string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d: %s", r.status, status, r.body)
	}
	code, _ := get(r.json, "error", "code").(float64)
	desc, _ := get(r.json, "error", "description").(string)
	if int(code) != status || !strings.Contains(desc, contains) {
		t.Fatalf("error body = %s, want code %d and a description containing %q", r.body, status, contains)
	}
}

// fixture is a tenant, two datacenters attached to it with exit rules, and
// a fake WIM mapped to both.
func (b *bundle) fixture() {
	b.t.Helper()
	b.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "tenant0"}}, 200)
	for i, dc := range []string{"dcA", "dcB"} {
		b.call("POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc + ":5000",
			"config": map[string]any{"external_connections": []any{map[string]any{
				"condition":         map[string]any{"provider:physical_network": "physnet1"},
				"vim_external_port": map[string]any{"switch": "00:00:00:00:00:00:00:0" + string(rune('a'+i)), "port": "1"}}}}}}, 200)
		b.call("POST", "/openmano/tenant0/datacenters/"+dc, nil, 200)
	}
	b.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wim0", "type": "fake", "wim_url": "http://wim0.example",
		"config": map[string]any{"wim_port_mapping": []any{
			map[string]any{"datacenter_name": "dcA", "pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": "00:00:00:00:00:00:00:0a", "pop_switch_port": 1,
				"wan_service_mapping_info": map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": 1}}}},
			map[string]any{"datacenter_name": "dcB", "pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": "00:00:00:00:00:00:00:0b", "pop_switch_port": "1",
				"wan_service_endpoint_id": "wan-b"}}},
		}}}}, 200)
}
