package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
)

// The QoS keys of a network and their bounds. The bounds keep hostile
// numbers out (the columns are integers) and are far above any real
// request: 10 Tbit/s, 100 s.
const (
	QoSBandwidth     = "bandwidth" // Mbit/s
	QoSLatency       = "latency"   // ms
	MaxBandwidthMbps = 10_000_000
	MaxLatencyMs     = 100_000
)

// QoSValue is a QoS number of a network as the client sent it. The decoder
// keeps it raw and the engine checks it, so that a string, a fraction or
// a huge number is refused naming the field with its network's index
// (instance.networks[2].bandwidth), which a typed decode cannot do.
type QoSValue json.RawMessage

// UnmarshalJSON keeps the raw value; null is absent.
func (v *QoSValue) UnmarshalJSON(b []byte) error {
	*v = keepRaw(b)
	return nil
}

// MarshalJSON writes the value back as it came.
func (v QoSValue) MarshalJSON() ([]byte, error) { return writeRaw(v) }

// keepRaw is a copy of a value the engine reads itself (QoSValue,
// L3Value), nil for null: absent.
func keepRaw(b []byte) []byte {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	return append([]byte(nil), b...)
}

// writeRaw writes a value kept by keepRaw back as it came.
func writeRaw(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return []byte("null"), nil
	}
	return json.RawMessage(v).MarshalJSON()
}

// parse returns the value as a positive integer at most max, 0 when absent.
func (v QoSValue) parse(field, unit string, max int) (int, error) {
	if len(v) == 0 || string(v) == "null" {
		return 0, nil
	}
	bad := func() (int, error) {
		return 0, wimro.FieldErrorf(field, "%s must be a positive integer (%s) from 1 to %d, got %s", field, unit, max, shorten(string(v), 40))
	}
	s := strings.TrimSpace(string(v))
	// A JSON integer literal only: no string, fraction or exponent.
	if s == "" || strings.ContainsAny(s, `".eE+`) {
		return bad()
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > int64(max) {
		return bad()
	}
	return int(n), nil
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// netQoS is the QoS one network asks: 0 is absent.
type netQoS struct{ bandwidth, latency int }

func parseNetQoS(field string, n NetworkInput) (netQoS, error) {
	bw, err := n.Bandwidth.parse(field+"."+QoSBandwidth, "Mbit/s", MaxBandwidthMbps)
	if err != nil {
		return netQoS{}, err
	}
	lat, err := n.Latency.parse(field+"."+QoSLatency, "ms", MaxLatencyMs)
	return netQoS{bandwidth: bw, latency: lat}, err
}

// linkQoS is the QoS of one WAN link, with the field that asked each
// value (for the messages of a refusal).
type linkQoS struct {
	bandwidth, latency           int
	bandwidthField, latencyField string
}

// groupQoS is the QoS of a VLD: the networks that carry a key must agree
// on it; a network without the key agrees with any value (the NFVO may
// give the VLD's QoS on one of its networks only).
func groupQoS(g group, qos []netQoS) (linkQoS, error) {
	var out linkQoS
	agree := func(i, v int, key string, have *int, haveField *string) error {
		if v == 0 {
			return nil
		}
		f := fmt.Sprintf("instance.networks[%d].%s", i, key)
		if *have != 0 && *have != v {
			return wimro.FieldErrorf(f, "%s (%d) disagrees with %s (%d): the networks of sce_net_id %s are one VLD and ask one %s",
				f, v, *haveField, *have, g.sceNetID, key)
		}
		if *have == 0 {
			*have, *haveField = v, f
		}
		return nil
	}
	for _, i := range g.nets {
		if err := agree(i, qos[i].bandwidth, QoSBandwidth, &out.bandwidth, &out.bandwidthField); err != nil {
			return out, err
		}
		if err := agree(i, qos[i].latency, QoSLatency, &out.latency, &out.latencyField); err != nil {
			return out, err
		}
	}
	return out, nil
}

// CapabilitiesOf returns what the connector of a WIM can do, from
// cfg's Type and WIMConfig (no account, no credentials: an instance is
// checked when it is written). wimd passes its connector registry's
// Capabilities, where each type declares them when it is registered,
// narrowed by the WIM's settings where a type says so.
type CapabilitiesOf func(cfg connectors.Config) connectors.Capabilities

// SetCapabilities installs c; nil (the default) lets every WIM take any
// QoS and be reconciled. Call it before serving requests.
func (e *Engine) SetCapabilities(c CapabilitiesOf) { e.capabilities = c }

// capabilitiesOf is what w's connector declares; ok is false when no
// declaration is installed.
func (e *Engine) capabilitiesOf(w wimro.WIM) (connectors.Capabilities, bool) {
	if e.capabilities == nil {
		return connectors.Capabilities{}, false
	}
	return e.capabilities(connectors.Config{Type: w.Type, WIMConfig: w.Config}), true
}

// makesELAN reports whether w's connector declares ELAN; without a
// declaration installed, every WIM may.
func (e *Engine) makesELAN(w wimro.WIM) bool {
	caps, ok := e.capabilitiesOf(w)
	return !ok || caps.Makes(connectors.ServiceELAN)
}

// checkQoS refuses a link whose WIM cannot honour a QoS key it asks,
// naming the network field that asked it.
func (e *Engine) checkQoS(w wimro.WIM, q linkQoS) error {
	caps, ok := e.capabilitiesOf(w)
	if !ok {
		return nil
	}
	for _, k := range []struct {
		key, field string
		v          int
	}{{QoSBandwidth, q.bandwidthField, q.bandwidth}, {QoSLatency, q.latencyField, q.latency}} {
		if k.v == 0 || caps.Honours(connectors.QoSField(k.key)) {
			continue
		}
		list := "none"
		if len(caps.QoS) > 0 {
			names := make([]string, len(caps.QoS))
			for i, f := range caps.QoS {
				names[i] = string(f)
			}
			list = strings.Join(names, ", ")
		}
		return wimro.FieldErrorf(k.field, "%s: the WIM %s (type %s) cannot honour %s; supported: %s", k.field, w.Name, w.Type, k.key, list)
	}
	return nil
}

func optInt(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}
