package engine_test

import (
	"encoding/json"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
)

// TestReconcileL3Sites (issue 34): an L3VPN whose sites were changed on
// the controller behind wimro's back (a prefix, a PE address, a static
// route, a BGP peer) is a mismatch naming the site and the field, which
// --fix repairs by a forced EDIT; the same sites spelled otherwise
// (routes in another order, a route's prefix with host bits) are none.
func TestReconcileL3Sites(t *testing.T) {
	t.Parallel()
	sites := map[string]connectors.L3Site{
		"dcA": {Prefix: netip.MustParsePrefix("10.0.0.0/24"), PEAddress: netip.MustParsePrefix("192.0.2.1/30"), CEAddress: netip.MustParseAddr("192.0.2.2"),
			StaticRoutes: []connectors.StaticRoute{
				{Prefix: netip.MustParsePrefix("172.16.0.0/16"), NextHop: netip.MustParseAddr("192.0.2.2")},
				{Prefix: netip.MustParsePrefix("172.17.0.0/16"), NextHop: netip.MustParseAddr("192.0.2.2")}}},
		"dcB": {Prefix: netip.MustParsePrefix("10.1.0.0/24"), PEAddress: netip.MustParsePrefix("192.0.2.5/30"), CEAddress: netip.MustParseAddr("192.0.2.6"),
			BGP: &connectors.BGPPeer{PeerAS: 65001, PeerAddress: netip.MustParseAddr("192.0.2.6")}},
		"dcC": {Prefix: netip.MustParsePrefix("10.2.0.0/24"), PEAddress: netip.MustParsePrefix("192.0.2.9/30"), CEAddress: netip.MustParseAddr("192.0.2.10")},
	}
	tests := []struct {
		name   string
		dc     string                     // the site changed on the controller
		change func(s *connectors.L3Site) // nil: none
		want   []string                   // the mismatch's L3 lines; nil: no drift
	}{
		{name: "in line", dc: "dcA"},
		{name: "routes in another order, a prefix with host bits", dc: "dcA", change: func(s *connectors.L3Site) {
			s.StaticRoutes = []connectors.StaticRoute{
				{Prefix: netip.MustParsePrefix("172.17.0.1/16"), NextHop: netip.MustParseAddr("192.0.2.2")},
				{Prefix: netip.MustParsePrefix("172.16.0.0/16"), NextHop: netip.MustParseAddr("192.0.2.2")}}
		}},
		{name: "a static route changed", dc: "dcA", change: func(s *connectors.L3Site) {
			s.StaticRoutes = []connectors.StaticRoute{s.StaticRoutes[0], {Prefix: netip.MustParsePrefix("172.18.0.0/16"), NextHop: netip.MustParseAddr("192.0.2.2")}}
		}, want: []string{"site ep-dcA/vlan=301: routes: want [172.16.0.0/16 via 192.0.2.2, 172.17.0.0/16 via 192.0.2.2], the controller has [172.16.0.0/16 via 192.0.2.2, 172.18.0.0/16 via 192.0.2.2]"}},
		{name: "the prefix routed via the CE changed", dc: "dcC", change: func(s *connectors.L3Site) { s.Prefix = netip.MustParsePrefix("10.9.0.0/24") },
			want: []string{"site ep-dcC/vlan=303: routes: want [10.2.0.0/24 via 192.0.2.10], the controller has [10.9.0.0/24 via 192.0.2.10]"}},
		{name: "the PE and CE addresses changed", dc: "dcC", change: func(s *connectors.L3Site) {
			s.PEAddress, s.CEAddress = netip.MustParsePrefix("192.0.2.13/30"), netip.MustParseAddr("192.0.2.14")
		}, want: []string{
			"site ep-dcC/vlan=303: pe_address: want 192.0.2.9/30, the controller has 192.0.2.13/30",
			"site ep-dcC/vlan=303: ce_address: want 192.0.2.10, the controller has 192.0.2.14",
			"site ep-dcC/vlan=303: routes: want [10.2.0.0/24 via 192.0.2.10], the controller has [10.2.0.0/24 via 192.0.2.14]"}},
		{name: "the BGP peer AS changed", dc: "dcB", change: func(s *connectors.L3Site) { s.BGP = &connectors.BGPPeer{PeerAS: 65009, PeerAddress: s.BGP.PeerAddress} },
			want: []string{"site ep-dcB/vlan=302: bgp: want AS65001 192.0.2.6, the controller has AS65009 192.0.2.6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := setupL3(t)
			nets := testfactory.Nets("ACTIVE", testfactory.VLDs(1), "dcA", "dcB", "dcC")
			var points []connectors.ConnectionPoint
			for i := range nets {
				site := sites[nets[i].Datacenter]
				raw, _ := json.Marshal(&site)
				nets[i].L3 = engine.L3Value(raw)
				points = append(points, connectors.ConnectionPoint{ServiceEndpointID: "ep-" + nets[i].Datacenter, Encapsulation: connectors.EncapDot1Q,
					VLAN: *nets[i].EncapsulationID, MappingInfo: map[string]any{}, L3: &site})
			}
			v := o.Instance(t, "t0", "ns-"+uuid.NewString()[:8], nets)
			links, err := o.db.ListWANLinks(o.ctx, v.UUID)
			if err != nil || len(links) != 1 || links[0].ServiceType != string(connectors.ServiceL3VPN) {
				t.Fatalf("links of %s: %+v, %v; want one L3VPN", v.UUID, links, err)
			}
			link := links[0].UUID
			c, err := fake.Factory(connectors.Config{Type: "fake", URL: o.url})
			if err != nil {
				t.Fatal(err)
			}
			id, _, err := c.CreateService(o.ctx, connectors.Request{Key: link, Type: connectors.ServiceL3VPN, Points: points})
			if err != nil {
				t.Fatal(err)
			}
			o.exec(t, `UPDATE vim_wim_actions SET status = 'DONE', wim_internal_id = $2 WHERE item_id = $1`, link, id)
			o.exec(t, `UPDATE instance_wim_nets SET status = 'ACTIVE', created = true, wim_internal_id = $2 WHERE uuid = $1`, link, id)
			if tt.change != nil {
				// Behind wimro's back: the controller's copy of one site.
				drifted := slices.Clone(points)
				for i, p := range drifted {
					if p.ServiceEndpointID == "ep-"+tt.dc {
						site := *p.L3
						tt.change(&site)
						drifted[i].L3 = &site
					}
				}
				if _, err := c.EditService(o.ctx, id, nil, connectors.Request{Type: connectors.ServiceL3VPN, Points: drifted}); err != nil {
					t.Fatal(err)
				}
			}

			rep, err := o.eng.Reconcile(o.ctx, engine.ReconcileOptions{Account: "acct1", Fix: true})
			if err != nil || len(rep.Accounts) != 1 || rep.Accounts[0].Error != "" {
				t.Fatalf("Reconcile: %+v, %v", rep, err)
			}
			drift := rep.Accounts[0].Drift
			if tt.want == nil {
				if len(drift) != 0 {
					t.Fatalf("drift %+v, want none", drift)
				}
				return
			}
			if len(drift) != 1 || drift[0].Kind != engine.DriftMismatch || drift[0].WANLinkID != link || !slices.Equal(drift[0].L3, tt.want) {
				t.Fatalf("drift %+v, want one mismatch of link %s with L3 %q", drift, link, tt.want)
			}
			if d := drift[0]; !d.Fixed || d.ActionID == "" || d.Want != nil || d.Have != nil {
				t.Errorf("mismatch %+v: want it fixed by a queued action, with no endpoint difference", d)
			}
			acts, err := o.db.ListActionsOfInstanceAction(o.ctx, drift[0].ActionID)
			if err != nil || len(acts) != 1 || acts[0].Action != "EDIT" || acts[0].ItemID != link || acts[0].Extra["force"] != true {
				t.Errorf("the fix's actions: %+v, %v; want one forced EDIT of the link", acts, err)
			}
		})
	}
}

// setupL3 is a tenant t0 with an account acct1 of a fake WIM (which
// makes L3VPNs and lists their sites) over dcA, dcB and dcC.
func setupL3(t *testing.T) *overrideBundle {
	t.Helper()
	b := setup(t)
	b.Tenant(t, "t0")
	url := "http://fake-" + uuid.NewString()
	t.Cleanup(fake.ControllerFor(url).Reset)
	name := "wan1"
	acct := b.WAN(t, testfactory.WAN{WIM: engine.WIMInput{Name: &name, URL: &url}, Tenant: "t0",
		Account: engine.AccountInput{Name: ptr("acct1")}, Datacenters: []string{"dcA", "dcB", "dcC"}})
	return &overrideBundle{bundle: b, url: url, account: acct}
}
