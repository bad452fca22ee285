package emulator

import (
	"strings"
	"testing"
)

// TestLinter: the linter accepts a document of its modules and refuses
// one out of range or missing a mandatory leaf with yanglint's message,
// recording both; without "-i" a model whose default is an identity of
// its import cannot load, so every check fails naming the load.
func TestLinter(t *testing.T) {
	t.Parallel()
	const dir = "testdata/lint"
	files := []string{"wimro-lint-top@2026-11-27.yang"}
	l := NewLinter(dir, files, "-i")
	t.Cleanup(l.Close)
	tests := []struct {
		name string
		doc  map[string]any
		want string // "" accepts
	}{
		{"valid", map[string]any{"wimro-lint-top:top": map[string]any{"name": "a", "vlan": 100, "colour": "wimro-lint-base:red"}}, ""},
		{"out of range", map[string]any{"wimro-lint-top:top": map[string]any{"name": "a", "vlan": 5000}}, "out of the allowed range"},
		{"missing mandatory", map[string]any{"wimro-lint-top:top": map[string]any{"vlan": 7}}, `Mandatory node "name"`},
		{"unknown leaf", map[string]any{"wimro-lint-top:top": map[string]any{"name": "a", "mtu": 1500}}, `"mtu"`},
	}
	for _, tt := range tests {
		err := l.Check(tt.name, LintConfig, tt.doc, nil)
		if tt.want == "" && err != nil {
			t.Errorf("%s: %v, want accepted", tt.name, err)
		}
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want refused with %q", tt.name, err, tt.want)
		}
	}
	if got, f := l.Checked(), l.Failures(); got != len(tests) || len(f) != len(tests)-1 || !strings.HasPrefix(f[0], "out of range: ") {
		t.Fatalf("checked %d, failures %q; want %d checked and every refusal named", got, f, len(tests))
	}

	noImpl := NewLinter(dir, files)
	t.Cleanup(noImpl.Close)
	if err := noImpl.Check("any", LintConfig, tests[0].doc, nil); err == nil || !strings.Contains(err.Error(), "non-implemented") {
		t.Fatalf("without -i: %v, want the load to fail on the identity of a non-implemented module", err)
	}
	missing := NewLinter(dir, []string{"no-such@2026-11-27.yang"})
	if err := missing.Check("any", LintConfig, tests[0].doc, nil); err == nil || !strings.Contains(err.Error(), "no-such") {
		t.Fatalf("a missing module file: %v, want an error naming it", err)
	}
}
