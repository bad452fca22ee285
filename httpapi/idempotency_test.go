package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro/httpapi"
)

// idemKey is the header of the IETF httpapi draft.
const idemKey = "Idempotency-Key"

// keyed sends a JSON POST with an Idempotency-Key.
func (b *bundle) keyed(path, key, body string) response {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idemKey, key)
	if b.tok != "" {
		req.Header.Set("Authorization", "Bearer "+b.tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Error(err)
		return response{}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Error(err)
	}
	r := response{status: resp.StatusCode, body: string(raw), header: resp.Header}
	json.Unmarshal([]byte(r.body), &r.json)
	return r
}

func (b *bundle) instanceCount() int {
	b.t.Helper()
	l, _ := get(b.call("GET", "/openmano/tenant0/instances", nil, 200).json, "instances").([]any)
	return len(l)
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestIdempotencyKeyConcurrentRetries: an NFVO that times out sends its
// create again, several times at once; with one Idempotency-Key only one
// instance is created, every 200 is that instance (the others are 409
// while it runs), and a later retry is its answer replayed, byte for byte.
func TestIdempotencyKeyConcurrentRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	body := marshal(t, instanceBody("ns1"))
	const retries = 8
	start := make(chan struct{})
	answers := make([]response, retries)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = b.keyed("/openmano/tenant0/instances", "retry-1", body)
		}()
	}
	close(start)
	wg.Wait()
	first := ""
	for _, r := range answers {
		switch r.status {
		case 200:
			if first == "" {
				first = r.str("uuid")
			}
			if r.str("uuid") != first || first == "" {
				t.Errorf("two answers name two instances: %s and %s", first, r.body)
			}
		case 409:
			if !strings.Contains(r.str("error", "description"), "still running") || r.str("error", "field") != idemKey {
				t.Errorf("409 = %s", r.body)
			}
		default:
			t.Errorf("retry answered %d: %s", r.status, r.body)
		}
	}
	if first == "" {
		t.Fatal("no retry got the instance")
	}
	if n := b.instanceCount(); n != 1 {
		t.Fatalf("%d instances after %d retries with one key, want 1", n, retries)
	}
	// Settled: every retry now is the first answer.
	var stored string
	for _, r := range answers {
		if r.status == 200 && r.header.Get("Idempotent-Replayed") == "" {
			stored = r.body
		}
	}
	again := b.keyed("/openmano/tenant0/instances", "retry-1", body)
	if again.status != 200 || again.body != stored || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("later retry = %d replayed=%q %s, want the first answer %s", again.status, again.header.Get("Idempotent-Replayed"), again.body, stored)
	}
	if n := b.instanceCount(); n != 1 {
		t.Fatalf("%d instances after a later retry, want 1", n)
	}
}

// TestIdempotencyKeyRules: the same key with another request is 422 and
// creates nothing; a request that failed frees its key; an expired key
// (24 h) is a new key; a malformed key is a 400 naming the header;
// without a key every POST creates.
func TestIdempotencyKeyRules(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.fixture()
	b.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	ns := func(name string) string { return marshal(t, instanceBody(name)) }
	tests := []struct {
		name, path, key, body string
		status                int
		field                 string
		instances             int // after the request
	}{
		{"first use", "/openmano/tenant0/instances", "k1", ns("a"), 200, "", 1},
		{"same key, another body", "/openmano/tenant0/instances", "k1", ns("b"), 422, idemKey, 1},
		{"same key, another path", "/openmano/tenants", "k1", `{"tenant": {"name": "t9"}}`, 422, idemKey, 1},
		{"a refused request", "/openmano/tenant0/instances", "k2", `{"instance": {"name": "bad;name"}}`, 400, "instance.name", 1},
		{"its key is free again", "/openmano/tenant0/instances", "k2", ns("c"), 200, "", 2},
		{"a key too long", "/openmano/tenant0/instances", strings.Repeat("k", 256), ns("d"), 400, idemKey, 2},
		{"a key not in printable ASCII", "/openmano/tenant0/instances", "clé", ns("d"), 400, idemKey, 2},
		{"expired: k1 is new", "/openmano/tenant0/instances", "k1", ns("e"), 200, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b.t = t
			if tt.name == "expired: k1 is new" {
				if _, err := b.db.Pool().Exec(t.Context(), `UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE principal = '' AND key = 'k1'`); err != nil {
					t.Fatal(err)
				}
			}
			r := b.keyed(tt.path, tt.key, tt.body)
			if r.status != tt.status || r.str("error", "field") != tt.field {
				t.Fatalf("= %d %s, want %d naming %q", r.status, r.body, tt.status, tt.field)
			}
			if n := b.instanceCount(); n != tt.instances {
				t.Fatalf("%d instances, want %d", n, tt.instances)
			}
		})
	}
	// Without a key, a retry is a second create.
	b.t = t
	b.call("POST", "/openmano/tenant0/instances", instanceBody("f"), 200)
	b.call("POST", "/openmano/tenant0/instances", instanceBody("f"), 200)
	if n := b.instanceCount(); n != 5 {
		t.Fatalf("%d instances, want 5", n)
	}
}

// TestIdempotencyKeyPerClient: a key is its client's (the IETF draft
// scopes keys per client). Two NFVOs with tokens of their own that happen
// to pick the same key each create their instance, and each retry is
// answered its own client's first answer, never the other's.
func TestIdempotencyKeyPerClient(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "tok-a id=nfvo-a\ntok-b id=nfvo-b\n")
	tf, err := httpapi.OpenTokenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := setupWith(t, httpapi.Options{TokenFile: tf}, "tok-a")
	a.fixture()
	a.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
	b := *a
	b.tok = "tok-b"
	clients := []struct {
		name string
		b    *bundle
		body string
	}{
		{"nfvo-a", a, marshal(t, instanceBody("ns-a"))},
		{"nfvo-b", &b, marshal(t, instanceBody("ns-b"))},
	}
	first := map[string]response{}
	for _, c := range clients {
		r := c.b.keyed("/openmano/tenant0/instances", "retry-1", c.body)
		if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%s's first request with the key = %d replayed=%q %s, want a new instance", c.name, r.status, r.header.Get("Idempotent-Replayed"), r.body)
		}
		first[c.name] = r
	}
	if first["nfvo-a"].str("uuid") == first["nfvo-b"].str("uuid") {
		t.Fatalf("both clients got instance %s", first["nfvo-a"].str("uuid"))
	}
	for _, c := range clients {
		again := c.b.keyed("/openmano/tenant0/instances", "retry-1", c.body)
		if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" || again.body != first[c.name].body {
			t.Fatalf("%s's retry = %d replayed=%q %s, want its own first answer %s", c.name, again.status,
				again.header.Get("Idempotent-Replayed"), again.body, first[c.name].body)
		}
	}
	if n := a.instanceCount(); n != 2 {
		t.Fatalf("%d instances, want 2 (one per client)", n)
	}
}
