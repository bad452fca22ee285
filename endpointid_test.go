package wimro_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wimro/wimro"
)

func TestDeriveEndpointID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		info map[string]any
		want string
	}{
		// The vectors of the spec (§3.3), checked with Python 2.7.
		{"int port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": 1}, "dpid-port:6af9cfa2f22fb0c545129949fff64d2dda3f8a85"},
		{"json number port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": json.Number("1")}, "dpid-port:6af9cfa2f22fb0c545129949fff64d2dda3f8a85"},
		{"string port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": "1"}, "dpid-port:32260befc288d6b2395a230e1dc532b7e84a5b87"},
		// dpid-port hashes only the switch and port.
		{"extra keys ignored for dpid-port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": "BB:BB:BB:BB:BB:BB:BB:BB", "wan_switch_port": 1, "note": "x"}, "dpid-port:6af9cfa2f22fb0c545129949fff64d2dda3f8a85"},
	}
	for _, c := range cases {
		got, err := wimro.DeriveEndpointID(c.info)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	// Other types hash every key but mapping_type.
	a, _ := wimro.DeriveEndpointID(map[string]any{"mapping_type": "l2sm", "site-id": "s1"})
	b, _ := wimro.DeriveEndpointID(map[string]any{"mapping_type": "l2sm", "site-id": "s2"})
	if a == b || a[:5] != "l2sm:" {
		t.Errorf("l2sm ids %q %q", a, b)
	}
	_, err := wimro.DeriveEndpointID(map[string]any{"wan_switch_port": 1})
	if wimro.ErrorCode(err) != wimro.EINVALID {
		t.Errorf("missing mapping_type: %v", err)
	}
}

func TestPythonJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": map[string]any{"x": []any{1, 2}, "e": map[string]any{}}, "a": "é", "c": []any{}},
			"{\n\"a\": \"\\u00e9\", \n\"b\": {\n\"e\": {}, \n\"x\": [\n1, \n2\n]\n}, \n\"c\": []\n}"},
		{map[string]any{}, "{}"},
		{"😀", `"\ud83d\ude00"`},
		{"a/b<c>&\"\\\n\t\x01", `"a/b<c>&\"\\\n\t\u0001"`},
		{1.0, "1.0"},
		{0.1, "0.1"},
		{1e16, "1e+16"},
		{1.5e-7, "1.5e-07"},
		{123456.789, "123456.789"},
		{json.Number("2.50"), "2.5"},
		{true, "true"},
		{nil, "null"},
		{[]any{nil, false}, "[\nnull, \nfalse\n]"},
	}
	for _, c := range cases {
		got, err := wimro.PythonJSON(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("PythonJSON(%#v) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := wimro.PythonJSON(struct{}{}); err == nil {
		t.Error("unsupported type accepted")
	}
}

// The output is JSON that decodes back to the input.
func FuzzPythonJSON(f *testing.F) {
	f.Add(`{"a": 1, "b": [true, null, "x\u00e9"], "c": {"d": 1.5}}`)
	f.Add(`{"wan_switch_dpid": "BB", "wan_switch_port": 1}`)
	f.Fuzz(func(t *testing.T, s string) {
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.UseNumber()
		var in map[string]any
		if dec.Decode(&in) != nil || in == nil {
			return // not an object: not an input of ours
		}
		out, err := wimro.PythonJSON(in)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("invalid JSON %q: %v", out, err)
		}
		ref, _ := json.Marshal(in)
		json.Unmarshal(ref, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed %q into %q", s, out)
		}
	})
}
