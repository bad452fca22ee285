package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/wimro/wimro/httpapi"
)

// marker stands for the hostile value in a generated body; it is replaced
// by raw text after encoding, so that the value may be anything, invalid
// JSON or invalid UTF-8 included.
const marker = "\u0001HOSTILE\u0001"

// hostileValues go where a body field is: each a raw JSON (or not) text.
var hostileValues = []struct{ name, raw string }{
	{"NUL", `"a\u0000b"`},
	{"raw NUL", "\"a\x00b\""},
	{"invalid UTF-8", "\"a\xff\xfeb\""},
	{"lone surrogate", `"\ud800"`},
	{"1e400", `1e400`},
	{"-1e400", `-1e400`},
	{"2^64", `18446744073709551616`},
	{"NaN", `NaN`},
	{"wrong type: list", `[1, "x", null]`},
	{"wrong type: object", `{"k": {"k": "v"}}`},
	{"wrong type: bool", `true`},
	{"wrong type: number", `-1.5`},
	{"null", `null`},
	{"deep nesting", strings.Repeat("[", 20000) + strings.Repeat("]", 20000)},
	{"deep objects", strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)},
	{"512 KiB string", `"` + strings.Repeat("x", 512<<10) + `"`},
	{"NUL key", `{"a\u0000": 1}`},
	{"invalid UTF-8 key", "{\"a\xff\": 1}"},
}

// hostileBodies are whole bodies sent to every POST/PUT route with their
// Content-Type.
var hostileBodies = []struct{ name, ct, body string }{
	{"empty", "application/json", ""},
	{"spaces", "application/json", "  \n "},
	{"null", "application/json", "null"},
	{"list", "application/json", "[]"},
	{"string", "application/json", `"x"`},
	{"empty object", "application/json", "{}"},
	{"unknown key", "application/json", `{"zzz_unknown": 1}`},
	{"trailing brace", "application/json", `{} }`},
	{"trailing bracket", "application/json", `{}]`},
	{"two documents", "application/json", `{} {}`},
	{"truncated", "application/json", `{"a": [`},
	{"2 MiB string", "application/json", `{"a": "` + strings.Repeat("x", 2<<20) + `"}`},
	{"BOM", "application/json", "\xef\xbb\xbf{}"},
	{"no Content-Type", "", `{}`},
	{"text/plain", "text/plain", `{}`},
	{"form", "application/x-www-form-urlencoded", `a=1`},
	{"multipart", "multipart/form-data; boundary=zz", "--zz\r\n\r\n{}\r\n--zz--"},
	{"xml", "application/xml", `<a/>`},
	{"bad media type", "application/json; charset", `{}`},
	{"yaml NUL", "application/yaml", "a: \"x\\0y\"\n"},
	{"yaml invalid UTF-8", "application/yaml", "a: x\xffy\n"},
	{"yaml 1e400", "application/yaml", "a: 1e400\n"},
	{"yaml NaN", "application/yaml", "a: .nan\n"},
	{"yaml inf", "application/yaml", "a: -.inf\n"},
	{"yaml 2^64", "application/yaml", "a: 18446744073709551616\n"},
	{"yaml deep flow", "application/yaml", "a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n"},
	{"yaml deep block", "application/yaml", deepYAML(300)},
	{"yaml alias bomb", "application/yaml", aliasBomb()},
	{"yaml non-string keys", "application/yaml", "? [1, 2]\n: x\n1: y\n"},
	{"yaml tags", "application/yaml", "a: !!binary AAEC\nb: !!timestamp 2001-12-14\n"},
	{"yaml garbage", "application/yaml", "a: [\n"},
	{"yaml two documents", "application/yaml", "a: 1\n---\nb: 2\n"},
}

func deepYAML(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sa:\n", strings.Repeat(" ", i))
	}
	fmt.Fprintf(&b, "%sx\n", strings.Repeat(" ", n))
	return b.String()
}

// aliasBomb is the billion-laughs document: nine levels of nine aliases.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i < 10; i++ {
		p := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.Repeat(p+",", 8)+p)
	}
	return b.String()
}

// schemaPaths lists the field paths of an OpenAPI schema (following $ref
// into components, list items as index 0) down to depth levels.
func schemaPaths(components map[string]any, schema any, depth int) [][]any {
	s, _ := schema.(map[string]any)
	if ref, ok := s["$ref"].(string); ok {
		s, _ = components[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	if depth == 0 || s == nil {
		return nil
	}
	var out [][]any
	if items, ok := s["items"]; ok {
		out = append(out, []any{0})
		for _, p := range schemaPaths(components, items, depth-1) {
			out = append(out, append([]any{0}, p...))
		}
	}
	props, _ := s["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, []any{k})
		for _, p := range schemaPaths(components, props[k], depth-1) {
			out = append(out, append([]any{k}, p...))
		}
	}
	return out
}

// bodyWith builds a JSON document holding the marker at path.
func bodyWith(path []any) string {
	var v any = marker
	for i := len(path) - 1; i >= 0; i-- {
		switch k := path[i].(type) {
		case string:
			v = map[string]any{k: v}
		case int:
			v = []any{v}
		}
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// Issue 14: every POST/PUT route of /openapi.json gets hostile values in
// every field of its body schema, hostile whole bodies and content types;
// every GET (and DELETE) route malformed path parameters and queries.
// Nothing answers 5xx or drops the connection, every error is the JSON
// error body, a refused request changes no row, and the server stays
// healthy.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	// uuids, so that a hostile request that is accepted and renames a thing
	// does not take the next requests' target away.
	ids := b.liveFixture()
	// The RESTCONF routes: a site is a datacenter, a vpn-service none yet.
	ids["site_id"], ids["vpn_id"] = ids["datacenter_id"], "vpn0"

	doc := b.call("GET", "/openapi.json", nil, 200).json
	paths, _ := doc["paths"].(map[string]any)
	components, _ := get(doc, "components", "schemas").(map[string]any)
	patterns := make([]string, 0, len(paths))
	for p := range paths {
		patterns = append(patterns, p)
	}
	sort.Strings(patterns)

	snap := b.snapshot()
	sent := 0
	check := func(what, method, target string, headers map[string]string, body string) {
		t.Helper()
		restconf := strings.HasPrefix(target, httpapi.L2SMRoot)
		if restconf {
			// Basic: the user is the tenant (no token configured).
			headers = maps.Clone(headers)
			if headers == nil {
				headers = map[string]string{}
			}
			headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte("tenant0:x"))
		}
		r := b.raw(method, target, headers, body)
		sent++
		after := b.snapshot()
		if r.status >= 500 {
			t.Errorf("%s: %s %.120q = %d: %.300s", what, method, target, r.status, r.body)
		}
		if r.status >= 400 {
			code, _ := get(r.json, "error", "code").(float64)
			desc, _ := get(r.json, "error", "description").(string)
			if restconf {
				// RFC 8040's error body.
				code = float64(r.status)
				desc, _ = get(r.json, "ietf-restconf:errors", "error", 0, "error-message").(string)
			}
			// net/http itself refuses some request lines with a plain 400
			// before any handler runs; everything else is ours.
			plain := r.status == 400 && strings.HasPrefix(r.body, "400 Bad Request")
			if !plain && (int(code) != r.status || desc == "") {
				t.Errorf("%s: %s %.120q = %d without the error body: %.300s", what, method, target, r.status, r.body)
			}
			for k, v := range after {
				if snap[k] != v {
					t.Errorf("%s: %s %.120q refused with %d but changed table %s", what, method, target, r.status, k)
				}
			}
		}
		snap = after
	}

	for _, pattern := range patterns {
		item, _ := paths[pattern].(map[string]any)
		methods := make([]string, 0, len(item))
		for m := range item {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		target := routeParam.ReplaceAllStringFunc(pattern, func(p string) string { return ids[strings.Trim(p, "{}")] })
		for _, m := range methods {
			method := strings.ToUpper(m)
			switch method {
			case "POST", "PUT":
				json := map[string]string{"Content-Type": "application/json"}
				schema := get(item, m, "requestBody", "content", "application/json", "schema")
				for _, path := range schemaPaths(components, schema, 4) {
					body := bodyWith(path)
					for _, v := range hostileValues {
						check(fmt.Sprintf("%s at %v", v.name, path), method, target, json, strings.Replace(body, `"`+marker+`"`, v.raw, 1))
					}
				}
				for _, hb := range hostileBodies {
					h := map[string]string{}
					if hb.ct != "" {
						h["Content-Type"] = hb.ct
					}
					check(hb.name, method, target, h, hb.body)
				}
			case "GET", "DELETE":
				for _, bad := range hostilePaths(pattern, ids) {
					check("path "+bad, method, bad, nil, "")
				}
				if method == "GET" {
					for _, q := range hostileQueries {
						check("query "+q, method, target+"?"+q, nil, "")
					}
				}
			}
		}
	}
	t.Logf("%d hostile requests", sent)
	if sent < 1000 {
		t.Fatalf("sent %d hostile requests, want every route covered (1000 or more)", sent)
	}
	if r := b.call("GET", "/healthz", nil, 200); r.str("status") != "ok" {
		t.Fatalf("healthz = %s", r.body)
	}
	b.call("GET", "/openmano/tenants", nil, 200)
}

// hostileSegments replace one path parameter at a time.
var hostileSegments = []string{"%00", "%ff", "\xff", "a%00b", "%c0%af", "%ed%a0%80", "%zz", "%", "%2F..%2F..", "..", "%20", "null", "any",
	"'%3B%20DROP%20TABLE%20wims%3B--", "00000000-0000-0000-0000-000000000000", strings.Repeat("x", 8<<10), "%F0%9F%98%80"}

func hostilePaths(pattern string, ids map[string]string) []string {
	params := routeParam.FindAllString(pattern, -1)
	var out []string
	for _, p := range params {
		for _, seg := range hostileSegments {
			out = append(out, routeParam.ReplaceAllStringFunc(pattern, func(q string) string {
				if q == p {
					return seg
				}
				return ids[strings.Trim(q, "{}")]
			}))
		}
	}
	return out
}

var hostileQueries = []string{"name=%ff", "name=%00", "%00=1", "%ff=1", "name=%zz", "created_at=notadate", "created_at=1e400", "uuid=notauuid",
	"limit=1e400", "limit=-1", "limit=99999999999999999999", "limit=", "field=password", "field=%00", "field=config", "name=a&name=b",
	"type=null", "dry_run=%00", "dry_run=maybe", "a=" + strings.Repeat("x", 8<<10), "&&&=&=", "name=%c0%af", ";=;"}
