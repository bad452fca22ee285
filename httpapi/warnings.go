package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// Unknown keys of a create or edit body are accepted, as openmano stripped
// them (OSM's LCM sends stale ones), but a typo such as "descripton" or
// "datacentre" must not vanish silently: the answer names each one, by its
// full path, in a Warning header (respondWarned).

// decodeWarn is Decode (not strict) that also returns a warning for each
// key of the body that no field of v takes. typed names the free-form
// objects that the engine decodes itself later (wim.config.wim_port_mapping),
// by path, with the type they are decoded into, so their keys are checked
// too.
func decodeWarn(r *http.Request, v any, typed map[string]reflect.Type) ([]string, error) {
	var raw bytes.Buffer
	// Keep a copy of what Decode reads, to walk the keys afterwards.
	r.Body = readCloser{io.TeeReader(r.Body, &raw), r.Body}
	if err := Decode(r, v, false); err != nil {
		return nil, err
	}
	kind, err := bodyKind(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	var doc any
	if err := DecodeBytes(raw.Bytes(), kind, &doc, false); err != nil {
		return nil, err
	}
	w := keyWalker{typed: typed}
	w.walk(doc, reflect.TypeOf(v), "")
	return w.warnings, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

type keyWalker struct {
	typed    map[string]reflect.Type
	warnings []string
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// walkTyper is a type read in one of several forms: WalkType says which
// type the document doc is read into.
type walkTyper interface {
	WalkType(doc any) reflect.Type
}

// walk compares the decoded document doc with the type t it was decoded
// into, as encoding/json matches keys to fields.
func (w *keyWalker) walk(doc any, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if wt, ok := reflect.New(t).Interface().(walkTyper); ok {
		w.walk(doc, wt.WalkType(doc), path) // a type of two forms
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return // the type reads its own keys (free-form objects, ports, ...)
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(m) {
			f, ok := matchField(fields, k)
			if !ok {
				w.warnings = append(w.warnings, fmt.Sprintf("unknown key %s (ignored)", join(path, k)))
				continue
			}
			w.walk(m[k], f.Type, join(path, k))
		}
	case reflect.Slice, reflect.Array:
		l, ok := doc.([]any)
		if !ok {
			return
		}
		for i, e := range l {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		m, ok := doc.(map[string]any)
		if !ok {
			return
		}
		if e := t.Elem(); e.Kind() == reflect.Struct || (e.Kind() == reflect.Pointer && e.Elem().Kind() == reflect.Struct) {
			// Named entries of one type (scenario networks by name).
			for _, k := range sortedKeys(m) {
				w.walk(m[k], e, join(path, k))
			}
			return
		}
		// A free-form object (config, vim_info): any key goes, except in
		// the parts the engine decodes into a type of its own.
		for _, k := range sortedKeys(m) {
			if tt, ok := w.typed[join(path, k)]; ok {
				w.walk(m[k], tt, join(path, k))
			}
		}
	}
}

// jsonFields lists the fields of struct t that encoding/json fills, by
// name; the fields of untagged embedded structs are promoted, the
// shallower one winning a clash.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case name == "-":
		case f.Anonymous && name == "" && ft.Kind() == reflect.Struct:
			embedded = append(embedded, ft)
		case !f.IsExported():
		case name == "":
			out[f.Name] = f
		default:
			out[name] = f
		}
	}
	for _, et := range embedded {
		for name, f := range jsonFields(et) {
			if _, taken := out[name]; !taken {
				out[name] = f
			}
		}
	}
	return out
}

// matchField finds the field of key: its exact name, else one equal
// under case folding, as encoding/json does.
func matchField(fields map[string]reflect.StructField, key string) (reflect.StructField, bool) {
	if f, ok := fields[key]; ok {
		return f, true
	}
	for name, f := range fields {
		if strings.EqualFold(name, key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// respondWarned is Respond with each warning in a "Warning: 299 - ..."
// response header (RFC 7234's miscellaneous persistent warning, as
// Kubernetes carries its API warnings): clients that read an answer's one
// key (OSM's openmano CLI and library, LCM) keep working, and the body is
// the same with or without warnings.
func respondWarned(w http.ResponseWriter, r *http.Request, status int, v any, warnings []string) {
	addWarnings(w.Header(), warnings)
	Respond(w, r, status, v)
}

// addWarnings adds one Warning header per warning, its text a quoted
// string on one line: control characters become "?", UTF-8 stays (the
// field value's obs-text).
func addWarnings(h http.Header, warnings []string) {
	for _, text := range warnings {
		h.Add("Warning", `299 - `+quoteWarning(text))
	}
}

func quoteWarning(text string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range text {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n' || c == '\t' || c == '\r':
			b.WriteByte(' ')
		case c < 0x20 || c == 0x7f:
			b.WriteByte('?')
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
