// Package l3nm is an in-process emulator of a RESTCONF (RFC 8040) server
// for the IETF L3VPN network model (RFC 9182, module
// ietf-l3vpn-ntw@2022-02-14 with ietf-vpn-common@2022-02-11), the
// controller that wimro's l3nm connector drives (Cisco NSO / Crosswork,
// Nokia NSP). It is an rcstore.Store: it keeps the datastore, answers
// every resource under /restconf/data/ietf-l3vpn-ntw:l3vpn-ntw (GET,
// POST, PUT, PATCH, DELETE; listing by GET of a list) and validates every
// change with yanglint against the modules in rcstore.YANGDir, loaded with -i and
// ietf-vpn-common named so that its features (ipv4, ipv6, rtg-bgp,
// inbound-bw, ...) are enabled, as RFC 9182 servers do.
//
// Operational state: a GET answers each vpn-service with
// status/oper-status/status, ietf-vpn-common:op-unknown for the first
// BuildPolls answers that include it, then op-up (or what SetOperStatus
// set); every answer with its state is checked with yanglint as data.
// Options.NoOperStatus leaves it out.
package l3nm

import (
	"sync"

	"github.com/wimro/wimro/internal/testkit/emulators/rcstore"
)

// Module is the YANG module the emulator serves.
const Module = "ietf-l3vpn-ntw"

// Root is the path of the module's top container.
const Root = "/restconf/data/" + Module + ":l3vpn-ntw"

// Modules are the module files yanglint loads (their imports are found
// in rcstore.YANGDir).
var Modules = []string{"ietf-vpn-common@2022-02-11.yang", "ietf-l3vpn-ntw@2022-02-14.yang"}

// Options configure an Emulator.
type Options struct {
	// User and Password are the basic-auth credentials every request must
	// carry; Token is a bearer token accepted as well. All empty: no auth.
	User, Password, Token string
	// BuildPolls is how many GET answers show a new vpn-service op-unknown
	// before op-up.
	BuildPolls int
	// NoOperStatus leaves oper-status out of every answer, as a server
	// that keeps operational state elsewhere does (Cisco CNC's config API:
	// its operational data is a separate API).
	NoOperStatus bool
}

// Emulator is the L3NM server; close it with Close.
type Emulator struct {
	*rcstore.Store
	opts Options

	mu    sync.Mutex
	reads map[string]int
	oper  map[string]string
}

// New returns an empty emulator.
func New(opts Options) *Emulator {
	e := &Emulator{opts: opts, reads: map[string]int{}, oper: map[string]string{}}
	state := e.state
	if opts.NoOperStatus {
		state = nil
	}
	e.Store = rcstore.New(rcstore.Options{
		Module: Module, Top: "l3vpn-ntw",
		Keys: map[string][]string{
			"vpn-service": {"vpn-id"}, "vpn-node": {"vpn-node-id"}, "vpn-network-access": {"id"},
			"vpn-instance-profile": {"profile-id"}, "address-family": {"address-family"}, "routing-protocol": {"id"},
			"address": {"address-id"},
		},
		Modules: Modules, LintFlags: []string{"-i"},
		State: state,
		User:  opts.User, Password: opts.Password, Token: opts.Token,
	})
	return e
}

// SetOperStatus sets the oper-status identity ("op-down", "op-up", ...)
// that vpn-service id shows from now on.
func (e *Emulator) SetOperStatus(id, status string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.oper[id] = status
}

// Service returns vpn-service id as stored (configuration only).
func (e *Emulator) Service(id string) (map[string]any, bool) {
	v, ok := e.Get("/vpn-services/vpn-service=" + id)
	m, _ := v.(map[string]any)
	return m, ok
}

// ServiceIDs are the vpn-ids the datastore holds.
func (e *Emulator) ServiceIDs() []string {
	tree := e.Tree()
	svcs, _ := tree["vpn-services"].(map[string]any)
	list, _ := svcs["vpn-service"].([]any)
	var out []string
	for _, s := range list {
		if id, ok := s.(map[string]any)["vpn-id"].(string); ok {
			out = append(out, id)
		}
	}
	return out
}

// state adds each vpn-service's oper-status.
func (e *Emulator) state(tree map[string]any, _ string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	svcs, _ := tree["vpn-services"].(map[string]any)
	list, _ := svcs["vpn-service"].([]any)
	for _, item := range list {
		s, _ := item.(map[string]any)
		id, _ := s["vpn-id"].(string)
		e.reads[id]++
		oper := e.oper[id]
		if oper == "" {
			oper = "op-up"
			if e.reads[id] <= e.opts.BuildPolls {
				oper = "op-unknown"
			}
		}
		st, _ := s["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
			s["status"] = st
		}
		st["oper-status"] = map[string]any{"status": "ietf-vpn-common:" + oper}
	}
}
