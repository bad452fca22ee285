package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
)

// qosNets is one VLD across dcA and dcB whose two networks carry the
// given raw bandwidth and latency values ("" leaves the key out).
func qosNets(vld string, bw, lat [2]string) []engine.NetworkInput {
	nets := testfactory.Nets("", []string{vld}, "dcA", "dcB")
	for i := range nets {
		if bw[i] != "" {
			nets[i].Bandwidth = engine.QoSValue(bw[i])
		}
		if lat[i] != "" {
			nets[i].Latency = engine.QoSValue(lat[i])
		}
	}
	return nets
}

// mappingFor is testfactory.Mapping with the keys the WIM type's
// connector reads besides (the engine checks a mapping with the WIM's
// connector).
func mappingFor(wimType, dc string, port int) engine.PortMappingInput {
	m := testfactory.Mapping(dc, port)
	info := m.PopWANMappings[0].WANServiceMappingInfo
	switch wimType {
	case "onos":
		info["switch_dpid"], info["switch_port"] = "of:00000000000000bb", port
	case "ietfl2vpn":
		info["site-id"], info["device-id"], info["bearer"] = "site-"+dc, "pe-"+dc, map[string]any{"bearer-reference": fmt.Sprintf("R1:1/%d", port)}
	}
	return m
}

func TestInstanceQoS(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	// WIMs of types that honour less than fake (both): onos nothing,
	// dynpac bandwidth only. Each reaches both datacenters.
	// ietfl2vpn honours bandwidth, but not in the osm dialect (a setting of
	// the WIM).
	for i, w := range []struct{ name, typ, dialect string }{
		{"w-onos", "onos", ""}, {"w-dynpac", "dynpac", ""}, {"w-l2vpn", "ietfl2vpn", ""}, {"w-l2vpn-osm", "ietfl2vpn", "osm"},
	} {
		in := engine.WIMInput{Name: ptr(w.name), Type: ptr(w.typ)}
		if w.dialect != "" {
			in.Config = map[string]any{"dialect": w.dialect}
		}
		sc.bundle.WIMOf(t, in, mappingFor(w.typ, "dcA", 3+2*i), mappingFor(w.typ, "dcB", 4+2*i))
		sc.bundle.Account(t, "tenantT", w.name, engine.AccountInput{})
	}
	cases := []struct {
		name     string
		wim      string // "" picks wan1 (fake)
		bw, lat  [2]string
		wantBW   int // 0: none
		wantLat  int
		field    string // of the refusal; "" accepts
		contains string
	}{
		{"both networks agree", "", [2]string{"100", "100"}, [2]string{"20", "20"}, 100, 20, "", ""},
		{"absent on one network agrees with any", "", [2]string{"", "250"}, [2]string{"7", ""}, 250, 7, "", ""},
		{"none asked", "", [2]string{}, [2]string{}, 0, 0, "", ""},
		{"null is absent", "", [2]string{"null", "50"}, [2]string{}, 50, 0, "", ""},
		{"bounds are inclusive", "", [2]string{"10000000"}, [2]string{"100000"}, 10_000_000, 100_000, "", ""},
		{"bandwidths disagree", "", [2]string{"100", "200"}, [2]string{}, 0, 0, "instance.networks[1].bandwidth", "disagrees with instance.networks[0].bandwidth (100)"},
		{"latencies disagree", "", [2]string{}, [2]string{"5", "6"}, 0, 0, "instance.networks[1].latency", "disagrees"},
		{"string", "", [2]string{`"100"`}, [2]string{}, 0, 0, "instance.networks[0].bandwidth", "positive integer"},
		{"negative", "", [2]string{"-1"}, [2]string{}, 0, 0, "instance.networks[0].bandwidth", "positive integer"},
		{"zero", "", [2]string{"", "0"}, [2]string{}, 0, 0, "instance.networks[1].bandwidth", "positive integer"},
		{"fraction", "", [2]string{"1.5"}, [2]string{}, 0, 0, "instance.networks[0].bandwidth", "positive integer"},
		{"exponent", "", [2]string{"1e3"}, [2]string{}, 0, 0, "instance.networks[0].bandwidth", "positive integer"},
		{"huge", "", [2]string{"99999999999999999999999"}, [2]string{}, 0, 0, "instance.networks[0].bandwidth", "from 1 to 10000000"},
		{"above the bound", "", [2]string{"10000001"}, [2]string{}, 0, 0, "instance.networks[0].bandwidth", "from 1 to 10000000"},
		{"object", "", [2]string{}, [2]string{`{"ms": 5}`}, 0, 0, "instance.networks[0].latency", "positive integer"},
		{"latency above the bound", "", [2]string{}, [2]string{"100001"}, 0, 0, "instance.networks[0].latency", "from 1 to 100000"},
		{"onos honours no bandwidth", "w-onos", [2]string{"100", "100"}, [2]string{}, 0, 0, "instance.networks[0].bandwidth",
			"the WIM w-onos (type onos) cannot honour bandwidth; supported: none"},
		{"ietfl2vpn honours bandwidth", "w-l2vpn", [2]string{"100"}, [2]string{}, 100, 0, "", ""},
		{"ietfl2vpn in the osm dialect honours none", "w-l2vpn-osm", [2]string{"100"}, [2]string{}, 0, 0, "instance.networks[0].bandwidth",
			"the WIM w-l2vpn-osm (type ietfl2vpn) cannot honour bandwidth; supported: none"},
		{"dynpac honours bandwidth", "w-dynpac", [2]string{"100"}, [2]string{}, 100, 0, "", ""},
		{"dynpac honours no latency", "w-dynpac", [2]string{"100"}, [2]string{"", "9"}, 0, 0, "instance.networks[1].latency",
			"the WIM w-dynpac (type dynpac) cannot honour latency; supported: bandwidth"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := engine.InstanceInput{Name: "ns", Networks: qosNets(uuid.NewString(), c.bw, c.lat)}
			if c.wim != "" {
				in.WIMAccount = engine.WIMChoice{Set: true, Ref: c.wim}
			}
			before := sc.count(t, "instance_scenarios")
			plan, perr := sc.eng.PlanInstance(sc.ctx, "tenantT", in)
			v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", in)
			if c.field != "" {
				for _, e := range []error{perr, err} {
					wantCode(t, e, wimro.EINVALID)
					wantField(t, e, c.field)
					if !strings.Contains(e.Error(), c.contains) {
						t.Fatalf("error %q does not say %q", e, c.contains)
					}
				}
				if n := sc.count(t, "instance_scenarios"); n != before {
					t.Fatalf("a refused create wrote an instance (%d, was %d)", n, before)
				}
				return
			}
			if perr != nil || err != nil {
				t.Fatalf("plan: %v; create: %v", perr, err)
			}
			got, err := sc.eng.GetInstance(sc.ctx, "tenantT", v.UUID)
			if err != nil {
				t.Fatal(err)
			}
			if len(plan) != 1 || len(v.WANLinks) != 1 || len(got.WANLinks) != 1 {
				t.Fatalf("%d planned, %d created, %d read links, want 1", len(plan), len(v.WANLinks), len(got.WANLinks))
			}
			checks := []struct {
				what    string
				bw, lat *int
			}{
				{"plan", plan[0].Bandwidth, plan[0].Latency},
				{"create", v.WANLinks[0].BandwidthMbps, v.WANLinks[0].LatencyMs},
				{"get", got.WANLinks[0].BandwidthMbps, got.WANLinks[0].LatencyMs},
			}
			for _, ch := range checks {
				if val(ch.bw) != c.wantBW || val(ch.lat) != c.wantLat {
					t.Errorf("%s: bandwidth %d latency %d, want %d and %d", ch.what, val(ch.bw), val(ch.lat), c.wantBW, c.wantLat)
				}
			}
		})
	}
}

// A bad value on a network that needs no WAN link is refused too: the
// body is wrong whatever the links.
func TestInstanceQoSCheckedOnEveryNetwork(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	_, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", Networks: []engine.NetworkInput{
		{Datacenter: "dcA", Bandwidth: engine.QoSValue(`"fast"`)},
	}})
	wantCode(t, err, wimro.EINVALID)
	wantField(t, err, "instance.networks[0].bandwidth")
}

func val(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// Automatic choice takes the oldest common WIM that honours the QoS a
// link asks, and the oldest of all when it asks none.
func TestInstanceQoSChoosesAWIMThatHonoursIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := b.Tenant(t, "t")
	b.Datacenter(t, "dcA", tn)
	b.Datacenter(t, "dcB", tn)
	for i, typ := range []string{"onos", "dynpac", "fake"} { // oldest first
		b.WIMOf(t, engine.WIMInput{Name: ptr("w-" + typ), Type: ptr(typ)}, mappingFor(typ, "dcA", 1+2*i), mappingFor(typ, "dcB", 2+2*i))
		b.Account(t, "t", "w-"+typ, engine.AccountInput{})
	}
	cases := []struct {
		name    string
		bw, lat [2]string
		want    string
	}{
		{"no QoS: the oldest", [2]string{}, [2]string{}, "w-onos"},
		{"bandwidth: the oldest that honours it", [2]string{"100"}, [2]string{}, "w-dynpac"},
		{"latency: the only one that honours it", [2]string{}, [2]string{"5"}, "w-fake"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := b.eng.PlanInstance(b.ctx, "t", engine.InstanceInput{Name: "ns", Networks: qosNets(uuid.NewString(), c.bw, c.lat)})
			if err != nil || len(plan) != 1 || plan[0].WIMName != c.want {
				t.Fatalf("plan = %+v, %v; want one link on %s", plan, err, c.want)
			}
		})
	}
}

// Automatic choice for a link across three datacenters (an ELAN) takes
// the oldest common WIM whose type declares ELAN (dynpac makes ELINEs
// only); when none does, the oldest, as for any link: its CREATE then
// fails naming the type.
func TestMultipointChoosesAWIMThatMakesELAN(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := b.Tenant(t, "t")
	for _, dc := range []string{"dcA", "dcB", "dcC"} {
		b.Datacenter(t, dc, tn)
	}
	for i, typ := range []string{"dynpac", "fake"} { // oldest first
		b.WIMOf(t, engine.WIMInput{Name: ptr("w-" + typ), Type: ptr(typ)},
			testfactory.Mapping("dcA", 1+3*i), testfactory.Mapping("dcB", 2+3*i), testfactory.Mapping("dcC", 3+3*i))
		b.Account(t, "t", "w-"+typ, engine.AccountInput{})
	}
	cases := []struct {
		name string
		dcs  []string
		want string
	}{
		{"two datacenters: the oldest", []string{"dcA", "dcB"}, "w-dynpac"},
		{"three datacenters: the oldest that makes an ELAN", []string{"dcA", "dcB", "dcC"}, "w-fake"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nets := testfactory.Nets("", []string{uuid.NewString()}, c.dcs...)
			plan, err := b.eng.PlanInstance(b.ctx, "t", engine.InstanceInput{Name: "ns", Networks: nets})
			if err != nil || len(plan) != 1 || plan[0].WIMName != c.want {
				t.Fatalf("plan = %+v, %v; want one link on %s", plan, err, c.want)
			}
		})
	}
}
