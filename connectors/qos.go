package connectors

import (
	"context"
	"strings"
)

// QoSField names one QoS parameter an instance's VLD may ask for; the
// names are the keys of the instance body.
type QoSField string

// The QoS fields.
const (
	QoSBandwidth QoSField = "bandwidth" // Mbit/s
	QoSLatency   QoSField = "latency"   // ms
)

// QoS is the quality of service asked for a connectivity service. A zero
// field asks nothing: the controller's (or the connector's configured)
// default applies.
type QoS struct {
	// BandwidthMbps is the committed bandwidth in Mbit/s.
	BandwidthMbps int
	// LatencyMs is the highest acceptable latency in milliseconds.
	LatencyMs int
}

// IsZero reports whether q asks nothing.
func (q QoS) IsZero() bool { return q == QoS{} }

// Fields returns the fields q asks for, in a fixed order.
func (q QoS) Fields() []QoSField {
	var out []QoSField
	if q.BandwidthMbps != 0 {
		out = append(out, QoSBandwidth)
	}
	if q.LatencyMs != 0 {
		out = append(out, QoSLatency)
	}
	return out
}

// QoSCreator is implemented by connectors that can ask their controller
// for QoS. CreateServiceQoS is CreateService with q, under the same
// contract: a second call with the same key makes no second service, and
// an existing service whose QoS differs from q is brought in line or
// refused with a Permanent error. A connector is registered with the
// fields it honours (Register), and is called here only with those.
type QoSCreator interface {
	CreateServiceQoS(ctx context.Context, key string, t ServiceType, points []ConnectionPoint, q QoS) (id string, connInfo map[string]any, err error)
}

// Create creates (or adopts) a service with QoS q: through
// CreateServiceQoS when c implements QoSCreator (so that it can compare an
// adopted service's QoS even when q is zero), else through CreateService,
// which can only honour a zero q. Asking QoS of a connector that cannot
// honour it is Permanent: the engine refuses such instances, so this is
// the last guard (a WIM whose type changed, an older row).
func Create(ctx context.Context, c Connector, key string, t ServiceType, points []ConnectionPoint, q QoS) (string, map[string]any, error) {
	if qc, ok := c.(QoSCreator); ok {
		return qc.CreateServiceQoS(ctx, key, t, points, q)
	}
	if !q.IsZero() {
		return "", nil, Errorf(KindPermanent, "the connector cannot honour %s", joinFields(q.Fields()))
	}
	return c.CreateService(ctx, key, t, points)
}

func joinFields(fs []QoSField) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}
