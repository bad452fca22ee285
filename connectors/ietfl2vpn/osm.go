package ietfl2vpn

import (
	"context"
	"encoding/json"
	"net/http"
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
