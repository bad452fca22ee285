package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/yamljson"
)

// Decode reads the request body into v by its Content-Type: JSON or
// YAML (application/yaml, application/x-yaml, text/yaml), charset
// parameters allowed. Anything else, an absent type and XML included, is
// 415 (openmano answered 406, and 501 for XML; 415 is the status HTTP
// defines for it). YAML is turned into JSON first, so both go
// through the same typed decoding and json tags. With strict, an unknown
// field is a 400 naming it; otherwise unknown fields are ignored, as
// openmano stripped them (OSM LCM sends stale keys).
func Decode(r *http.Request, v any, strict bool) error {
	kind, err := bodyKind(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &statusError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("Request body larger than %d bytes.", tooBig.Limit)}
		}
		return wimro.Errorf(wimro.EINVALID, "cannot read the request body: %v", err)
	}
	return DecodeBytes(raw, kind, v, strict)
}

// DecodeBytes is Decode of a body already read: kind is "json" or "yaml".
// Every string of the document, keys included, is checked (CheckDocument)
// before the typed decoding, so no handler sees a NUL, invalid UTF-8 or
// an overflowing number.
func DecodeBytes(raw []byte, kind string, v any, strict bool) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return wimro.Errorf(wimro.EINVALID, "request body is required")
	}
	if kind == "yaml" {
		if !utf8.Valid(raw) {
			return wimro.Errorf(wimro.EINVALID, "Invalid yaml format: invalid UTF-8")
		}
		// yamljson reads a body holding a tab as JSON (openmano's rule) and
		// says so when it fails, instead of YAML's "cannot start any token".
		doc, err := yamljson.Decode(raw)
		if errors.Is(err, yamljson.ErrTrailing) {
			return wimro.Errorf(wimro.EINVALID, "Invalid yaml format: trailing data after the body")
		}
		if err != nil {
			return wimro.Errorf(wimro.EINVALID, "Invalid yaml format: %v", err)
		}
		if raw, err = json.Marshal(doc); err != nil {
			return wimro.Errorf(wimro.EINVALID, "Invalid yaml format: %v", err)
		}
	}
	if err := CheckDocument(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return decodeError(kind, err)
	}
	return nil
}

func decodeError(kind string, err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var own *wimro.Error
	switch {
	case errors.As(err, &own): // a type's own UnmarshalJSON, in words
		return own
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return wimro.Errorf(wimro.EINVALID, "Invalid %s format: %v", kind, err)
	case errors.As(err, &typ):
		field := jsonPath(typ.Field)
		if field == "" {
			field = "(body)"
		}
		return wimro.FieldErrorf(field, "field %q: expected %s, got %s", field, typeWords(typ.Type), valueWords(typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return wimro.FieldErrorf(name, "unknown field %q", name)
	}
	// Errors from a type's own UnmarshalJSON (ports, WIM choices, ...).
	return wimro.Errorf(wimro.EINVALID, "Invalid content: %v", err)
}

// jsonPath is encoding/json's path of a field without the Go names of
// embedded structs (instance.InstanceInput.scenario is instance.scenario):
// every key of the API is lower case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

// typeWords names the JSON form of a Go type in words: an API client
// knows lists and objects, not Go's types.
func typeWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeWords(t.Elem())
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}

// valueWords names encoding/json's kind of a JSON value in words.
func valueWords(v string) string {
	switch v {
	case "object":
		return "an object"
	case "array":
		return "a list"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	if strings.HasPrefix(v, "number") {
		return "a number (" + strings.TrimSpace(strings.TrimPrefix(v, "number")) + ")"
	}
	return v
}

// Respond writes v with status: JSON indented with 4 spaces and a final
// newline (as openmano), or YAML when the Accept header asks for it.
func Respond(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		http.Error(w, `{"error": {"code": 500, "type": "500 Internal Server Error", "description": "cannot encode the response"}}`, http.StatusInternalServerError)
		return
	}
	noteAnswer(r, status, body)
	if wantsYAML(r) {
		var doc any
		if err := json.Unmarshal(body, &doc); err == nil {
			if y, err := marshalYAML(doc); err == nil {
				w.Header().Set("Content-Type", "application/yaml")
				w.WriteHeader(status)
				w.Write(y)
				return
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// timestampLike is the start of a YAML 1.1 timestamp (2006-01-02, with a
// time or not), which PyYAML (OSM's clients) reads as a date unless quoted.
var timestampLike = regexp.MustCompile(`^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ]|$)`)

// marshalYAML is yaml.Marshal with the strings that look like timestamps
// quoted: openmano's YAML (PyYAML's) quoted them, so its clients read
// created_at as the text it is, never a date.
func marshalYAML(doc any) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(doc); err != nil {
		return nil, err
	}
	quoteTimestamps(&n)
	return yaml.Marshal(&n)
}

func quoteTimestamps(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && timestampLike.MatchString(n.Value) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		quoteTimestamps(c)
	}
}

func wantsYAML(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/yaml") || strings.Contains(a, "application/x-yaml") || strings.Contains(a, "text/yaml")
}
