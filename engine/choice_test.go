package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
)

// l3Nets is one VLD across dcs whose networks each give their l3 site:
// prefix 10.0.<i>.0/24, the PE at 192.0.2.<4i+1>/30 and the CE next to it.
func l3Nets(vld string, dcs ...string) []engine.NetworkInput {
	nets := testfactory.Nets("", []string{vld}, dcs...)
	for i := range nets {
		nets[i].L3 = engine.L3Value(fmt.Sprintf(`{"prefix": "10.0.%d.0/24", "pe_address": "192.0.2.%d/30", "ce_address": "192.0.2.%d"}`, i, 4*i+1, 4*i+2))
	}
	return nets
}

// The choice of a link's WIM, as a table: what the network needs
// (reach, service type, QoS), then health (an account in ERROR last),
// then the oldest; an explicit choice honoured or refused naming why;
// and the dry run's verdict for every WIM of the tenant.
func TestWIMChoiceRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tenants := map[string]wimro.Tenant{}
	for _, n := range []string{"t", "t-err", "t-eline"} {
		tenants[n] = b.Tenant(t, n)
	}
	for _, dc := range []string{"dcA", "dcB", "dcC"} {
		b.Datacenter(t, dc, tenants["t"], tenants["t-err"], tenants["t-eline"])
	}
	b.Datacenter(t, "dcD", tenants["t"]) // no WIM reaches it
	// Oldest first. dynpac makes ELINEs with a bandwidth and reaches dcA
	// and dcB only; onos makes ELINEs and ELANs without QoS; fake makes
	// everything (L3VPN included) with any QoS.
	wims := []struct {
		name, typ string
		dcs       []string
		tenants   []string
		err       bool // the tenants' accounts on it are in ERROR
	}{
		{"w-dynpac", "dynpac", []string{"dcA", "dcB"}, []string{"t"}, false},
		{"w-onos", "onos", []string{"dcA", "dcB", "dcC"}, []string{"t"}, false},
		{"w-err", "fake", []string{"dcA", "dcB", "dcC"}, []string{"t", "t-err"}, true},
		{"w-fake", "fake", []string{"dcA", "dcB", "dcC"}, []string{"t"}, false},
		{"w-dynpac3", "dynpac", []string{"dcA", "dcB", "dcC"}, []string{"t-eline"}, false},
	}
	port := 0
	for _, w := range wims {
		var maps []engine.PortMappingInput
		for _, dc := range w.dcs {
			port++
			maps = append(maps, mappingFor(w.typ, dc, port))
		}
		b.WIMOf(t, engine.WIMInput{Name: ptr(w.name), Type: ptr(w.typ)}, maps...)
		for _, tn := range w.tenants {
			a := b.Account(t, tn, w.name, engine.AccountInput{})
			if w.err {
				if _, _, err := b.db.SetAccountStatus(b.ctx, a.UUID, wimro.AccountError, "credentials refused", time.Now(), a.ModifiedAt); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	const (
		older   = "can carry it, but w-dynpac comes first (older)"
		errored = "account ERROR (its last credentials check failed)"
	)
	cases := []struct {
		name   string
		tenant string // "" is t
		nets   func(vld string) []engine.NetworkInput
		choice string // an explicit instance.wim_account
		want   string // the WIM chosen; "" refused
		// verdicts are the reasons given for each WIM of the tenant, in
		// order (a prefix of each); for a refusal, what the error says.
		verdicts []string
		code     string
		field    string
	}{
		{"an ELINE: the oldest", "", func(v string) []engine.NetworkInput { return testfactory.Nets("", []string{v}, "dcA", "dcB") }, "",
			"w-dynpac", []string{"chosen: the oldest", older, errored, older}, "", ""},
		{"an ELINE asking latency: the oldest that honours it and is healthy", "", func(v string) []engine.NetworkInput {
			return qosNets(v, [2]string{}, [2]string{"5"})
		}, "", "w-fake", []string{"does not honour latency (type dynpac honours bandwidth)", "does not honour latency (type onos honours none)", errored, "chosen"}, "", ""},
		{"an ELAN over three: the oldest that reaches them and makes ELAN", "", func(v string) []engine.NetworkInput {
			return testfactory.Nets("", []string{v}, "dcA", "dcB", "dcC")
		}, "", "w-onos", []string{"does not reach dcC", "chosen", errored, "can carry it, but w-onos comes first (older)"}, "", ""},
		{"an L3VPN: the oldest that makes L3VPN and is healthy", "", func(v string) []engine.NetworkInput { return l3Nets(v, "dcA", "dcB") }, "",
			"w-fake", []string{"does not make L3VPN (type dynpac makes ELINE)", "does not make L3VPN (type onos makes ELINE, ELAN)", errored, "chosen"}, "", ""},
		{"an L3VPN over three", "", func(v string) []engine.NetworkInput { return l3Nets(v, "dcA", "dcB", "dcC") }, "",
			"w-fake", []string{"does not reach dcC", "does not make L3VPN", errored, "chosen"}, "", ""},
		{"only an account in ERROR can: chosen all the same", "t-err", func(v string) []engine.NetworkInput { return l3Nets(v, "dcA", "dcB") }, "",
			"w-err", []string{"chosen although its account is in ERROR"}, "", ""},
		{"explicit: an account in ERROR is honoured", "", func(v string) []engine.NetworkInput { return l3Nets(v, "dcA", "dcB") }, "w-err",
			"w-err", []string{"chosen by instance.wim_account"}, "", ""},
		{"explicit: a WIM that does not make L3VPN", "", func(v string) []engine.NetworkInput { return l3Nets(v, "dcA", "dcB") }, "w-onos",
			"", []string{"instance.wim_account: WIM w-onos cannot carry sce_net_id", "an L3VPN over dcA, dcB: it does not make L3VPN (type onos makes ELINE, ELAN)"},
			wimro.EINVALID, "instance.wim_account"},
		{"explicit: a WIM that does not reach a datacenter", "", func(v string) []engine.NetworkInput {
			return testfactory.Nets("", []string{v}, "dcA", "dcB", "dcC")
		}, "w-dynpac", "", []string{"WIM w-dynpac does not reach dcC"}, wimro.EINVALID, "instance.wim_account"},
		{"explicit: a WIM that makes no ELAN", "t-eline", func(v string) []engine.NetworkInput {
			return testfactory.Nets("", []string{v}, "dcA", "dcB", "dcC")
		}, "w-dynpac3", "", []string{"does not make ELAN (type dynpac makes ELINE)"}, wimro.EINVALID, "instance.wim_account"},
		{"no WIM makes L3VPN", "t-eline", func(v string) []engine.NetworkInput { return l3Nets(v, "dcA", "dcB") }, "",
			"", []string{"no WIM can carry sce_net_id", "w-dynpac3 does not make L3VPN (type dynpac makes ELINE)"}, wimro.EINVALID, "instance.networks[0].l3"},
		{"no WIM makes an ELAN over three", "t-eline", func(v string) []engine.NetworkInput {
			return testfactory.Nets("", []string{v}, "dcA", "dcB", "dcC")
		}, "", "", []string{"an ELAN over dcA, dcB, dcC", "w-dynpac3 does not make ELAN"}, wimro.EINVALID, "instance.networks[0]"},
		{"no WIM reaches the datacenters: OSM's words, then each WIM's", "", func(v string) []engine.NetworkInput {
			return testfactory.Nets("", []string{v}, "dcA", "dcD")
		}, "", "", []string{"No WIM that is able to connect the given datacenters was found", "w-dynpac does not reach dcD; w-onos does not reach dcD"},
			wimro.ENOTFOUND, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tn := c.tenant
			if tn == "" {
				tn = "t"
			}
			in := engine.InstanceInput{Name: "ns", Networks: c.nets(uuid.NewString())}
			if c.choice != "" {
				in.WIMAccount = engine.WIMChoice{Set: true, Ref: c.choice}
			}
			plan, err := b.eng.PlanInstance(b.ctx, tn, in)
			if c.code != "" {
				wantCode(t, err, c.code)
				if got := wimro.ErrorField(err); got != c.field {
					t.Fatalf("error field = %q, want %q (err: %v)", got, c.field, err)
				}
				for _, s := range c.verdicts {
					if !strings.Contains(wimro.ErrorMessage(err), s) {
						t.Errorf("error %q does not say %q", wimro.ErrorMessage(err), s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if len(plan) != 0 {
					t.Fatalf("plan = %+v, want no link", plan)
				}
				return
			}
			if len(plan) != 1 || plan[0].WIMName != c.want {
				t.Fatalf("plan = %+v, want one link on %s", plan, c.want)
			}
			vs := plan[0].WIMs
			if len(vs) != len(c.verdicts) {
				t.Fatalf("verdicts = %+v, want %d", vs, len(c.verdicts))
			}
			for i, v := range vs {
				if !strings.HasPrefix(v.Reason, c.verdicts[i]) || v.Chosen != (v.WIMName == c.want) {
					t.Errorf("verdict %d = %+v, want chosen=%v and a reason starting %q", i, v, v.WIMName == c.want, c.verdicts[i])
				}
			}
		})
	}
}

// A per-network choice is honoured over the instance's: false makes no
// link, a WIM name takes that WIM.
func TestWIMChoicePerNetwork(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	sc.bundle.WIM(t, "wan2", testfactory.Mapping("dcA", 7), testfactory.Mapping("dcB", 8))
	sc.bundle.Account(t, "tenantT", "wan2", engine.AccountInput{})
	vlds := testfactory.VLDs(2)
	nets := testfactory.Nets("", vlds, "dcA", "dcB")
	nets[0].WIMAccount = engine.WIMChoice{Set: true, None: true}
	nets[2].WIMAccount = engine.WIMChoice{Set: true, Ref: "wan2"}
	plan, err := sc.eng.PlanInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", WIMAccount: engine.WIMChoice{Set: true, Ref: "wan1"}, Networks: nets})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || plan[0].SceNetID != vlds[1] || plan[0].WIMName != "wan2" || len(plan[0].WIMs) != 1 ||
		plan[0].WIMs[0].Reason != "chosen by instance.networks[2].wim_account" {
		t.Fatalf("plan = %+v, want vld %s on wan2 by instance.networks[2].wim_account", plan, vlds[1])
	}
}

// A network's l3 is checked as connectors check an L3VPN site, refused
// naming its field; a VLD whose networks give it is an L3VPN whose sites
// are stored with the networks and whose link records its type.
func TestInstanceL3(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	site := func(s string) engine.L3Value { return engine.L3Value(s) }
	cases := []struct {
		name     string
		l3       [2]engine.L3Value // of the networks in dcA and dcB
		field    string            // of the refusal; "" accepts
		contains string
	}{
		{"static routes and BGP", [2]engine.L3Value{
			site(`{"prefix": "10.1.0.0/24", "pe_address": "192.0.2.1/30", "static_routes": [{"prefix": "10.9.0.0/16", "next_hop": "192.0.2.2"}]}`),
			site(`{"prefix": "2001:db8:1::/64", "pe_address": "2001:db8::1/126", "bgp": {"peer_as": 65001, "peer_address": "2001:db8::2"}}`)}, "", ""},
		{"not an object", [2]engine.L3Value{site(`"10.1.0.0/24"`), site(`{}`)}, "instance.networks[0].l3", "must be an object"},
		{"an unknown key", [2]engine.L3Value{site(`{"prefix": "10.1.0.0/24", "pe_adress": "192.0.2.1/30"}`), nil}, "instance.networks[0].l3", `unknown field "pe_adress"`},
		{"a bad address", [2]engine.L3Value{nil, site(`{"prefix": "10.1.0/24", "pe_address": "192.0.2.1/30"}`)}, "instance.networks[1].l3", "must be an object"},
		{"host bits", [2]engine.L3Value{site(`{"prefix": "10.1.0.1/24", "pe_address": "192.0.2.1/30", "ce_address": "192.0.2.2"}`), nil},
			"instance.networks[0].l3", "has host bits set"},
		{"no pe_address", [2]engine.L3Value{site(`{"prefix": "10.1.0.0/24", "ce_address": "192.0.2.2"}`), nil}, "instance.networks[0].l3", "pe_address is missing"},
		{"a CE off the access link", [2]engine.L3Value{site(`{"prefix": "10.1.0.0/24", "pe_address": "192.0.2.1/30", "ce_address": "192.0.2.9"}`), nil},
			"instance.networks[0].l3", "is not another address of the access link"},
		{"no way to the prefix", [2]engine.L3Value{site(`{"prefix": "10.1.0.0/24", "pe_address": "192.0.2.1/30"}`), nil},
			"instance.networks[0].l3", "needs ce_address, static_routes or bgp"},
		{"a BGP peer without AS", [2]engine.L3Value{site(`{"prefix": "10.1.0.0/24", "pe_address": "192.0.2.1/30", "bgp": {"peer_address": "192.0.2.2"}}`), nil},
			"instance.networks[0].l3", "peer_as is missing"},
		{"one network of the VLD without", [2]engine.L3Value{site(`{"prefix": "10.1.0.0/24", "pe_address": "192.0.2.1/30", "ce_address": "192.0.2.2"}`), nil},
			"instance.networks[1].l3", "is required: the networks of sce_net_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			nets := testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcB")
			nets[0].L3, nets[1].L3 = c.l3[0], c.l3[1]
			in := engine.InstanceInput{Name: "ns-" + uuid.NewString()[:8], Networks: nets}
			plan, perr := sc.eng.PlanInstance(sc.ctx, "tenantT", in)
			v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", in)
			if c.field != "" {
				for _, e := range []error{perr, err} {
					wantField(t, e, c.field)
					if !strings.Contains(wimro.ErrorMessage(e), c.contains) {
						t.Fatalf("error %q does not say %q", wimro.ErrorMessage(e), c.contains)
					}
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
			if len(plan) != 1 || plan[0].ServiceType != "L3VPN" || len(got.WANLinks) != 1 || got.WANLinks[0].ServiceType != "L3VPN" {
				t.Fatalf("plan %+v, links %+v: want one L3VPN", plan, got.WANLinks)
			}
			for _, n := range got.Networks {
				if n.L3["prefix"] == nil || n.L3["pe_address"] == nil {
					t.Errorf("network in %s: l3 %v, want its site", n.DatacenterID, n.L3)
				}
			}
		})
	}
}
