package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/internal/testkit/openapitest"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type bundle struct {
	t   testing.TB
	srv *httptest.Server
	db  *persistence.DB
	tok string
	// f makes fixtures straight through the engine behind srv.
	f *testfactory.Factory
}

// setup starts the API over a fresh database; with a token, every request
// of the bundle carries it.
func setup(t testing.TB, token string) *bundle {
	t.Helper()
	return setupWith(t, httpapi.Options{Token: token}, token)
}

// setupWith is setup with the server's options given; the bundle's calls
// carry token.
func setupWith(t testing.TB, opts httpapi.Options, token string) *bundle {
	t.Helper()
	f := testfactory.New(t)
	api := httpapi.New(f.Eng, opts)
	// Every answer of every test on the bundle, errors included, must
	// follow the OpenAPI document the server serves. Benchmarks time the
	// server alone.
	h := api.Handler()
	if _, bench := t.(*testing.B); !bench {
		h = openapitest.MustLoad(t, api.OpenAPI()).Handler(t, h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &bundle{t: t, srv: srv, db: f.DB, tok: token, f: f}
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
	headers := map[string]string{}
	switch {
	case contentType == "-": // no Content-Type at all
	case contentType != "":
		headers["Content-Type"] = contentType
	case body != "":
		headers["Content-Type"] = "application/json"
	}
	return b.doHeaders(method, path, body, headers)
}

// doHeaders sends body with exactly these headers (and the bundle's
// token).
func (b *bundle) doHeaders(method, path, body string, headers map[string]string) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
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
// a fake WIM mapped to both (dcB by its endpoint id wan-b).
func (b *bundle) fixture() {
	b.t.Helper()
	t0 := b.f.Tenant(b.t, "tenant0")
	b.f.Datacenter(b.t, "dcA", t0)
	b.f.Datacenter(b.t, "dcB", t0)
	b.f.WIM(b.t, "wim0", testfactory.Mapping("dcA", 1), engine.PortMappingInput{DatacenterName: "dcB", PopWANMappings: []engine.PopWANMappingInput{{
		PopSwitchDPID: testfactory.PopDPID("dcB"), PopSwitchPort: "1", WANServiceEndpointID: "wan-b"}}})
}
