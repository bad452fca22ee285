// Package ietfl3vpn is an in-process emulator of a RESTCONF (RFC 8040)
// server for the IETF L3VPN service model (RFC 8299, module
// ietf-l3vpn-svc@2018-01-19), the northbound wimro's ietfl3vpn connector
// drives (TeraFlowSDN's). It is an rcstore.Store: it keeps the datastore,
// answers every resource under /restconf/data/ietf-l3vpn-svc:l3vpn-svc
// (GET, POST, PUT, PATCH, DELETE; listing by GET of a list) and validates
// every change with yanglint against the module in rcstore.YANGDir, all its
// features enabled: mandatory leaves (site management/type, the access's
// svc-input-bandwidth, svc-output-bandwidth, svc-mtu), the
// location-flavor choice, and the leafrefs (a device-reference to the
// site's device, a vpn-attachment to an existing vpn-service, so a
// vpn-service still attached is refused deletion, 409 in-use). L3SM has
// no operational state. TFS (tfs.go) is TeraFlowSDN's own L3VPN NBI
// instead, for the connector's tfs dialect.
package ietfl3vpn

import (
	"github.com/wimro/wimro/internal/testkit/emulators/rcstore"
)

// Module is the YANG module the emulator serves.
const Module = "ietf-l3vpn-svc"

// Root is the path of the module's top container.
const Root = "/restconf/data/" + Module + ":l3vpn-svc"

// Modules are the module files the linter loads.
var Modules = []string{"ietf-l3vpn-svc@2018-01-19.yang"}

// Options configure an Emulator.
type Options struct {
	// User and Password are the basic-auth credentials every request must
	// carry; Token is a bearer token accepted as well. All empty: no auth.
	User, Password, Token string
}

// Emulator is the L3SM server; close it with Close.
type Emulator struct {
	*rcstore.Store
}

// New returns an empty emulator.
func New(opts Options) *Emulator {
	return &Emulator{Store: rcstore.New(rcstore.Options{
		Module: Module, Top: "l3vpn-svc",
		Keys: map[string][]string{
			"vpn-service": {"vpn-id"}, "site": {"site-id"}, "site-network-access": {"site-network-access-id"},
			"location": {"location-id"}, "device": {"device-id"}, "routing-protocol": {"type"}, "class": {"class-id"},
		},
		Modules: Modules,
		User:    opts.User, Password: opts.Password, Token: opts.Token,
	})}
}
