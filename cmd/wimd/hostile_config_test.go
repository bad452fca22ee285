package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// serveTest starts wimd on a fresh database with dataDir and the extra
// environment; it is stopped when the test ends.
func serveTest(t *testing.T, dataDir string, env map[string]string) string {
	t.Helper()
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = testSecretKey
	for k, v := range env {
		b.env[k] = v
	}
	addr, stop := b.serve(t, "--data-dir", dataDir)
	t.Cleanup(func() { stop() })
	return addr
}

// TestDevConnectors checks that the fake and failing types exist only with
// --dev-connectors, and that fake's state_file cannot name a file outside
// the data folder or one of wimd's own: a 400 naming the field, nothing
// written.
func TestDevConnectors(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(dataDir, "escape")); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dataDir, "secret.key")
	if err := os.WriteFile(keyFile, []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	wim := func(typ string, config map[string]any) map[string]any {
		return map[string]any{"wim": map[string]any{"type": typ, "wim_url": "http://fake-dev", "config": config}}
	}
	tests := []struct {
		name   string
		dev    bool
		body   map[string]any
		status int
		field  string
	}{
		{"fake without the flag", false, wim("fake", nil), 400, "wim.type"},
		{"failing without the flag", false, wim("failing", nil), 400, "wim.type"},
		{"fake with the flag", true, wim("fake", nil), 200, ""},
		{"state file inside", true, wim("fake", map[string]any{"state_file": filepath.Join(dataDir, "ctl.json")}), 200, ""},
		{"state file outside", true, wim("fake", map[string]any{"state_file": outside}), 400, "state_file"},
		{"state file through a link", true, wim("fake", map[string]any{"state_file": filepath.Join(dataDir, "escape", "victim")}), 400, "state_file"},
		{"state file dot-dot", true, wim("fake", map[string]any{"state_file": dataDir + "/../victim"}), 400, "state_file"},
		{"state file relative", true, wim("fake", map[string]any{"state_file": "victim"}), 400, "state_file"},
		{"the secret key", true, wim("fake", map[string]any{"state_file": keyFile}), 400, "state_file"},
		{"the database", true, wim("fake", map[string]any{"state_file": filepath.Join(dataDir, "postgres", "x.json")}), 400, "state_file"},
	}
	addrs := map[bool]string{
		false: serveTest(t, dataDir, nil),
		true:  serveTest(t, dataDir, map[string]string{"WIMRO_DEV_CONNECTORS": "true"}),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.body["wim"].(map[string]any)["name"] = strings.ReplaceAll(tt.name, " ", "-")
			status, body := api{t: t, addr: addrs[tt.dev]}.send("POST", "/openmano/wims", tt.body)
			if status != tt.status || !strings.Contains(body, tt.field) {
				t.Fatalf("POST /openmano/wims = %d %s, want %d naming %q", status, body, tt.status, tt.field)
			}
		})
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "precious" {
		t.Fatalf("the file outside the data folder: %q, %v", b, err)
	}
	if b, err := os.ReadFile(keyFile); err != nil || string(b) != "key" {
		t.Fatalf("the secret key file: %q, %v", b, err)
	}
}

// TestHostileCAFile checks that a ca_file that is a FIFO or a device is
// refused at once with a 400 naming it, while many such requests run at
// once, and that the database pool stays usable (the old code hung on the
// FIFO inside a transaction holding the WIM's row lock).
func TestHostileCAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := api{t: t, addr: serveTest(t, t.TempDir(), nil)}
	if status, body := c.send("POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "tapi", "wim_url": "https://ctl.example"}}); status != 200 {
		t.Fatalf("create WIM: %d %s", status, body)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		for _, file := range []string{fifo, "/dev/zero"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				path, body := "/openmano/wims/wan1", map[string]any{"wim": map[string]any{"config": map[string]any{"ca_file": file}}}
				if i%2 == 1 {
					path, body = "/openmano/wims", map[string]any{"wim": map[string]any{"name": "x", "type": "tapi", "wim_url": "https://ctl.example", "config": map[string]any{"ca_file": file}}}
				}
				method := map[bool]string{true: "PUT", false: "POST"}[i%2 == 0]
				status, answer := c.send(method, path, body)
				if status != 400 || !strings.Contains(answer, "ca_file") || !strings.Contains(answer, "not a regular file") {
					t.Errorf("%s %s with ca_file %s = %d %s, want 400 naming ca_file", method, path, file, status, answer)
				}
			}()
		}
	}
	wg.Wait()
	if status, body := c.send("GET", "/openmano/tenants", nil); status != 200 {
		t.Fatalf("GET /openmano/tenants after the refusals = %d %s", status, body)
	}
	var w struct {
		WIM wimro.WIM `json:"wim"`
	}
	_, body := c.send("GET", "/openmano/any/wims/wan1", nil)
	if err := json.Unmarshal([]byte(body), &w); err != nil || w.WIM.Config["ca_file"] != nil {
		t.Fatalf("the refused edits changed the WIM: %s (%v)", body, err)
	}
}
