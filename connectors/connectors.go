// Package connectors defines the plugin boundary between wimro's actions and
// the WAN controllers: the Connector interface every controller plugin
// implements, the connection points it receives, the error classes it
// returns, and the Registry that builds a connector for a WIM account from
// its WIM type and holds what each type declares it can do (Capabilities:
// service types, QoS fields, edit, listing).
//
// One sub-package exists per controller: ietfl2vpn, tapi, onos (types
// onos and onos_vpls), dynpac, l2nm, l3nm and ietfl3vpn (the IETF L2VPN
// and L3VPN network models and the L3VPN service model, sharing
// connectors/internal/vpnrc), plus
// fake and failing for tests and demos
// (wimd registers those two only with --dev-connectors). The Registry that
// wimd fills at start-up is the one list of WIM types: a WIM whose type it
// does not hold is refused when it is written. The controller connectors
// share their HTTP client in connectors/rest, which enforces the
// operator's AddressPolicy (wimd's --controller-allow) on every
// connection and redirect: the one place that decides which addresses a
// controller URL may reach. Every connector passes the
// shared suite in connectors/conformance, which is where the contract
// written here is checked.
//
// A connector never touches the database: it gets everything it needs in a
// Config when it is built, and in the arguments of each call.
package connectors

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Encapsulation is how traffic of a connection point is tagged on the WAN
// service endpoint.
type Encapsulation string

// The encapsulations wimro produces, as OSM RO does: a VLAN provider network gives
// dot1q, anything else gives none. vxlan is reserved by OSM and never produced.
const (
	EncapNone  Encapsulation = "none"
	EncapDot1Q Encapsulation = "dot1q"
)

// ConnectionPoint is one end of a WAN connectivity service, with the port
// mapping already resolved. Resolving it in the actions, not in every
// connector, means no connector searches the port-mapping list itself.
type ConnectionPoint struct {
	// ServiceEndpointID is the wan_service_endpoint_id of the port mapping.
	ServiceEndpointID string
	// Encapsulation is EncapNone or EncapDot1Q.
	Encapsulation Encapsulation
	// VLAN is the access VLAN (1..4094) for dot1q, and 0 for none.
	VLAN int
	// MappingInfo is the wan_service_mapping_info of the port mapping: the
	// controller-specific description of the endpoint (switch dpid/port,
	// L2SM site-id and bearer, TAPI SIP, ...). Connectors must not modify it.
	MappingInfo map[string]any
	// L3 is the point's site of an L3VPN (prefix, access link, routing);
	// nil for the layer-2 types, which must not carry it.
	L3 *L3Site
}

// ServiceType is the kind of connectivity asked for.
type ServiceType string

// Service types: a WAN link of two points is an ELINE, of more an ELAN
// (ServiceTypeFor); a connector declares which it makes (Capabilities).
const (
	ServiceELINE ServiceType = "ELINE"
	ServiceELAN  ServiceType = "ELAN"
)

// Status is the controller's view of a service, with OSM's values.
type Status string

// Service statuses, with OSM's meanings.
const (
	StatusActive   Status = "ACTIVE"   // up
	StatusInactive Status = "INACTIVE" // created, connectivity not yet known: ask again
	StatusDown     Status = "DOWN"     // was up, a failure has been detected
	StatusError    Status = "ERROR"    // creation failed
	StatusBuild    Status = "BUILD"    // still being created
)

// ServiceStatus is the answer of GetServiceStatus.
type ServiceStatus struct {
	Status Status
	// Info is controller detail worth keeping on the WAN link (wim_info). It
	// must be JSON-serialisable; nil when there is nothing to add.
	Info map[string]any
	// Message explains a non-ACTIVE status, for the operator (error_msg).
	Message string
}

// Service describes a service that exists on the controller, as returned by
// ListServices (for debugging and for adopting services left by a crash).
type Service struct {
	// ID is the id that the other methods take.
	ID string
	// Key is the caller's key the service was created with, when the
	// controller can tell (it is empty for controllers that choose their own
	// ids and keep no client data, such as DynPaC).
	Key string
	// Info is a JSON-serialisable description (type, endpoints, ...).
	Info map[string]any
	// Endpoints are the service's ends in the port mappings' terms, as
	// EndpointsOf writes them for the points of a create, sorted; nil when
	// the connector cannot tell (the controller keeps nothing that leads
	// back to a port mapping). Drift reconcile compares them with the
	// points of the service's WAN link.
	Endpoints []string
	// L3 are the L3VPN sites of the service's ends as the controller
	// holds them, each under its Endpoints name, in L3FormOf's canonical
	// form (L3FormsOf writes them for the points of a create); nil when
	// the service has none or the connector cannot read them back (drift
	// reconcile then compares no site).
	L3 map[string]L3Form
}

// EndpointsOf names the ends of a service made of points the way
// Service.Endpoints does: the wan_service_endpoint_id, followed by
// "/vlan=<VLAN>" for a dot1q point, sorted. Both sides of a comparison
// then speak the same words whatever the controller.
func EndpointsOf(points []ConnectionPoint) []string {
	out := make([]string, len(points))
	for i, p := range points {
		out[i] = EndpointName(p.ServiceEndpointID, p.VLAN)
	}
	slices.Sort(out)
	return out
}

// EndpointName is one entry of Service.Endpoints: the service endpoint id,
// with its VLAN when there is one (0: untagged).
func EndpointName(serviceEndpointID string, vlan int) string {
	if vlan == 0 {
		return serviceEndpointID
	}
	return serviceEndpointID + "/vlan=" + strconv.Itoa(vlan)
}

// L3Form is one end's L3 site in the words every L3VPN model carries it
// in, canonical: two sites that a controller would hold alike have
// equal forms whatever the model, the spelling of an address or the
// order of the routes. The site's prefix has no leaf of its own in the
// models: it is carried as a route (see Routes), or, with BGP, not at
// all.
type L3Form struct {
	// PEAddress is the PE's address with the access link's length
	// ("192.0.2.1/30"); "" when the controller holds none.
	PEAddress string `json:"pe_address"`
	// CEAddress is the site's ce_address or, without one, its BGP peer:
	// L3SM has one customer-address for both.
	CEAddress string `json:"ce_address,omitempty"`
	// Routes are the static routes the PE installs, "<prefix> via
	// <next hop>", prefixes masked, sorted, each once: the site's
	// static_routes or, when it gives none and does not peer, its prefix
	// via the CE address.
	Routes []string `json:"routes,omitempty"`
	// BGP is the peering, "AS<peer_as> <peer_address>"; "" without.
	BGP string `json:"bgp,omitempty"`
	// CEUnheld says, of a site read back, that the controller's model
	// keeps no CE address (Cisco CNC's L3NM drops it): its CEAddress is
	// empty for that reason alone, and L3Diff does not compare it.
	CEUnheld bool `json:"-"`
}

// L3FormOf is s in L3Form's canonical words; a connector reading a site
// back fills the L3Site it can (its Prefix stays zero: the routes carry
// it) and calls this too, so both sides of a comparison meet here.
func L3FormOf(s *L3Site) L3Form {
	var f L3Form
	if s.PEAddress.IsValid() {
		f.PEAddress = s.PEAddress.String()
	}
	ce := s.CEAddress
	if !ce.IsValid() && s.BGP != nil {
		ce = s.BGP.PeerAddress
	}
	if ce.IsValid() {
		f.CEAddress = ce.String()
	}
	route := func(p netip.Prefix, via netip.Addr) string { return p.Masked().String() + " via " + via.String() }
	for _, r := range s.StaticRoutes {
		f.Routes = append(f.Routes, route(r.Prefix, r.NextHop))
	}
	if len(s.StaticRoutes) == 0 && s.BGP == nil && s.Prefix.IsValid() && s.CEAddress.IsValid() {
		f.Routes = append(f.Routes, route(s.Prefix, s.CEAddress))
	}
	slices.Sort(f.Routes)
	f.Routes = slices.Compact(f.Routes)
	if s.BGP != nil {
		f.BGP = "AS" + strconv.FormatUint(uint64(s.BGP.PeerAS), 10) + " " + s.BGP.PeerAddress.String()
	}
	return f
}

// L3FormsOf names the L3 sites of a service's points the way Service.L3
// does: by EndpointName, in L3FormOf's form; nil when no point has one
// (a layer-2 service).
func L3FormsOf(points []ConnectionPoint) map[string]L3Form {
	var out map[string]L3Form
	for _, p := range points {
		if p.L3 == nil {
			continue
		}
		if out == nil {
			out = make(map[string]L3Form, len(points))
		}
		out[EndpointName(p.ServiceEndpointID, p.VLAN)] = L3FormOf(p.L3)
	}
	return out
}

// L3Diff says how the sites a controller holds (have, Service.L3) differ
// from the ones wanted, one line per end and field ("site ep-b/vlan=201:
// routes: want [...], the controller has [...]"), sorted; nil when they
// agree. Only ends both sides name are compared: an end on one side only
// is an endpoint difference (Service.Endpoints), not a site's.
func L3Diff(want, have map[string]L3Form) []string {
	var out []string
	for _, ep := range slices.Sorted(maps.Keys(want)) {
		h, ok := have[ep]
		if !ok {
			continue
		}
		w := want[ep]
		field := func(name, w, h string) {
			if w != h {
				out = append(out, fmt.Sprintf("site %s: %s: want %s, the controller has %s", ep, name, orNone(w), orNone(h)))
			}
		}
		field("pe_address", w.PEAddress, h.PEAddress)
		if !h.CEUnheld {
			field("ce_address", w.CEAddress, h.CEAddress)
		}
		field("routes", "["+strings.Join(w.Routes, ", ")+"]", "["+strings.Join(h.Routes, ", ")+"]")
		field("bgp", w.BGP, h.BGP)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Connector talks to one WIM account's controller. Every method takes ctx
// first and must return promptly, with an error wrapping ctx.Err(), once ctx
// is done: the runner bounds every call with a deadline and cancels them
// all when the account stops.
//
// Errors should be *Error values so the caller can tell retry from give-up
// (see Kind); Retryable and KindOf also classify bare context and network
// errors. A Retryable error may carry the controller's Retry-After
// (RetryAfter reads it); Backoff turns it and the attempt number into the
// delay before the next try. One connector serves one account, whose
// actions on different WAN links run in parallel and alongside the
// monitoring calls, so implementations must be safe for concurrent use.
//
// What a connector can do (service types, QoS fields, edit, listing) is
// not found out from the value: it is declared with its type
// (Registry.Register, Capabilities), so that a decorator wrapping a
// connector can neither hide nor add a capability.
type Connector interface {
	// CheckCredentials verifies the URL and credentials of the account.
	CheckCredentials(ctx context.Context) error

	// CreateService creates (or adopts) the service identified by
	// req.Key, a stable id derived by the caller from the WAN link (e.g.
	// the link uuid). Creating twice with the same key MUST NOT make a
	// second service: it returns the existing one. This is what makes a
	// retried or re-run CREATE action safe after a crash between the
	// controller's reply and the database write. When the existing
	// service's points or QoS differ from the request, the connector
	// brings it in line (create-or-replace) or, if it cannot, returns a
	// Permanent error.
	//
	// Invalid input (see ValidatePoints), a service type or a QoS field
	// the connector does not declare, is refused with a Permanent error
	// before anything is sent to the controller. connInfo is stored with
	// the link and handed back to the other methods; it must be
	// JSON-serialisable and may be nil.
	CreateService(ctx context.Context, req Request) (id string, connInfo map[string]any, err error)

	// GetServiceStatus reports the service's status. A service the
	// controller does not know gives an error for which IsNotFound is true.
	GetServiceStatus(ctx context.Context, id string, connInfo map[string]any) (ServiceStatus, error)

	// EditService brings the service id in line with req, in place: its
	// connection points (encapsulation, VLAN, endpoint) and its QoS. req
	// is the whole new state, as a create would get it (Key is the key
	// the service was made with; Type its type, or empty when the caller
	// does not know it); editing to the state the service already has is
	// success, so that a re-run EDIT action is safe. It returns the new
	// connInfo, or nil when connInfo does not change. A connector that
	// does not declare Capabilities.Edit returns a Permanent error.
	EditService(ctx context.Context, id string, connInfo map[string]any, req Request) (newConnInfo map[string]any, err error)

	// DeleteService deletes the service; deleting a service that is already
	// gone is success, so that a re-run DELETE action is safe.
	DeleteService(ctx context.Context, id string, connInfo map[string]any) error

	// ListServices lists the services on the controller that this connector
	// manages (for controllers shared with other tools: only wimro's). A
	// connector that cannot see them all (no list route on the controller)
	// does not declare Capabilities.List; drift reconcile then looks each
	// link up by its Capabilities.ServiceID, or refuses it without one.
	ListServices(ctx context.Context) ([]Service, error)

	// ClearAll deletes every service ListServices would list. It is a
	// debugging and test aid; a connector that cannot do it returns a
	// Permanent error.
	ClearAll(ctx context.Context) error
}

// MappingChecker is implemented by connectors that can tell, without
// their controller, whether a port mapping's wan_service_mapping_info
// describes an endpoint they can use (the keys they need, well-formed
// values). wimd calls it when port mappings are written, so a mapping the
// connector cannot use is refused then, naming the field, rather than
// failing the WAN links that reach it.
type MappingChecker interface {
	CheckMapping(endpointID string, info map[string]any) error
}

// MultipointNotSupported is the message of the error for an ELINE with more
// than two points, and for an ELAN asked of a connector that makes none
// (Capabilities.Check). It is OSM's text; wimro fails the action with it
// where OSM retried forever.
const MultipointNotSupported = "Multipoint connectivity is not supported yet."

// ValidatePoints checks the rules every connector shares, so each connector
// calls it first and refuses bad input before talking to the controller. All
// failures are Permanent: no retry can fix them.
//
//   - t is ELINE (exactly two points; more gives MultipointNotSupported),
//     ELAN or L3VPN (two or more);
//   - an L3VPN point carries a valid L3Site, a layer-2 point none;
//   - every point names a service endpoint;
//   - dot1q needs a VLAN in 1..4094; none must carry no VLAN, because a tag
//     silently dropped would connect the wrong traffic;
//   - the same endpoint and VLAN may not appear twice.
func ValidatePoints(t ServiceType, points []ConnectionPoint) error {
	switch t {
	case ServiceELINE:
		if len(points) > 2 {
			return Errorf(KindPermanent, "%s", MultipointNotSupported)
		}
		if len(points) < 2 {
			return Errorf(KindPermanent, "an ELINE service needs exactly 2 connection points, got %d", len(points))
		}
	case ServiceELAN:
		if len(points) < 2 {
			return Errorf(KindPermanent, "an ELAN service needs at least 2 connection points, got %d", len(points))
		}
	case ServiceL3VPN:
		if len(points) < 2 {
			return Errorf(KindPermanent, "an L3VPN service needs at least 2 connection points, got %d", len(points))
		}
	default:
		return Errorf(KindPermanent, "unsupported service type %q", t)
	}
	type end struct {
		id   string
		vlan int
	}
	seen := make(map[end]int, len(points))
	for i, p := range points {
		if err := validatePoint(p); err != nil {
			return Errorf(KindPermanent, "connection point %d (%s): %s", i, p.ServiceEndpointID, err)
		}
		if err := validateLayer(t, p); err != nil {
			return Errorf(KindPermanent, "connection point %d (%s): %s", i, p.ServiceEndpointID, err)
		}
		e := end{p.ServiceEndpointID, p.VLAN}
		if j, dup := seen[e]; dup {
			return Errorf(KindPermanent, "connection points %d and %d are the same endpoint %s (vlan %d)", j, i, p.ServiceEndpointID, p.VLAN)
		}
		seen[e] = i
	}
	return nil
}

// validateLayer checks that a point carries an L3 site exactly when the
// service is an L3VPN: an L3 site on an ELINE would be silently dropped.
func validateLayer(t ServiceType, p ConnectionPoint) error {
	if t == ServiceL3VPN {
		return validateL3(p.L3)
	}
	if p.L3 != nil {
		return fmt.Errorf("an l3 site given for a %s service", t)
	}
	return nil
}

func validatePoint(p ConnectionPoint) error {
	if p.ServiceEndpointID == "" {
		return fmt.Errorf("service endpoint id is empty")
	}
	switch p.Encapsulation {
	case EncapNone:
		if p.VLAN != 0 {
			return fmt.Errorf("vlan %d given with encapsulation none", p.VLAN)
		}
	case EncapDot1Q:
		if p.VLAN < 1 || p.VLAN > 4094 {
			return fmt.Errorf("encapsulation dot1q needs a vlan in 1..4094, got %d", p.VLAN)
		}
	default:
		return fmt.Errorf("unsupported encapsulation %q", p.Encapsulation)
	}
	return nil
}
