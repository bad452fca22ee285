package tapi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
)

// DirectionName is the value-name of the name entry that tells the two
// unidirectional services of a photonic pair apart: "az" or "za".
const DirectionName = "wimro-direction"

const (
	halfAZ        = "az"
	halfZA        = "za"
	dirInput      = "INPUT"
	dirOutput     = "OUTPUT"
	directionOne  = "UNIDIRECTIONAL"
	roleSymmetric = "SYMMETRIC"
	pairSeparator = ","
)

// PairUUIDs returns the uuids of the two unidirectional services of the
// photonic pair created under key with create_mode "data": UUIDv5s,
// under the namespace of ServiceUUID, of ServiceUUID(key)+"/az" and
// ServiceUUID(key)+"/za", whose last four hex digits are then set to
// OSM's 00af and 00fa.
func PairUUIDs(key string) (az, za string) {
	base := ServiceUUID(key)
	derive := func(half, suffix string) string {
		u := uuid.NewSHA1(keyNamespace, []byte(base+"/"+half)).String()
		return u[:len(u)-len(suffix)] + suffix
	}
	return derive(halfAZ, "00af"), derive(halfZA, "00fa")
}

// pairID is the service id of a photonic pair: "<az uuid>,<za uuid>".
func pairID(az, za string) string { return az + pairSeparator + za }

// pairOf returns the uuids of the halves when id names a photonic pair:
// an id as pairID makes it (ListServices may leave one side empty), or,
// for a pair OSM created, the az and za uuids of OSM's conn_info
// ({"bidirectional": false, "az": {"uuid": …}, "za": {"uuid": …}}).
func pairOf(id string, connInfo map[string]any) (az, za string, ok bool) {
	if az, za, ok := strings.Cut(id, pairSeparator); ok {
		return az, za, true
	}
	if connInfo["bidirectional"] != false {
		return "", "", false
	}
	half := func(name string) string {
		m, _ := connInfo[name].(map[string]any)
		u, _ := m["uuid"].(string)
		return u
	}
	az, za = half(halfAZ), half(halfZA)
	return az, za, az != "" || za != ""
}

// half returns the unidirectional service that carries traffic from the
// end from to the end to: in at from's INPUT SIP, out at to's OUTPUT SIP.
func (c *connector) half(key, name string, from, to end) service {
	return service{
		Name: []nameValue{{ValueName: KeyName, Value: key}, {ValueName: DirectionName, Value: name}},
		EndPoint: []endPoint{
			{LocalID: from.localID, SIP: sipRef{UUID: from.in}, Direction: dirInput, Role: roleSymmetric},
			{LocalID: to.localID, SIP: sipRef{UUID: to.out}, Direction: dirOutput, Role: roleSymmetric},
		},
		ConnectivityDirection: directionOne,
		ServiceType:           typePointToPoint,
		RequestedCapacity:     &c.capacity,
	}
}

// createPair makes (or adopts) the two halves of an ELINE between the
// photonic ends a and b: az first, then za. When za fails, az is deleted
// again so that a failed create leaves nothing behind, unless ctx is done
// (the call was interrupted, not refused: its retry adopts az).
func (c *connector) createPair(ctx context.Context, key string, a, b end) (string, map[string]any, error) {
	az, za := c.half(key, halfAZ, a, b), c.half(key, halfZA, b, a)
	if err := c.describe(ctx, az.EndPoint, za.EndPoint); err != nil {
		return "", nil, err
	}
	azUUID, zaUUID := PairUUIDs(key)
	azID, err := c.create(ctx, key, azUUID, az)
	if err != nil {
		return "", nil, err
	}
	zaID, err := c.create(ctx, key, zaUUID, za)
	if err != nil {
		return "", nil, c.undo(ctx, azID, err)
	}
	id := pairID(azID, zaID)
	c.log.Debug("tapi photonic pair in place", "service_id", id, "service_key", key)
	return id, map[string]any{
		"bidirectional": false,
		halfAZ:          map[string]any{"uuid": azID, "sips": []any{a.in, b.out}},
		halfZA:          map[string]any{"uuid": zaID, "sips": []any{b.in, a.out}},
		"service_key":   key,
		"create_mode":   c.createMode,
	}, nil
}

// undo deletes the az half after its za half failed with cause, unless
// ctx is done, and returns cause (saying so when the delete failed too).
func (c *connector) undo(ctx context.Context, azID string, cause error) error {
	if ctx.Err() != nil {
		return cause
	}
	if err := c.deleteOne(ctx, azID); err != nil {
		c.log.Warn("tapi: deleting the az half of a failed photonic create failed", "service_id", azID, "error", err)
		return connectors.Errorf(connectors.KindOf(cause), "%w (and deleting its az half %s again failed: %v)", cause, azID, err)
	}
	c.log.Debug("tapi: az half of a failed photonic create deleted", "service_id", azID)
	return cause
}

// deletePair deletes both halves; a half that is gone is fine.
func (c *connector) deletePair(ctx context.Context, az, za string) error {
	for _, id := range []string{az, za} {
		if id == "" {
			continue
		}
		if err := c.deleteOne(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// statusOrder ranks the statuses of a pair's AND, best first; INACTIVE
// ranks as BUILD.
var statusOrder = []connectors.Status{connectors.StatusActive, connectors.StatusBuild, connectors.StatusDown, connectors.StatusError}

// pairStatus reads both halves and ANDs their statuses (andStatus). A
// half the controller does not have counts as ERROR; neither half is
// NotFound.
func (c *connector) pairStatus(ctx context.Context, az, za string) (connectors.ServiceStatus, error) {
	var halves [2]connectors.ServiceStatus
	found := false
	for i, id := range []string{az, za} {
		halves[i] = connectors.ServiceStatus{Status: connectors.StatusError, Message: fmt.Sprintf("TAPI service %q not found", id)}
		if id == "" {
			continue
		}
		s, err := c.read(ctx, "status", id)
		switch {
		case connectors.IsNotFound(err):
			// The half stays ERROR.
		case err != nil:
			return connectors.ServiceStatus{}, err
		default:
			halves[i], found = status(s), true
		}
	}
	if !found {
		return connectors.ServiceStatus{}, connectors.Errorf(connectors.KindNotFound, "tapi status: neither half of photonic pair %s exists", pairID(az, za))
	}
	return andStatus(halves), nil
}

// andStatus is the status of a pair: ACTIVE when both halves are; else
// ERROR or DOWN when a half is (ERROR first); else BUILD. Message names
// the halves that are not ACTIVE; Info holds each half's.
func andStatus(halves [2]connectors.ServiceStatus) connectors.ServiceStatus {
	out := connectors.ServiceStatus{Info: map[string]any{"bidirectional": false}}
	worst := 0
	var msgs []string
	for i, name := range []string{halfAZ, halfZA} {
		h := halves[i]
		if h.Info != nil {
			out.Info[name] = h.Info
		}
		if h.Status == connectors.StatusActive {
			continue
		}
		msgs = append(msgs, name+": "+h.Message)
		worst = max(worst, max(1, slices.Index(statusOrder, h.Status)))
	}
	out.Status, out.Message = statusOrder[worst], strings.Join(msgs, "; ")
	return out
}

// pairs lists the halves of photonic pairs once per pair, as ListServices
// does: grouped by key, a key's az and za halves paired in uuid order. A
// half without a partner is listed alone, its id with one side empty.
func pairs(halves []service) []connectors.Service {
	type group struct{ az, za []service }
	groups := make(map[string]*group)
	for _, s := range halves {
		g := groups[s.key()]
		if g == nil {
			g = &group{}
			groups[s.key()] = g
		}
		if s.half() == halfAZ {
			g.az = append(g.az, s)
		} else {
			g.za = append(g.za, s)
		}
	}
	byUUID := func(a, b service) int { return strings.Compare(a.UUID, b.UUID) }
	var out []connectors.Service
	for key, g := range groups {
		slices.SortFunc(g.az, byUUID)
		slices.SortFunc(g.za, byUUID)
		for i := range max(len(g.az), len(g.za)) {
			var ids [2]string
			info := map[string]any{"bidirectional": false}
			for j, side := range [][]service{g.az, g.za} {
				if i < len(side) {
					ids[j] = side[i].UUID
					info[[]string{halfAZ, halfZA}[j]] = side[i].info()
				}
			}
			out = append(out, connectors.Service{ID: pairID(ids[0], ids[1]), Key: key, Info: info})
		}
	}
	return out
}

// pairDirectionProblem says that SIP s, named by the photonic pair of
// endpoint, is not of the direction want.
func pairDirectionProblem(s sip, want, endpoint string) string {
	field, have := "sip_input", s.Direction
	if want == dirOutput {
		field = "sip_output"
	}
	if have == "" {
		have = "BIDIRECTIONAL (no direction)"
	}
	return fmt.Sprintf("SIP %s (%s of %s) is %s; a photonic pair's %s must be an %s SIP", s.UUID, field, endpoint, have, field, want)
}
