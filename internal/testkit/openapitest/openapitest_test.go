package openapitest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// doc is a small document in the shape httpapi generates: one operation
// with a 200 and a 404 and the shared error schema.
const doc = `{
  "openapi": "3.0.3",
  "info": {"title": "t", "version": "1"},
  "servers": [{"url": "/"}],
  "paths": {
    "/things/{id}": {"get": {"operationId": "getThing", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "responses": {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
        "404": {"$ref": "#/components/responses/NotFound"}}}},
    "/things/{id}/events": {"get": {"operationId": "getThingEvents", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
      "responses": {"200": {"description": "stream", "content": {"text/event-stream": {"schema": {"type": "string"},
        "x-events": {"change": {"$ref": "#/components/schemas/Thing"}}}}}}}},
    "/things/all": {"get": {"operationId": "getAll",
      "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}}}}}}
  },
  "components": {
    "schemas": {
      "Thing": {"type": "object", "properties": {"name": {"type": "string"}, "note": {"type": "string", "nullable": true},
        "config": {"type": "object", "additionalProperties": true}}, "required": ["name"]},
      "Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {"code": {"type": "integer"}}, "required": ["code"]}}, "required": ["error"]}
    },
    "responses": {"NotFound": {"description": "nf", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}
  }
}`

func TestCheck(t *testing.T) {
	t.Parallel()
	d, err := Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	sseCT := http.Header{"Content-Type": {"text/event-stream"}}
	for _, tt := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body               string
		fails              string // "" when the answer follows the document
	}{
		{"documented answer", "GET", "/things/a", 200, jsonCT, `{"name": "a", "note": null, "config": {"x": null}}`, ""},
		{"documented error", "GET", "/things/a", 404, jsonCT, `{"error": {"code": 404}}`, ""},
		{"a literal segment wins", "GET", "/things/all", 200, jsonCT, `{"n": 1}`, ""},
		{"escaped parameter", "GET", "/things/a%2Fb", 200, jsonCT, `{"name": "a/b"}`, ""},
		{"router 404", "GET", "/nothing", 404, jsonCT, `{"error": {"code": 404}}`, ""},
		{"router 405", "POST", "/things/a", 405, jsonCT, `{"error": {"code": 405}}`, ""},
		{"null where not nullable", "GET", "/things/a", 200, jsonCT, `{"name": null}`, "name"},
		{"required field missing", "GET", "/things/a", 200, jsonCT, `{"note": "x"}`, "name"},
		{"undeclared field", "GET", "/things/a", 200, jsonCT, `{"name": "a", "extra": 1}`, "extra"},
		{"undocumented status", "GET", "/things/a", 409, jsonCT, `{"error": {"code": 409}}`, "status is not supported"},
		{"wrong content type", "GET", "/things/a", 200, http.Header{"Content-Type": {"text/plain"}}, `{"name": "a"}`, "Content-Type"},
		{"error body of another shape", "GET", "/things/a", 404, jsonCT, `{"message": "no"}`, "error"},
		{"router answer that is not an error", "GET", "/nothing", 200, jsonCT, `{}`, "no operation"},
		{"router error body of another shape", "GET", "/nothing", 404, jsonCT, `{"message": "no"}`, "error"},
		{"event stream", "GET", "/things/a/events", 200, sseCT, "id: 1-2\nevent: change\ndata: {\"name\": \"a\"}\n\n: keep-alive\n\nevent: change\ndata: {\"name\": \"b\"}\n\n", ""},
		{"stream cut short", "GET", "/things/a/events", 200, sseCT, "event: change\ndata: {\"name\": \"a\"}\n\nevent: cha", ""},
		{"event data against its schema", "GET", "/things/a/events", 200, sseCT, "event: change\ndata: {\"name\": \"a\", \"extra\": 1}\n\n", "extra"},
		{"event not in x-events", "GET", "/things/a/events", 200, sseCT, "event: other\ndata: {}\n\n", `"other" is no event`},
		{"event data not JSON", "GET", "/things/a/events", 200, sseCT, "event: change\ndata: {\n\n", "not JSON"},
		{"event data on two lines", "GET", "/things/a/events", 200, sseCT, "event: change\ndata: {\ndata: }\n\n", "2 data lines"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := d.Check(httptest.NewRequest(tt.method, tt.path, nil), tt.status, tt.header, []byte(tt.body))
			switch {
			case tt.fails == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case tt.fails != "" && err == nil:
				t.Fatalf("want an error about %q, got none", tt.fails)
			case tt.fails != "" && !strings.Contains(err.Error(), tt.fails):
				t.Fatalf("want an error about %q, got %v", tt.fails, err)
			}
		})
	}
}

func TestLoadRefusesAnInvalidDocument(t *testing.T) {
	t.Parallel()
	if _, err := Load([]byte(strings.Replace(doc, `"version": "1"`, `"version": ""`, 1))); err == nil {
		t.Fatal("a document without info.version was loaded")
	}
}
