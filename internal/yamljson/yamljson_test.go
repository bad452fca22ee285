package yamljson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		want     string // the document as JSON
		err      string // a part of the error
	}{
		{"yaml", "instance:\n  name: ns\n  vlan: 100\n", `{"instance":{"name":"ns","vlan":100}}`, ""},
		{"json", `{"instance": {"name": "ns"}}`, `{"instance":{"name":"ns"}}`, ""},
		{"yaml int keys", "1: a\n", `{"1":"a"}`, ""},
		{"json with tabs", "{\n\t\"id\": 12345678901234567890\n}", `{"id":12345678901234567890}`, ""},
		{"yaml with a tab in a value", "name: a\tb\n", `{"name":"a\tb"}`, ""},
		{"yaml indented with a tab", "instance:\n\tname: ns\n", "", "contains a tab, so it was read as JSON"},
		{"two documents", "a: 1\n---\nb: 2\n", "", "trailing data"},
		{"two json documents with a tab", "{}\t{}", "", "trailing data"},
		{"bad yaml", "a: [", "", "yaml:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			doc, err := Decode([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Decode(%q) = %v, %v; want an error with %q", c.in, doc, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%q): %v", c.in, err)
			}
			got, err := json.Marshal(doc)
			if err != nil || string(got) != c.want {
				t.Fatalf("Decode(%q) = %s %v, want %s", c.in, got, err, c.want)
			}
		})
	}
}

// The tab error says why the document was read as JSON and what to do,
// and keeps both causes.
func TestTabErrorTeaches(t *testing.T) {
	t.Parallel()
	_, err := Decode([]byte("wim:\n\tname: wan1\n"))
	var te *TabError
	if !errors.As(err, &te) {
		t.Fatalf("error %T %v, want *TabError", err, err)
	}
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		t.Errorf("the JSON cause is lost: %v", err)
	}
	for _, want := range []string{"contains a tab", "read as JSON", "invalid character 'w'", "replace the tabs with spaces"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestMarshalYAMLNumbers(t *testing.T) {
	t.Parallel()
	doc, err := DecodeJSON([]byte(`{"port": 1, "ratio": 0.5, "name": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := MarshalYAML(doc)
	if err != nil || string(out) != "name: x\nport: 1\nratio: 0.5\n" {
		t.Fatalf("%q %v", out, err)
	}
}
