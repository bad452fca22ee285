package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	onosemu "github.com/wimro/wimro/internal/testkit/emulators/onos"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// accountOf finds the account in an answer: the create's or edit's
// wim_account, the first of wim_accounts, or the WIM's wim_account.
func accountOf(t *testing.T, ans map[string]any) map[string]any {
	t.Helper()
	if a, ok := ans["wim_account"].(map[string]any); ok {
		return a
	}
	if l, ok := ans["wim_accounts"].([]any); ok && len(l) > 0 {
		return l[0].(map[string]any)
	}
	if w, ok := ans["wim"].(map[string]any); ok {
		if a, ok := w["wim_account"].(map[string]any); ok {
			return a
		}
	}
	t.Fatalf("no account in %v", ans)
	return nil
}

func acctStatus(a map[string]any) (string, string) {
	msg, _ := a["status_msg"].(string)
	st, _ := a["status"].(string)
	return st, msg
}

// TestAccountHealth drives the credentials check through wimd with the
// ONOS emulator (basic auth): a wrong password is ERROR with the
// controller's message in the create's answer, logged at WARN and counted
// in /metrics; the edit that fixes it is ACTIVE; the periodic check finds
// a controller that breaks later; a controller that does not answer within
// the create's wait leaves the account UNKNOWN.
func TestAccountHealth(t *testing.T) {
	t.Parallel()
	emu := onosemu.New(onosemu.Options{User: "onos", Password: "rocks"})
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(hang) })

	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b.env["WIMRO_MONITOR_INTERVAL"] = "200ms"
	addr, stop := b.serve(t, "--data-dir", t.TempDir())
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	}()
	a := api{t: t, addr: addr}
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "onos", "wim_url": srv.URL}})

	created := accountOf(t, a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"user": "onos", "password": "wrong-pw-7781"}}))
	id, _ := created["uuid"].(string)
	if st, msg := acctStatus(created); st != "ERROR" || !strings.Contains(msg, "401") {
		t.Fatalf("create with a wrong password: status %q %q, want ERROR with the controller's 401", st, msg)
	}
	if st, _ := acctStatus(accountOf(t, a.call("GET", "/openmano/t0/wims/wan1", nil))); st != "ERROR" {
		t.Fatalf("GET after a failed check: status %q", st)
	}
	log := b.stderr.String()
	if !strings.Contains(log, "account credentials check failed") || !strings.Contains(log, id) || !strings.Contains(log, "WARN") {
		t.Fatalf("no WARN line for account %s:\n%s", id, log)
	}
	if strings.Contains(log, "wrong-pw-7781") {
		t.Fatalf("the password is in the log:\n%s", log)
	}
	metric := func(status string, n int) (bool, string) {
		_, body := a.send("GET", "/metrics", nil)
		want := fmt.Sprintf("wimro_accounts_by_status{status=%q} %d\n", status, n)
		return strings.Contains(body, want), "metrics lack " + want
	}
	if ok, why := metric("ERROR", 1); !ok {
		t.Fatal(why)
	}

	edited := accountOf(t, a.call("PUT", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"password": "rocks"}}))
	if st, msg := acctStatus(edited); st != "ACTIVE" || msg != "" {
		t.Fatalf("edit with the right password: status %q %q, want ACTIVE", st, msg)
	}
	if ok, why := metric("ACTIVE", 1); !ok {
		t.Fatal(why)
	}
	if !strings.Contains(b.stderr.String(), "account credentials check passes again") {
		t.Fatalf("no INFO line on recovery:\n%s", b.stderr.String())
	}

	// The periodic check: the controller breaks behind wimd's back.
	emu.SetAppState(onosemu.VPLSApp, onosemu.StateInstalled)
	eventually.Until(t, 30*time.Second, "the periodic check records ERROR", func() (bool, string) {
		st, msg := acctStatus(accountOf(t, a.call("GET", "/openmano/t0/wims/wan1", nil)))
		return st == "ERROR" && msg != "", "status " + st + " " + msg
	})
	emu.SetAppState(onosemu.VPLSApp, onosemu.StateActive)
	eventually.Until(t, 30*time.Second, "the periodic check records ACTIVE", func() (bool, string) {
		st, msg := acctStatus(accountOf(t, a.call("GET", "/openmano/t0/wims/wan1", nil)))
		return st == "ACTIVE", "status " + st + " " + msg
	})

	// A controller that does not answer: the create answers after its
	// wait, before the check ends.
	a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t1"}})
	a.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan2", "type": "onos", "wim_url": silent.URL}})
	start := time.Now()
	slow := accountOf(t, a.call("POST", "/openmano/t1/wims/wan2", map[string]any{"wim_account": map[string]any{"user": "onos", "password": "rocks"}}))
	if st, _ := acctStatus(slow); st != "UNKNOWN" {
		t.Fatalf("create with a silent controller: status %q, want UNKNOWN", st)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the create waited %v for the check", d)
	}
	if ok, why := metric("UNKNOWN", 1); !ok {
		t.Fatal(why)
	}
}

// wimd health, the container image's health check, exits 0 while the
// serve at WIMRO_LISTEN answers /healthz, and 1 once it stopped.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	addr, stop := b.serve(t, "--data-dir", t.TempDir())
	probe := setup(t)
	_, port, _ := strings.Cut(addr, ":")
	probe.env["WIMRO_LISTEN"] = "0.0.0.0:" + port // an unspecified host: loopback
	if code := probe.app(nil).Run(t.Context(), []string{"health"}); code != 0 || probe.stdout.String() != "ok: http://127.0.0.1:"+port+"/healthz\n" {
		t.Fatalf("health of a serving wimd: exit %d\nstdout: %s\nstderr: %s", code, probe.stdout, probe.stderr)
	}
	stop()
	probe = setup(t)
	probe.env["WIMRO_LISTEN"] = addr
	if code := probe.app(nil).Run(t.Context(), []string{"health"}); code != 1 || !strings.Contains(probe.stderr.String(), "connection refused") {
		t.Fatalf("health of a stopped wimd: exit %d\nstderr: %s", code, probe.stderr)
	}
	for listen, want := range map[string]string{":9090": "http://127.0.0.1:9090/healthz", "[::]:1": "http://127.0.0.1:1/healthz", "wimd.example:443": "http://wimd.example:443/healthz"} {
		if got, err := healthURL(listen, false); err != nil || got != want {
			t.Errorf("healthURL(%q): %q, %v; want %q", listen, got, err, want)
		}
	}
	if got, _ := healthURL("[::1]:8443", true); got != "https://[::1]:8443/healthz" {
		t.Errorf("healthURL with TLS: %q", got)
	}
}
