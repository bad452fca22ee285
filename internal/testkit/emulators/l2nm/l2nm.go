// Package l2nm is an in-process emulator of a RESTCONF (RFC 8040) server
// for the L2VPN Network Model (RFC 9291, module
// ietf-l2vpn-ntw@2022-09-20, with ietf-vpn-common@2022-02-11 of RFC 9181),
// as Cisco NSO / Crosswork Network Controller and Nokia NSP expose it: the
// controller that wimro's l2nm connector drives. It is an rcstore.Store
// (mount it on an httptest.Server and point a WIM at the server's URL):
// every resource under /restconf/data/ietf-l2vpn-ntw:l2vpn-ntw answers
// GET, POST, PUT, PATCH and DELETE as rcstore says, with a GET of the
// empty vpn-services answered 204 as NSO does.
//
// # Validation
//
// Every body is validated with yanglint, strictly, against the published
// modules (rcstore.YANGDir: internal/testkit/emulators/yang, byte-for-byte copies
// from github.com/YangModels/yang at 6795d9c, standard/ietf/RFC, with
// their imports; ieee802-dot1q-types is standard/ieee/published/802.1's,
// named with its revision 2023-10-26, as L2NM imports it without one):
// before a change takes effect, the whole configuration datastore it would
// leave is checked (-t config: mandatory leaves, identities, ranges,
// leafrefs, when and must, features: every feature of ietf-vpn-common and
// ietf-l2vpn-ntw is enabled, as a controller that supports them would),
// and a refused one is answered 400 with yanglint's message and changes
// nothing. Every answer with state is checked too (-t data, the whole
// datastore); one the model refuses is the emulator's bug, answered 500. LintFailures lists every
// refusal, so that a test fails on any body wimro sent that the model
// refuses. Options.Devices, when set, makes the emulator refuse (400) a
// vpn-node whose ne-id, or an access whose interface-id, the network does
// not have, as a controller checks its device inventory.
//
// # Operational state
//
// Each vpn-service, vpn-node and vpn-network-access answers
// status/oper-status (config false in ietf-vpn-common): op-unknown for the
// first Options.BuildPolls GETs that answer the service (it, the list or
// the datastore) after it is created or changed, then op-up; SetOperStatus forces one (op-down for a failure).
// Options.NoOperStatus leaves oper-status out, as a server that keeps
// configuration only.
package l2nm

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
	"github.com/wimro/wimro/internal/testkit/emulators/rcstore"
)

// Module is the YANG module of the datastore; Top its top container.
const (
	Module = "ietf-l2vpn-ntw"
	Top    = Module + ":l2vpn-ntw"
	common = "ietf-vpn-common"
)

// DefaultRoot is the RESTCONF root the emulator serves.
const DefaultRoot = "/restconf"

// LintFiles are the modules yanglint loads (with -i, so that the
// identities their defaults name in ietf-vpn-common and
// ieee802-dot1q-types are implemented); naming ietf-vpn-common enables its
// features.
var LintFiles = []string{"ietf-vpn-common@2022-02-11.yang", "ietf-l2vpn-ntw@2022-09-20.yang"}

// Options configure an Emulator.
type Options struct {
	// User and Password, when User is set, are the basic-auth credentials
	// required; Token, when set, is a bearer token accepted too.
	User, Password, Token string
	// BuildPolls is how many GETs that return a service (of it, of the
	// list, of the datastore), after it is created or changed, answer
	// oper-status op-unknown before op-up.
	BuildPolls int
	// NoOperStatus leaves oper-status out of every answer.
	NoOperStatus bool
	// Devices, when not nil, are the network's devices (ne-id) and their
	// interfaces: a vpn-node or access elsewhere is refused.
	Devices map[string][]string
}

// Request is one request the emulator received.
type Request = emulator.Request

// Emulator is the in-memory L2NM controller. It is safe for concurrent
// use.
type Emulator struct {
	*rcstore.Store
	opts Options

	mu       sync.Mutex
	services map[string]*service // operational state, by vpn-id
}

// service is the operational state of one vpn-service.
type service struct {
	config string    // its configuration (JSON) when the state began
	polls  int       // GETs answering it since
	oper   string    // forced oper-status identity, "" none
	since  time.Time // for last-change
}

// New returns an emulator holding no service.
func New(opts Options) *Emulator {
	e := &Emulator{opts: opts, services: map[string]*service{}}
	ro := rcstore.Options{
		Module: Module, Top: "l2vpn-ntw",
		Keys: map[string][]string{
			"vpn-service": {"vpn-id"}, "vpn-node": {"vpn-node-id"}, "vpn-network-access": {"id"},
			"pe-to-ce-bandwidth": {"bw-type"}, "ce-to-pe-bandwidth": {"bw-type"},
		},
		Modules: LintFiles, LintFlags: []string{"-i"},
		Check:          e.checkDevices,
		EmptyNoContent: true,
		User:           opts.User, Password: opts.Password, Token: opts.Token,
	}
	if !opts.NoOperStatus {
		ro.State = e.state
	}
	e.Store = rcstore.New(ro)
	return e
}

func entryPath(id string) string { return "/vpn-services/vpn-service=" + url.PathEscape(id) }

// Services returns the vpn-ids held, sorted.
func (e *Emulator) Services() []string {
	var out []string
	for _, s := range listOf(e.Tree(), "vpn-services", "vpn-service") {
		out = append(out, fmt.Sprint(s["vpn-id"]))
	}
	slices.Sort(out)
	return out
}

// Service returns a copy of the vpn-service id as configured, or nil.
func (e *Emulator) Service(id string) map[string]any {
	v, _ := e.Get(entryPath(id))
	m, _ := v.(map[string]any)
	return m
}

// SetOperStatus forces the oper-status of service id to the
// ietf-vpn-common identity status (e.g. "op-down") until it changes; ""
// goes back to the emulated one. It reports whether the service exists.
func (e *Emulator) SetOperStatus(id, status string) bool {
	svc := e.Service(id)
	if svc == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.track(id, svc)
	s.oper, s.since = status, time.Now()
	return true
}

// track returns the state of vpn-service id configured as svc, new when
// the configuration changed. e.mu is held.
func (e *Emulator) track(id string, svc map[string]any) *service {
	b, _ := json.Marshal(svc)
	s, ok := e.services[id]
	if !ok || s.config != string(b) {
		s = &service{config: string(b), since: time.Now()}
		e.services[id] = s
	}
	return s
}

// state adds the oper-status of every vpn-service, vpn-node and access
// to tree, and counts the GET for the services it answers (path).
func (e *Emulator) state(tree map[string]any, path string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	held := map[string]bool{}
	for _, svc := range listOf(tree, "vpn-services", "vpn-service") {
		id, _ := svc["vpn-id"].(string)
		held[id] = true
		s := e.track(id, svc)
		if key, one := strings.CutPrefix(path, "/vpn-services/vpn-service="); !one || strings.SplitN(key, "/", 2)[0] == url.PathEscape(id) {
			s.polls++
		}
		status := "op-up"
		switch {
		case s.oper != "":
			status = s.oper
		case s.polls <= e.opts.BuildPolls:
			status = "op-unknown"
		}
		oper := map[string]any{"status": common + ":" + status, "last-change": s.since.UTC().Format(time.RFC3339)}
		setOper(svc, oper)
		for _, n := range listOf(svc, "vpn-nodes", "vpn-node") {
			setOper(n, oper)
			for _, a := range listOf(n, "vpn-network-accesses", "vpn-network-access") {
				setOper(a, oper)
			}
		}
	}
	for id := range e.services {
		if !held[id] {
			delete(e.services, id) // deleted: a new one starts afresh
		}
	}
}

func setOper(m, oper map[string]any) {
	st, _ := m["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		m["status"] = st
	}
	st["oper-status"] = emulator.CloneJSON(oper)
}

// checkDevices refuses a vpn-node or access the network (Options.Devices)
// does not have.
func (e *Emulator) checkDevices(tree map[string]any) error {
	if e.opts.Devices == nil {
		return nil
	}
	for _, svc := range listOf(tree, "vpn-services", "vpn-service") {
		for _, n := range listOf(svc, "vpn-nodes", "vpn-node") {
			ne, _ := n["ne-id"].(string)
			ifaces, ok := e.opts.Devices[ne]
			if !ok {
				return fmt.Errorf("vpn-node %v: the network has no device (ne-id) %q", n["vpn-node-id"], ne)
			}
			for _, a := range listOf(n, "vpn-network-accesses", "vpn-network-access") {
				if ifc, _ := a["interface-id"].(string); !slices.Contains(ifaces, ifc) {
					return fmt.Errorf("vpn-network-access %v: device %s has no interface %q", a["id"], ne, ifc)
				}
			}
		}
	}
	return nil
}

// listOf returns the entries of list under container of m.
func listOf(m map[string]any, container, list string) []map[string]any {
	c, _ := m[container].(map[string]any)
	items, _ := c[list].([]any)
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if e, ok := it.(map[string]any); ok {
			out = append(out, e)
		}
	}
	return out
}
