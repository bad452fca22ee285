package wimro_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/wimro/wimro"
)

// decode decodes JSON text the way the API does: numbers stay json.Number,
// so 1 and 1.0 remain distinct.
func decode(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// The expected outputs were produced by Python 2.7.18:
// json.dumps(json.loads(in), encoding='utf-8', sort_keys=True, indent=False).
func TestPythonJSONMatchesPython2(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"spec example", `{"b":{"x":[1,2],"e":{}},"a":"é","c":[]}`,
			"{\n\"a\": \"\\u00e9\", \n\"b\": {\n\"e\": {}, \n\"x\": [\n1, \n2\n]\n}, \n\"c\": []\n}"},
		{"empty object", `{}`, `{}`},
		{"empty array", `[]`, `[]`},
		{"empty containers nested", `{"a":[],"b":{}}`, "{\n\"a\": [], \n\"b\": {}\n}"},
		{"nested arrays and objects", `[{"b":1,"a":[null,false]},[[]]]`,
			"[\n{\n\"a\": [\nnull, \nfalse\n], \n\"b\": 1\n}, \n[\n[]\n]\n]"},
		{"keys sorted by code point", `{"b":1,"B":2,"a":3,"é":4,"😀":5,"\uffff":6,"":7,"a b":8}`,
			"{\n\"\": 7, \n\"B\": 2, \n\"a\": 3, \n\"a b\": 8, \n\"b\": 1, \n\"\\u00e9\": 4, \n\"\\uffff\": 6, \n\"\\ud83d\\ude00\": 5\n}"},

		{"astral character", `"😀"`, `"\ud83d\ude00"`},
		{"BMP characters", `"é中\u2028\ufeff\uffff"`, `"\u00e9\u4e2d\u2028\ufeff\uffff"`},
		{"escapes", `"a/b<c>&\"\\\n\r\t\b\f\u0000\u0001\u001f\u007f\u0080"`,
			`"a/b<c>&\"\\\n\r\t\b\f\u0000\u0001\u001f\u007f\u0080"`},

		{"float 1.0", `1.0`, `1.0`},
		{"float 0.1", `0.1`, `0.1`},
		{"float 1e16", `1e16`, `1e+16`},
		{"float 1e15", `1e15`, `1000000000000000.0`},
		{"float 1.5e-7", `1.5e-7`, `1.5e-07`},
		{"float 1e-4", `0.0001`, `0.0001`},
		{"float 1e-5", `0.00001`, `1e-05`},
		{"float 0.00011", `0.00011`, `0.00011`},
		{"float 123456.789", `123456.789`, `123456.789`},
		{"float -0.0", `-0.0`, `-0.0`},
		{"float smallest", `5e-324`, `5e-324`},
		{"float largest", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"float below 1e16", `9999999999999998.0`, `9999999999999998.0`},
		{"float 1E2", `1E2`, `100.0`},
		{"float 2.50", `2.50`, `2.5`},
		{"float overflow", `1e400`, `Infinity`},
		{"float negative overflow", `-1e400`, `-Infinity`},
		{"float underflow", `1e-400`, `0.0`},
		{"float rounded small", `1.2345678901234567e-5`, `1.2345678901234568e-05`},
		{"float rounded large", `12345678901234567.0`, `1.2345678901234568e+16`},

		{"int 1", `1`, `1`},
		{"int -0", `-0`, `0`},
		{"int -42", `-42`, `-42`},
		{"int beyond 64 bits", `12345678901234567890123`, `12345678901234567890123`},
		{"true", `true`, `true`},
		{"false", `false`, `false`},
		{"null", `null`, `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := wimro.PythonJSON(decode(t, c.in))
			if err != nil || string(got) != c.want {
				t.Errorf("PythonJSON(%s) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

// Values as Go decoders (YAML, JSON without UseNumber) or callers build them.
func TestPythonJSONGoValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"int", 1, "1"},
		{"int8", int8(-8), "-8"},
		{"int16", int16(16), "16"},
		{"int32", int32(-32), "-32"},
		{"int64 min", int64(math.MinInt64), "-9223372036854775808"},
		{"uint", uint(7), "7"},
		{"uint8", uint8(255), "255"},
		{"uint16", uint16(16), "16"},
		{"uint32", uint32(32), "32"},
		{"uint64 max", uint64(math.MaxUint64), "18446744073709551615"},
		{"float64 integral is a Python float", 1.0, "1.0"},
		{"float64 0.1", 0.1, "0.1"},
		{"float64 1e16", 1e16, "1e+16"},
		{"float64 1.5e-7", 1.5e-7, "1.5e-07"},
		{"float64 zero", 0.0, "0.0"},
		{"float64 negative zero", math.Copysign(0, -1), "-0.0"},
		{"float64 +Inf", math.Inf(1), "Infinity"},
		{"float64 -Inf", math.Inf(-1), "-Infinity"},
		{"float64 NaN", math.NaN(), "NaN"},
		{"json.Number int", json.Number("1"), "1"},
		{"json.Number float", json.Number("1.0"), "1.0"},
		{"bool", true, "true"},
		{"nil", nil, "null"},
		{"nil map", map[string]any(nil), "{}"},
		{"nil slice", []any(nil), "[]"},
		{"YAML map with string keys", map[any]any{"b": 1, "a": []any{"x", 2.5}},
			"{\n\"a\": [\n\"x\", \n2.5\n], \n\"b\": 1\n}"},
		{"deep nesting", map[string]any{"a": []any{map[string]any{"b": []any{[]any{}}}}},
			"{\n\"a\": [\n{\n\"b\": [\n[]\n]\n}\n]\n}"},
		{"U+FFFD is a character", "\uFFFD", `"\ufffd"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := wimro.PythonJSON(c.in)
			if err != nil || string(got) != c.want {
				t.Errorf("PythonJSON(%#v) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

func TestPythonJSONErrors(t *testing.T) {
	t.Parallel()
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	cases := []struct {
		name string
		in   any
	}{
		{"struct", struct{}{}},
		{"float32 (no Python equivalent)", float32(1)},
		{"typed map", map[string]string{"a": "b"}},
		{"non-string YAML key", map[any]any{1: "a"}},
		{"invalid UTF-8 value", "a\xffb"},
		{"invalid UTF-8 key", map[string]any{"\xff": 1}},
		{"json.Number not a number", json.Number("abc")},
		{"json.Number hex float", json.Number("0x1.8p1")},
		{"json.Number empty", json.Number("")},
		{"json.Number leading zero", json.Number("01")},
		{"json.Number Infinity", json.Number("Infinity")},
		{"error deep inside", map[string]any{"a": []any{1, map[string]any{"b": struct{}{}}}}},
		{"cycle", cyclic},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got, err := wimro.PythonJSON(c.in); err == nil {
				t.Errorf("PythonJSON accepted it: %q", got)
			}
		})
	}
}

func TestDeriveEndpointID(t *testing.T) {
	t.Parallel()
	const (
		dpid    = "BB:BB:BB:BB:BB:BB:BB:BB"
		intPort = "dpid-port:6af9cfa2f22fb0c545129949fff64d2dda3f8a85" // OSM RO's own id for this mapping
		strPort = "dpid-port:32260befc288d6b2395a230e1dc532b7e84a5b87" // OSM RO's own id for this mapping
	)
	// Vectors not in the spec were computed with Python 2.7.18 and OSM RO's
	// algorithm.
	cases := []struct {
		name string
		info map[string]any
		want string
	}{
		{"int port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": 1}, intPort},
		{"int64 port (YAML)", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": int64(1)}, intPort},
		{"uint64 port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": uint64(1)}, intPort},
		{"json.Number port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": json.Number("1")}, intPort},
		{"decoded JSON", decode(t, `{"mapping_type":"dpid-port","wan_switch_dpid":"BB:BB:BB:BB:BB:BB:BB:BB","wan_switch_port":1}`).(map[string]any), intPort},
		{"string port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": "1"}, strPort},
		{"float port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": 1.0},
			"dpid-port:2eb77f99730fde849913337041594610f4dbf2a7"},
		{"json.Number float port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": json.Number("1.0")},
			"dpid-port:2eb77f99730fde849913337041594610f4dbf2a7"},
		{"dpid-port ignores other keys", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid, "wan_switch_port": 1,
			"site-id": "s1", "note": map[string]any{"x": 1}, "": nil}, intPort},
		{"dpid-port without port", map[string]any{"mapping_type": "dpid-port", "wan_switch_dpid": dpid},
			"dpid-port:cc29da18bb2c374e5fa4851a36a80415f7bfdff8"},
		{"dpid-port without keys", map[string]any{"mapping_type": "dpid-port", "other": 1},
			"dpid-port:bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f"},
		{"l2sm keeps every key", map[string]any{"mapping_type": "l2sm", "site-id": "site-1", "bearer": map[string]any{"bearer-reference": "b1"}},
			"l2sm:5de35a873c63f1952894b95f33ff1d14241f6700"},
		{"l2sm unicode, nested", decode(t, `{"mapping_type":"l2sm","site-id":"séte-😀","bearer":{"bearer-reference":"b1","tags":[1,2.5,null,true]}}`).(map[string]any),
			"l2sm:9db0581a5d2d04912567044e9af3380b72179b67"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before, _ := wimro.PythonJSON(c.info)
			got, err := wimro.DeriveEndpointID(c.info)
			if err != nil || got != c.want {
				t.Errorf("DeriveEndpointID = %q, %v; want %q", got, err, c.want)
			}
			if after, _ := wimro.PythonJSON(c.info); string(after) != string(before) {
				t.Errorf("the info was modified: %s", after)
			}
		})
	}
}

func TestDeriveEndpointIDErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		info  map[string]any
		field string
	}{
		{"nil info", nil, "wan_service_mapping_info.mapping_type"},
		{"missing mapping_type", map[string]any{"wan_switch_dpid": "AA", "wan_switch_port": 1}, "wan_service_mapping_info.mapping_type"},
		{"empty mapping_type", map[string]any{"mapping_type": ""}, "wan_service_mapping_info.mapping_type"},
		{"null mapping_type", map[string]any{"mapping_type": nil}, "wan_service_mapping_info.mapping_type"},
		{"number mapping_type", map[string]any{"mapping_type": 5}, "wan_service_mapping_info.mapping_type"},
		{"unserializable info", map[string]any{"mapping_type": "l2sm", "x": struct{}{}}, "wan_service_mapping_info"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id, err := wimro.DeriveEndpointID(c.info)
			var e *wimro.Error
			if !errors.As(err, &e) || e.Code != wimro.EINVALID || e.Field != c.field || id != "" {
				t.Errorf("DeriveEndpointID = %q, %#v; want an EINVALID *Error on %s", id, err, c.field)
			}
		})
	}
}

// FuzzPythonJSON checks that the output is ASCII JSON that decodes back to
// the input, numbers included: integers stay integers (same value, any
// size) and floats stay floats (same float64).
func FuzzPythonJSON(f *testing.F) {
	for _, s := range []string{
		`{"b":{"x":[1,2],"e":{}},"a":"é","c":[]}`,
		`{"wan_switch_dpid":"BB:BB:BB:BB:BB:BB:BB:BB","wan_switch_port":1}`,
		`{"a":1.0,"b":[0.1,1e16,1.5e-7,-0.0,5e-324,1E2,2.50,-0,12345678901234567890123]}`,
		`{"s":"😀\u0000\u001f\u007f\"\\/<>&\n","t":[true,false,null,{}],"é":{"😀":[]}}`,
		`{"":{"":{"":[[[]]]}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var in map[string]any
		if dec.Decode(&in) != nil || in == nil {
			t.Skip("not a JSON object")
		}
		want := canonical(t, in)
		out, err := wimro.PythonJSON(in)
		if err != nil {
			t.Fatalf("PythonJSON(%s): %v", s, err)
		}
		for _, c := range out {
			if c >= 0x80 {
				t.Fatalf("non-ASCII output %q", out)
			}
		}
		dec = json.NewDecoder(strings.NewReader(string(out)))
		dec.UseNumber()
		var back any
		if err := dec.Decode(&back); err != nil {
			t.Fatalf("invalid JSON %q: %v", out, err)
		}
		if got := canonical(t, back); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip changed %s into %q", s, out)
		}
	})
}

// canonical replaces each json.Number of v by a value that compares equal
// exactly when Python sees the same number: an integer by its value, a
// float by its float64. Floats beyond the float64 range skip the input:
// Python writes them as Infinity, which is not JSON.
func canonical(t *testing.T, v any) any {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			n, ok := new(big.Int).SetString(s, 10)
			if !ok {
				t.Fatalf("bad integer %q", s)
			}
			return "int " + n.String()
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Skipf("float %s is out of range: Python writes Infinity", s)
		}
		return f
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = canonical(t, e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = canonical(t, e)
		}
		return l
	}
	return v
}
