// Package openapitest checks HTTP answers against wimd's OpenAPI document,
// for tests: the status must be documented for the operation, the
// Content-Type one of its media types and the body valid against its
// schema (github.com/getkin/kin-openapi). Object schemas are closed while
// checking (no property the document does not declare), so an answer
// cannot grow a field the document misses. Answers of no operation (the
// router's 404 and 405) must carry the one error body.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// Document is a loaded OpenAPI document that answers are checked against.
type Document struct {
	doc   *openapi3.T
	paths []template
}

// template is one path of the document, split in segments.
type template struct {
	pattern  string
	segments []string
}

// Load parses and validates an OpenAPI 3.0 document (JSON).
func Load(raw []byte) (*Document, error) {
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("openapitest: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapitest: the document is not valid: %w", err)
	}
	d := &Document{doc: doc}
	seen := map[*openapi3.Schema]bool{}
	for _, s := range doc.Components.Schemas {
		closeObjects(s, seen)
	}
	for pattern, item := range doc.Paths.Map() {
		d.paths = append(d.paths, template{pattern: pattern, segments: strings.Split(pattern, "/")})
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				for _, mt := range resp.Value.Content {
					closeObjects(mt.Schema, seen)
				}
			}
		}
	}
	return d, nil
}

// MustLoad is Load of a document that is a Go value (as httpapi's
// Server.OpenAPI returns it); it fails t on any error.
func MustLoad(t testing.TB, doc any) *Document {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// closeObjects sets additionalProperties: false on every object schema
// that lists its properties and says nothing of others.
func closeObjects(ref *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	s := ref.Value
	seen[s] = true
	if len(s.Properties) > 0 && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
		no := false
		s.AdditionalProperties.Has = &no
	}
	for _, p := range s.Properties {
		closeObjects(p, seen)
	}
	closeObjects(s.Items, seen)
	closeObjects(s.AdditionalProperties.Schema, seen)
	for _, list := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, r := range list {
			closeObjects(r, seen)
		}
	}
}

// find returns the document path that serves the escaped path, and its
// parameters. Like chi, a literal segment wins over a parameter.
func (d *Document) find(escaped string) (string, map[string]string) {
	segs := strings.Split(escaped, "/")
	best, bestKey := -1, ""
	for i, tp := range d.paths {
		if len(tp.segments) != len(segs) {
			continue
		}
		key, ok := make([]byte, len(segs)), true
		for j, s := range tp.segments {
			switch {
			case strings.HasPrefix(s, "{"):
				key[j] = '1'
			case s == segs[j]:
				key[j] = '0'
			default:
				ok = false
			}
		}
		if ok && (best < 0 || string(key) < bestKey) {
			best, bestKey = i, string(key)
		}
	}
	if best < 0 {
		return "", nil
	}
	params := map[string]string{}
	for j, s := range d.paths[best].segments {
		if strings.HasPrefix(s, "{") {
			v, err := url.PathUnescape(segs[j])
			if err != nil {
				v = segs[j]
			}
			params[strings.Trim(s, "{}")] = v
		}
	}
	return d.paths[best].pattern, params
}

// Check checks one answer to req: its status, header and body.
func (d *Document) Check(req *http.Request, status int, header http.Header, body []byte) error {
	pattern, params := d.find(req.URL.EscapedPath())
	var op *openapi3.Operation
	if pattern != "" {
		op = d.doc.Paths.Value(pattern).GetOperation(req.Method)
	}
	if op == nil {
		// No operation: the router's own answer.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s is no operation of the document, yet answered %d", req.Method, req.URL.Path, status)
		}
		return d.checkError(header, body)
	}
	var server *openapi3.Server
	if len(d.doc.Servers) > 0 {
		server = d.doc.Servers[0]
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: params,
			Route: &routers.Route{Spec: d.doc, Server: server, Path: pattern,
				PathItem: d.doc.Paths.Value(pattern), Method: req.Method, Operation: op},
		},
		Status: status,
		Header: header,
		Body:   io.NopCloser(bytes.NewReader(body)),
		// Every status must be documented, and no answer is without a
		// body: a documented status with no content is an error too.
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		return fmt.Errorf("%s %s (%s) answered %d: %w", req.Method, req.URL.Path, op.OperationID, status, err)
	}
	if resp := op.Responses.Status(status); resp != nil && len(resp.Value.Content) == 0 {
		return fmt.Errorf("%s %s (%s): status %d documents no body", req.Method, req.URL.Path, op.OperationID, status)
	}
	return nil
}

func (d *Document) checkError(header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("router answer with Content-Type %q, want the JSON error body", ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("router answer: %w", err)
	}
	if err := d.doc.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("router answer is not the error body: %w", err)
	}
	return nil
}

// Handler wraps next (a test server's handler) so that every answer is
// checked against the document; a mismatch fails t.
func (d *Document) Handler(t testing.TB, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		w.Write(body)
		if err := d.Check(r, rec.Code, rec.Header(), body); err != nil {
			t.Errorf("the answer does not follow the OpenAPI document: %v\nbody: %.2000s", err, body)
		}
	})
}
