package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// metadataSecret is what the fake metadata service answers; it must never
// reach a client of wimd.
const metadataSecret = "AKIAEXAMPLEMETADATA0"

// metadataServer is a stand-in for a cloud metadata service, listening on
// addr (a loopback address: the real one cannot be bound here), that
// counts the requests it gets.
func metadataServer(t *testing.T, addr string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	return connectortest.ServerAt(t, addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// A 404 with a body: what the connectors quote in their errors.
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("ami-id\ninstance-id\niam/security-credentials/admin\nAccessKeyId: " + metadataSecret + "\n"))
	}))
}

// wimBody is the create of WIM name of type ietfl2vpn at url.
func wimBody(name, url string) map[string]any {
	return map[string]any{"wim": map[string]any{"name": name, "type": "ietfl2vpn", "wim_url": url}}
}

// TestMetadataAnswerNotReflected is issue #30's proved case: a WIM URL at
// a metadata endpoint had the endpoint's answer reflected in the account's
// status_msg. With WIMRO_CONTROLLER_ALLOW leaving the endpoint out, the
// WIM is refused with a 400 naming wim_url and the setting, on create and
// on edit, and the endpoint gets no request.
func TestMetadataAnswerNotReflected(t *testing.T) {
	t.Parallel()
	meta, hits := metadataServer(t, "127.0.0.2:0")
	ctl, _ := metadataServer(t, "127.0.0.1:0")
	addr := serveTest(t, t.TempDir(), map[string]string{"WIMRO_CONTROLLER_ALLOW": "127.0.0.1/32"})
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})

	status, body := a.send("POST", "/openmano/wims", wimBody("meta", meta.URL))
	if status != http.StatusBadRequest || !strings.Contains(body, "wim_url") || !strings.Contains(body, "--controller-allow") || !strings.Contains(body, "127.0.0.2") {
		t.Errorf("POST /openmano/wims at %s = %d %s, want 400 naming wim_url, the address and --controller-allow", meta.URL, status, body)
	}
	if status == http.StatusOK {
		// What the old code did: the account's check reads the endpoint.
		acct := accountOf(t, a.call("POST", "/openmano/t0/wims/meta", map[string]any{"wim_account": map[string]any{"user": "u", "password": "p"}}))
		if _, msg := acctStatus(acct); strings.Contains(msg, metadataSecret) {
			t.Errorf("the metadata endpoint's answer is in the account's status_msg: %q", msg)
		}
	}

	// An allowed WIM cannot be moved there either.
	a.call("POST", "/openmano/wims", wimBody("ctl", ctl.URL))
	status, body = a.send("PUT", "/openmano/wims/ctl", map[string]any{"wim": map[string]any{"wim_url": meta.URL}})
	if status != http.StatusBadRequest || !strings.Contains(body, "wim_url") || !strings.Contains(body, "--controller-allow") {
		t.Errorf("PUT /openmano/wims/ctl to %s = %d %s, want 400 naming wim_url and --controller-allow", meta.URL, status, body)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the metadata endpoint got %d requests, want none", n)
	}
}

// TestControllerAllowFlag checks that --controller-allow wins over
// WIMRO_CONTROLLER_ALLOW, and that the setting reaches the connectors:
// a WIM the flag allows is written and its account checked.
func TestControllerAllowFlag(t *testing.T) {
	t.Parallel()
	ctl, hits := metadataServer(t, "127.0.0.2:0")
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	b.env["WIMRO_CONTROLLER_ALLOW"] = "127.0.0.1/32"
	addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--controller-allow", "10.0.0.0/8", "--controller-allow", "127.0.0.2,192.0.2.0/24")
	t.Cleanup(func() { stop() })
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	a.call("POST", "/openmano/wims", wimBody("ctl", ctl.URL))
	a.call("POST", "/openmano/t0/wims/ctl", map[string]any{"wim_account": map[string]any{"user": "u", "password": "p"}})
	if hits.Load() == 0 {
		t.Fatal("the account's check did not reach the controller the flag allows")
	}
	if !strings.Contains(b.stderr.String(), "controller_allow=10.0.0.0/8,127.0.0.2/32,192.0.2.0/24") {
		t.Fatalf("the policy in force is not logged as the flag's:\n%s", b.stderr.String())
	}
}

func TestControllerAllowRefusesBadEntries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  string
		args []string
	}{
		{"10.0.0.1/8", nil},
		{"", []string{"--controller-allow", "10.0.0.0/8,not a host"}},
	} {
		b := setup(t)
		b.env["WIMRO_CONTROLLER_ALLOW"] = tt.env
		if _, err := b.app(nil).parseServe(tt.args); err == nil || !strings.Contains(err.Error(), "controller") {
			t.Errorf("parseServe with WIMRO_CONTROLLER_ALLOW=%q %v = %v, want an error", tt.env, tt.args, err)
		}
	}
	// wimd reconcile reaches the controllers too, under the same flag.
	b := setup(t)
	if code := b.app(nil).Run(t.Context(), []string{"reconcile", "--controller-allow", "not a host"}); code == 0 || !strings.Contains(b.stderr.String(), `controller address "not a host"`) {
		t.Errorf("wimd reconcile --controller-allow 'not a host' exited %d:\n%s", code, b.stderr.String())
	}
}

// TestControllerAddressRebinding checks the default policy through wimd
// with host names resolved by the test: a name of the metadata address is
// refused when written, and a name that resolved to an allowed address
// when written but to the metadata address when connecting (DNS
// rebinding) is refused when connecting: the account is ERROR naming the
// address and the setting, and nothing is sent to the endpoint.
func TestControllerAddressRebinding(t *testing.T) {
	t.Parallel()
	meta, hits := metadataServer(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(meta.Listener.Addr().String())
	var rebound atomic.Int32
	b := setup(t)
	b.lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "metadata.test":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		case "rebind.test":
			if rebound.Add(1) == 1 {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return nil, errors.New("no such host")
	}
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	addr, stop := b.serve(t, "--data-dir", t.TempDir())
	t.Cleanup(func() { stop() })
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})

	for _, url := range []string{"http://metadata.test:" + port, "http://169.254.169.254", "http://[fd00:ec2::254]", "http://169.254.1.1:8080"} {
		status, body := a.send("POST", "/openmano/wims", wimBody("m", url))
		if status != http.StatusBadRequest || !strings.Contains(body, "wim_url") || !strings.Contains(body, "--controller-allow") {
			t.Errorf("POST /openmano/wims at %s = %d %s, want 400 naming wim_url and --controller-allow", url, status, body)
		}
	}

	a.call("POST", "/openmano/wims", wimBody("rebind", "http://rebind.test:"+port))
	acct := accountOf(t, a.call("POST", "/openmano/t0/wims/rebind", map[string]any{"wim_account": map[string]any{"user": "u", "password": "p"}}))
	st, msg := acctStatus(acct)
	if st != "ERROR" || !strings.Contains(msg, "169.254.169.254") || !strings.Contains(msg, "--controller-allow") || strings.Contains(msg, metadataSecret) {
		t.Errorf("account at a rebound name: status %q %q, want ERROR naming 169.254.169.254 and --controller-allow", st, msg)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the endpoint got %d requests, want none", n)
	}
}
