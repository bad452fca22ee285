package ietfl2vpn

import (
	"net/http"
	"slices"
)

// This file is the tfs dialect: TeraFlowSDN's NBI routes and answers
// around the osm dialect's datastore.

// tfsRoutes are the only resources TeraFlowSDN's L2VPN NBI serves, with
// their methods; everything else is Flask's 404 (or 405) page.
var tfsRoutes = map[string][]string{
	"services": {http.MethodGet, http.MethodPost},
	"service":  {http.MethodGet, http.MethodPut, http.MethodDelete},
	"accesses": {http.MethodPost, http.MethodPut},
}

const (
	flask404 = "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n"
	flask405 = "<!doctype html>\n<html lang=en>\n<title>405 Method Not Allowed</title>\n<h1>Method Not Allowed</h1>\n"
)

// tfsRoute answers as TeraFlowSDN's NBI: GET vpn-services is {} whatever
// it holds; there are no sites, site or single-attachment resources; a PUT
// of a vpn-service wants a whole l2vpn-svc tree (500 otherwise); a PUT on
// site-network-accesses is a POST answered 204; and every refusal is 500
// with a JSON list of {"error": …}.
func (e *Emulator) tfsRoute(r *http.Request, body []byte, res resource, perr *rcError) reply {
	methods, known := tfsRoutes[res.kind]
	switch {
	case perr != nil || !known:
		return reply{status: http.StatusNotFound, html: flask404}
	case !slices.Contains(methods, r.Method):
		return reply{status: http.StatusMethodNotAllowed, html: flask405}
	case res.kind == "services" && r.Method == http.MethodGet:
		return reply{status: http.StatusOK, body: map[string]any{}}
	case res.kind == "service" && r.Method == http.MethodPut:
		return tfsErrors("Unexpected request format: the body must hold ietf-l2vpn-svc:l2vpn-svc with its sites")
	}
	put := r.Method == http.MethodPut
	if put {
		r = r.Clone(r.Context())
		r.Method = http.MethodPost
	}
	rep := e.serve(r, body, res)
	switch {
	case rep.err != nil && rep.err.status != http.StatusUnauthorized:
		return tfsErrors(rep.err.msg)
	case put && rep.status == http.StatusCreated:
		return reply{status: http.StatusNoContent}
	}
	return rep
}

// tfsErrors is TeraFlowSDN's refusal: 500 and the list of errors.
func tfsErrors(msgs ...string) reply {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"error": m}
	}
	return reply{status: http.StatusInternalServerError, body: list}
}

// tfsAlreadyExists is TeraFlowSDN's answer to a vpn-service posted again:
// its Service component refuses the second CreateService with gRPC
// ALREADY_EXISTS, and the NBI passes the exception's text on in a 500.
func tfsAlreadyExists(id string) reply {
	return tfsErrors("<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.ALREADY_EXISTS\n\tdetails = \"Service(" + id + ") already exists\"\n>")
}
