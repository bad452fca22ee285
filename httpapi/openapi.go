package httpapi

import (
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wimro/wimro/engine"
)

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// OpenAPI returns the OpenAPI 3.0 document of every route, with request
// and response schemas reflected from the Go types the handlers use. It
// lints clean with @redocly/cli (scripts/openapi-lint.sh) and the tests
// validate the live answers against it.
func (s *Server) OpenAPI() map[string]any {
	g := &schemaGen{components: map[string]any{}, names: map[reflect.Type]string{}}
	g.schema(reflect.TypeOf(errorBody{})) // "Error", the one error body
	paths := map[string]any{}
	used, usedRC := map[int]bool{}, map[int]bool{}
	for _, rt := range s.routes {
		item, _ := paths[rt.Pattern].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.Pattern] = item
		}
		op := map[string]any{
			"operationId": operationID(rt.Method, rt.Pattern),
			"summary":     rt.Summary,
			"description": operationDescription(rt),
			"tags":        rt.Tags,
			"responses":   g.responses(rt, used),
		}
		if rt.RESTCONF {
			g.restconfOperation(rt, op, usedRC)
		}
		if params := parameters(rt); len(params) > 0 {
			op["parameters"] = params
		}
		if rt.Request != nil && !rt.RESTCONF {
			op["requestBody"] = map[string]any{"required": true, "description": "The body, as JSON or YAML (by its Content-Type).",
				"content": requestContent(g.schema(reflect.TypeOf(rt.Request)))}
		}
		if rt.Public {
			op["security"] = []any{}
		}
		item[strings.ToLower(rt.Method)] = op
	}
	responses := map[string]any{}
	for status := range used {
		responses[errorResponseName(status)] = map[string]any{"description": errorDescriptions[status],
			"content": content(map[string]any{"$ref": "#/components/schemas/Error"})}
	}
	restconfResponses(responses, usedRC)
	var tags []any
	for _, name := range tagOrder {
		tags = append(tags, map[string]any{"name": name, "description": tagDescriptions[name]})
	}
	version := s.opts.Version
	if version == "" {
		version = "dev" // OpenAPI requires one
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "wimro", "version": version,
			"description": "The openmano-compatible WAN Infrastructure Manager API of wimro: tenants, datacenters, WIMs, " +
				"their accounts and port mappings, and the NS instances whose WAN links wimro creates and deletes."},
		"servers": []any{map[string]any{"url": "/", "description": "The wimd that serves this document"}},
		"tags":    tags,
		"paths":   paths,
		"components": map[string]any{
			"schemas":   g.components,
			"responses": responses,
			"securitySchemes": map[string]any{"bearerAuth": map[string]any{"type": "http", "scheme": "bearer",
				"description": "The API token (WIMRO_API_TOKEN, every scope, or a line of WIMRO_API_TOKEN_FILE with its scopes: read, write, admin); needed only when the server has one."},
				"basicAuth": basicAuthScheme},
		},
		"security": []any{map[string]any{"bearerAuth": []any{}}},
	}
}

// operationDescription says what the summary does not: who may call and
// how the body and answer are encoded.
func operationDescription(rt Route) string {
	d := rt.Summary + "."
	if rt.Public {
		d += " Public: no token is needed, even when the server has one."
	} else {
		d += " Scope: " + string(routeScope(rt)) + " (a token without it is answered 403)."
	}
	if rt.Request != nil {
		d += " The body is JSON or YAML, by its Content-Type."
	}
	if rt.Stream != nil {
		return d + " The answer is a text/event-stream (server-sent events): each event has a name (event:) and one line of JSON data " +
			"(data:), described by the media type's x-events; change and retry events carry an id (id:) to resume after, with the Last-Event-ID " +
			"header or the last_event_id query parameter. The stream ends after its done event; a comment (: keep-alive) is sent " +
			"when it has been silent for 15 s. Errors before the stream starts are JSON."
	}
	return d + " The answer is JSON, or YAML when Accept asks for it."
}

func parameters(rt Route) []any {
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(rt.Pattern, -1) {
		desc, ok := pathParamDescriptions[m[1]]
		if !ok {
			desc = "The " + strings.TrimSuffix(m[1], "_id") + "'s uuid or name."
		}
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "description": desc, "schema": map[string]any{"type": "string"}})
	}
	if rt.Stream != nil {
		params = append(params, map[string]any{"name": lastEventID, "in": "header", "required": false,
			"description": "Resume after this event id (the id: of a change or retry event); the events up to it are not sent again.",
			"schema":      map[string]any{"type": "string", "pattern": `^[0-9]+-[0-9]+$`}})
	}
	if rt.Method == http.MethodPost {
		params = append(params, map[string]any{"name": IdempotencyKeyHeader, "in": "header", "required": false,
			"description": "A key of the client's choosing (1 to 255 printable ASCII characters) that makes a retry safe: a second request with " +
				"the same key and the same method, path and body is answered the first answer (marked Idempotent-Replayed: true) without doing " +
				"anything, while the first runs it is answered 409, and with another request it is answered 422. Keys are per client (per API token): " +
				"another token's request with the same key is a request of its own. Keys expire after 24 hours.",
			"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": 255}})
	}
	for _, q := range rt.Query {
		p, ok := queryParams[q]
		if !ok {
			// A list filter: the rows whose q equals the value.
			p = map[string]any{"description": "Only the rows whose " + q + " equals this value (null: has none).", "schema": map[string]any{"type": "string"}}
		}
		param := map[string]any{"name": q, "in": "query", "required": false}
		for k, v := range p {
			param[k] = v
		}
		params = append(params, param)
	}
	return params
}

var pathParamDescriptions = map[string]string{
	"tenant_id":     "The NFVO tenant's uuid or name; `any` means every tenant where the route allows it.",
	"datacenter_id": "The datacenter's uuid or name.",
	"wim_id":        "The WIM's uuid or name.",
	"vpn_id":        "The vpn-service's vpn-id (percent-encoded).",
	"site_id":       "The site: a datacenter attached to the tenant, by uuid or name (percent-encoded).",
	"access_id":     "The site-network-access's network-access-id (percent-encoded).",
	"instance_id":   "The NS instance's uuid or name.",
	"net_id":        "The instance network's uuid, VIM network id, osm_id or sce_net_id.",
	"action_id":     "The instance action's uuid.",
}

// queryParams documents the query keys that are not list filters.
var queryParams = map[string]map[string]any{
	"field": {"description": "A column to show (repeatable); the default columns without it.", "style": "form", "explode": true,
		"schema": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": toAny(engine.WIMListFields)}}},
	"limit":            {"description": "At most this many rows (default 100).", "schema": map[string]any{"type": "integer", "minimum": 1, "maximum": 1000}},
	"dry_run":          {"description": "true: only plan the WAN links, write nothing; the answer is the plan.", "schema": map[string]any{"type": "boolean"}},
	"account":          {"description": "Reconcile only this WIM account (uuid or name); every account without it.", "schema": map[string]any{"type": "string"}},
	"fix":              {"description": "true: delete orphan services and re-queue missing links as CREATE actions; mismatches and abandoned services are only reported.", "schema": map[string]any{"type": "boolean"}},
	"delete_abandoned": {"description": "true, with fix=true: also delete the services whose DELETE an operator abandoned (reported as kind abandoned).", "schema": map[string]any{"type": "boolean"}},
	"since": {"description": "Only the audit entries at or after this time (RFC 3339, e.g. 2006-01-02T15:04:05Z, or a date).",
		"schema": map[string]any{"type": "string"}},
	"after": {"description": "Only the audit entries after this id: the last id of the previous page.",
		"schema": map[string]any{"type": "integer", "minimum": 0}},
	lastEventIDQuery: {"description": "Resume after this event id, for clients that cannot set the Last-Event-ID header (which wins when both are given).",
		"schema": map[string]any{"type": "string", "pattern": `^[0-9]+-[0-9]+$`}},
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

var tagOrder = []string{"meta", "tenants", "datacenters", "wims", "scenarios", "instances", "l2sm"}

var tagDescriptions = map[string]string{
	"meta":        "The server itself: health, readiness, version, cluster and this document.",
	"tenants":     "NFVO tenants.",
	"datacenters": "Datacenters (VIMs) and their WAN exit rules, attached to tenants.",
	"wims":        "WIMs, the tenants' accounts on them and their port mappings.",
	"scenarios":   "The scenario catalogue: named networks an instance places in datacenters (openmano's scenarios, network part).",
	"instances":   "NS instances, their networks, WAN links and instance actions.",
	"l2sm":        "The IETF L2VPN service model (RFC 8466) over RESTCONF, as OSM's ietfl2vpn plugin drives it: each vpn-service is an NS instance of the tenant.",
}

// errorDescriptions covers every status an operation may document.
var errorDescriptions = map[int]string{
	http.StatusBadRequest:            "Bad input: error.field names the field or parameter when there is one.",
	http.StatusUnauthorized:          "Missing or invalid bearer token (only when the server has one).",
	http.StatusForbidden:             "The token lacks the scope the route needs (error.description names it; only when the server has tokens).",
	http.StatusNotFound:              "Not found: a named tenant, datacenter, WIM, account, instance or action does not exist.",
	http.StatusConflict:              "Conflict: a duplicate, an ambiguous name, or a dependency that blocks the change.",
	http.StatusRequestEntityTooLarge: "The body is larger than the server accepts.",
	http.StatusUnsupportedMediaType:  "The body is neither JSON nor YAML.",
	http.StatusInternalServerError:   "An unexpected failure; the server's log has the details.",
	http.StatusServiceUnavailable:    "A dependency (the database, the coordinator) cannot answer now; try again.",
	http.StatusTooManyRequests:       "A limit of the server is reached (error.description names it); try again after Retry-After seconds.",
	http.StatusUnprocessableEntity:   "The Idempotency-Key was used with another request (method, path or body): use a new key.",
}

func errorResponseName(status int) string {
	return strings.ReplaceAll(http.StatusText(status), " ", "")
}

// errorStatuses returns the error statuses rt can answer: those its shape
// implies plus rt.Errors.
func errorStatuses(rt Route) []int {
	// Every route: a malformed query string or path parameter (400), a
	// panic or an unexpected error (500).
	st := []int{http.StatusBadRequest, http.StatusInternalServerError}
	if !rt.Public {
		st = append(st, http.StatusUnauthorized, http.StatusForbidden)
	}
	if strings.Contains(rt.Pattern, "{") {
		// Lookups by uuid or name: missing, or a name that matches twice.
		st = append(st, http.StatusNotFound, http.StatusConflict)
	}
	switch rt.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		st = append(st, http.StatusUnsupportedMediaType, http.StatusConflict)
		if rt.Method == http.MethodPost {
			// Idempotency-Key: the first request still runs (409, above),
			// or the key was used with another request.
			st = append(st, http.StatusBadRequest, http.StatusUnprocessableEntity)
		}
		if rt.Request != nil {
			st = append(st, http.StatusRequestEntityTooLarge)
		}
	case http.MethodDelete:
		st = append(st, http.StatusConflict)
	}
	st = append(st, rt.Errors...)
	sort.Ints(st)
	return slices.Compact(st)
}

func (g *schemaGen) responses(rt Route, used map[int]bool) map[string]any {
	if rt.Stream != nil {
		out := map[string]any{"200": map[string]any{"description": "The event stream.", "content": g.streamContent(rt.Stream)}}
		g.errorResponses(rt, used, out)
		return out
	}
	ok := g.schema(reflect.TypeOf(rt.Response))
	if rt.AlsoResponse != nil {
		ok = map[string]any{"anyOf": []any{ok, g.schema(reflect.TypeOf(rt.AlsoResponse))}}
	}
	success := map[string]any{"description": "Success.", "content": content(ok)}
	if rt.Text != "" {
		success["content"].(map[string]any)["text/plain"] = map[string]any{"schema": map[string]any{"type": "string", "description": rt.Text}}
	}
	if rt.Method != http.MethodGet {
		// Writes may answer notes about the request (such as unknown keys
		// that were ignored) besides their result, in headers: the body
		// keeps the one key openmano's clients read.
		success["headers"] = map[string]any{"Warning": map[string]any{
			"description": `One per note that did not stop the request, such as an unknown key that was ignored, or an instance accepted onto a WIM account in ERROR: 299 - "text".`,
			"schema":      map[string]any{"type": "string"}}}
	}
	out := map[string]any{"200": success}
	g.errorResponses(rt, used, out)
	return out
}

func (g *schemaGen) errorResponses(rt Route, used map[int]bool, out map[string]any) {
	for _, status := range errorStatuses(rt) {
		if errorDescriptions[status] == "" {
			panic(fmt.Sprintf("httpapi: route %s %s documents status %d, which has no description", rt.Method, rt.Pattern, status))
		}
		used[status] = true
		out[strconv.Itoa(status)] = map[string]any{"$ref": "#/components/responses/" + errorResponseName(status)}
	}
}

// streamContent is the text/event-stream media type of a stream route.
// OpenAPI 3.0 cannot describe the events inside the text, so the schema
// of each event's data is given by name in x-events (and checked by
// internal/testkit/openapitest on the answers of the tests).
func (g *schemaGen) streamContent(events map[string]any) map[string]any {
	x := map[string]any{}
	for name, v := range events {
		x[name] = g.schema(reflect.TypeOf(v))
	}
	return map[string]any{"text/event-stream": map[string]any{
		"schema":   map[string]any{"type": "string", "description": "Server-sent events: id:, event: and data: lines, a blank line after each event."},
		"x-events": x,
	}}
}

func content(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}, "application/yaml": map[string]any{"schema": schema}}
}

func requestContent(schema any) map[string]any {
	c := content(schema)
	c["application/x-yaml"] = map[string]any{"schema": schema}
	c["text/yaml"] = map[string]any{"schema": schema}
	return c
}

// operationID is method + pattern in camel case: unique because each
// (method, pattern) is routed once, and stable while the route is.
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
	names      map[reflect.Type]string
}

var timeType = reflect.TypeOf(time.Time{})

// customSchemas are the JSON forms of the types that encode themselves
// (MarshalJSON or UnmarshalJSON), which reflection cannot see.
var customSchemas = map[reflect.Type]func() map[string]any{
	reflect.TypeOf(engine.Port("")): func() map[string]any {
		return map[string]any{"description": "A PoP switch port: a string, or an integer (answered as a string).", "oneOf": []any{
			map[string]any{"type": "string", "minLength": 1, "maxLength": 64},
			map[string]any{"type": "integer", "minimum": 1, "maximum": 65534},
		}}
	},
	reflect.TypeOf(engine.WIMChoice{}): func() map[string]any {
		return map[string]any{"description": "The WIM of the WAN links: true or null picks one, false means none, " +
			"a string names a WIM account uuid, or a WIM name or uuid.", "oneOf": []any{
			map[string]any{"type": "boolean", "nullable": true},
			map[string]any{"type": "string", "minLength": 1},
		}}
	},
	reflect.TypeOf(engine.QoSValue(nil)): func() map[string]any {
		return map[string]any{"type": "integer", "minimum": 1, "nullable": true,
			"description": "QoS of the network's VLD: bandwidth in Mbit/s (at most 10000000) or latency in ms (at most 100000). " +
				"The networks of one VLD that carry it agree; the WIM's connector must honour it."}
	},
	reflect.TypeOf(engine.L3Value(nil)): func() map[string]any {
		addr := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
		return map[string]any{"type": "object", "nullable": true, "additionalProperties": false, "required": []any{"prefix", "pe_address"},
			"description": "The network's site of a layer-3 VPN in its datacenter: the networks of one VLD give it all or none, " +
				"and their WAN link is then an L3VPN, which the WIM's connector must declare. The PE learns the prefix from ce_address " +
				"(a static route to it), static_routes or bgp; one of them is required. Unknown keys are refused.",
			"properties": map[string]any{
				"prefix":     addr("The datacenter's subnet reached through the VPN, without host bits (10.0.1.0/24)."),
				"pe_address": addr("The provider edge's address on the access link, with the link's length (192.0.2.1/30)."),
				"ce_address": addr("The datacenter side's address on the access link (192.0.2.2): the next hop of the default static route."),
				"static_routes": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"prefix", "next_hop"},
					"properties": map[string]any{"prefix": addr("A prefix the PE routes to the site."), "next_hop": addr("On the access link.")}}},
				"bgp": map[string]any{"type": "object", "required": []any{"peer_as", "peer_address"}, "properties": map[string]any{
					"peer_as":      map[string]any{"type": "integer", "minimum": 1, "maximum": 4294967295},
					"peer_address": addr("The datacenter side's BGP address, on the access link.")}},
			}}
	},
	reflect.TypeOf(engine.Secret("")): func() map[string]any {
		return map[string]any{"type": "string", "format": "password", "description": "Write-only: answers show it masked."}
	},
	reflect.TypeOf(engine.JSONObject{}): func() map[string]any {
		return map[string]any{"type": "object", "additionalProperties": true}
	},
}

// componentNames overrides the pkg+Type name of a component.
var componentNames = map[reflect.Type]string{
	reflect.TypeOf(errorBody{}):      "Error",
	reflect.TypeOf(errorDetail{}):    "ErrorDetail",
	reflect.TypeOf(restconfErrors{}): "RestconfErrors",
}

// schema returns the JSON schema of t; named structs go to components.
func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if f, ok := customSchemas[t]; ok {
		return f()
	}
	if t == reflect.TypeOf(instanceNetworks{}) {
		return map[string]any{"description": "The local networks (a list, each naming its datacenter), or, with instance.scenario, " +
			"where each network of the scenario goes (an object keyed by the scenario's network names: {sites: [{datacenter: ...}]}; " +
			"a network not named goes to instance.datacenter).", "oneOf": []any{
			g.schema(reflect.TypeOf([]engine.NetworkInput{})), g.schema(reflect.TypeOf(map[string]engine.ScenarioNetInput{}))}}
	}
	if custom(t) {
		return map[string]any{} // an unknown custom form: any JSON value
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
		if t.Elem().Kind() == reflect.Interface {
			return map[string]any{"type": "object", "additionalProperties": true} // values of any type, null included
		}
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

// name is the component name of t: its package and type name in camel
// case (WimroTenant, EngineWIMView, HttpapiTenantResponse).
func (g *schemaGen) name(t reflect.Type) string {
	if n, ok := g.names[t]; ok {
		return n
	}
	n, ok := componentNames[t]
	if !ok {
		base := t.PkgPath()
		base = base[strings.LastIndex(base, "/")+1:]
		n = strings.ToUpper(base[:1]) + base[1:] + strings.ToUpper(t.Name()[:1]) + t.Name()[1:]
	}
	g.names[t] = n
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
// encoding/json does. A field is required when it is always there
// (neither omitempty/omitzero nor able to be nil), and nullable when it may be
// null (a pointer, slice, map or interface without omitempty). The tag
// openapi:"required" marks a field the handler needs (a request) or
// always fills (an answer): required and never null.
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
		s := g.schema(f.Type)
		// omitzero leaves a field out as omitempty does (a zero time).
		omitempty := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		nilable := false
		switch f.Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			nilable = true
		}
		switch {
		case f.Tag.Get("openapi") == "required":
			*required = append(*required, name)
		case nilable && !omitempty:
			s = nullable(s)
		case !omitempty && !custom(f.Type):
			*required = append(*required, name)
		}
		props[name] = s
	}
}

// nullable returns s accepting null as well. OpenAPI 3.0 ignores the
// siblings of a $ref and wants nullable beside a type, hence the allOf
// and the alternative made nullable for oneOf.
func nullable(s map[string]any) map[string]any {
	switch {
	case s["$ref"] != nil:
		return map[string]any{"type": "object", "nullable": true, "allOf": []any{s}}
	case s["type"] != nil:
		s["nullable"] = true
	case s["oneOf"] != nil:
		alts := s["oneOf"].([]any)
		first := map[string]any{}
		for k, v := range alts[0].(map[string]any) {
			first[k] = v
		}
		first["nullable"] = true
		s["oneOf"] = append([]any{first}, alts[1:]...)
	}
	return s
}

// custom reports whether t encodes itself (MarshalJSON or UnmarshalJSON):
// its JSON form is not its Go fields.
func custom(t reflect.Type) bool {
	v := reflect.New(t).Interface()
	_, u := v.(interface{ UnmarshalJSON([]byte) error })
	_, m := v.(interface{ MarshalJSON() ([]byte, error) })
	return (u || m) && t != timeType
}
