package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	unitFile      = "../../contrib/wimd.service"
	envFile       = "../../contrib/wimd.env"
	unitExecStart = "ExecStart=/usr/local/bin/wimd serve"
)

// systemdAnalyze returns the path of systemd-analyze (lookTool).
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	return lookTool(t, "systemd-analyze", "scripts/ensure-systemd-analyze.sh", "Debian's systemd package")
}

// lookTool returns the path of the tool name, skipping the test when it
// is missing (failing it under CI, where `make deps` installs it with
// script, from pkg).
func lookTool(t *testing.T, name, script, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not on PATH under CI: %v (`make deps` installs it: %s)", name, err, script)
		}
		t.Skipf("%s is not on PATH: `make deps` installs it (%s)", name, pkg)
	}
	return path
}

// TestSystemdUnitVerifies runs `systemd-analyze verify` on
// contrib/wimd.service, with ExecStart pointed at a wimd built here
// (verify checks that the executable exists). verify needs no running
// systemd (none runs in the build containers) and no flags: --man
// matters only for man: links in Documentation=, and the unit needs
// nothing under --root. It exits 0 on a misspelt key or value ("Unknown
// key ..., ignoring"), so any output fails the test too; the second case
// shows that verify does report such a line.
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	analyze := systemdAnalyze(t)
	raw, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	if !strings.Contains(unit, "\n"+unitExecStart+"\n") {
		t.Fatalf("%s has no line %q", unitFile, unitExecStart)
	}
	for _, want := range []string{
		"\nEnvironmentFile=/etc/wimro/wimd.env\n", // where docs/operations.md installs contrib/wimd.env
		"\nKillMode=mixed\n",                      // SIGTERM to wimd alone: it stops its own PostgreSQL
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("%s lacks the line %q", unitFile, strings.TrimSpace(want))
		}
	}
	bin := buildWimd(t)
	unit = strings.Replace(unit, unitExecStart, "ExecStart="+bin+" serve", 1)

	for _, tc := range []struct {
		name  string
		unit  string
		clean bool   // verify must print nothing and exit 0
		want  string // else its output must name this
	}{
		{name: "as shipped", unit: unit, clean: true},
		{name: "a misspelt setting is reported", unit: strings.Replace(unit, "\nProtectSystem=strict\n", "\nProtectSystem=stritc\n", 1), want: "stritc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// verify names the unit after its file.
			path := filepath.Join(t.TempDir(), "wimd.service")
			if err := os.WriteFile(path, []byte(tc.unit), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.CommandContext(t.Context(), analyze, "verify", path).CombinedOutput()
			text := strings.TrimSpace(string(out))
			switch {
			case tc.clean && (err != nil || text != ""):
				t.Fatalf("systemd-analyze verify %s: %v\n%s", unitFile, err, text)
			case !tc.clean && !strings.Contains(text, tc.want):
				t.Fatalf("systemd-analyze verify did not report %q (exit %v):\n%s", tc.want, err, text)
			}
		})
	}
}

// envLine is a setting of the environment file, commented out or not.
var envLine = regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=`)

// TestEnvFileNamesWhatWimdReads checks contrib/wimd.env against the
// variables wimd reads (those of docs/configuration.md's tables): every variable it
// names is one wimd reads, and every WIMRO_ variable wimd reads is there.
func TestEnvFileNamesWhatWimdReads(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := knownVars(t, wimdFlags(t))
	named := map[string]bool{}
	for i, line := range strings.Split(string(raw), "\n") {
		m := envLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if named[m[1]] {
			t.Errorf("%s:%d: %s is named twice", envFile, i+1, m[1])
		}
		named[m[1]] = true
		if !all[m[1]] {
			t.Errorf("%s:%d: wimd does not read %s", envFile, i+1, m[1])
		}
	}
	for v := range all {
		if strings.HasPrefix(v, "WIMRO_") && !named[v] {
			t.Errorf("%s does not name %s, which wimd reads", envFile, v)
		}
	}
}
