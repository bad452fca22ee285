package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openmano completion SHELL prints a script for the shell; the script
// asks openmano itself (__complete), which knows every command and the
// values of -o.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for openmano",
		"zsh":  "#compdef openmano",
		"fish": "complete -c openmano",
	} {
		r := runCLI(t, noEnv, "", "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: exit %d, stderr %q, stdout starts %.80q", shell, r.code, r.stderr, r.stdout)
		}
	}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", ""}, []string{"tenant-create", "wim-port-mapping-create", "action-list", "cluster-list", "completion"}},
		{[]string{"__complete", "wim-l"}, []string{"wim-list"}},
		{[]string{"__complete", "wim-list", "-o", ""}, []string{"table", "json", "yaml"}},
		{[]string{"__complete", "wim-delete", "--"}, []string{"--force", "--output"}},
		{[]string{"__complete", "completion", ""}, []string{"bash", "zsh", "fish"}},
	}
	for _, c := range cases {
		r := runCLI(t, noEnv, "", c.args...)
		for _, w := range c.want {
			if r.code != 0 || !strings.Contains(r.stdout, w+"\n") && !strings.Contains(r.stdout, w+"\t") {
				t.Errorf("%q: exit %d, stdout %q lacks %q", c.args, r.code, r.stdout, w)
			}
		}
	}
	if r := runCLI(t, noEnv, "", "completion", "tcsh"); r.code != exitUsage || !strings.Contains(r.stderr, `unknown shell "tcsh"`) {
		t.Errorf("completion tcsh: %+v", r)
	}
}

// A mistyped command gets cobra's suggestions; an unknown flag is
// reported once, as --flag.
func TestUnknownCommandAndFlag(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"wim-lst"}, "unknown command \"wim-lst\"\n\nDid you mean this?\n\twim-list\n"},
		{[]string{"tenant-craete", "t0"}, "Did you mean this?\n\ttenant-create\n"},
		{[]string{"help", "datacenter-lst"}, "Did you mean this?\n\tdatacenter-list\n"},
		{[]string{"tenant-list", "--nope"}, "openmano tenant-list: unknown flag: --nope\nRun 'openmano tenant-list --help' for usage.\n"},
		{[]string{"tenant-list", "-x"}, "unknown shorthand flag: 'x' in -x"},
	}
	for _, c := range cases {
		r := runCLI(t, noEnv, "", c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
		if n := strings.Count(r.stderr, "unknown"); n != 1 {
			t.Errorf("%v: reported %d times: %q", c.args, n, r.stderr)
		}
	}
}

// The help names every flag --name; the -name spelling of Go's flag
// package, which openmano took, still works, and a value that looks like a
// flag stays a value.
func TestDoubleDashFlags(t *testing.T) {
	t.Parallel()
	r := runCLI(t, noEnv, "", "wim-create", "--help")
	for _, want := range []string{"--description string", "--type string", "--config string", "-o, --output string", "-v, --verbose count"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, bad := range []string{" -description", " -type", " -output"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("help shows %q:\n%s", bad, r.stdout)
		}
	}
	f := newFakeServer(t, map[string]answer{
		"POST /openmano/wims": {200, `{"wim": {"uuid": "33333333-3333-3333-3333-333333333333", "name": "wan1"}}`},
	})
	cases := [][]string{
		{"wim-create", "wan1", "http://c", "-description", "-type", "-type", "fake", "-output=json"},
		{"-o", "json", "wim-create", "--description=-type", "wan1", "--type", "fake", "http://c"},
		{"wim-create", "wan1", "-vv", "http://c", "--type", "fake", "--description", "-type", "-ojson"},
	}
	for i, args := range cases {
		r := runCLI(t, f.env(nil), "", args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, `{"wim"`) {
			t.Fatalf("%v: %+v", args, r)
		}
		w := asMap(f.requests()[i].body["wim"])
		if w["name"] != "wan1" || w["wim_url"] != "http://c" || w["description"] != "-type" || w["type"] != "fake" {
			t.Errorf("%v: sent %v", args, w)
		}
	}
}

// A file holding a tab is read as JSON, and the error says so.
func TestTabFileError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "ns.yaml")
	if err := os.WriteFile(file, []byte("instance:\n\tname: ns\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, func(k string) string { return map[string]string{"OPENMANO_TENANT": "t0"}[k] }, "", "instance-scenario-create", file)
	for _, want := range []string{file + ": the document contains a tab, so it was read as JSON", "invalid character 'i'", "replace the tabs with spaces"} {
		if r.code != exitCLI || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q lacks %q", r.code, r.stderr, want)
		}
	}
	// JSON with tabs is read as before.
	if err := os.WriteFile(file, []byte("{\n\t\"instance\": {\"name\": \"ns\"}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc, err := loadFileOrYAML(file)
	if err != nil || asMap(asMap(doc)["instance"])["name"] != "ns" {
		t.Fatalf("%v %v", doc, err)
	}
}

// The aliases of openmano run their command, and their help is its help.
func TestAliases(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, map[string]answer{
		"DELETE /openmano/t0/wims/wan1/port_mapping": {200, `{"result": "port mapping for wim wan1 deleted."}`},
	})
	env := f.env(map[string]string{"OPENMANO_TENANT": "t0"})
	r := runCLI(t, env, "", "wim-port-mapping-clear", "wan1", "-f")
	if r.code != 0 || r.stdout != "port mapping for wim wan1 deleted.\n" {
		t.Fatalf("wim-port-mapping-clear: %+v", r)
	}
	if reqs := f.requests(); len(reqs) != 1 || reqs[0].method != "DELETE" {
		t.Fatalf("sent %+v", reqs)
	}
	for _, args := range [][]string{{"help", "wim-port-mapping-set"}, {"wim-port-mapping-set", "--help"}} {
		if r := runCLI(t, noEnv, "", args...); r.code != 0 || !strings.Contains(r.stdout, "Usage: openmano wim-port-mapping-create [WIM] FILE") {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

// Ctrl-C while waiting for the server: exit 130, "Interrupted".
func TestInterrupted(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	env := map[string]string{"OPENMANO_HOST": u.Hostname(), "OPENMANO_PORT": u.Port()}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	var out, errb bytes.Buffer
	c := &CLI{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	code := c.Run(ctx, []string{"tenant-list", "-o", "json"})
	if code != exitInterrupted || !strings.Contains(errb.String(), `"type": "interrupted"`) || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
