package tapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// The JSON shapes the connector reads, of either TAPI version, and the
// bodies it sends (service.body), in the shape of the version in use.

type nameValue struct {
	ValueName string `json:"value-name"`
	Value     string `json:"value"`
}

type sipRef struct {
	UUID string `json:"service-interface-point-uuid"`
}

// endPoint.Direction and Role are only sent on the end-points of a
// photonic pair's unidirectional halves. Direction is kept in 2.1 words
// (INPUT, OUTPUT); 2.4.1 says SOURCE and SINK.
type endPoint struct {
	LocalID                string      `json:"local-id"`
	Name                   []nameValue `json:"name,omitempty"`
	LayerProtocolName      string      `json:"layer-protocol-name,omitempty"`
	LayerProtocolQualifier string      `json:"layer-protocol-qualifier,omitempty"`
	SIP                    sipRef      `json:"service-interface-point"`
	Direction              string      `json:"direction,omitempty"`
	Role                   string      `json:"role,omitempty"`
}

// totalSize.Value is a string when sent (uint64 under RFC 7951) but may be
// a number in a reply from a lenient server, hence any.
type totalSize struct {
	Value any    `json:"value"`
	Unit  string `json:"unit"`
}

type capacity struct {
	TotalSize totalSize `json:"total-size"`
}

// number is the capacity's value as a number (a string or a number on
// the wire).
func (c *capacity) number() (float64, bool) {
	switch v := c.TotalSize.Value.(type) {
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

// String is the capacity as a message shows it, e.g. "100 MBPS".
func (c *capacity) String() string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%v %s", c.TotalSize.Value, c.TotalSize.Unit)
}

// service is a connectivity service as the connector reads it (either
// version's shape; normalize brings 2.4.1's to 2.1.3's fields) and wants
// it (body writes it in the version's shape).
type service struct {
	UUID                  string      `json:"uuid,omitempty"`
	Name                  []nameValue `json:"name,omitempty"`
	EndPoint              []endPoint  `json:"end-point"`
	ConnectivityDirection string      `json:"connectivity-direction,omitempty"`
	ServiceType           string      `json:"service-type,omitempty"`
	RequestedCapacity     *capacity   `json:"requested-capacity,omitempty"`
	AdministrativeState   string      `json:"administrative-state,omitempty"`
	OperationalState      string      `json:"operational-state,omitempty"`
	LifecycleState        string      `json:"lifecycle-state,omitempty"`
	// Direction and Constraint are 2.4.1's: its forwarding direction, and
	// the connectivity-constraint that holds service-type and
	// requested-capacity.
	Direction  string      `json:"direction,omitempty"`
	Constraint *constraint `json:"connectivity-constraint,omitempty"`

	// capacityAsked marks a wanted service whose requested-capacity is a
	// QoS bandwidth: adopting a service with another one is refused.
	capacityAsked bool
}

type constraint struct {
	ServiceType           string    `json:"service-type,omitempty"`
	RequestedCapacity     *capacity `json:"requested-capacity,omitempty"`
	ConnectivityDirection string    `json:"connectivity-direction,omitempty"`
}

// capacityUnitPrefix turns a unit word into TAPI 2.4.1's identity.
const capacityUnitPrefix = "tapi-common:CAPACITY_UNIT_"

// normalize brings a service read in 2.4.1's shape to the fields the
// connector judges: service-type and requested-capacity out of
// connectivity-constraint, direction as connectivity-direction, SOURCE and
// SINK as INPUT and OUTPUT, capacity unit identities as words.
func (s *service) normalize() {
	if c := s.Constraint; c != nil {
		s.ServiceType = cmp.Or(s.ServiceType, c.ServiceType)
		s.ConnectivityDirection = cmp.Or(s.ConnectivityDirection, c.ConnectivityDirection)
		if s.RequestedCapacity == nil {
			s.RequestedCapacity = c.RequestedCapacity
		}
		s.Constraint = nil
	}
	s.ConnectivityDirection = cmp.Or(s.ConnectivityDirection, s.Direction)
	s.Direction = ""
	if s.RequestedCapacity != nil {
		s.RequestedCapacity.TotalSize.Unit = strings.TrimPrefix(unqualified(s.RequestedCapacity.TotalSize.Unit), "CAPACITY_UNIT_")
	}
	for i := range s.EndPoint {
		s.EndPoint[i].Direction = portDirection(s.EndPoint[i].Direction)
	}
}

// unqualified strips a module prefix ("tapi-common:") from an identity.
func unqualified(s string) string {
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// portDirection reads a port direction of either version in 2.1 words:
// 2.4.1's SOURCE (into the network) is INPUT, SINK is OUTPUT.
func portDirection(d string) string {
	switch d {
	case "SOURCE":
		return dirInput
	case "SINK":
		return dirOutput
	}
	return d
}

// directionFor writes a 2.1 port direction in version's words.
func directionFor(version, d string) string {
	if version == Version213 {
		return d
	}
	switch d {
	case dirInput:
		return "SOURCE"
	case dirOutput:
		return "SINK"
	}
	return d
}

// body is the service as version's data shape (rpc false: an entry of the
// connectivity-service list) or its create-connectivity-service input.
// 2.1.3's input has no uuid and no name, so the name entries go on each
// end-point (local-class has a name list), where a listing finds them.
func (s service) body(version string, rpc bool) map[string]any {
	var capacity map[string]any
	if s.RequestedCapacity != nil {
		unit := s.RequestedCapacity.TotalSize.Unit
		if version != Version213 {
			unit = capacityUnitPrefix + unit
		}
		capacity = map[string]any{"total-size": map[string]any{"value": s.RequestedCapacity.TotalSize.Value, "unit": unit}}
	}
	eps := make([]any, len(s.EndPoint))
	for i, ep := range s.EndPoint {
		m := map[string]any{
			"local-id":                ep.LocalID,
			"service-interface-point": map[string]any{"service-interface-point-uuid": ep.SIP.UUID},
		}
		for k, v := range map[string]string{
			"layer-protocol-name":      ep.LayerProtocolName,
			"layer-protocol-qualifier": ep.LayerProtocolQualifier,
			"direction":                directionFor(version, ep.Direction),
			"role":                     ep.Role,
		} {
			if v != "" {
				m[k] = v
			}
		}
		if version == Version213 && rpc {
			m["name"] = s.Name
		}
		eps[i] = m
	}
	out := map[string]any{"end-point": eps}
	cc := map[string]any{"service-type": s.ServiceType}
	if capacity != nil {
		cc["requested-capacity"] = capacity
	}
	if version == Version213 {
		if rpc {
			cc["connectivity-direction"] = s.ConnectivityDirection
			out["connectivity-constraint"] = cc
			return out
		}
		maps.Copy(out, cc)
		out["connectivity-direction"] = s.ConnectivityDirection
	} else {
		out["connectivity-constraint"] = cc
		if len(s.EndPoint) > 0 && s.EndPoint[0].LayerProtocolName != "" {
			out["layer-protocol-name"] = s.EndPoint[0].LayerProtocolName
		}
		if !rpc {
			out["direction"] = s.ConnectivityDirection
		}
	}
	if s.UUID != "" {
		out["uuid"] = s.UUID
	}
	out["name"] = s.Name
	return out
}

// key returns the wimro service key the service is named with, or "".
func (s service) key() string { return s.name(KeyName) }

// half returns which half of a photonic pair the service is, halfAZ or
// halfZA, from its DirectionName entry; "" for any other service.
func (s service) half() string {
	if h := s.name(DirectionName); h == halfAZ || h == halfZA {
		return h
	}
	return ""
}

// name returns the value of the name entry valueName, or "": the
// service's own, else the one every end-point carries (a 2.1.3 RPC create
// can only name the end-points).
func (s service) name(valueName string) string {
	if v := nameIn(s.Name, valueName); v != "" {
		return v
	}
	v := ""
	for i, ep := range s.EndPoint {
		w := nameIn(ep.Name, valueName)
		if w == "" || i > 0 && w != v {
			return ""
		}
		v = w
	}
	return v
}

func nameIn(names []nameValue, valueName string) string {
	for _, n := range names {
		if n.ValueName == valueName {
			return n.Value
		}
	}
	return ""
}

// sips returns the SIP uuids of the service's end-points, sorted.
func (s service) sips() []string {
	out := make([]string, 0, len(s.EndPoint))
	for _, ep := range s.EndPoint {
		out = append(out, ep.SIP.UUID)
	}
	slices.Sort(out)
	return out
}

// info describes the service for ListServices: its states, service-type
// and SIPs.
func (s service) info() map[string]any {
	info := s.states()
	info["service-type"] = s.ServiceType
	sips := make([]any, 0, len(s.EndPoint))
	for _, u := range s.sips() {
		sips = append(sips, u)
	}
	info["sips"] = sips
	return info
}

// states returns the states the controller reported, for Info.
func (s service) states() map[string]any {
	info := map[string]any{"uuid": s.UUID}
	for k, v := range map[string]string{
		"lifecycle-state":      s.LifecycleState,
		"operational-state":    s.OperationalState,
		"administrative-state": s.AdministrativeState,
	} {
		if v != "" {
			info[k] = v
		}
	}
	return info
}

// sip is a SIP of either version: 2.4.1 lists its qualifiers as
// supported-cep-layer-protocol-qualifier-instances and says SOURCE and
// SINK; normalize brings them to 2.1.3's fields.
type sip struct {
	UUID              string   `json:"uuid"`
	LayerProtocolName string   `json:"layer-protocol-name"`
	Qualifiers        []string `json:"supported-layer-protocol-qualifier"`
	Direction         string   `json:"direction"`
	CEPQualifiers     []struct {
		Qualifier string `json:"layer-protocol-qualifier"`
	} `json:"supported-cep-layer-protocol-qualifier-instances"`
}

func (s *sip) normalize() {
	for _, q := range s.CEPQualifiers {
		if q.Qualifier != "" {
			s.Qualifiers = append(s.Qualifiers, q.Qualifier)
		}
	}
	s.CEPQualifiers = nil
	s.Direction = portDirection(s.Direction)
	if s.Direction == "UNDEFINED_OR_UNKNOWN" {
		// 2.4.1's default; its description reads a missing direction
		// as bidirectional.
		s.Direction = ""
	}
}

// member decodes a RESTCONF reply body (a JSON object) and returns its
// member name, module-qualified ("module:name", RFC 7951) or bare, as
// lenient servers send it. found is false when the object has neither,
// which is how some servers answer an empty list ({}); any other body is a
// Permanent error naming op.
func (c *connector) member(op string, r rest.Reply, module, name string, out any) (found bool, err error) {
	var doc map[string]json.RawMessage
	if err := c.rc.Decode(op, r, &doc); err != nil {
		return false, err
	}
	raw, ok := doc[module+":"+name]
	if !ok {
		raw, ok = doc[name]
	}
	if !ok {
		if len(doc) != 0 {
			return false, connectors.Errorf(connectors.KindPermanent, "tapi %s: the reply has no %s:%s (%s)", op, module, name, c.rc.Snippet(r.Body))
		}
		return false, nil
	}
	return true, c.rc.Decode(op, rest.Reply{Status: r.Status, Body: raw}, out)
}

// serviceList decodes a connectivity-service member: a list, or a single
// object from servers that unwrap a one-entry list.
func (c *connector) serviceList(op string, r rest.Reply) ([]service, error) {
	var raw json.RawMessage
	found, err := c.member(op, r, "tapi-connectivity", "connectivity-service", &raw)
	if err != nil || !found {
		return nil, err
	}
	var list []service
	if strings.HasPrefix(strings.TrimSpace(string(raw)), "{") {
		var one service
		err = c.rc.Decode(op, rest.Reply{Status: r.Status, Body: raw}, &one)
		list = []service{one}
	} else {
		err = c.rc.Decode(op, rest.Reply{Status: r.Status, Body: raw}, &list)
	}
	for i := range list {
		list[i].normalize()
	}
	return list, err
}

// stateWord strips what later TAPI releases put around the 2.1.x enum
// words (a module prefix, an identity's LIFECYCLE_STATE_ prefix), so that
// "tapi-common:LIFECYCLE_STATE_INSTALLED" reads as INSTALLED.
func stateWord(s, identityPrefix string) string {
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimPrefix(strings.ToUpper(s), identityPrefix)
}

// status maps TAPI's lifecycle and operational states (connectors.md
// §4.3). A server that reports no lifecycle-state is judged on its
// operational-state alone.
func status(s service) connectors.ServiceStatus {
	life := stateWord(s.LifecycleState, "LIFECYCLE_STATE_")
	oper := stateWord(s.OperationalState, "OPERATIONAL_STATE_")
	st := connectors.ServiceStatus{Info: s.states()}
	switch life {
	case "PLANNED", "POTENTIAL_AVAILABLE", "POTENTIAL_BUSY":
		st.Status, st.Message = connectors.StatusBuild, "TAPI lifecycle-state "+s.LifecycleState
	case "PENDING_REMOVAL":
		st.Status, st.Message = connectors.StatusDown, "TAPI lifecycle-state "+s.LifecycleState
	case "INSTALLED", "":
		switch oper {
		case "ENABLED":
			st.Status = connectors.StatusActive
		case "DISABLED":
			st.Status, st.Message = connectors.StatusDown, "TAPI operational-state "+s.OperationalState
		case "":
			st.Status, st.Message = connectors.StatusInactive, "TAPI reports no operational-state yet"
		default:
			st.Status, st.Message = connectors.StatusInactive, "unknown TAPI operational-state "+rest.Clip(s.OperationalState, 64)
		}
	default:
		st.Status, st.Message = connectors.StatusInactive, "unknown TAPI lifecycle-state "+rest.Clip(s.LifecycleState, 64)
	}
	return st
}
