package httpapi

import (
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"
)

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// OpenAPI returns the OpenAPI 3.0 document of every route, with request
// and response schemas reflected from the Go types the handlers use.
func (s *Server) OpenAPI() map[string]any {
	g := &schemaGen{components: map[string]any{}, seen: map[reflect.Type]string{}}
	paths := map[string]any{}
	for _, rt := range s.routes {
		item, _ := paths[rt.Pattern].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.Pattern] = item
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.Pattern, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range rt.Query {
			params = append(params, map[string]any{"name": q, "in": "query", "required": false, "schema": map[string]any{"type": "string"}})
		}
		op := map[string]any{
			"operationId": operationID(rt.Method, rt.Pattern),
			"summary":     rt.Summary,
			"tags":        rt.Tags,
			"responses": map[string]any{
				"200":     map[string]any{"description": "OK", "content": content(g.schema(reflect.TypeOf(rt.Response)))},
				"default": map[string]any{"description": "Error", "content": content(map[string]any{"$ref": "#/components/schemas/Error"})},
			},
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if rt.Request != nil {
			op["requestBody"] = map[string]any{"required": true, "content": content(g.schema(reflect.TypeOf(rt.Request)))}
		}
		if rt.Public {
			op["security"] = []any{}
		}
		item[strings.ToLower(rt.Method)] = op
	}
	g.components["Error"] = g.schema(reflect.TypeOf(errorBody{}))
	return map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": "wimro", "version": s.opts.Version, "description": "openmano-compatible WAN Infrastructure Manager API"},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         g.components,
			"securitySchemes": map[string]any{"bearerAuth": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{"bearerAuth": []any{}}},
	}
}

func content(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}, "application/yaml": map[string]any{"schema": schema}}
}

func operationID(method, pattern string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, part := range strings.FieldsFunc(pattern, func(r rune) bool { return r == '/' || r == '{' || r == '}' || r == '_' || r == '.' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

type schemaGen struct {
	components map[string]any
	seen       map[reflect.Type]string
}

var timeType = reflect.TypeOf(time.Time{})

// schema returns the JSON schema of t; named structs go to components.
func (g *schemaGen) schema(t reflect.Type) any {
	if t == nil {
		return map[string]any{}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if custom(t) {
		if t.Kind() == reflect.Map {
			return map[string]any{"type": "object", "additionalProperties": true}
		}
		return map[string]any{} // custom forms (ports, WIM choices): any JSON value
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name := g.name(t)
		if _, done := g.components[name]; !done {
			g.components[name] = map[string]any{} // placeholder against recursion
			g.components[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func (g *schemaGen) name(t reflect.Type) string {
	if n, ok := g.seen[t]; ok {
		return n
	}
	base := t.PkgPath()
	base = base[strings.LastIndex(base, "/")+1:]
	n := strings.ToUpper(base[:1]) + base[1:] + t.Name()
	g.seen[t] = n
	return n
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		out["required"] = required
	}
	return out
}

// fields adds t's JSON fields, flattening embedded structs as
// encoding/json does.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
		if !strings.Contains(opts, "omitempty") && !custom(f.Type) && f.Type.Kind() != reflect.Pointer && f.Type.Kind() != reflect.Map && f.Type.Kind() != reflect.Slice && f.Type.Kind() != reflect.Interface {
			*required = append(*required, name)
		}
	}
}

// custom reports whether t encodes itself (MarshalJSON or UnmarshalJSON):
// its JSON form is not its Go fields.
func custom(t reflect.Type) bool {
	v := reflect.New(t).Interface()
	_, u := v.(interface{ UnmarshalJSON([]byte) error })
	_, m := v.(interface{ MarshalJSON() ([]byte, error) })
	return (u || m) && t != timeType
}
