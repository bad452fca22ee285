package ietfl2vpn

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// This file is the osm dialect: what TeraFlowSDN's L2SM NBI does around
// the strict datastore.

// The names TeraFlowSDN makes up for what OSM's bodies lack.
const (
	FakeDevice   = "fake-device"
	FakeLocation = "fake-location"
	FakeMDName   = "fake-md-name"
	DefaultMTU   = 1500
)

// normalise rewrites the entries of a write body in place, as TeraFlowSDN
// does before it validates them: the members OSM's connector leaves out
// are added, OSM's encapsulation-type is mapped onto RFC 8466's. Members
// behind a disabled feature are not added. Bodies of the wrong shape are
// left to the validator.
func (e *Emulator) normalise(doc any, member string) {
	top, _ := doc.(map[string]any)
	list, _ := top[Module+":"+member].([]any)
	for _, item := range list {
		entry, ok := item.(map[string]any)
		switch {
		case !ok:
		case member == "vpn-service":
			e.normaliseService(entry)
		default:
			e.normaliseAccess(entry)
		}
	}
}

func (e *Emulator) normaliseService(s map[string]any) {
	setDefault(s, "ce-vlan-preservation", true)
	setDefault(s, "ce-vlan-cos-preservation", true)
	if e.check.features["bum"] {
		if fd := object(s, "frame-delivery"); fd != nil {
			setDefault(fd, "multicast-gp-port-mapping", Module+":static-mapping")
		}
	}
}

func (e *Emulator) normaliseAccess(a map[string]any) {
	// TeraFlowSDN attaches everything to a device of a site it makes up.
	delete(a, "location-reference")
	setDefault(a, "device-reference", FakeDevice)
	if conn, ok := a["connection"].(map[string]any); ok {
		if conn["encapsulation-type"] == "dot1q-vlan-tagged" {
			conn["encapsulation-type"] = "vlan"
			setDefault(conn, "eth-inf-type", "tagged")
		}
		if tagged, ok := conn["tagged-interface"].(map[string]any); ok && tagged["dot1q-vlan-tagged"] != nil {
			setDefault(tagged, "type", "dot1q")
		}
		if e.check.features["ethernet-oam"] {
			if oam := object(conn, "oam"); oam != nil {
				setDefault(oam, "md-name", FakeMDName)
				setDefault(oam, "md-level", json.Number("0"))
			}
		}
	}
	if svc := object(a, "service"); svc != nil {
		setDefault(svc, "svc-mtu", json.Number(strconv.Itoa(DefaultMTU)))
	}
}

// object returns obj[name] as an object, adding an empty one when it is
// absent, and nil when it is something else.
func object(obj map[string]any, name string) map[string]any {
	v, ok := obj[name]
	if !ok {
		m := map[string]any{}
		obj[name] = m
		return m
	}
	m, _ := v.(map[string]any)
	return m
}

func setDefault(obj map[string]any, name string, v any) {
	if _, ok := obj[name]; !ok {
		obj[name] = v
	}
}

// tfsBearer checks what TeraFlowSDN needs to find the endpoint of an
// attachment: a bearer-reference "device:endpoint" (or
// "prefix:device:endpoint").
func tfsBearer(a map[string]any, path string) *rcError {
	b, _ := a["bearer"].(map[string]any)
	ref, _ := b["bearer-reference"].(string)
	if n := len(strings.Split(ref, ":")); n == 2 || n == 3 {
		return nil
	}
	return invalid(path+"/bearer/bearer-reference", fmt.Sprintf("Bearer(%s) not found; unable to auto-generated mapping: the endpoint is read from bearer-reference as device:endpoint", ref))
}

// tfsSite is the site TeraFlowSDN makes up for an attachment written to a
// site it does not know.
func tfsSite(id string) *site {
	return newSite(Site{ID: id, Management: "provider-managed", Location: FakeLocation, Device: FakeDevice}, true)
}

// tfsService is TeraFlowSDN's reply to a GET of a VPN it knows: 200 when
// the service is active, 504 while it is not.
func tfsService(status int, id string) reply {
	return reply{status: status, body: map[string]any{"service-id": id}}
}

// tfsNotFound is TeraFlowSDN's reply to a GET of a VPN it does not know.
func tfsNotFound(id string) reply {
	return reply{status: http.StatusInternalServerError, body: map[string]any{"error": "VPN(" + id + ") not found in database"}}
}
