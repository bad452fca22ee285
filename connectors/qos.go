package connectors

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
