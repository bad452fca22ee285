package tapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// The JSON shapes the connector sends and reads. Leaves are TAPI 2.1.x
// names; read-only states are omitted when empty so that the same struct
// serves as request body.

type nameValue struct {
	ValueName string `json:"value-name"`
	Value     string `json:"value"`
}

type sipRef struct {
	UUID string `json:"service-interface-point-uuid"`
}

// endPoint.Direction and Role are only sent on the end-points of a
// photonic pair's unidirectional halves.
type endPoint struct {
	LocalID                string `json:"local-id"`
	LayerProtocolName      string `json:"layer-protocol-name,omitempty"`
	LayerProtocolQualifier string `json:"layer-protocol-qualifier,omitempty"`
	SIP                    sipRef `json:"service-interface-point"`
	Direction              string `json:"direction,omitempty"`
	Role                   string `json:"role,omitempty"`
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

	// capacityAsked marks a wanted service whose requested-capacity is a
	// QoS bandwidth: adopting a service with another one is refused.
	capacityAsked bool
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

// name returns the value of the name entry valueName, or "".
func (s service) name(valueName string) string {
	for _, n := range s.Name {
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

type sip struct {
	UUID              string   `json:"uuid"`
	LayerProtocolName string   `json:"layer-protocol-name"`
	Qualifiers        []string `json:"supported-layer-protocol-qualifier"`
	Direction         string   `json:"direction"`
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
