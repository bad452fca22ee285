package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/tlstest"
)

// The openmano binary against a wimd binary serving HTTPS with a private
// CA and a token file: OPENMANO_HOST=https://... with --ca-file or
// OPENMANO_CA_FILE works; without the CA, or with another one, it fails
// with exit 3 and a message naming the certificate problem; a rotated
// token file refuses the old token without a restart.
func TestCLIOverTLS(t *testing.T) {
	t.Parallel()
	wimdBin, cliBin := buildBinaries(t)
	pki, other := tlstest.New(t), tlstest.New(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, tokens, "cli-tok-1\ncli-tok-2\n")
	addr := startWimd(t, wimdBin, []string{
		"WIMRO_DATABASE_URL=" + pgtest.URL(t),
		"WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"WIMRO_TLS_CERT=" + pki.Cert, "WIMRO_TLS_KEY=" + pki.Key,
		"WIMRO_API_TOKEN_FILE=" + tokens,
	}, "--data-dir", t.TempDir())
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	om := openmano{t: t, bin: cliBin, env: []string{
		"OPENMANO_HOST=https://127.0.0.1:" + port, "OPENMANO_PORT=1", "OPENMANO_TENANT=", "OPENMANO_WIM=",
		"OPENMANO_CA_FILE=", "WIMRO_API_TOKEN=cli-tok-1",
	}}

	if out := om.ok("tenant-create", "tls-t", "--ca-file", pki.CA); !strings.Contains(out, "tls-t") {
		t.Fatalf("tenant-create over HTTPS: %q", out)
	}
	// The CA from the environment, and the port from OPENMANO_PORT with a
	// host name the certificate holds; the second token of the file.
	byEnv := om.with("OPENMANO_CA_FILE="+pki.CA, "OPENMANO_HOST=https://localhost", "OPENMANO_PORT="+port, "WIMRO_API_TOKEN=cli-tok-2")
	if out := byEnv.ok("tenant-list"); !strings.Contains(out, "tls-t") {
		t.Fatalf("tenant-list with OPENMANO_CA_FILE: %q", out)
	}

	// No CA, or the wrong one: a connection error naming the certificate.
	for name, o := range map[string]openmano{"no CA": om, "another CA": om.with("OPENMANO_CA_FILE=" + other.CA)} {
		code, out, errs := o.run("", "tenant-list")
		if code != exitConnection || out != "" || !strings.Contains(errs, "certificate signed by unknown authority") || !strings.Contains(errs, "--ca-file") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errs)
		}
	}
	// Plain HTTP to the HTTPS port: the server's refusal.
	if code, _, errs := om.with("OPENMANO_HOST=127.0.0.1", "OPENMANO_PORT="+port).run("", "tenant-list"); code != exitServer || !strings.Contains(errs, "HTTP request to an HTTPS server") {
		t.Errorf("http to https: exit %d, %q", code, errs)
	}
	// A CA file that cannot be used is the client's error.
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	writeFile(t, notPEM, "not a certificate\n")
	for file, want := range map[string]string{notPEM: "no PEM certificate", filepath.Join(t.TempDir(), "absent.pem"): "no such file"} {
		if code, _, errs := om.run("", "tenant-list", "--ca-file", file); code != exitCLI || !strings.Contains(errs, want) {
			t.Errorf("--ca-file %s: exit %d, %q", file, code, errs)
		}
	}

	// Rotation: cli-tok-1 leaves the file, cli-tok-3 comes in.
	tmp := tokens + ".new"
	writeFile(t, tmp, "cli-tok-2\ncli-tok-3\n")
	if err := os.Rename(tmp, tokens); err != nil {
		t.Fatal(err)
	}
	withCA := om.with("OPENMANO_CA_FILE=" + pki.CA)
	eventually.Until(t, 30*time.Second, "cli-tok-1 refused and cli-tok-3 accepted", func() (bool, string) {
		oldCode, _, oldErr := withCA.run("", "tenant-list")
		newCode, _, newErr := withCA.with("WIMRO_API_TOKEN=cli-tok-3").run("", "tenant-list")
		return oldCode == exitServer && strings.Contains(oldErr, "bearer token") && newCode == exitOK, oldErr + " / " + newErr
	})
}
