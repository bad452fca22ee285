package persistence

import (
	"encoding/json"
	"testing"

	"github.com/wimro/wimro"
)

// TestJSONTextIsTheCleanedEncoding: whether jsonText takes its short path
// or cleans first, the text is what encoding the cleaned object gives.
func TestJSONTextIsTheCleanedEncoding(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]any{
		{"conn_info": map[string]any{"service_key": "k1", "vlan": 100.0}},
		{"list": []any{"a", map[string]any{"b": "c"}}, "names": []string{"x", "y"}},
		{"nul": "a\x00b"},
		{"k\x00": "v"},
		{"bad": "v\xff\xfe"},
		{"deep": map[string]any{"list": []any{"ok", "x\x00\xff"}}},
		{"fine": "\uFFFD is a character of its own"},
		{"backslash": `a literal \u0000 is not a NUL`},
	} {
		got, err := jsonText(m)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		want, err := json.Marshal(wimro.CleanMap(m))
		if err != nil {
			t.Fatal(err)
		}
		if *got != string(want) {
			t.Errorf("jsonText(%q) = %s, want %s", m, *got, want)
		}
	}
	if got, err := jsonText(nil); got != nil || err != nil {
		t.Fatalf("nil map = %v, %v", got, err)
	}
}
