// Package yamljson reads a YAML or JSON document into the generic values
// encoding/json works with (map[string]any, []any, string, bool, nil and
// numbers), so that YAML input goes through the same JSON decoding as JSON
// input. The server (httpapi) and the openmano CLI share it: both follow
// openmano's rule that a document holding a tab is JSON, since YAML does
// not allow tabs for indentation.
package yamljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// ErrTrailing is the error of a document followed by another one.
var ErrTrailing = errors.New("trailing data after the document")

// TabError is the error of a document that holds a tab and is neither
// JSON nor YAML: openmano read it as JSON, and the JSON error alone
// ("invalid character 'i'") does not say why a YAML file was read so.
type TabError struct {
	JSON error // why it is not JSON
	YAML error // why it is not YAML either
}

func (e *TabError) Error() string {
	return fmt.Sprintf("the document contains a tab, so it was read as JSON, and it is not valid JSON: %v "+
		"(nor YAML: %v); YAML does not allow tabs for indentation: replace the tabs with spaces", e.JSON, e.YAML)
}

func (e *TabError) Unwrap() []error { return []error{e.JSON, e.YAML} }

// Decode reads one document. Without a tab it is YAML (JSON being, for
// these purposes, a subset of it). With a tab it is JSON, as openmano read
// it, numbers kept as json.Number; YAML is still tried when that fails,
// because YAML allows tabs inside values and such documents were always
// accepted.
func Decode(b []byte) (any, error) {
	if !bytes.ContainsRune(b, '\t') {
		return decodeYAML(b)
	}
	doc, jsonErr := DecodeJSON(b)
	if jsonErr == nil {
		return doc, nil
	}
	doc, yamlErr := decodeYAML(b)
	if yamlErr == nil {
		return doc, nil
	}
	return nil, &TabError{JSON: jsonErr, YAML: yamlErr}
}

// DecodeJSON reads one JSON document, numbers as json.Number so that no
// digit is lost on the way back to JSON.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrTrailing
	}
	return doc, nil
}

func decodeYAML(b []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var more any
	if err := dec.Decode(&more); err != io.EOF {
		return nil, ErrTrailing
	}
	return jsonable(doc), nil
}

// jsonable turns YAML's generic values into JSON's: map keys become strings.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// MarshalYAML writes a document of generic JSON values as YAML; a
// json.Number becomes the integer or float it spells (the YAML encoder
// would quote it as a string).
func MarshalYAML(doc any) ([]byte, error) {
	return yaml.Marshal(yamlable(doc))
}

func yamlable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = yamlable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = yamlable(e)
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	}
	return v
}
