package ietfl2vpn_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wimro/wimro/connectors"
	emu "github.com/wimro/wimro/internal/testkit/emulators/ietfl2vpn"
)

// The RFC 8466 module and its imports, vendored so that a fresh clone can
// run this test.
const (
	yangDir    = "testdata/yang"
	yangModule = "testdata/yang/ietf-l2vpn-svc@2018-10-09.yang"
)

// yanglint returns the path of yanglint, skipping the test when it is
// missing (failing it in CI, where `make deps` has installed it).
func yanglint(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("yanglint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("yanglint is not on PATH in CI: %v (`make deps` installs it)", err)
		}
		t.Skip("yanglint is not on PATH: `make deps` installs it (Debian libyang2-tools)")
	}
	return path
}

// lint validates an RFC 7951 document against the vendored module with the
// given features, returning yanglint's output and whether it accepted it.
func lint(t *testing.T, doc []byte, features []string) (string, bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "datastore.json")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), yanglint(t), "-p", yangDir, "-t", "config",
		"-F", emu.Module+":"+strings.Join(features, ","), yangModule, file)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running yanglint: %v", err)
	}
	return string(out), err == nil
}

// TestYanglint creates an ELINE with dot1q, an untagged ELINE and a
// three-point ELAN through the connector, then has yanglint validate the
// emulator's whole datastore (its seeded sites included) against RFC 8466:
// the emulator's own rules are a hand-written subset, yanglint is the
// reference. In the osm dialect the datastore holds what the emulator's
// TeraFlowSDN rewrite made of OSM's bodies: it must be valid too.
func TestYanglint(t *testing.T) {
	t.Parallel()
	yanglint(t)
	tests := []struct {
		name     string
		dialect  string // of the emulator and the connector
		features []string
		account  map[string]any
		sites    [3]string
	}{
		{"device flavor", emu.DialectRFC8466, emu.DefaultFeatures, nil, [3]string{"dc-a", "dc-b", "edge 3/b"}},
		{"location flavor with frame-delivery", emu.DialectRFC8466, []string{"dot1q", "bearer-reference", "bum"},
			map[string]any{"location_flavor": "location", "send_frame_delivery": true, "elan_svc_type": "bgp-vpls", "default_mtu": 9000},
			[3]string{"cust-1", "cust-2", "cust-1"}},
		{"osm dialect after TeraFlowSDN's rewrite", emu.DialectOSM, emu.OSMFeatures,
			map[string]any{"dialect": "osm"}, [3]string{"dc-a", "dc-c", "new-site"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, e := setup(t, emu.Options{Features: tt.features, Dialect: tt.dialect}, tt.account)
			s := tt.sites
			creates := []struct {
				typ    connectors.ServiceType
				points []connectors.ConnectionPoint
			}{
				{connectors.ServiceELINE, []connectors.ConnectionPoint{point(s[0], 100), point(s[1], 100)}},
				{connectors.ServiceELINE, []connectors.ConnectionPoint{point(s[0], 0), point(s[1], 0)}},
				{connectors.ServiceELAN, []connectors.ConnectionPoint{point(s[0], 300), point(s[1], 300), point(s[2], 301)}},
			}
			for i, cr := range creates {
				if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: "y" + string(rune('0'+i)), Type: cr.typ, Points: cr.points}); err != nil {
					t.Fatalf("create %d (%s): %v", i, cr.typ, err)
				}
			}
			if n := len(e.Accesses()); n != 7 {
				t.Fatalf("%d accesses, want 7", n)
			}
			doc := e.Dump()
			if out, ok := lint(t, doc, tt.features); !ok {
				t.Fatalf("yanglint refused the datastore:\n%s\ndocument:\n%s", out, doc)
			}

			// Negative control: the oracle is live.
			var tree map[string]map[string]map[string][]map[string]any
			if err := json.Unmarshal(doc, &tree); err != nil {
				t.Fatal(err)
			}
			delete(tree[emu.Module+":l2vpn-svc"]["vpn-services"]["vpn-service"][0], "ce-vlan-preservation")
			broken, _ := json.Marshal(tree)
			out, ok := lint(t, broken, tt.features)
			if ok || !strings.Contains(out, "ce-vlan-preservation") {
				t.Fatalf("yanglint accepted a vpn-service without ce-vlan-preservation (ok=%v):\n%s", ok, out)
			}
		})
	}
}

// TestYanglintSvcBandwidth creates a service asking a bandwidth and has
// yanglint validate the datastore with feature input-bw (svc-bandwidth is
// behind it): cir and cbs in bit/s as uint64 strings, the identities of
// the module. Without the feature yanglint refuses svc-bandwidth, and so
// does the emulator, whose refusal is Permanent.
func TestYanglintSvcBandwidth(t *testing.T) {
	t.Parallel()
	yanglint(t)
	features := append([]string{"input-bw"}, emu.DefaultFeatures...)
	c, e := setup(t, emu.Options{Features: features}, nil)
	points := []connectors.ConnectionPoint{point("dc-a", 100), point("dc-b", 100)}
	if _, _, err := c.CreateService(t.Context(), connectors.Request{Key: "bw", Type: connectors.ServiceELINE, Points: points, QoS: connectors.QoS{BandwidthMbps: 250}}); err != nil {
		t.Fatal(err)
	}
	doc := e.Dump()
	if !strings.Contains(string(doc), `"cir": "250000000"`) {
		t.Fatalf("the datastore holds no cir of 250 Mbit/s:\n%s", doc)
	}
	if out, ok := lint(t, doc, features); !ok {
		t.Fatalf("yanglint refused the datastore:\n%s\ndocument:\n%s", out, doc)
	}
	if out, ok := lint(t, doc, emu.DefaultFeatures); ok || !strings.Contains(out, "svc-bandwidth") {
		t.Fatalf("yanglint accepted svc-bandwidth without feature input-bw (ok=%v):\n%s", ok, out)
	}

	c, e = setup(t, emu.Options{}, nil)
	_, _, err := c.CreateService(t.Context(), connectors.Request{Key: "bw", Type: connectors.ServiceELINE, Points: points, QoS: connectors.QoS{BandwidthMbps: 250}})
	if connectors.KindOf(err) != connectors.KindPermanent || !strings.Contains(err.Error(), "svc-bandwidth") {
		t.Fatalf("create asking a bandwidth of a server without input-bw: %v, want Permanent naming svc-bandwidth", err)
	}
	if n := len(e.Accesses()); n != 0 {
		t.Fatalf("%d attachments left after the refused create", n)
	}
}
