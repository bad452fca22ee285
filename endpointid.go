package wimro

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// DeriveEndpointID derives a port mapping's wan_service_endpoint_id from
// its wan_service_mapping_info exactly as OSM RO did, so ids stay the same
// across a migration: mapping_type + ":" + sha1 of the info (without
// mapping_type; only wan_switch_dpid and wan_switch_port for "dpid-port")
// serialized like Python 2's json.dumps(sort_keys=True, indent=False).
func DeriveEndpointID(info map[string]any) (string, error) {
	mt, _ := info["mapping_type"].(string)
	if mt == "" {
		return "", FieldErrorf("wan_service_mapping_info.mapping_type", "The dict wan_service_mapping_info MUST contain a `mapping_type` field to derive wan_service_endpoint_id")
	}
	rest := map[string]any{}
	for k, v := range info {
		if k == "mapping_type" {
			continue
		}
		if mt == "dpid-port" && k != "wan_switch_dpid" && k != "wan_switch_port" {
			continue
		}
		rest[k] = v
	}
	b, err := PythonJSON(rest)
	if err != nil {
		return "", FieldErrorf("wan_service_mapping_info", "cannot serialize wan_service_mapping_info: %v", err)
	}
	sum := sha1.Sum(b)
	return mt + ":" + hex.EncodeToString(sum[:]), nil
}

// PythonJSON returns v serialized like Python 2 json.dumps(v,
// sort_keys=True, indent=False): keys sorted, a newline after every opening
// bracket, items separated by ", \n", a newline before every closing
// bracket, no indentation, non-ASCII escaped as \uXXXX.
func PythonJSON(v any) ([]byte, error) {
	var b strings.Builder
	if err := pyEncode(&b, v); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func pyEncode(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		pyString(b, x)
	case json.Number:
		s := x.String()
		if strings.ContainsAny(s, ".eE") {
			f, err := x.Float64()
			if err != nil {
				return err
			}
			b.WriteString(pyFloat(f))
		} else {
			b.WriteString(s)
		}
	case float64:
		b.WriteString(pyFloat(x))
	case float32:
		b.WriteString(pyFloat(float64(x)))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case uint:
		b.WriteString(strconv.FormatUint(uint64(x), 10))
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("{\n")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", \n")
			}
			pyString(b, k)
			b.WriteString(": ")
			if err := pyEncode(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteString("\n}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteString("[\n")
		for i, e := range x {
			if i > 0 {
				b.WriteString(", \n")
			}
			if err := pyEncode(b, e); err != nil {
				return err
			}
		}
		b.WriteString("\n]")
	default:
		return fmt.Errorf("unsupported value of type %T", v)
	}
	return nil
}

// pyString writes s the way Python's json module escapes strings with
// ensure_ascii (it does not escape '/', '<', '>' or '&').
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				fmt.Fprintf(b, `\u%04x`, r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyFloat formats like Python 2.7 repr(float): the shortest digits that
// round-trip, exponent form below 1e-4 or from 1e16 on.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs < 1e-4 || abs >= 1e16 {
		s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1e+16, 1.5e-07
		mant, exp, _ := strings.Cut(s, "e")
		sign := exp[0]
		digits := strings.TrimLeft(exp[1:], "0")
		if len(digits) < 2 {
			digits = strings.Repeat("0", 2-len(digits)) + digits
		}
		return mant + "e" + string(sign) + digits
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
