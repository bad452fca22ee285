package main

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// TestScopedTokensThroughCLI (issue 39) through the binaries: a wimd with a
// token file of scoped tokens serves /metrics to the read-only Prometheus
// token, lists to the console's read-only token but refuses it a create
// (403 naming the write scope), lets the NFVO's token create, and shows
// all of it in openmano audit-list to the admin token only.
func TestScopedTokensThroughCLI(t *testing.T) {
	t.Parallel()
	wimdBin, cliBin := buildBinaries(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# one token a line: token id= scopes=\n"+
		"prom-5ecret id=prometheus scopes=read\n"+
		"console-5ecret id=console scopes=read\n"+
		"nfvo-5ecret id=nfvo scopes=read,write\n"+
		"ops-5ecret id=ops scopes=admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startWimd(t, wimdBin, []string{
		"WIMRO_DATABASE_URL=" + pgtest.URL(t),
		"WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"WIMRO_API_TOKEN_FILE=" + tokens,
	}, "--data-dir", t.TempDir(), "--reconcile-interval", "0")
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string) openmano {
		return openmano{t: t, bin: cliBin, env: []string{"OPENMANO_HOST=" + host, "OPENMANO_PORT=" + port, "OPENMANO_TENANT=t0", "OPENMANO_WIM=", "WIMRO_API_TOKEN=" + token}}
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer prom-5ecret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics with the Prometheus token: %d", resp.StatusCode)
	}

	as("nfvo-5ecret").ok("tenant-create", "t0")
	if out := as("console-5ecret").ok("tenant-list"); !strings.Contains(out, "t0") {
		t.Fatalf("tenant-list as the console: %s", out)
	}
	code, _, errs := as("console-5ecret").run("", "tenant-create", "t1")
	if code == 0 || !strings.Contains(errs, "needs the write scope") {
		t.Fatalf("tenant-create as the console: exit %d, %s; want refused naming the write scope", code, errs)
	}
	if code, _, errs := as("nfvo-5ecret").run("", "audit-list"); code == 0 || !strings.Contains(errs, "needs the admin scope") {
		t.Fatalf("audit-list as the NFVO: exit %d, %s; want refused naming the admin scope", code, errs)
	}

	out := as("ops-5ecret").ok("audit-list")
	for _, want := range []string{"nfvo", "POST", "/openmano/tenants", "ok", "console", "forbidden", "uuid="} {
		if !strings.Contains(out, want) {
			t.Errorf("audit-list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "5ecret") {
		t.Errorf("audit-list shows a token:\n%s", out)
	}
	doc := as("ops-5ecret").json("audit-list", "--limit", "1")
	if list, _ := doc["audit"].([]any); len(list) != 1 {
		t.Errorf("audit-list --limit 1: %v", doc)
	}
}
