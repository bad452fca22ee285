package httpapi

import (
	"net/http"
	"reflect"
	"strconv"
)

// basicAuthScheme is the RESTCONF routes' authentication.
var basicAuthScheme = map[string]any{"type": "http", "scheme": "basic",
	"description": "The RESTCONF (IETF L2VPN) routes: the user names the tenant (name or uuid), the password is an API token with the route's scope " +
		"(not checked when the server has none)."}

// restconfOperation rewrites op for a RESTCONF route: its success status
// and media types, RFC 8040 error bodies, Basic authentication, and a body
// that may also be application/yang-data+json.
func (g *schemaGen) restconfOperation(rt Route, op map[string]any, used map[int]bool) {
	status := rt.Status
	if status == 0 {
		status = http.StatusOK
	}
	success := map[string]any{"description": "Success."}
	if rt.Response != nil {
		success["content"] = yangContent(g.schema(reflect.TypeOf(rt.Response)))
	}
	if status == http.StatusCreated {
		success["headers"] = map[string]any{"Location": map[string]any{"description": "The created resource.", "schema": map[string]any{"type": "string"}}}
	}
	responses := map[string]any{strconv.Itoa(status): success}
	if rt.CreatedToo {
		responses[strconv.Itoa(http.StatusCreated)] = map[string]any{"description": "Created.",
			"headers": map[string]any{"Location": map[string]any{"description": "The created resource.", "schema": map[string]any{"type": "string"}}}}
	}
	statuses := append(errorStatuses(rt), http.StatusForbidden, http.StatusUnauthorized)
	if rt.Method != http.MethodGet {
		// The access completing a service answers its link's failure;
		// a GET too (503 while it is down).
		statuses = append(statuses, http.StatusServiceUnavailable)
	}
	for _, st := range statuses {
		used[st] = true
		responses[strconv.Itoa(st)] = map[string]any{"$ref": "#/components/responses/" + restconfResponseName(st)}
	}
	op["responses"] = responses
	op["security"] = []any{map[string]any{"basicAuth": []any{}}}
	if rt.Request != nil {
		op["requestBody"] = map[string]any{"required": true, "description": "The body, as application/yang-data+json or application/json.",
			"content": yangContent(g.schema(reflect.TypeOf(rt.Request)))}
	}
	g.schema(reflect.TypeOf(restconfErrors{}))
}

func yangContent(schema any) map[string]any {
	return map[string]any{yangJSON: map[string]any{"schema": schema}, "application/json": map[string]any{"schema": schema}}
}

func restconfResponseName(status int) string { return "Restconf" + errorResponseName(status) }

// restconfResponses adds the RFC 8040 error responses the RESTCONF routes
// use to the document's responses.
func restconfResponses(responses map[string]any, used map[int]bool) {
	for st := range used {
		responses[restconfResponseName(st)] = map[string]any{"description": errorDescriptions[st] + " (RFC 8040 error body)",
			"content": map[string]any{yangJSON: map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/RestconfErrors"}}}}
	}
}
