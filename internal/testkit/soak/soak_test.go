package soak

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro"
)

var (
	durationFlag = flag.Duration("soak.duration", 3*time.Minute, "how long the load runs under faults (make soak: DURATION)")
	seedFlag     = flag.Int64("soak.seed", 0, "seed of the fault schedule; 0 draws one from the clock (make soak: SEED)")
	faultsFlag   = flag.String("soak.faults", "", "the kinds of fault injected, comma-separated; empty: all; none: the load alone (make soak: FAULTS)")
)

// TestSoak runs the soak described in the package comment.
func TestSoak(t *testing.T) {
	t.Parallel()
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_000
	}
	t.Logf("soak: seed %d, duration %v (replay: make soak SEED=%d DURATION=%v)", seed, *durationFlag, seed, *durationFlag)
	sched, err := newSchedule(seed, *faultsFlag)
	if err != nil {
		t.Fatalf("-soak.faults: %v", err)
	}
	h := newHarness(t, seed)
	ctx := t.Context()

	h.settle(ctx, "the cluster owns every account before the load")
	h.quiesce()
	base := h.scrape(ctx)
	h.log.add("baseline: %s", base)

	stop := make(chan struct{})
	load := h.runLoad(ctx, stop)
	began := time.Now()
	end := began.Add(*durationFlag)
	for {
		p := sched.next()
		wait(ctx, p.gap)
		if !time.Now().Before(end) || ctx.Err() != nil {
			break
		}
		if p.kind == "" {
			continue
		}
		rec := h.inject(ctx, p)
		h.recover(ctx, &rec)
		h.faults = append(h.faults, rec)
		h.checkWriters("after " + p.kind)
	}
	close(stop)
	h.log.add("load stops after %v; %d faults", time.Since(began).Round(time.Second), len(h.faults))
	load.Wait()
	h.drain(ctx)
	h.finalChecks(ctx, base)
	t.Log("\n" + h.table(time.Since(began)))
	for _, v := range h.bad.list() {
		t.Error(v)
	}
}

// settle waits until the cluster is whole (every member ready, every
// account owned).
func (h *harness) settle(ctx context.Context, what string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	why := ""
	if !poll(ctx, 250*time.Millisecond, func() bool {
		var ok bool
		ok, why = h.whole(ctx)
		return ok
	}) {
		h.t.Fatalf("soak: %s: %s", what, why)
	}
}

// checkWriters checks the controllers' logs so far (see writers).
func (h *harness) checkWriters(when string) {
	overlaps, late, _ := h.writers()
	for _, o := range overlaps {
		h.bad.add("%s: overlapping writers: %s", when, o)
	}
	for _, l := range late {
		h.bad.add("%s: late write: %s", when, l)
	}
}

// drain deletes every instance left (those whose create or delete answer
// was lost) and waits until no action is unfinished and the cluster is
// whole.
func (h *harness) drain(ctx context.Context) {
	h.t.Helper()
	dctx, cancel := context.WithTimeout(ctx, actionWait)
	defer cancel()
	for _, tn := range h.tenants {
		var list struct {
			Instances []wimro.Instance `json:"instances"`
		}
		status, text, err := h.retry(dctx, "GET", "/openmano/"+tn.name+"/instances", nil, &list)
		if err != nil || status != http.StatusOK {
			h.bad.add("drain: instances of %s: %d %s %v", tn.name, status, text, err)
			continue
		}
		for _, in := range list.Instances {
			var del struct {
				ActionID string `json:"action_id"`
			}
			status, text, err := h.retry(dctx, "DELETE", "/openmano/"+tn.name+"/instances/"+in.UUID, nil, &del)
			if err != nil || status >= 300 {
				h.bad.add("drain: delete %s/%s: %d %s %v", tn.name, in.UUID, status, text, err)
				continue
			}
			h.log.add("drain: deleting %s/%s (%s)", tn.name, in.Name, in.UUID)
			h.load.start(trackedAction{tenant: tn.name, instance: in.UUID, action: del.ActionID, kind: wimro.ActionDelete})
			h.waitAction(dctx, tn, in.UUID, del.ActionID, wimro.ActionDelete)
		}
	}
	var unfinished int
	var err error
	if !poll(dctx, 500*time.Millisecond, func() bool {
		err = h.db.QueryRow(dctx, `SELECT count(*) FROM vim_wim_actions WHERE status NOT IN ('DONE', 'FAILED', 'SUPERSEDED', 'CANCELLED', 'ABANDONED')`).Scan(&unfinished)
		return err == nil && unfinished == 0
	}) {
		h.bad.add("drain: %d actions unfinished after %v (%v)", unfinished, actionWait, err)
		return
	}
	h.settle(ctx, "the cluster is whole after the drain")
	h.log.add("drained: no action unfinished, cluster whole")
}

// finalChecks are the exact checks once the load stopped and every fault
// healed.
func (h *harness) finalChecks(ctx context.Context, base procStats) {
	// Every action ended DONE or FAILED (SUPERSEDED counts as done), no
	// DELETE failed, none was cancelled or abandoned (no operator here).
	rows, err := h.db.Query(ctx, `SELECT action, status, count(*), coalesce(min(error_msg), '') FROM vim_wim_actions GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		h.bad.add("final: actions: %v", err)
	} else {
		for rows.Next() {
			var action, status, msg string
			var n int
			if err := rows.Scan(&action, &status, &n, &msg); err != nil {
				h.bad.add("final: actions: %v", err)
				break
			}
			h.log.add("final: %d %s %s", n, action, status)
			switch {
			case status != wimro.ActionDone && status != wimro.ActionFailed && status != wimro.ActionSuperseded:
				h.bad.add("final: %d %s actions ended %s", n, action, status)
			case action == wimro.ActionDelete && status == wimro.ActionFailed:
				h.bad.add("final: %d DELETE actions FAILED (e.g. %q)", n, msg)
			}
		}
		rows.Close()
	}
	// Every instance action's counters equal its tasks.
	h.load.mu.Lock()
	tracked := slices.Clone(h.load.tracked)
	h.load.mu.Unlock()
	byName := map[string]*tenant{}
	for _, tn := range h.tenants {
		byName[tn.name] = tn
	}
	for _, a := range tracked {
		v, err := h.getAction(ctx, byName[a.tenant], a.instance, a.action)
		if err != nil {
			h.bad.add("final: %s action %s: %v", a.kind, a.action, err)
			continue
		}
		done, failed := 0, 0
		for _, task := range v.List {
			switch task.Status {
			case wimro.ActionDone, wimro.ActionSuperseded:
				done++
			case wimro.ActionFailed:
				failed++
			}
		}
		if v.Tasks != len(v.List) || v.Done != done || v.Failed != failed || done+failed != v.Tasks {
			h.bad.add("final: %s action %s counts tasks %d done %d failed %d; its tasks: %d, %d done, %d failed",
				a.kind, a.action, v.Tasks, v.Done, v.Failed, len(v.List), done, failed)
		}
	}
	// No controller holds anything after the last delete.
	for _, c := range h.ctrls {
		for link, n := range c.services() {
			h.bad.add("final: orphan on %s: %d service(s) of link %s", c.wim, n, link)
		}
		for _, l := range c.leftovers() {
			h.bad.add("final: orphan on %s: %s", c.wim, l)
		}
	}
	h.checkWriters("final")
	h.checkBaseline(ctx, base)
}

// procStats are the goroutines and heap of each member, from /metrics.
type procStats map[string][2]float64 // member -> goroutines, heap in use (bytes)

func (s procStats) String() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(s)) {
		fmt.Fprintf(&b, "%s %.0f goroutines %.1f MiB heap; ", id, s[id][0], s[id][1]/(1<<20))
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// scrape reads every member's /metrics.
func (h *harness) scrape(ctx context.Context) procStats {
	out := procStats{}
	for _, m := range h.members {
		addr, ok := m.upAddr()
		if !ok {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, _ := http.NewRequestWithContext(rctx, "GET", "http://"+addr+"/metrics", nil)
		resp, err := h.client.Do(req)
		if err != nil {
			cancel()
			continue
		}
		var g, heap float64
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			name, val, _ := strings.Cut(sc.Text(), " ")
			switch name {
			case "wimro_go_goroutines":
				g, _ = strconv.ParseFloat(val, 64)
			case "wimro_go_memstats_heap_inuse_bytes":
				heap, _ = strconv.ParseFloat(val, 64)
			}
		}
		resp.Body.Close()
		cancel()
		out[m.id] = [2]float64{g, heap}
	}
	return out
}

// Tolerances of the return to the baseline. Both the baseline and the
// final figures are read with the harness's and the controllers'
// connections closed (quiesce), so idle keep-alive connections count in
// neither.
//   - goroutines, summed over the members: the actions running are
//     goroutines wherever their account is owned, and the accounts move
//     between members with the faults, so only the sum must come back; 10% and 10 a
//     member allow what idles for a while by design (a pooled database
//     connection's health check, a connection being closed). A leak of
//     one goroutine per action (thousands a run) exceeds it at once; one
//     per fault only past about 50 faults (a 30-minute run).
//   - heap in use, per member: the Go collector lets the heap grow to
//     twice the live heap before it collects (GOGC 100), a baseline read
//     right after a collection is as low as the live heap, and the
//     database pool grows under load (its connections' statement caches):
//     twice the baseline (at least 8 MiB) plus 16 MiB. A leak of 20 KiB
//     per action exceeds it within a 10-minute run (some 1,500 actions
//     a member); smaller leaks need a longer soak to show.
const (
	goroutineSlack   = 1.10
	goroutinePerProc = 10
	heapSlack        = 2.0
	heapFloor        = 8 << 20
	heapExtra        = 16 << 20
)

// quiesce closes the harness's idle API connections and every client
// connection of the controllers, so that their goroutines in the members
// end before a reading of the baseline.
func (h *harness) quiesce() {
	h.client.CloseIdleConnections()
	for _, c := range h.ctrls {
		c.srv.CloseClientConnections()
	}
}

// checkBaseline waits, up to two minutes, for the members' goroutines and
// heap to come back within the tolerances of their baseline.
func (h *harness) checkBaseline(ctx context.Context, base procStats) {
	h.quiesce()
	var baseG float64
	for _, v := range base {
		baseG += v[0]
	}
	limitG := baseG*goroutineSlack + goroutinePerProc*float64(len(base))
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var now procStats
	why := ""
	back := poll(ctx, time.Second, func() bool {
		now = h.scrape(ctx)
		var g float64
		why = ""
		for id, v := range now {
			g += v[0]
			limitHeap := max(base[id][1], heapFloor)*heapSlack + heapExtra
			if v[1] > limitHeap {
				why += fmt.Sprintf("%s heap %.1f MiB > %.1f MiB; ", id, v[1]/(1<<20), limitHeap/(1<<20))
			}
		}
		if len(now) != len(h.members) {
			why += fmt.Sprintf("%d of %d members answered /metrics; ", len(now), len(h.members))
		}
		if g > limitG {
			why += fmt.Sprintf("%.0f goroutines > %.0f (baseline %.0f); ", g, limitG, baseG)
		}
		return why == ""
	})
	if !back {
		h.bad.add("final: not back to the baseline (%s) after 2m: %s (baseline: %s)", now, why, base)
		return
	}
	h.log.add("back to baseline: %s", now)
}
