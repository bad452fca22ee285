package l3nm_test

import (
	"strconv"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/internal/vpnrc/vpnrctest"
	"github.com/wimro/wimro/connectors/l3nm"
	emu "github.com/wimro/wimro/internal/testkit/emulators/l3nm"
)

var setup = vpnrctest.Setup{
	Type:     l3nm.Type,
	Register: l3nm.Register,
	NewServer: func(user, password string) vpnrctest.Server {
		return emu.New(emu.Options{User: user, Password: password, BuildPolls: 2})
	},
	Mapping: func(site string) map[string]any {
		return map[string]any{"ne-id": site + "-pe", "interface-id": "ge-0/0/1", "bearer-reference": site + "-pe:ge-0/0/1"}
	},
	StoredQoS: storedQoS,
}

// storedQoS is the bandwidth every access of vpn-service id carries in
// both directions; they must agree.
func storedQoS(t *testing.T, s vpnrctest.Server, id string) connectors.QoS {
	t.Helper()
	svc, ok := s.(*emu.Emulator).Service(id)
	if !ok {
		t.Fatalf("the emulator has no vpn-service %s", id)
	}
	seen := map[string]bool{}
	nodes, _ := svc["vpn-nodes"].(map[string]any)["vpn-node"].([]any)
	for _, n := range nodes {
		accesses, _ := n.(map[string]any)["vpn-network-accesses"].(map[string]any)["vpn-network-access"].([]any)
		for _, a := range accesses {
			svc, _ := a.(map[string]any)["service"].(map[string]any)
			in, _ := svc["pe-to-ce-bandwidth"].(string)
			out, _ := svc["ce-to-pe-bandwidth"].(string)
			seen[in], seen[out] = true, true
		}
	}
	if len(seen) != 1 {
		t.Fatalf("the accesses of %s carry different bandwidths: %v", id, seen)
	}
	for bps := range seen {
		n, _ := strconv.Atoi(bps)
		return connectors.QoS{BandwidthMbps: n / 1_000_000}
	}
	return connectors.QoS{}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	setup.Run(t)
}
