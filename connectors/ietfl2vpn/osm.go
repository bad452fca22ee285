package ietfl2vpn

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// This file holds what the osm dialect does differently: OSM's bodies
// and TeraFlowSDN's replies.

// osmMedia is the Content-Type OSM's connector sends.
const osmMedia = "application/json"

// osmServiceBody is the vpn-service entry OSM's connector writes, with
// wimro's vpn-id and customer-name, the leaf name TeraFlowSDN validates
// (vpn-svc-type, not v6's vpn-scv-type), and ELAN's type, which OSM lacks.
func (c *connector) osmServiceBody(id string, t connectors.ServiceType) map[string]any {
	svcType := "vpws"
	if t == connectors.ServiceELAN {
		svcType = strings.TrimPrefix(c.set.elanType, module+":")
	}
	return map[string]any{"vpn-id": id, "vpn-svc-type": svcType, "svc-topo": "any-to-any", "customer-name": c.set.customer}
}

// osmAccessBody is the site-network-access entry OSM's connector writes:
// no location flavor and no service (the server adds them), OSM's
// encapsulation-type for dot1q, and an empty connection otherwise.
func osmAccessBody(vpnID string, a attachment, ep endpoint) map[string]any {
	conn := map[string]any{}
	if ep.encap == connectors.EncapDot1Q {
		conn = map[string]any{
			"encapsulation-type": "dot1q-vlan-tagged",
			"tagged-interface":   map[string]any{"dot1q-vlan-tagged": map[string]any{"cvlan-id": ep.vlan}},
		}
	}
	return map[string]any{
		"network-access-id": a.id,
		"connection":        conn,
		"vpn-attachment":    map[string]any{"vpn-id": vpnID, "site-role": "any-to-any-role"},
		"bearer":            map[string]any{"bearer-reference": ep.bearer},
	}
}

// post creates e with a POST on its list, as OSM does. An attachment that
// exists already (409) is deleted and posted again: its id is ours, and a
// server that rewrites bodies keeps nothing to compare it with. The reply
// left is judged by write (a vpn-service's 409 is adopted there).
func (c *connector) post(ctx context.Context, op string, e entry, doc any) (rest.Reply, error) {
	r, err := c.rc.JSON(ctx, op, http.MethodPost, e.list, osmMedia, doc)
	if err != nil || r.Status != http.StatusConflict || e.member != "site-network-access" {
		return r, err
	}
	if err := c.delete(ctx, e.what, e.item); err != nil {
		return rest.Reply{}, err
	}
	return c.rc.JSON(ctx, op+" (again)", http.MethodPost, e.list, osmMedia, doc)
}

// getService reads vpn-service id. In the osm dialect TeraFlowSDN's reply
// for an unknown VPN, 500 {"error": "VPN(<id>) not found in database"}, is
// a NotFound error.
func (c *connector) getService(ctx context.Context, op, id string) (rest.Reply, error) {
	r, err := c.get(ctx, op, servicePath(id))
	if err != nil || c.set.dialect != DialectOSM || r.Status != http.StatusInternalServerError {
		return r, err
	}
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(r.Body, &body) == nil && strings.Contains(body.Error, "not found in database") {
		e := connectors.Errorf(connectors.KindNotFound, "%s %s: HTTP %d: %s", Type, op, r.Status, rest.Clip(body.Error, rest.MaxSnippet))
		e.Status = r.Status
		return r, e
	}
	return r, nil
}

// osmStatus is the status of a vpn-service the server answered 200 for:
// ACTIVE, as OSM reads it. TeraFlowSDN answers 200 once its own service is
// active and has no attachment to read.
func osmStatus(id string, r rest.Reply, connInfo map[string]any) connectors.ServiceStatus {
	info := map[string]any{"vpn-id": id}
	if t, ok := connInfo["service-type"].(string); ok {
		info["service-type"] = t
	}
	var body struct {
		ServiceID string `json:"service-id"`
	}
	if json.Unmarshal(r.Body, &body) == nil && body.ServiceID != "" {
		info["service-id"] = body.ServiceID
	}
	return connectors.ServiceStatus{Status: connectors.StatusActive, Info: info}
}

// tfsErrors reads TeraFlowSDN's refusal bodies: a JSON list of {"error":
// …} (or of strings), or one {"error": …}. It returns nil for any other
// body.
func tfsErrors(body []byte) []string {
	var list []json.RawMessage
	if json.Unmarshal(body, &list) != nil {
		var one json.RawMessage = body
		list = []json.RawMessage{one}
	}
	var out []string
	for _, raw := range list {
		var e struct {
			Error string `json:"error"`
		}
		var s string
		switch {
		case json.Unmarshal(raw, &e) == nil && e.Error != "":
			out = append(out, e.Error)
		case json.Unmarshal(raw, &s) == nil && s != "":
			out = append(out, s)
		}
	}
	return out
}

// tfsPermanent are the texts of TeraFlowSDN's refusals that a retry of the
// same request cannot change: the NBI raises them on the body itself (it
// answers every failure 500).
var tfsPermanent = []string{
	"unable to auto-generated mapping", // a bearer-reference it cannot read
	"Malformed NetworkAccessConnection",
	"not supported", // NotImplementedError: encapsulation, tag or QoS class
	"Unexpected request",
	"is not L2VPN",
}

// alreadyExists reports TeraFlowSDN's answer to a vpn-service it holds
// already: its Service component's gRPC ALREADY_EXISTS, passed on as 500.
func alreadyExists(r rest.Reply) bool {
	if r.Status != http.StatusInternalServerError {
		return false
	}
	for _, e := range tfsErrors(r.Body) {
		if strings.Contains(e, "ALREADY_EXISTS") {
			return true
		}
	}
	return false
}

// tfsFail is the error of a TeraFlowSDN refusal: its messages in the
// text, and Permanent when one of them is (tfsPermanent). It returns nil
// for a reply that is not one.
func (c *connector) tfsFail(op string, r rest.Reply) error {
	msgs := tfsErrors(r.Body)
	if r.Status != http.StatusInternalServerError || len(msgs) == 0 {
		return nil
	}
	detail := rest.Clip(strings.Join(msgs, "; "), rest.MaxSnippet)
	for _, m := range msgs {
		for _, p := range tfsPermanent {
			if strings.Contains(m, p) {
				e := connectors.Errorf(connectors.KindPermanent, "%s %s: HTTP %d: %s", Type, op, r.Status, detail)
				e.Status = r.Status
				return e
			}
		}
	}
	return c.rc.Error(op, r, detail)
}

// tfsBearer checks a bearer-reference the way TeraFlowSDN reads it: the
// endpoint is "device:endpoint" or "prefix:device:endpoint" (the form of
// its built-in bearer mappings, which it looks up first); anything else it
// refuses when the attachment is posted.
func tfsBearer(ref string) error {
	parts := strings.Split(ref, ":")
	if (len(parts) != 2 && len(parts) != 3) || slices.Contains(parts, "") {
		return fmt.Errorf("bearer-reference %q is not \"device:endpoint\" or \"prefix:device:endpoint\", the only forms TeraFlowSDN reads an endpoint from", ref)
	}
	return nil
}

// listing says whether the server of a dialect can list its vpn-services,
// and why not: TeraFlowSDN's NBI, the only server of the osm dialect,
// answers GET vpn-services with {} whatever it holds, so a listing there
// would report every service missing (drift reconcile) and find nothing
// to clear.
func listing(dialect string) (ok bool, why string) {
	if dialect == DialectOSM {
		return false, "in the osm dialect the server (TeraFlowSDN) answers GET vpn-services with {} whatever it holds: it cannot list its services"
	}
	return true, ""
}
