package wimro

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// DeriveEndpointID derives wan_service_endpoint_id from a mapping info
// exactly as OSM RO did so ids stay the same across a migration:
//
//	mapping_type + ":" + hex(sha1(PythonJSON(rest)))
//
// where rest is info without mapping_type and, for "dpid-port", with only
// wan_switch_dpid and wan_switch_port (other mapping types keep every other
// key). info is not modified.
//
// The type of each value matters (port 1, "1" and 1.0 give three different
// ids), so info must come from a JSON decoder with UseNumber or from a YAML
// decoder; see PythonJSON.
//
// A missing, empty or non-string mapping_type gives an *Error with Code
// EINVALID and Field "wan_service_mapping_info.mapping_type".
func DeriveEndpointID(info map[string]any) (string, error) {
	mt, _ := info["mapping_type"].(string)
	if mt == "" {
		return "", FieldErrorf("wan_service_mapping_info.mapping_type",
			"wan_service_mapping_info must contain a non-empty string mapping_type to derive wan_service_endpoint_id")
	}
	rest := make(map[string]any, len(info))
	for k, v := range info {
		switch {
		case k == "mapping_type":
		case mt == "dpid-port" && k != "wan_switch_dpid" && k != "wan_switch_port":
		default:
			rest[k] = v
		}
	}
	b, err := PythonJSON(rest)
	if err != nil {
		return "", &Error{Code: EINVALID, Field: "wan_service_mapping_info", Err: err,
			Message: fmt.Sprintf("cannot derive wan_service_endpoint_id from wan_service_mapping_info: %v", err)}
	}
	sum := sha1.Sum(b)
	return mt + ":" + hex.EncodeToString(sum[:]), nil
}

// PythonJSON returns v serialized like Python 2 json.dumps(v, sort_keys=True, indent=False).
//
// That is: keys sorted (by code point); a newline right after every
// non-empty '{' or '['; items separated by ", \n"; "key": value; a newline
// before the closing bracket; no indentation; empty containers as {} and [];
// strings escaped like Python's ensure_ascii encoder (\" \\ \n \r \t \b \f,
// every other byte outside 0x20..0x7e as \uXXXX, astral characters as a
// surrogate pair; '/', '<', '>' and '&' are left alone). The output is
// therefore pure ASCII.
//
// Accepted values are those of decoded JSON or YAML: map[string]any,
// map[any]any with string keys, []any, string, bool, nil, float64, json.Number
// and every Go integer type. Integers print as integers and floats the way
// Python 2.7 repr(float) does (1.0, 0.1, 1e+16, 1.5e-07; Infinity, -Infinity
// and NaN as Python writes them). A json.Number is an integer when its text
// has no '.', 'e' or 'E', else a float (parsed like Python's float(), so a
// literal beyond the float64 range becomes Infinity). A float64 is always a
// Python float: decode JSON with UseNumber to keep 1 and 1.0 apart.
//
// Strings must be valid UTF-8 (Python 2 fails on the others too). Other
// types, non-string map keys and nesting deeper than 10000 (which also
// catches cycles) are errors.
func PythonJSON(v any) ([]byte, error) {
	e := pyEncoder{buf: make([]byte, 0, 128)}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// maxPyDepth bounds nesting, like encoding/json's decoder does; it turns a
// cyclic value into an error instead of a stack overflow.
const maxPyDepth = 10000

type pyEncoder struct {
	buf []byte
}

func (e *pyEncoder) value(v any, depth int) error {
	if depth > maxPyDepth {
		return errors.New("value nested too deeply (or cyclic)")
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		return e.string(x)
	case json.Number:
		return e.number(string(x))
	case float64:
		e.buf = appendPyFloat(e.buf, x)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int8:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int16:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int32:
		e.buf = strconv.AppendInt(e.buf, int64(x), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case uint:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint8:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint16:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint32:
		e.buf = strconv.AppendUint(e.buf, uint64(x), 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, x, 10)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		return e.object(keys, func(k string) any { return x[k] }, depth)
	case map[any]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			s, ok := k.(string)
			if !ok {
				return fmt.Errorf("unsupported map key %v of type %T", k, k)
			}
			keys = append(keys, s)
		}
		return e.object(keys, func(k string) any { return x[k] }, depth)
	case []any:
		if len(x) == 0 {
			e.buf = append(e.buf, "[]"...)
			return nil
		}
		e.buf = append(e.buf, "[\n"...)
		for i, item := range x {
			if i > 0 {
				e.buf = append(e.buf, ", \n"...)
			}
			if err := e.value(item, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, "\n]"...)
	default:
		return fmt.Errorf("unsupported value of type %T", v)
	}
	return nil
}

// object writes a dict. Sorting UTF-8 strings bytewise sorts them by code
// point, as Python 2 (wide build) sorts unicode keys.
func (e *pyEncoder) object(keys []string, get func(string) any, depth int) error {
	if len(keys) == 0 {
		e.buf = append(e.buf, "{}"...)
		return nil
	}
	slices.Sort(keys)
	e.buf = append(e.buf, "{\n"...)
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ", \n"...)
		}
		if err := e.string(k); err != nil {
			return err
		}
		e.buf = append(e.buf, ": "...)
		if err := e.value(get(k), depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, "\n}"...)
	return nil
}

const hexDigits = "0123456789abcdef"

// string writes s the way Python's encode_basestring_ascii does.
func (e *pyEncoder) string(s string) error {
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			switch c {
			case '"':
				e.buf = append(e.buf, '\\', '"')
			case '\\':
				e.buf = append(e.buf, '\\', '\\')
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			case '\b':
				e.buf = append(e.buf, '\\', 'b')
			case '\f':
				e.buf = append(e.buf, '\\', 'f')
			default:
				if c >= 0x20 && c <= 0x7e {
					e.buf = append(e.buf, c)
				} else { // other control characters and DEL
					e.appendU(rune(c))
				}
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("string %q is not valid UTF-8", s)
		}
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			e.appendU(r1)
			e.appendU(r2)
		} else {
			e.appendU(r)
		}
		i += size
	}
	e.buf = append(e.buf, '"')
	return nil
}

func (e *pyEncoder) appendU(r rune) {
	e.buf = append(e.buf, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// number writes a json.Number: by its literal text, an integer when the
// text has no '.', 'e' or 'E' (Python's json makes an int of it), else a
// float (Python's json calls float() on it).
func (e *pyEncoder) number(s string) error {
	if !isJSONNumber(s) {
		return fmt.Errorf("invalid number literal %q", s)
	}
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			s = "0" // Python: int("-0") == 0
		}
		e.buf = append(e.buf, s...)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("invalid number literal %q", s)
	}
	// On overflow f is ±Inf, which is also what Python's float() returns.
	e.buf = appendPyFloat(e.buf, f)
	return nil
}

// isJSONNumber reports whether s follows the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	digits := func(i int) int { // index after a run of digits
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i + 1)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// appendPyFloat formats f like Python 2.7 repr(float) inside json.dumps:
// the shortest digits that round-trip, in exponent form when the decimal
// exponent is below -4 or at least 16 (with a sign and at least two
// exponent digits, e.g. 1e+16, 1.5e-07), else positional with at least one
// fractional digit (1.0, 0.0001, 9999999999999998.0).
func appendPyFloat(buf []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	}
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // e.g. -1.5e-07, 0e+00
	exp, err := strconv.Atoi(string(sci[slices.Index(sci, 'e')+1:]))
	if err != nil { // cannot happen: AppendFloat always writes an exponent
		panic("wimro: unexpected float format " + string(sci))
	}
	if exp < -4 || exp >= 16 {
		// Go's 'e' format already matches Python's: mantissa without a
		// trailing ".0", explicit exponent sign, at least two digits.
		return append(buf, sci...)
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, 'f', -1, 64)
	if !slices.Contains(buf[start:], '.') {
		buf = append(buf, ".0"...)
	}
	return buf
}
