package httpapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wimro/wimro"
)

// Scope is what a route needs of the token a request carries. Every route
// declares its one scope in the route table (routeScopes); a token holds a
// set of scopes (TokenFile), and scopes do not imply one another: a token
// for an NFVO that reads and writes lists read,write.
type Scope string

const (
	// ScopeRead: GET routes, the event streams, /metrics, /cluster: what
	// a monitoring scraper or a read-only console needs.
	ScopeRead Scope = "read"
	// ScopeWrite: creating, editing and deleting tenants, datacenters,
	// WIMs, accounts, port mappings and instances (what an NFVO does).
	ScopeWrite Scope = "write"
	// ScopeAdmin: the operator's tools: drift reconcile, cancelling or
	// abandoning actions, the audit trail, cluster operations.
	ScopeAdmin Scope = "admin"
)

// scopeOrder lists the scopes in the order they are shown.
var scopeOrder = []Scope{ScopeRead, ScopeWrite, ScopeAdmin}

// Scopes is a set of scopes.
type Scopes uint8

// AllScopes is what --api-token and a token-file line without scopes= hold.
var AllScopes = ScopesOf(scopeOrder...)

// ScopesOf returns the set of scopes.
func ScopesOf(scopes ...Scope) Scopes {
	var out Scopes
	for _, sc := range scopes {
		if i := slices.Index(scopeOrder, sc); i >= 0 {
			out |= 1 << i
		}
	}
	return out
}

// Has says whether the set holds sc.
func (s Scopes) Has(sc Scope) bool {
	i := slices.Index(scopeOrder, sc)
	return i >= 0 && s&(1<<i) != 0
}

func (s Scopes) String() string {
	var names []string
	for i, sc := range scopeOrder {
		if s&(1<<i) != 0 {
			names = append(names, string(sc))
		}
	}
	if len(names) == 0 {
		return "no scope"
	}
	return strings.Join(names, ",")
}

// ParseScopes reads a comma-separated list of scopes (read, write, admin).
func ParseScopes(list string) (Scopes, error) {
	var out Scopes
	for name := range strings.SplitSeq(list, ",") {
		sc := Scope(strings.TrimSpace(name))
		if !slices.Contains(scopeOrder, sc) {
			return 0, fmt.Errorf("scopes=%s: unknown scope %q (read, write and admin are known)",
				wimro.CleanText(list, 80), wimro.CleanText(string(sc), 40))
		}
		out |= ScopesOf(sc)
	}
	return out, nil
}

// routeScopes is the one table of what each route needs, by "METHOD
// pattern"; NewServer gives each route its entry (a Route may also carry
// its Scope itself). Reads are read; what changes tenants, datacenters,
// WIMs, accounts, port mappings and instances is write; the operator's
// tools are admin. POST /openmano/reconcile is admin even without fix=true:
// a report asks every controller, an operator's act, not a console's.
var routeScopes = map[string]Scope{
	"GET /openmano/version": ScopeRead,
	"GET /cluster":          ScopeRead,
	"GET /openapi.json":     ScopeRead,
	"GET /metrics":          ScopeRead,

	"GET /openmano/tenants":                ScopeRead,
	"POST /openmano/tenants":               ScopeWrite,
	"GET /openmano/tenants/{tenant_id}":    ScopeRead,
	"PUT /openmano/tenants/{tenant_id}":    ScopeWrite,
	"DELETE /openmano/tenants/{tenant_id}": ScopeWrite,

	// The scenario catalogue (the WAN side of openmano scenarios) and
	// the datacenter's VIM-tenant edit, as OSM's clients use them.
	"PUT /openmano/{tenant_id}/datacenters/{datacenter_id}": ScopeWrite,
	"GET /openmano/{tenant_id}/scenarios":                   ScopeRead,
	"POST /openmano/{tenant_id}/scenarios":                  ScopeWrite,
	"POST /openmano/v3/{tenant_id}/nsd":                     ScopeWrite,
	"GET /openmano/{tenant_id}/scenarios/{scenario_id}":     ScopeRead,
	"PUT /openmano/{tenant_id}/scenarios/{scenario_id}":     ScopeWrite,
	"DELETE /openmano/{tenant_id}/scenarios/{scenario_id}":  ScopeWrite,

	"POST /openmano/datacenters":                               ScopeWrite,
	"PUT /openmano/datacenters/{datacenter_id}":                ScopeWrite,
	"DELETE /openmano/datacenters/{datacenter_id}":             ScopeWrite,
	"GET /openmano/{tenant_id}/datacenters":                    ScopeRead,
	"GET /openmano/{tenant_id}/datacenters/{datacenter_id}":    ScopeRead,
	"POST /openmano/{tenant_id}/datacenters/{datacenter_id}":   ScopeWrite,
	"DELETE /openmano/{tenant_id}/datacenters/{datacenter_id}": ScopeWrite,

	"GET /openmano/{tenant_id}/wims":                          ScopeRead,
	"GET /openmano/{tenant_id}/wims/{wim_id}":                 ScopeRead,
	"POST /openmano/wims":                                     ScopeWrite,
	"PUT /openmano/wims/{wim_id}":                             ScopeWrite,
	"DELETE /openmano/wims/{wim_id}":                          ScopeWrite,
	"POST /openmano/{tenant_id}/wims/{wim_id}":                ScopeWrite,
	"PUT /openmano/{tenant_id}/wims/{wim_id}":                 ScopeWrite,
	"DELETE /openmano/{tenant_id}/wims/{wim_id}":              ScopeWrite,
	"POST /openmano/{tenant_id}/wims/{wim_id}/port_mapping":   ScopeWrite,
	"GET /openmano/{tenant_id}/wims/{wim_id}/port_mapping":    ScopeRead,
	"DELETE /openmano/{tenant_id}/wims/{wim_id}/port_mapping": ScopeWrite,

	"GET /openmano/{tenant_id}/instances":                                           ScopeRead,
	"POST /openmano/{tenant_id}/instances":                                          ScopeWrite,
	"GET /openmano/{tenant_id}/instances/{instance_id}":                             ScopeRead,
	"DELETE /openmano/{tenant_id}/instances/{instance_id}":                          ScopeWrite,
	"PUT /openmano/{tenant_id}/instances/{instance_id}/networks/{net_id}":           ScopeWrite,
	"POST /openmano/{tenant_id}/instances/{instance_id}/networks":                   ScopeWrite,
	"DELETE /openmano/{tenant_id}/instances/{instance_id}/networks/{net_id}":        ScopeWrite,
	"GET /openmano/{tenant_id}/instances/{instance_id}/wan_links":                   ScopeRead,
	"GET /openmano/{tenant_id}/instances/{instance_id}/action":                      ScopeRead,
	"GET /openmano/{tenant_id}/instances/{instance_id}/action/{action_id}":          ScopeRead,
	"GET /openmano/{tenant_id}/instances/{instance_id}/action/{action_id}/events":   ScopeRead,
	"POST /openmano/{tenant_id}/instances/{instance_id}/action/{action_id}/cancel":  ScopeAdmin,
	"POST /openmano/{tenant_id}/instances/{instance_id}/action/{action_id}/abandon": ScopeAdmin,

	// The IETF L2VPN northbound (l2sm.go): an NFVO's reads and writes.
	"GET " + L2SMRoot + "/vpn-services":                                                                  ScopeRead,
	"POST " + L2SMRoot + "/vpn-services":                                                                 ScopeWrite,
	"DELETE " + L2SMRoot + "/vpn-services":                                                               ScopeWrite,
	"GET " + L2SMRoot + "/vpn-services/vpn-service={vpn_id}":                                             ScopeRead,
	"DELETE " + L2SMRoot + "/vpn-services/vpn-service={vpn_id}":                                          ScopeWrite,
	"POST " + L2SMRoot + "/sites/site={site_id}/site-network-accesses":                                   ScopeWrite,
	"PUT " + L2SMRoot + "/sites/site={site_id}/site-network-accesses":                                    ScopeWrite,
	"DELETE " + L2SMRoot + "/sites/site={site_id}/site-network-accesses/site-network-access={access_id}": ScopeWrite,

	"POST /openmano/reconcile": ScopeAdmin,
	"GET /openmano/audit":      ScopeAdmin,
}

// routeScope is the scope a route is served with: its declared one, or
// admin when it declares none (TestEveryRouteDeclaresAScope catches that;
// until then the route fails closed). Public routes need none.
func routeScope(rt Route) Scope {
	if rt.Scope != "" {
		return rt.Scope
	}
	if sc, ok := routeScopes[rt.Method+" "+rt.Pattern]; ok {
		return sc
	}
	return ScopeAdmin
}

// DeclaredScope returns the scope the route table gives rt; ok is false
// when it gives none (Public routes need none).
func DeclaredScope(rt Route) (Scope, bool) {
	if rt.Scope != "" {
		return rt.Scope, true
	}
	sc, ok := routeScopes[rt.Method+" "+rt.Pattern]
	return sc, ok
}

// checkScopes refuses a route table where a route declares an unknown
// scope, or both Public and a scope: a typo must not serve a route.
func checkScopes(routes []Route) {
	for _, rt := range routes {
		if rt.Scope != "" && !slices.Contains(scopeOrder, rt.Scope) {
			panic(fmt.Sprintf("httpapi: route %s %s declares the unknown scope %q", rt.Method, rt.Pattern, rt.Scope))
		}
		if rt.Public && rt.Scope != "" {
			panic(fmt.Sprintf("httpapi: route %s %s is Public and declares scope %q", rt.Method, rt.Pattern, rt.Scope))
		}
	}
}
