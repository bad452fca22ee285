package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
)

// loadStats counts what the load did, and which instance actions it is
// waiting for (a fault has recovered once those finished).
type loadStats struct {
	mu                                 sync.Mutex
	seq                                int
	instances, edits, ambiguous        int
	refused                            int // creates answered 503 (PostgreSQL away) and not written
	creates, createsDone, createsFail  int // tasks
	deletes, deletesDone, deletesFail  int // tasks
	activeChecked, duplicates, missing int
	pending                            map[string]time.Time // instance action -> since
	finished                           map[string]time.Time // instance action -> when it finished
	tracked                            []trackedAction
}

// trackedAction is an instance action of the load, checked again at the
// end (its counters against its tasks).
type trackedAction struct {
	tenant, instance, action, kind string
}

func (l *loadStats) start(a trackedAction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending, l.finished = map[string]time.Time{}, map[string]time.Time{}
	}
	l.pending[a.action] = time.Now()
	l.tracked = append(l.tracked, a)
}

func (l *loadStats) finish(action string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, action)
	l.finished[action] = time.Now()
}

// pendingNow returns the instance actions not finished yet.
func (l *loadStats) pendingNow() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.pending))
	for a := range l.pending {
		out = append(out, a)
	}
	return out
}

// finishedAt reports when action finished (ok false while it has not).
func (l *loadStats) finishedAt(action string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.finished[action]
	return at, ok
}

// actionView is the API's view of an instance action.
type actionView struct {
	Tasks  int            `json:"number_tasks"`
	Done   int            `json:"number_done"`
	Failed int            `json:"number_failed"`
	List   []wimro.Action `json:"vim_wim_actions"`
}

// instanceCreated is the answer to an instance's creation: openmano's
// flat instance.
type instanceCreated struct {
	UUID     string              `json:"uuid"`
	ActionID string              `json:"action_id"`
	Networks []wimro.InstanceNet `json:"networks"`
}

// runLoad runs the load workers until stop is closed; each finishes the
// instance it is working on (within ctx) before it returns.
func (h *harness) runLoad(ctx context.Context, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range loadWorkers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				h.lifecycle(ctx)
			}
		})
	}
	return &wg
}

// actionWait bounds the wait for one instance action: a CREATE retried
// through a long controller fault backs off up to 2 minutes between
// attempts.
const actionWait = 10 * time.Minute

// lifecycle is one instance's life as an NFVO drives it: created with its
// networks BUILD, sometimes edited (a network's VLAN changed), its
// networks reported ACTIVE, waited for, its ACTIVE links checked on the
// controller, held a moment, deleted and waited for.
func (h *harness) lifecycle(ctx context.Context) {
	tn := h.tenants[rand.IntN(len(h.tenants))]
	vlds := 1 + rand.IntN(2)
	var vlans []int
	for range vlds {
		v, ok := h.vlans.get()
		if !ok {
			h.vlans.put(vlans...)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			return
		}
		vlans = append(vlans, v)
	}
	h.load.mu.Lock()
	h.load.seq++
	name := fmt.Sprintf("soak-%d", h.load.seq)
	h.load.mu.Unlock()
	var nets []any
	for _, v := range vlans {
		vld := uuid.NewString()
		for _, dc := range []string{"dcA", "dcB"} {
			nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "BUILD",
				"physical_network": tn.ctrl.physnet(), "encapsulation_type": "vlan", "encapsulation_id": v})
		}
	}
	base := "/openmano/" + tn.name + "/instances"
	var created instanceCreated
	status, text, err := h.do(ctx, "POST", base, map[string]any{"instance": map[string]any{"name": name, "networks": nets}}, &created)
	switch {
	case err == nil && status == http.StatusServiceUnavailable && !h.exists(ctx, tn, name):
		// Refused (PostgreSQL away) and not written: its VLANs are free
		// again. A pause, as an NFVO would make, before the next try.
		h.load.mu.Lock()
		h.load.refused++
		h.load.mu.Unlock()
		h.vlans.put(vlans...)
		wait(ctx, time.Second)
		return
	case err != nil || status == http.StatusServiceUnavailable:
		// The create may or may not have been written (no answer: a
		// stopped process may still write it): its VLANs stay taken, and
		// the drain deletes whatever instance exists.
		h.load.mu.Lock()
		h.load.ambiguous++
		h.load.mu.Unlock()
		h.log.add("create %s/%s: no clear answer (%d %v); left for the drain", tn.name, name, status, err)
		return
	case status >= 300:
		h.bad.add("create %s/%s: %d %s", tn.name, name, status, text)
		h.vlans.put(vlans...)
		return
	}
	inst := created
	if inst.UUID == "" || inst.ActionID == "" {
		// An answer the harness cannot follow: say so at once rather than
		// wait on an action it cannot name.
		h.bad.add("create %s/%s: %d answer without uuid or action_id: %s", tn.name, name, status, text)
		return
	}
	h.load.mu.Lock()
	h.load.instances++
	h.load.mu.Unlock()
	h.load.start(trackedAction{tenant: tn.name, instance: inst.UUID, action: inst.ActionID, kind: wimro.ActionCreate})

	// One instance in four is edited before its networks are up: the
	// first VLD moves to another VLAN.
	netURL := func(n wimro.InstanceNet) string { return base + "/" + inst.UUID + "/networks/" + n.UUID }
	if rand.IntN(4) == 0 && len(inst.Networks) > 0 {
		if v, ok := h.vlans.get(); ok {
			vlans = append(vlans, v)
			first := inst.Networks[0].SceNetID
			for _, n := range inst.Networks {
				if n.SceNetID != nil && first != nil && *n.SceNetID == *first {
					h.put(ctx, netURL(n), map[string]any{"network": map[string]any{"encapsulation_id": v}})
				}
			}
			h.load.mu.Lock()
			h.load.edits++
			h.load.mu.Unlock()
		}
	}
	for _, n := range inst.Networks {
		h.put(ctx, netURL(n), map[string]any{"network": map[string]any{"status": "ACTIVE"}})
	}
	if h.waitAction(ctx, tn, inst.UUID, inst.ActionID, wimro.ActionCreate) {
		h.checkActiveLinks(ctx, tn, inst.UUID)
	}

	select {
	case <-ctx.Done():
		return
	case <-time.After(time.Duration(rand.IntN(2000)) * time.Millisecond):
	}
	var del struct {
		ActionID   string `json:"action_id"`
		InstanceID string `json:"instance_id"`
	}
	dctx, cancel := context.WithTimeout(ctx, actionWait)
	defer cancel()
	status, text, err = h.retry(dctx, "DELETE", base+"/"+inst.UUID, nil, &del)
	switch {
	case err != nil:
		h.bad.add("delete %s/%s: %v", tn.name, inst.UUID, err)
		return
	case status == http.StatusNotFound:
		// An earlier attempt was written but its answer lost: the
		// drain's final check covers its DELETE.
		h.log.add("delete %s/%s: already deleted (an earlier answer was lost)", tn.name, inst.UUID)
		return
	case status >= 300:
		h.bad.add("delete %s/%s: %d %s", tn.name, inst.UUID, status, text)
		return
	}
	h.load.start(trackedAction{tenant: tn.name, instance: inst.UUID, action: del.ActionID, kind: wimro.ActionDelete})
	if h.waitAction(ctx, tn, inst.UUID, del.ActionID, wimro.ActionDelete) {
		h.vlans.put(vlans...)
	}
}

// exists reports whether tenant tn has an instance named name, asking
// until the API answers; when it cannot tell, it says true (the caller
// then treats the instance as possibly there).
func (h *harness) exists(ctx context.Context, tn *tenant, name string) bool {
	ctx, cancel := context.WithTimeout(ctx, actionWait)
	defer cancel()
	var list struct {
		Instances []wimro.Instance `json:"instances"`
	}
	status, _, err := h.retry(ctx, "GET", "/openmano/"+tn.name+"/instances", nil, &list)
	if err != nil || status != http.StatusOK {
		return true
	}
	for _, in := range list.Instances {
		if in.Name == name {
			h.log.add("create %s/%s: answered 503 but written", tn.name, name)
			return true
		}
	}
	return false
}

// put sends an idempotent PUT until it is answered; anything but a 2xx
// is a violation.
func (h *harness) put(ctx context.Context, path string, body any) {
	ctx, cancel := context.WithTimeout(ctx, actionWait)
	defer cancel()
	status, text, err := h.retry(ctx, "PUT", path, body, nil)
	if err != nil || status >= 300 {
		h.bad.add("PUT %s: %d %s %v", path, status, text, err)
	}
}

// getAction reads an instance action.
func (h *harness) getAction(ctx context.Context, tn *tenant, instance, action string) (actionView, error) {
	var resp struct {
		Actions []actionView `json:"actions"`
	}
	status, text, err := h.retry(ctx, "GET", "/openmano/"+tn.name+"/instances/"+instance+"/action/"+action, nil, &resp)
	if err != nil {
		return actionView{}, err
	}
	if status != http.StatusOK || len(resp.Actions) != 1 {
		return actionView{}, fmt.Errorf("action %s: %d %s", action, status, text)
	}
	return resp.Actions[0], nil
}

// waitAction waits until the instance action has finished and counts its
// tasks; it reports false when it did not finish in time (a violation).
func (h *harness) waitAction(ctx context.Context, tn *tenant, instance, action, kind string) bool {
	ctx, cancel := context.WithTimeout(ctx, actionWait)
	defer cancel()
	var v actionView
	var err error
	finished := poll(ctx, 500*time.Millisecond, func() bool {
		v, err = h.getAction(ctx, tn, instance, action)
		return err == nil && v.Done+v.Failed >= v.Tasks
	})
	if !finished {
		h.bad.add("%s action %s of %s/%s not finished within %v (%+v, %v)", kind, action, tn.name, instance, actionWait, v, err)
		return false
	}
	h.load.finish(action)
	h.countTasks(tn, action, kind, v)
	return true
}

// countTasks adds a finished action's tasks to the statistics; a DELETE
// that failed is a violation (a DELETE retries for ever: wimd gives one
// up only for a permanent error, and the controllers here make none).
func (h *harness) countTasks(tn *tenant, action, kind string, v actionView) {
	h.load.mu.Lock()
	defer h.load.mu.Unlock()
	for _, a := range v.List {
		failed := a.Status == wimro.ActionFailed
		switch kind {
		case wimro.ActionCreate:
			h.load.creates++
			if failed {
				h.load.createsFail++
			} else {
				h.load.createsDone++
			}
		case wimro.ActionDelete:
			h.load.deletes++
			if failed {
				h.load.deletesFail++
			} else {
				h.load.deletesDone++
			}
		}
		if failed && kind == wimro.ActionDelete {
			h.bad.add("DELETE task %s[%d] of %s FAILED: %s", action, a.TaskIndex, tn.name, deref(a.ErrorMsg))
		}
		if failed && kind == wimro.ActionCreate {
			h.log.add("CREATE task %s[%d] of %s FAILED: %s", action, a.TaskIndex, tn.name, deref(a.ErrorMsg))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkActiveLinks checks that every ACTIVE link of the instance has
// exactly one service on its controller (nothing deletes it meanwhile:
// the instance is the harness's).
func (h *harness) checkActiveLinks(ctx context.Context, tn *tenant, instance string) {
	var resp struct {
		Links []wimro.WANLink `json:"wan_links"`
	}
	status, text, err := h.retry(ctx, "GET", "/openmano/"+tn.name+"/instances/"+instance+"/wan_links", nil, &resp)
	if err != nil || status != http.StatusOK {
		h.bad.add("wan_links of %s/%s: %d %s %v", tn.name, instance, status, text, err)
		return
	}
	services := tn.ctrl.services()
	h.load.mu.Lock()
	defer h.load.mu.Unlock()
	for _, l := range resp.Links {
		if l.Status != wimro.LinkActive {
			continue
		}
		h.load.activeChecked++
		switch n := services[l.UUID]; {
		case n == 0:
			h.load.missing++
			h.bad.add("ACTIVE link %s of %s has no service on %s", l.UUID, tn.name, tn.ctrl.wim)
		case n > 1:
			h.load.duplicates++
			h.bad.add("ACTIVE link %s of %s has %d services on %s", l.UUID, tn.name, n, tn.ctrl.wim)
		}
	}
}
