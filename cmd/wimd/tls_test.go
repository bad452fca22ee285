package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/tlstest"
)

// statusOf sends GET url with an optional bearer token through client.
func statusOf(t *testing.T, client *http.Client, url, token string) (int, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// wimd serves HTTPS with --tls-cert/--tls-key from the environment (TLS
// 1.2 at least), takes the tokens of WIMRO_API_TOKEN_FILE besides
// WIMRO_API_TOKEN, and takes a rewritten token file without a restart.
func TestServeTLSWithTokenFile(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	replaceFile(t, tokens, "# wimro API tokens\ntls-tok-a\n\ntls-tok-b\n")
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.EmptyURL(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	b.env["WIMRO_TLS_CERT"] = pki.Cert
	b.env["WIMRO_TLS_KEY"] = pki.Key
	b.env["WIMRO_API_TOKEN_FILE"] = tokens
	b.env["WIMRO_API_TOKEN"] = "tls-tok-env"
	addr, stop := b.serve(t, "--data-dir", t.TempDir())
	defer stop()
	base := "https://" + addr
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool(t)}}}

	if code, err := statusOf(t, client, base+"/healthz", ""); err != nil || code != http.StatusOK {
		t.Fatalf("healthz over HTTPS: %d %v", code, err)
	}
	if !strings.Contains(b.stderr.String(), "scheme=https") {
		t.Fatalf("the log does not say HTTPS:\n%s", b.stderr.String())
	}
	tenants := base + "/openmano/tenants"
	for tok, want := range map[string]int{"": 401, "nope": 401, "tls-tok-a": 200, "tls-tok-b": 200, "tls-tok-env": 200} {
		if code, err := statusOf(t, client, tenants, tok); err != nil || code != want {
			t.Errorf("token %q: %d %v, want %d", tok, code, err, want)
		}
	}

	// Rotation: tls-tok-a is replaced by tls-tok-c; no restart.
	replaceFile(t, tokens, "tls-tok-b\ntls-tok-c\n")
	eventually.Until(t, 30*time.Second, "the old token refused and the new one accepted", func() (bool, string) {
		old, _ := statusOf(t, client, tenants, "tls-tok-a")
		nw, _ := statusOf(t, client, tenants, "tls-tok-c")
		return old == 401 && nw == 200, "old " + http.StatusText(old) + ", new " + http.StatusText(nw)
	})
	if code, _ := statusOf(t, client, tenants, "tls-tok-env"); code != 200 {
		t.Fatalf("WIMRO_API_TOKEN after rotation: %d", code)
	}

	// A client that does not trust the CA, one limited to TLS 1.1, and
	// one speaking plain HTTP all fail.
	var unknown x509.UnknownAuthorityError
	if _, err := statusOf(t, &http.Client{Timeout: 30 * time.Second}, base+"/healthz", ""); !errors.As(err, &unknown) {
		t.Fatalf("untrusted CA: %v", err)
	}
	old := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.Pool(t), MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}}}
	if _, err := statusOf(t, old, base+"/healthz", ""); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("TLS 1.1 client: %v", err)
	}
	if code, err := statusOf(t, http.DefaultClient, "http://"+addr+"/healthz", ""); err != nil || code != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the HTTPS port: %d %v", code, err)
	}

	for _, secret := range []string{"tls-tok-a", "tls-tok-b", "tls-tok-c", "tls-tok-env", "BEGIN"} {
		if strings.Contains(b.stderr.String(), secret) {
			t.Fatalf("%q reached the log:\n%s", secret, b.stderr.String())
		}
	}
}

// --tls-cert and --tls-key go together, a pair that does not load is
// named, and so is a token file that cannot be used; wimd stops before it
// starts anything.
func TestTLSAndTokenFlagErrors(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t)
	dir := t.TempDir()
	emptyTokens := filepath.Join(dir, "tokens")
	replaceFile(t, emptyTokens, "# none yet\n")
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--tls-cert", pki.Cert}, "--tls-cert (WIMRO_TLS_CERT) needs --tls-key"},
		{map[string]string{"WIMRO_TLS_KEY": pki.Key}, nil, "--tls-key (WIMRO_TLS_KEY) needs --tls-cert"},
		{nil, []string{"--tls-cert", pki.Key, "--tls-key", pki.Key}, "--tls-cert " + pki.Key},
		{nil, []string{"--tls-cert", pki.Cert, "--tls-key", filepath.Join(dir, "absent.pem")}, "absent.pem: no such file"},
		{nil, []string{"--api-token-file", emptyTokens}, "--api-token-file: token file " + emptyTokens + " holds no token"},
		{map[string]string{"WIMRO_API_TOKEN_FILE": filepath.Join(dir, "absent")}, nil, "--api-token-file: token file: stat " + filepath.Join(dir, "absent") + ": no such file"},
	}
	for _, c := range cases {
		b := setup(t)
		for k, v := range c.env {
			b.env[k] = v
		}
		code := b.app(nil).Run(t.Context(), append([]string{"serve", "--data-dir", dir}, c.args...))
		if code != 1 || !strings.Contains(b.stderr.String(), c.want) {
			t.Errorf("%v %v: exit %d, want 1 and %q:\n%s", c.env, c.args, code, c.want, b.stderr.String())
		}
		if strings.Contains(b.stderr.String(), "local PostgreSQL") {
			t.Errorf("%v %v: a database was started before the check", c.env, c.args)
		}
	}
}

// Serving without any token on a non-loopback address is warned about at
// start; on loopback, or with a token, it is not.
func TestNoTokenWarning(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	const warning = `level=WARN msg="serving without an API token on a non-loopback address`
	for _, c := range []struct {
		listen, token string
		warn          bool
	}{
		{"127.0.0.1:0", "", false},
		{"0.0.0.0:0", "warn-tok", false},
		{"0.0.0.0:0", "", true},
	} {
		b := setup(t)
		b.env["WIMRO_DATABASE_URL"] = url
		b.env["WIMRO_SECRET_KEY"] = testSecretKey
		b.env["WIMRO_API_TOKEN"] = c.token
		addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--listen", c.listen)
		_, port, _ := net.SplitHostPort(addr)
		if code, _ := get(t, "http://"+net.JoinHostPort("127.0.0.1", port)+"/healthz"); code != http.StatusOK {
			t.Fatalf("%s: healthz %d", c.listen, code)
		}
		if code := stop(); code != 0 {
			t.Fatalf("%s: exit %d:\n%s", c.listen, code, b.stderr.String())
		}
		if got := strings.Contains(b.stderr.String(), warning); got != c.warn {
			t.Errorf("listen %s, token %q: warning %v, want %v:\n%s", c.listen, c.token, got, c.warn, b.stderr.String())
		}
	}
}
