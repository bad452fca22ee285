package ietfl3vpn_test

import (
	"strconv"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/ietfl3vpn"
	"github.com/wimro/wimro/connectors/internal/vpnrc/vpnrctest"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl3vpn"
)

var setup = vpnrctest.Setup{
	Type:     ietfl3vpn.Type,
	Register: ietfl3vpn.Register,
	NewServer: func(user, password string) vpnrctest.Server {
		return emu.New(emu.Options{User: user, Password: password})
	},
	Mapping: func(site string) map[string]any {
		return map[string]any{"device-id": site + "-pe", "location-id": site, "bearer-reference": site + "-pe:ge-0/0/1"}
	},
	StoredQoS: storedQoS,
}

// storedQoS is the bandwidth and latency every site of vpn-service id
// carries; they must agree.
func storedQoS(t *testing.T, s vpnrctest.Server, id string) connectors.QoS {
	t.Helper()
	tree := s.(*emu.Emulator).Tree()
	sites, _ := tree["sites"].(map[string]any)["site"].([]any)
	seen := map[connectors.QoS]bool{}
	for _, item := range sites {
		accesses, _ := item.(map[string]any)["site-network-accesses"].(map[string]any)["site-network-access"].([]any)
		for _, a := range accesses {
			a := a.(map[string]any)
			if a["vpn-attachment"].(map[string]any)["vpn-id"] != id {
				continue
			}
			svc := a["service"].(map[string]any)
			in, _ := strconv.Atoi(svc["svc-input-bandwidth"].(string))
			out, _ := strconv.Atoi(svc["svc-output-bandwidth"].(string))
			if in != out {
				t.Fatalf("an access of %s has input bandwidth %d and output %d", id, in, out)
			}
			q := connectors.QoS{BandwidthMbps: in / 1_000_000}
			qos, _ := svc["qos"].(map[string]any)
			classes, _ := qos["qos-profile"].(map[string]any)["classes"].(map[string]any)
			list, _ := classes["class"].([]any)
			for _, c := range list {
				if lat, ok := c.(map[string]any)["latency"].(map[string]any)["latency-boundary"].(float64); ok {
					q.LatencyMs = int(lat)
				}
			}
			seen[q] = true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("the sites of %s carry different QoS: %v", id, seen)
	}
	for q := range seen {
		if q.BandwidthMbps == 1000 { // default_bandwidth_mbps: nothing asked
			q.BandwidthMbps = 0
		}
		return q
	}
	return connectors.QoS{}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	setup.Run(t)
}
