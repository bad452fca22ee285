package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// A database whose secrets were sealed with one key is never served with
// another: not with a key file lost (wimd would make a new one), nor with
// a wrong key given. wimd exits non-zero naming the cause, leaves no
// generated key behind, and starts again once the right key is back.
func TestServeRefusesAnotherSecretKey(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.EmptyURL(t)
	dataDir := t.TempDir()
	keyFile := filepath.Join(dataDir, "secret.key")
	serveArgs := []string{"--data-dir", dataDir, "--dev-connectors"}

	// First start: the key is generated; an account with a password and
	// a WIM with a bearer token are stored sealed with it.
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = dbURL
	addr, stop := b.serve(t, serveArgs...)
	c := api{t: t, addr: addr}
	c.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	c.call("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "fake", "wim_url": "http://fake-key",
		"config": map[string]any{"bearer_token": "tok-secret"}}})
	c.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "a0", "user": "u", "password": "pw-secret"}})
	if code := stop(); code != 0 {
		t.Fatalf("first serve exited %d:\n%s", code, b.stderr.String())
	}
	good, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}

	run := func(env map[string]string) (int, string) {
		b := setup(t)
		b.env["WIMRO_DATABASE_URL"] = dbURL
		for k, v := range env {
			b.env[k] = v
		}
		// Serving at all is the failure: stop at once rather than hang.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		served := false
		code := b.app(func(string) { served = true; cancel() }).Run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, serveArgs...))
		if served {
			t.Fatalf("wimd served a database whose secrets its key cannot open:\n%s", b.stderr.String())
		}
		return code, b.stderr.String()
	}

	// The key file is lost.
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	code, out := run(nil)
	if code == 0 || !strings.Contains(out, "does not open the secrets stored in the database") || !strings.Contains(out, "no key was found") {
		t.Fatalf("serve without its key: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a key generated at the refused start was left at %s (err %v)", keyFile, err)
	}

	// A wrong key, given in the environment.
	code, out = run(map[string]string{"WIMRO_SECRET_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="})
	if code == 0 || !strings.Contains(out, "is not the one this database was written with") || !strings.Contains(out, "WIMRO_SECRET_KEY") {
		t.Fatalf("serve with a wrong key: exit %d\n%s", code, out)
	}
	for _, secret := range []string{"pw-secret", "tok-secret", "MDEyMzQ1"} {
		if strings.Contains(out, secret) {
			t.Fatalf("the log shows a secret (%s):\n%s", secret, out)
		}
	}

	// The right key back: serves again.
	if err := os.WriteFile(keyFile, good, 0o600); err != nil {
		t.Fatal(err)
	}
	b = setup(t)
	b.env["WIMRO_DATABASE_URL"] = dbURL
	_, stop = b.serve(t, serveArgs...)
	if code := stop(); code != 0 {
		t.Fatalf("serve with its key back exited %d:\n%s", code, b.stderr.String())
	}
}
