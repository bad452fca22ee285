package engine_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
)

// noneDC is the usual scenario with dcA's networks reported by nobody
// (network_status_source none) and its VLANs taken from 100-101.
func noneDC(t *testing.T) *scenario {
	t.Helper()
	sc := newScenario(t)
	if _, err := sc.eng.UpdateDatacenter(sc.ctx, "dcA", engine.DatacenterInput{Config: map[string]any{
		"network_status_source": engine.NetSourceNone, "vlan_range": "100-101"}}); err != nil {
		t.Fatal(err)
	}
	return sc
}

// wanNets is one VLD in dcA and dcB (one WAN link), dcA's network on
// VLAN vlan (0: wimro chooses), dcB's on VLAN 301.
func wanNets(vlan int) []engine.NetworkInput {
	vld := uuid.NewString()
	a := engine.NetworkInput{SceNetID: vld, Datacenter: "dcA", PhysicalNetwork: testfactory.PhysicalNetwork}
	if vlan != 0 {
		a.EncapsulationType, a.EncapsulationID = "vlan", ptr(vlan)
	}
	return []engine.NetworkInput{a, {SceNetID: vld, Datacenter: "dcB", PhysicalNetwork: testfactory.PhysicalNetwork,
		EncapsulationType: "vlan", EncapsulationID: ptr(301)}}
}

// vlanIn returns the VLAN of v's network in datacenter dc.
func vlanIn(t *testing.T, v engine.InstanceView, dc string) int {
	t.Helper()
	for _, n := range v.Networks {
		if n.DatacenterID == dc && n.EncapsulationID != nil {
			return *n.EncapsulationID
		}
	}
	t.Fatalf("instance %s has no VLAN in datacenter %s: %+v", v.Name, dc, v.Networks)
	return 0
}

// TestVLANHeldUntilLinkDeleted (issue 32 follow-up): in a datacenter
// whose networks nobody reports, deleting an instance does not free its
// VLAN while the WAN link's DELETE has not run: the controller still
// holds the service on it, and a new instance on that VLAN would share
// it. Once the DELETE is DONE (or CANCELLED: nothing reached the
// controller) the VLAN is free again; a FAILED or ABANDONED DELETE may
// have left the service there, so the VLAN stays taken. A network in no
// WAN link frees its VLAN with the instance.
func TestVLANHeldUntilLinkDeleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status string // the DELETE's end
		freed  bool
	}{
		{"DONE", true},
		{"CANCELLED", true},
		{"FAILED", false},
		{"ABANDONED", false},
	} {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			sc := noneDC(t)
			ns1 := sc.Instance(t, "tenantT", "ns1", wanNets(0))
			if v := vlanIn(t, ns1, sc.dcA.UUID); v != 100 {
				t.Fatalf("ns1 VLAN %d, want 100", v)
			}
			if len(ns1.WANLinks) != 1 {
				t.Fatalf("ns1 has %d WAN links, want 1", len(ns1.WANLinks))
			}
			if _, _, err := sc.eng.DeleteInstance(sc.ctx, "tenantT", "ns1"); err != nil {
				t.Fatal(err)
			}
			// The DELETE has not run: 100 is still the controller's.
			ns2 := sc.Instance(t, "tenantT", "ns2", wanNets(0))
			if v := vlanIn(t, ns2, sc.dcA.UUID); v != 101 {
				t.Fatalf("ns2 VLAN %d while ns1's DELETE is SCHEDULED, want 101 (100 is still on the controller)", v)
			}
			_, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns3", Networks: wanNets(100)})
			wantCode(t, err, wimro.ECONFLICT)
			_, err = sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns3", Networks: wanNets(0)})
			wantCode(t, err, wimro.ECONFLICT)

			sc.exec(t, `UPDATE vim_wim_actions SET status = $1 WHERE action = 'DELETE' AND item_id = $2`, tc.status, ns1.WANLinks[0].UUID)
			ns3, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns3", Networks: wanNets(0)})
			if !tc.freed {
				wantCode(t, err, wimro.ECONFLICT)
				return
			}
			if err != nil {
				t.Fatalf("after the DELETE is %s: %v", tc.status, err)
			}
			if v := vlanIn(t, ns3, sc.dcA.UUID); v != 100 {
				t.Fatalf("ns3 VLAN %d after ns1's DELETE is %s, want 100", v, tc.status)
			}
		})
	}
	t.Run("no WAN link", func(t *testing.T) {
		t.Parallel()
		sc := noneDC(t)
		local := []engine.NetworkInput{{Datacenter: "dcA"}}
		ns1 := sc.Instance(t, "tenantT", "ns1", local)
		if len(ns1.WANLinks) != 0 || vlanIn(t, ns1, sc.dcA.UUID) != 100 {
			t.Fatalf("ns1 = %+v, want VLAN 100 and no WAN link", ns1)
		}
		if _, _, err := sc.eng.DeleteInstance(sc.ctx, "tenantT", "ns1"); err != nil {
			t.Fatal(err)
		}
		if v := vlanIn(t, sc.Instance(t, "tenantT", "ns2", local), sc.dcA.UUID); v != 100 {
			t.Fatalf("ns2 VLAN %d, want 100 (ns1's network was in no WAN link)", v)
		}
	})
}

// TestExplicitVLANRecorded (issue 32 follow-up): a VLAN an instance gives
// in a datacenter whose networks nobody reports is recorded like a chosen
// one: wimro never hands it out, and giving a taken VLAN is a 409 naming
// the network's field, as a VIM refuses a duplicate segmentation id. A
// VLAN outside the range is allowed, and recorded too. A refused create
// writes nothing.
func TestExplicitVLANRecorded(t *testing.T) {
	t.Parallel()
	sc := noneDC(t)
	steps := []struct {
		name  string
		nets  []engine.NetworkInput
		vlan  int    // dcA's VLAN of the created instance
		field string // or the 409's field
	}{
		{"given 100", wanNets(100), 100, ""},
		{"chosen: 100 is taken", wanNets(0), 101, ""},
		{"given a taken VLAN", wanNets(101), 0, "instance.networks[0].encapsulation_id"},
		{"given outside the range", wanNets(500), 500, ""},
		{"given 500 again", wanNets(500), 0, "instance.networks[0].encapsulation_id"},
		{"two networks given one VLAN", append(wanNets(600), wanNets(600)...), 0, "instance.networks[2].encapsulation_id"},
	}
	for i, st := range steps {
		name := "ns" + string(rune('a'+i))
		before := sc.count(t, "instance_scenarios")
		v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: name, Networks: st.nets})
		if st.field == "" {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if got := vlanIn(t, v, sc.dcA.UUID); got != st.vlan {
				t.Fatalf("%s: VLAN %d, want %d", st.name, got, st.vlan)
			}
			continue
		}
		if wimro.ErrorCode(err) != wimro.ECONFLICT || wimro.ErrorField(err) != st.field {
			t.Fatalf("%s: err %v (code %q, field %q), want a conflict naming %s", st.name, err, wimro.ErrorCode(err), wimro.ErrorField(err), st.field)
		}
		if n := sc.count(t, "instance_scenarios"); n != before {
			t.Fatalf("%s: %d instances, want %d (a refused create writes nothing)", st.name, n, before)
		}
	}
	// Range 100-101 is full: 100 given, 101 chosen.
	_, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "full", Networks: wanNets(0)})
	wantCode(t, err, wimro.ECONFLICT)
}

// TestVLANNotChangedBehindTheAllocation: in a datacenter whose VLANs
// wimro allocates, a network update may not move the network onto a VLAN
// another network holds, which would bypass the allocation (two networks
// of one datacenter on one VLAN); a free VLAN it may
// (TestVLANMovedByAnEdit). Elsewhere the NFVO's report stands.
func TestVLANNotChangedBehindTheAllocation(t *testing.T) {
	t.Parallel()
	sc := noneDC(t)
	a, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "nsa", Networks: wanNets(0)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "nsb", Networks: wanNets(0)})
	if err != nil {
		t.Fatal(err)
	}
	netIn := func(v engine.InstanceView, dc string) string {
		for _, n := range v.Networks {
			if n.DatacenterID == dc {
				return n.UUID
			}
		}
		t.Fatalf("instance %s has no network in %s", v.Name, dc)
		return ""
	}
	taken := vlanIn(t, a, sc.dcA.UUID)
	_, err = sc.eng.UpdateNetwork(sc.ctx, "tenantT", "nsb", netIn(b, sc.dcA.UUID), engine.NetworkUpdate{EncapsulationID: ptr(taken)})
	if wimro.ErrorCode(err) != wimro.ECONFLICT || wimro.ErrorField(err) != "network.encapsulation_id" {
		t.Fatalf("move nsb's dcA network onto nsa's VLAN %d: %v, want a conflict naming network.encapsulation_id", taken, err)
	}
	again, err := sc.eng.GetInstance(sc.ctx, "tenantT", "nsb")
	if err != nil {
		t.Fatal(err)
	}
	if got := vlanIn(t, again, sc.dcA.UUID); got == taken {
		t.Fatalf("the refused update moved nsb to VLAN %d", got)
	}
	if _, err := sc.eng.UpdateNetwork(sc.ctx, "tenantT", "nsb", netIn(b, sc.dcA.UUID), engine.NetworkUpdate{Status: ptr("ACTIVE")}); err != nil {
		t.Errorf("a status report in dcA: %v", err)
	}
	if _, err := sc.eng.UpdateNetwork(sc.ctx, "tenantT", "nsb", netIn(b, sc.dcB.UUID), engine.NetworkUpdate{EncapsulationID: ptr(302)}); err != nil {
		t.Errorf("a VLAN change in dcB, whose NFVO reports its networks: %v", err)
	}
}

// TestVLANFreedWhenReconcileDeletesTheService (issue 32 remaining, point
// 4): a VLAN kept taken by a link whose DELETE ended FAILED or ABANDONED
// (the service may still be on the controller) is freed when reconcile
// --fix deletes that service: --delete-abandoned for an abandoned one,
// --fix alone for the leftover of a FAILED DELETE (an orphan). Until then
// an instance on that VLAN is refused.
func TestVLANFreedWhenReconcileDeletesTheService(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		end  string // how the DELETE ended
		opts engine.ReconcileOptions
		kind string
	}{
		{"ABANDONED", engine.ReconcileOptions{Account: "acct1", Fix: true, DeleteAbandoned: true}, engine.DriftAbandoned},
		{"FAILED", engine.ReconcileOptions{Account: "acct1", Fix: true}, engine.DriftOrphan},
	} {
		t.Run(tc.end, func(t *testing.T) {
			t.Parallel()
			o := setupOverride(t)
			if _, err := o.eng.UpdateDatacenter(o.ctx, "dcA", engine.DatacenterInput{Config: map[string]any{"network_status_source": engine.NetSourceNone}}); err != nil {
				t.Fatal(err)
			}
			inst, _, link := o.instance(t) // dcA's network on VLAN 301, recorded
			o.made(t, link)
			ia, _, err := o.eng.DeleteInstance(o.ctx, "t0", inst)
			if err != nil {
				t.Fatal(err)
			}
			if tc.end == "ABANDONED" {
				if _, err := o.eng.AbandonActions(o.ctx, "t0", inst, ia.UUID, "", engine.OverrideInput{Reason: "controller away", Force: true}); err != nil {
					t.Fatal(err)
				}
			} else {
				o.exec(t, `UPDATE vim_wim_actions SET status = 'FAILED' WHERE action = 'DELETE' AND item_id = $1`, link)
			}
			again := func() error {
				_, err := o.eng.CreateInstance(o.ctx, "t0", engine.InstanceInput{Name: "ns-again",
					Networks: testfactory.Nets("ACTIVE", testfactory.VLDs(1), "dcA", "dcB")})
				return err
			}
			wantCode(t, again(), wimro.ECONFLICT)
			rep, err := o.eng.Reconcile(o.ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := rep.Accounts[0].Drift; len(d) != 1 || d[0].Kind != tc.kind || !d[0].Fixed || fake.ControllerFor(o.url).Count() != 0 {
				t.Fatalf("reconcile: drift %+v, want the %s service deleted", d, tc.kind)
			}
			if err := again(); err != nil {
				t.Fatalf("VLAN 301 of dcA after reconcile deleted the service: %v, want it free", err)
			}
		})
	}
}

// TestVLANMovedByAnEdit (issue 38): in a datacenter whose VLANs wimro
// allocates, a network's VLAN changed by the NFVO moves its allocation
// (the link's EDIT moves the service): the new VLAN is taken, the old one
// free for the next instance, and a VLAN taken elsewhere is still a 409.
func TestVLANMovedByAnEdit(t *testing.T) {
	t.Parallel()
	sc := noneDC(t)
	a, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "nsa", Networks: wanNets(0)})
	if err != nil {
		t.Fatal(err)
	}
	old := vlanIn(t, a, sc.dcA.UUID)
	var netA string
	for _, n := range a.Networks {
		if n.DatacenterID == sc.dcA.UUID {
			netA = n.UUID
		}
	}
	if _, err := sc.eng.UpdateNetwork(sc.ctx, "tenantT", "nsa", netA, engine.NetworkUpdate{EncapsulationID: ptr(150)}); err != nil {
		t.Fatalf("move nsa's dcA network to the free VLAN 150: %v, want it moved", err)
	}
	b, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "nsb", Networks: wanNets(0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := vlanIn(t, b, sc.dcA.UUID); got != old {
		t.Errorf("the next instance got VLAN %d in dcA, want %d, which the move freed", got, old)
	}
	_, err = sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "nsc", Networks: wanNets(150)})
	wantCode(t, err, wimro.ECONFLICT)
}
