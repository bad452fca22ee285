package connectors

import (
	"slices"
	"strings"
)

// Request is what CreateService is asked to make: one value, so that a
// decorator that forwards CreateService forwards all of it (a QoS passed
// through an optional interface was lost by any wrapper that did not
// forward that interface by hand).
type Request struct {
	// Key is a stable id the caller derives from the WAN link (its uuid):
	// creating twice with one key must not make a second service.
	Key string
	// Type is the kind of service: ELINE for two points, ELAN for more.
	Type ServiceType
	// Points are the service's ends, port mappings resolved.
	Points []ConnectionPoint
	// QoS is what the service is asked to guarantee; zero asks nothing.
	QoS QoS
}

// Capabilities is what a connector type can do, declared once when it is
// registered (Registry.Register). The engine and the runner choose and
// validate from it without building a connector: which WIM may carry a
// link asking QoS, which service type a link of more than two points
// needs, whether drift reconcile can trust the controller's list.
type Capabilities struct {
	// Services are the service types CreateService makes (ELINE, ELAN,
	// L3VPN). At least one is required.
	Services []ServiceType
	// QoS are the QoS fields CreateService carries to the controller;
	// any other field asked is refused, Permanent.
	QoS []QoSField
	// Edit says EditService changes a service's points and QoS in place;
	// without it EditService is a Permanent error, and an EDIT action
	// replaces the service instead (a new one with a new key, the old one
	// deleted), in the order MakeBeforeBreak says.
	Edit bool
	// MakeBeforeBreak says the controller holds a second service on the
	// ends of a first one at once (an end whose VLAN did not change is in
	// both): a replace makes the new service before it deletes the old,
	// so traffic on the unchanged ends is cut only for the switch. Without
	// it a replace deletes the old service first (break-before-make): a
	// controller that refuses an end already in use would refuse the new
	// one for good.
	MakeBeforeBreak bool
	// List says ListServices sees every service of wimro's on the
	// controller, which drift reconcile needs to trust a list: from a
	// partial list every link would look missing and no orphan could be
	// found. Without it reconcile looks each link up by ServiceID (and
	// finds no orphans), or refuses the account when ServiceID is unset.
	List bool
	// ServiceID, when set, is the id of key's service on the controller,
	// which follows from the key alone (ietfl2vpn: "wimro-<key>"): a
	// DELETE whose CREATE died before recording the id deletes that id
	// rather than look it up by listing, which finds nothing on a server
	// that cannot list (TeraFlowSDN).
	ServiceID func(key string) string
	// Narrow, when set, gives the capabilities for one WIM or account
	// from its settings (a dialect without a QoS field, a multipoint
	// switch): the result is cut down to what the fields above declare.
	// It gets the Config the caller has: at write time only Type and
	// WIMConfig, no account and no credentials.
	Narrow func(cfg Config) Capabilities
}

// Everything declares every service type and QoS field wimro knows, edit
// and list: what the fake connector does, and what the failing one
// declares so that every call reaches it and fails with its own reason.
func Everything() Capabilities {
	return Capabilities{
		Services: []ServiceType{ServiceELINE, ServiceELAN, ServiceL3VPN},
		QoS:      []QoSField{QoSBandwidth, QoSLatency},
		Edit:     true,
		List:     true,

		MakeBeforeBreak: true,
	}
}

// For returns the capabilities of a connector built with cfg: the
// declaration, narrowed by Narrow.
func (c Capabilities) For(cfg Config) Capabilities {
	out := Capabilities{Services: slices.Clone(c.Services), QoS: slices.Clone(c.QoS), Edit: c.Edit, List: c.List, ServiceID: c.ServiceID,
		MakeBeforeBreak: c.MakeBeforeBreak}
	if c.Narrow == nil {
		return out
	}
	n := c.Narrow(cfg)
	out.Services = slices.DeleteFunc(out.Services, func(t ServiceType) bool { return !slices.Contains(n.Services, t) })
	out.QoS = slices.DeleteFunc(out.QoS, func(f QoSField) bool { return !slices.Contains(n.QoS, f) })
	out.Edit = out.Edit && n.Edit
	out.List = out.List && n.List
	out.MakeBeforeBreak = out.MakeBeforeBreak && n.MakeBeforeBreak
	return out
}

// Makes reports whether t is a declared service type.
func (c Capabilities) Makes(t ServiceType) bool { return slices.Contains(c.Services, t) }

// Honours reports whether f is a declared QoS field.
func (c Capabilities) Honours(f QoSField) bool { return slices.Contains(c.QoS, f) }

// ServiceTypeFor is the service type a service of n points needs: ELINE
// for two, ELAN for more (a link across three datacenters or more).
func ServiceTypeFor(n int) ServiceType {
	if n > 2 {
		return ServiceELAN
	}
	return ServiceELINE
}

// Check refuses, Permanent and by name, a request for a service type or a
// QoS field that c does not declare; wimType names the connector in the
// message. An ELAN refused keeps OSM's MultipointNotSupported text, which
// OSM users know. It does not check the points (ValidatePoints does).
func (c Capabilities) Check(wimType string, req Request) error {
	if !c.Makes(req.Type) {
		made := make([]string, len(c.Services))
		for i, t := range c.Services {
			made[i] = string(t)
		}
		list := strings.Join(made, ", ")
		if list == "" {
			list = "none"
		}
		if req.Type == ServiceELAN {
			return Errorf(KindPermanent, "%s (the %s connector does not make %s services; it makes %s)", MultipointNotSupported, wimType, req.Type, list)
		}
		return Errorf(KindPermanent, "the %s connector does not make %s services; it makes %s", wimType, req.Type, list)
	}
	var refused []string
	for _, f := range req.QoS.Fields() {
		if !c.Honours(f) {
			refused = append(refused, string(f))
		}
	}
	if len(refused) > 0 {
		return Errorf(KindPermanent, "the %s connector cannot honour %s", wimType, strings.Join(refused, ", "))
	}
	return nil
}
