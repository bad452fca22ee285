package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

// scenario is the Appendix A set-up (testfactory.Scenario): tenant T,
// datacenters dcA/dcB with external_connections rules, WIM wan1 mapped to
// both, T's account on it.
type scenario struct {
	*bundle
	tenant  wimro.Tenant
	dcA     wimro.Datacenter
	dcB     wimro.Datacenter
	wim     engine.WIMView
	account engine.AccountFull
}

func newScenario(t *testing.T) *scenario {
	t.Helper()
	b := setup(t)
	f := b.Scenario(t, "tenantT")
	return &scenario{bundle: b, tenant: f.Tenant, dcA: f.DCA, dcB: f.DCB, wim: f.WIM, account: f.Account}
}

func (sc *scenario) count(t *testing.T, table string) int {
	t.Helper()
	return sc.countWhere(t, table, "true")
}

func TestCreateInstanceDerivesWANLinks(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	vld0, vld1 := uuid.NewString(), uuid.NewString()
	in := engine.InstanceInput{Name: "nsr0", Networks: append(testfactory.Nets("", []string{vld0, vld1}, "dcA", "dcB"),
		// A VNF-internal network (no sce_net_id) and a single-datacenter VLD
		// need no WAN link.
		engine.NetworkInput{Datacenter: "dcA"},
		engine.NetworkInput{SceNetID: uuid.NewString(), Datacenter: "dcB"},
	)}

	plan, err := sc.eng.PlanInstance(sc.ctx, "tenantT", in)
	if err != nil || len(plan) != 2 || plan[0].WIMName != "wan1" || plan[0].WIMAccountID != sc.account.UUID {
		t.Fatalf("PlanInstance = %+v, %v", plan, err)
	}
	if n := sc.count(t, "instance_scenarios"); n != 0 {
		t.Fatalf("dry run wrote %d instances", n)
	}

	v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Networks) != 6 || len(v.WANLinks) != 2 || v.ActionID == "" {
		t.Fatalf("instance = %d nets, %d links, action %q", len(v.Networks), len(v.WANLinks), v.ActionID)
	}
	got := map[string]bool{}
	for _, l := range v.WANLinks {
		got[*l.SceNetID] = true
		if l.Status != wimro.LinkBuild || l.WIMAccountID != sc.account.UUID || *l.WIMID != sc.wim.UUID || l.Multipoint {
			t.Fatalf("link = %+v", l)
		}
	}
	if !got[vld0] || !got[vld1] {
		t.Fatalf("links for %v, want %s and %s", got, vld0, vld1)
	}
	a, err := sc.eng.GetInstanceAction(sc.ctx, "tenantT", v.UUID, v.ActionID)
	if err != nil || a.Tasks != 2 || a.Done != 0 || len(a.VimActions) != 2 {
		t.Fatalf("instance action = %+v, %v", a, err)
	}
	for i, task := range a.VimActions {
		if task.Action != wimro.ActionCreate || task.Status != wimro.ActionScheduled || task.TaskIndex != i || *task.WIMAccountID != sc.account.UUID {
			t.Fatalf("task %d = %+v", i, task)
		}
	}
	// The network carries what the datacenter rules match on.
	n := v.Networks[0]
	if n.VimInfo["provider:physical_network"] != "physnet1" || n.VimInfo["encapsulation_type"] != "vlan" {
		t.Fatalf("vim_info = %v", n.VimInfo)
	}
}

func TestCreateInstanceWIMChoice(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	vld := uuid.NewString()
	// A second WIM that reaches only dcA.
	w2 := sc.bundle.WIM(t, "wan2", testfactory.Mapping("dcA", 9))
	sc.bundle.Account(t, "tenantT", "wan2", engine.AccountInput{})

	cases := []struct {
		name   string
		choice engine.WIMChoice
		links  int
		code   string
		field  string
	}{
		{"none", engine.WIMChoice{Set: true, None: true}, 0, "", ""},
		{"auto", engine.WIMChoice{Set: true}, 1, "", ""},
		{"account uuid", engine.WIMChoice{Set: true, Ref: sc.account.UUID}, 1, "", ""},
		{"wim name", engine.WIMChoice{Set: true, Ref: "wan1"}, 1, "", ""},
		{"wim that misses a datacenter", engine.WIMChoice{Set: true, Ref: w2.Name}, 0, wimro.EINVALID, "instance.wim_account"},
		{"unknown", engine.WIMChoice{Set: true, Ref: "nope"}, 0, wimro.ENOTFOUND, "instance.wim_account"},
		{"unknown uuid", engine.WIMChoice{Set: true, Ref: uuid.NewString()}, 0, wimro.ENOTFOUND, "instance.wim_account"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := sc.eng.PlanInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", WIMAccount: c.choice, Networks: testfactory.Nets("", []string{vld}, "dcA", "dcB")})
			if c.code != "" {
				wantCode(t, err, c.code)
				if wimro.ErrorField(err) != c.field {
					t.Fatalf("field = %q", wimro.ErrorField(err))
				}
				return
			}
			if err != nil || len(plan) != c.links {
				t.Fatalf("plan = %+v, %v", plan, err)
			}
		})
	}
	// A per-network false overrides the instance's choice.
	in := testfactory.Nets("", []string{vld}, "dcA", "dcB")
	in[0].WIMAccount = engine.WIMChoice{Set: true, None: true}
	in[1].WIMAccount = engine.WIMChoice{Set: true, None: true}
	if plan, err := sc.eng.PlanInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", Networks: in}); err != nil || len(plan) != 0 {
		t.Fatalf("per-network false: %+v, %v", plan, err)
	}
	in[1].WIMAccount = engine.WIMChoice{Set: true, Ref: "wan1"}
	_, err := sc.eng.PlanInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", Networks: in})
	wantField(t, err, "instance.networks[1].wim_account")
}

// A derivation that cannot be satisfied writes nothing.
func TestCreateInstanceWritesNothingOnFailure(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	dcC, err := sc.eng.CreateDatacenter(sc.ctx, engine.DatacenterInput{Name: ptr("dcC"), VimURL: ptr("http://dcC")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.eng.AttachDatacenter(sc.ctx, "tenantT", dcC.UUID); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   engine.InstanceInput
		code string
	}{
		{"no common WIM", engine.InstanceInput{Name: "ns", Networks: testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcC")}, wimro.ENOTFOUND},
		{"second VLD unsatisfiable", engine.InstanceInput{Name: "ns", Networks: append(testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcB"), testfactory.Nets("", []string{uuid.NewString()}, "dcB", "dcC")...)}, wimro.ENOTFOUND},
		{"unknown datacenter", engine.InstanceInput{Name: "ns", Networks: testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcX")}, wimro.ENOTFOUND},
		{"bad vlan", engine.InstanceInput{Name: "ns", Networks: []engine.NetworkInput{{SceNetID: uuid.NewString(), Datacenter: "dcA", EncapsulationType: "vlan"}}}, wimro.EINVALID},
		{"bad status", engine.InstanceInput{Name: "ns", Networks: []engine.NetworkInput{{Datacenter: "dcA", Status: "GREEN"}}}, wimro.EINVALID},
		{"no datacenter", engine.InstanceInput{Name: "ns", Networks: []engine.NetworkInput{{SceNetID: uuid.NewString()}}}, wimro.EINVALID},
		{"bad name", engine.InstanceInput{Name: "", Networks: nil}, wimro.EINVALID},
	}
	for _, c := range cases {
		_, err := sc.eng.CreateInstance(sc.ctx, "tenantT", c.in)
		if wimro.ErrorCode(err) != c.code {
			t.Errorf("%s: code %q, want %q (%v)", c.name, wimro.ErrorCode(err), c.code, err)
		}
	}
	if !strings.Contains(wimro.ErrorMessage(func() error {
		_, err := sc.eng.CreateInstance(sc.ctx, "tenantT", cases[0].in)
		return err
	}()), "No WIM that is able to connect the given datacenters was found") {
		t.Error("no-WIM message")
	}
	for _, table := range []string{"instance_scenarios", "instance_nets", "instance_wim_nets", "instance_actions", "vim_wim_actions"} {
		if n := sc.count(t, table); n != 0 {
			t.Errorf("%s has %d rows after failed creations", table, n)
		}
	}
}

func TestMultipointAndSameVIM(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	for _, name := range []string{"dcC", "dcA2"} {
		url := "http://" + name
		if name == "dcA2" {
			url = sc.dcA.VimURL // the same VIM under another datacenter record
		}
		if _, err := sc.eng.CreateDatacenter(sc.ctx, engine.DatacenterInput{Name: ptr(name), VimURL: ptr(url)}); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.eng.AttachDatacenter(sc.ctx, "tenantT", name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sc.eng.CreatePortMappings(sc.ctx, "tenantT", "wan1", []engine.PortMappingInput{testfactory.Mapping("dcC", 3)}); err != nil {
		t.Fatal(err)
	}
	v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", Networks: append(
		testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcB", "dcC"),
		testfactory.Nets("", []string{uuid.NewString()}, "dcA", "dcA2")...)})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.WANLinks) != 1 || !v.WANLinks[0].Multipoint {
		t.Fatalf("links = %+v, want one multipoint link (the same-VIM VLD needs none)", v.WANLinks)
	}
}

func TestDeleteInstance(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "nsr0", Networks: testfactory.Nets("", []string{uuid.NewString(), uuid.NewString()}, "dcA", "dcB")})
	if err != nil {
		t.Fatal(err)
	}
	ia, msg, err := sc.eng.DeleteInstance(sc.ctx, "tenantT", "nsr0")
	if err != nil || !strings.Contains(msg, "deleted") || ia.Tasks != 2 || ia.Description != "DELETE" {
		t.Fatalf("DeleteInstance = %+v %q %v", ia, msg, err)
	}
	for _, table := range []string{"instance_scenarios", "instance_nets", "instance_wim_nets"} {
		if n := sc.count(t, table); n != 0 {
			t.Errorf("%s has %d rows", table, n)
		}
	}
	// The DELETE actions carry a copy of their link; the deleted instance's
	// actions stay visible by its uuid.
	got, err := sc.eng.GetInstanceAction(sc.ctx, "tenantT", v.UUID, ia.UUID)
	if err != nil || len(got.VimActions) != 2 {
		t.Fatalf("GetInstanceAction = %+v, %v", got, err)
	}
	links := map[string]bool{}
	for _, l := range v.WANLinks {
		links[l.UUID] = true
	}
	for _, task := range got.VimActions {
		copyOf, _ := task.Extra["wan_link"].(map[string]any)
		if task.Action != wimro.ActionDelete || copyOf == nil || copyOf["uuid"] != task.ItemID || !links[task.ItemID] {
			t.Fatalf("DELETE task = %+v", task)
		}
	}
	list, err := sc.eng.ListInstanceActions(sc.ctx, "tenantT", v.UUID)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListInstanceActions = %d, %v", len(list), err)
	}
	_, _, err = sc.eng.DeleteInstance(sc.ctx, "tenantT", "nsr0")
	wantCode(t, err, wimro.ENOTFOUND)
	// The account still has unfinished DELETEs: it cannot be deleted yet.
	_, err = sc.eng.DeleteAccounts(sc.ctx, "tenantT", "wan1")
	wantCode(t, err, wimro.ECONFLICT)
}

func TestUpdateNetwork(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	vld := uuid.NewString()
	v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "ns", Networks: testfactory.Nets("", []string{vld}, "dcA", "dcB")})
	if err != nil {
		t.Fatal(err)
	}
	n, err := sc.eng.UpdateNetwork(sc.ctx, "tenantT", "ns", v.Networks[0].UUID, engine.NetworkUpdate{Status: ptr("active"), EncapsulationID: ptr(401)})
	if err != nil || n.Status != wimro.NetActive || *n.EncapsulationID != 401 || n.VimInfo["encapsulation_id"] != 401.0 {
		t.Fatalf("UpdateNetwork = %+v, %v", n, err)
	}
	// By name, too.
	if _, err := sc.eng.UpdateNetwork(sc.ctx, "tenantT", "ns", *v.Networks[1].VimName, engine.NetworkUpdate{Status: ptr("ACTIVE")}); err != nil {
		t.Fatal(err)
	}
	_, err = sc.eng.UpdateNetwork(sc.ctx, "tenantT", "ns", v.Networks[0].UUID, engine.NetworkUpdate{Status: ptr("GREEN")})
	wantField(t, err, "network.status")
	_, err = sc.eng.UpdateNetwork(sc.ctx, "tenantT", "ns", uuid.NewString(), engine.NetworkUpdate{Status: ptr("ACTIVE")})
	wantCode(t, err, wimro.ENOTFOUND)
}

// Progress counters stay exact when many actions finish at once.
func TestProgressCountersUnderConcurrency(t *testing.T) {
	t.Parallel()
	sc := newScenario(t)
	var vlds []string
	for range 50 {
		vlds = append(vlds, uuid.NewString())
	}
	v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: "big", Networks: testfactory.Nets("", vlds, "dcA", "dcB")})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.WANLinks) != 50 {
		t.Fatalf("%d links", len(v.WANLinks))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, failed := 1, 0
			if i%5 == 0 {
				done, failed = 0, 1
			}
			if _, err := sc.db.AddProgress(sc.ctx, v.ActionID, done, failed); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	a, err := sc.eng.GetInstanceAction(sc.ctx, "tenantT", v.UUID, v.ActionID)
	if err != nil || a.Tasks != 50 || a.Done != 40 || a.Failed != 10 {
		t.Fatalf("counters = %d tasks %d done %d failed, %v", a.Tasks, a.Done, a.Failed, err)
	}
}

// A CREATE waiting for its local networks sleeps until run_after: a
// network reported with a new status makes the waiting CREATE of its VLD's
// link due at once (the NOTIFY alone would not run it before run_after).
// A claimed CREATE is its worker's, the other VLDs' CREATEs keep waiting,
// and a report that does not change the status moves nothing.
func TestUpdateNetworkMakesWaitingCreateDue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		claimed bool
		update  engine.NetworkUpdate
		due     bool
	}{
		{"status changes", false, engine.NetworkUpdate{Status: ptr("ACTIVE")}, true},
		{"claimed", true, engine.NetworkUpdate{Status: ptr("ACTIVE")}, false},
		{"status unchanged", false, engine.NetworkUpdate{Status: ptr("BUILD"), EncapsulationID: ptr(402)}, false},
	}
	sc := newScenario(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			vld, other := uuid.NewString(), uuid.NewString()
			name := fmt.Sprintf("ns%d", i)
			v, err := sc.eng.CreateInstance(sc.ctx, "tenantT", engine.InstanceInput{Name: name, Networks: testfactory.Nets("", []string{vld, other}, "dcA", "dcB")})
			if err != nil {
				t.Fatal(err)
			}
			claimedBy := map[bool]*string{true: ptr("worker-1")}[c.claimed]
			sc.exec(t, `UPDATE vim_wim_actions SET run_after = now() + interval '1 hour', claimed_by = $2,
				claim_expires_at = CASE WHEN $2::text IS NULL THEN NULL ELSE now() + interval '1 minute' END
				WHERE instance_action_id = $1`, v.ActionID, claimedBy)
			var net wimro.InstanceNet
			for _, n := range v.Networks {
				if *n.SceNetID == vld {
					net = n
				}
			}
			if _, err := sc.eng.UpdateNetwork(sc.ctx, "tenantT", name, net.UUID, c.update); err != nil {
				t.Fatal(err)
			}
			for _, l := range v.WANLinks {
				var due bool
				var owner *string
				if err := sc.db.Pool().QueryRow(sc.ctx, `SELECT run_after <= now(), claimed_by FROM vim_wim_actions
					WHERE item_id = $1 AND action = 'CREATE'`, l.UUID).Scan(&due, &owner); err != nil {
					t.Fatal(err)
				}
				want := c.due && *l.SceNetID == vld
				if due != want || (owner == nil) != (claimedBy == nil) {
					t.Errorf("CREATE of the link of VLD %s: due %v (want %v), claimed by %v", *l.SceNetID, due, want, owner)
				}
			}
		})
	}
}

// An instance action read while its tasks finish is one state: its
// counters count exactly the tasks it shows DONE. Read apart, an outcome
// committed between the counters and the tasks showed every task DONE
// beside a counter one short (seen in the end-to-end tests).
func TestInstanceActionReadIsOneState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sc := b.Scenario(t, "t0")
	const links = 60
	v := b.Instance(t, "t0", "ns", testfactory.Nets(wimro.NetActive, testfactory.VLDs(links), "dcA", "dcB"))
	lease, err := b.db.AcquireLeases(b.ctx, "P", []string{sc.Account.UUID}, time.Minute)
	if err != nil || len(lease) != 1 {
		t.Fatalf("lease: %v, %v", lease, err)
	}
	done := make(chan error, 1)
	go func() {
		// The completer's side: one outcome per statement, each counting its
		// task DONE in the same statement.
		for i := 0; ; i++ {
			res, err := b.db.ClaimDue(b.ctx, persistence.ClaimRequest{Owner: "P", Claim: fmt.Sprintf("P#%d", i), TTL: time.Minute, Parallel: 1, Limit: 1})
			if err != nil || len(res.Claimed) == 0 {
				done <- err
				return
			}
			c := res.Claimed[0]
			errs, err := b.db.FinishActions(b.ctx, []persistence.Finished{{Action: c.Action, Lease: lease[0], Outcome: wimro.Outcome{Status: wimro.ActionDone, Done: 1}}})
			if err == nil {
				err = errs[0]
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	reads := 0
	for {
		a, err := b.eng.GetInstanceAction(b.ctx, "t0", v.UUID, v.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		shown := 0
		for _, task := range a.VimActions {
			if task.Status == wimro.ActionDone {
				shown++
			}
		}
		if a.Done != shown {
			t.Fatalf("read %d: the counter says %d done, the tasks show %d DONE", reads, a.Done, shown)
		}
		if shown == links {
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// An instance is read in one snapshot: while it is deleted, a read shows
// it whole (its networks and links) or not at all. Read in three
// statements, a delete committing between them showed the instance with
// no networks or no links, a state it never had.
func TestInstanceReadIsOneState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Scenario(t, "t0")
	for i := range 20 {
		v := b.Instance(t, "t0", fmt.Sprintf("ns%d", i), testfactory.Nets(wimro.NetActive, testfactory.VLDs(2), "dcA", "dcB"))
		nets, links := len(v.Networks), len(v.WANLinks)
		if nets == 0 || links == 0 {
			t.Fatalf("created %d networks, %d links", nets, links)
		}
		readWhileDeleted(t, func() error {
			got, err := b.eng.GetInstance(b.ctx, "t0", v.UUID)
			if err == nil && (len(got.Networks) != nets || len(got.WANLinks) != links) {
				return fmt.Errorf("instance %d: %d networks and %d links, created with %d and %d", i, len(got.Networks), len(got.WANLinks), nets, links)
			}
			return err
		}, func() error {
			_, _, err := b.eng.DeleteInstance(b.ctx, "t0", v.UUID)
			return err
		})
	}
}
