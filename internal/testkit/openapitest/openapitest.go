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

// A text/event-stream answer is text as far as the body's schema goes;
// checkEvents looks inside.
func init() { openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder) }

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
			case strings.HasSuffix(s, "}") && strings.Contains(s, "={") && len(segs[j]) > strings.Index(s, "{") && strings.HasPrefix(segs[j], s[:strings.Index(s, "{")]):
				// A RESTCONF list key: <name>={<param>}.
				key[j] = '1'
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
		if i := strings.Index(s, "{"); i >= 0 {
			v, err := url.PathUnescape(segs[j][i:])
			if err != nil {
				v = segs[j][i:]
			}
			params[strings.Trim(s[i:], "{}")] = v
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
	resp := op.Responses.Status(status)
	// 201 and 204 may document no body, and then have none (RESTCONF's
	// creations and deletions).
	if resp != nil && len(resp.Value.Content) == 0 && (len(body) > 0 || (status != http.StatusCreated && status != http.StatusNoContent)) {
		return fmt.Errorf("%s %s (%s): status %d documents no body", req.Method, req.URL.Path, op.OperationID, status)
	}
	if resp == nil {
		return nil
	}
	if mt := resp.Value.Content.Get(header.Get("Content-Type")); mt != nil && mt.Extensions["x-events"] != nil {
		if err := d.checkEvents(mt.Extensions["x-events"], body); err != nil {
			return fmt.Errorf("%s %s (%s) answered %d: %w", req.Method, req.URL.Path, op.OperationID, status, err)
		}
	}
	return nil
}

// checkEvents checks a text/event-stream answer (whole, or as far as it
// went): every event is one the media type's x-events names, with one
// line of JSON data valid against that event's schema.
func (d *Document) checkEvents(spec any, body []byte) error {
	events, _ := spec.(map[string]any)
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	for i, frame := range strings.Split(text, "\n\n") {
		name, data, lines := "message", "", 0
		for _, line := range strings.Split(frame, "\n") {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "": // a comment, or the end of the text
			case "event":
				name = value
			case "data":
				data, lines = value, lines+1
			case "id", "retry":
			default:
				return fmt.Errorf("event %d: unknown field %q", i, field)
			}
		}
		if lines == 0 {
			continue // a comment (: keep-alive) or the end
		}
		if lines > 1 {
			return fmt.Errorf("event %d (%s): %d data lines, want one line of JSON", i, name, lines)
		}
		ref, _ := events[name].(map[string]any)
		if ref == nil {
			return fmt.Errorf("event %d: %q is no event of the document's x-events", i, name)
		}
		schema, err := d.resolve(ref)
		if err != nil {
			return fmt.Errorf("event %d (%s): %w", i, name, err)
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			return fmt.Errorf("event %d (%s): data is not JSON: %w", i, name, err)
		}
		if err := schema.VisitJSON(v); err != nil {
			return fmt.Errorf("event %d (%s): %w", i, name, err)
		}
	}
	return nil
}

// resolve returns the component schema a {"$ref": "#/components/schemas/X"}
// names.
func (d *Document) resolve(ref map[string]any) (*openapi3.Schema, error) {
	target, _ := ref["$ref"].(string)
	name, ok := strings.CutPrefix(target, "#/components/schemas/")
	if s := d.doc.Components.Schemas[name]; ok && s != nil && s.Value != nil {
		return s.Value, nil
	}
	return nil, fmt.Errorf("x-events: %v is not a component schema", ref)
}

func (d *Document) checkError(header http.Header, body []byte) error {
	schema, what := "Error", "the error body"
	if header.Get("Content-Type") == "application/yang-data+json" && d.doc.Components.Schemas["RestconfErrors"] != nil {
		// A RESTCONF path's router answer: RFC 8040's error body.
		schema, what = "RestconfErrors", "the RESTCONF error body"
	} else if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("router answer with Content-Type %q, want the JSON error body", ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("router answer: %w", err)
	}
	if err := d.doc.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("router answer is not %s: %w", what, err)
	}
	return nil
}

// Handler wraps next (a test server's handler) so that every answer is
// checked against the document once it is complete; a mismatch fails t.
// The answer passes through as it is written, flushes included, so a
// client follows a stream as it would without the check.
func (d *Document) Handler(t testing.TB, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &teeWriter{w: w}
		next.ServeHTTP(tw, r)
		if !tw.wrote {
			tw.status = http.StatusOK
		}
		body := tw.body.Bytes()
		if err := d.Check(r, tw.status, w.Header(), body); err != nil {
			t.Errorf("the answer does not follow the OpenAPI document: %v\nbody: %.2000s", err, body)
		}
	})
}

// teeWriter passes an answer on and keeps a copy of its status and body.
type teeWriter struct {
	w      http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (tw *teeWriter) Header() http.Header { return tw.w.Header() }

func (tw *teeWriter) WriteHeader(code int) {
	if tw.wrote {
		return
	}
	tw.status, tw.wrote = code, true
	tw.w.WriteHeader(code)
}

func (tw *teeWriter) Write(b []byte) (int, error) {
	if !tw.wrote {
		tw.WriteHeader(http.StatusOK)
	}
	tw.body.Write(b)
	return tw.w.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush,
// deadlines).
func (tw *teeWriter) Unwrap() http.ResponseWriter { return tw.w }
