package soak

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// quantile is the nearest-rank q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// table is the soak's report: faults by kind with the time to recover
// from each (from the heal until every member is ready, every account
// owned and every action pending at the heal finished), then what the
// load did and what the checks found.
func (h *harness) table(ran time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: seed %d, %v of load under faults, %d wimd (consul), %d accounts, controllers %s (%s, %v latency) and %s (%s)\n",
		h.seed, ran.Round(time.Second), len(h.members), len(h.tenants),
		h.ctrls[0].wim, h.ctrls[0].typ, h.ctrls[0].latency, h.ctrls[1].wim, h.ctrls[1].typ)
	fmt.Fprintf(&b, "wimd timings: session TTL %v, claim lease %v, leader soak %v; SIGSTOP %v\n\n",
		h.timing.sessionTTL, h.timing.claimLease, h.timing.leaderSoak, h.timing.stopFor())
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "fault\tcount\trecovered\tp50\tp99\tmax\t")
	total := 0
	for _, kind := range faultKinds {
		var ds []time.Duration
		n, ok := 0, 0
		for _, f := range h.faults {
			if f.plan.kind != kind {
				continue
			}
			n++
			if f.ok {
				ok++
				ds = append(ds, f.recovered)
			}
		}
		total += n
		slices.Sort(ds)
		r := func(d time.Duration) string {
			if len(ds) == 0 {
				return "-"
			}
			return d.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\t\n", kind, n, ok, r(quantile(ds, 0.5)), r(quantile(ds, 0.99)), r(quantile(ds, 1)))
	}
	fmt.Fprintf(w, "all\t%d\t\t\t\t\t\n", total)
	w.Flush()
	overlaps, late, writes := h.writers()
	h.load.mu.Lock()
	l := &h.load
	fmt.Fprintf(&b, "\ninstances %d (%d edited; creates refused with 503 while PostgreSQL was away %d, without a clear answer %d); CREATE tasks %d (done %d, failed %d); DELETE tasks %d (done %d, failed %d)\n",
		l.instances, l.edits, l.refused, l.ambiguous, l.creates, l.createsDone, l.createsFail, l.deletes, l.deletesDone, l.deletesFail)
	fmt.Fprintf(&b, "ACTIVE links checked %d: duplicates %d, missing %d\n", l.activeChecked, l.duplicates, l.missing)
	h.load.mu.Unlock()
	orphans := 0
	for _, c := range h.ctrls {
		for _, n := range c.services() {
			orphans += n
		}
		orphans += len(c.leftovers())
	}
	h.api.mu.Lock()
	fmt.Fprintf(&b, "orphans after the last delete %d; controller mutations %d: overlapping writers %d, late writes %d\n", orphans, writes, len(overlaps), len(late))
	fmt.Fprintf(&b, "API requests %d: 503 while PostgreSQL away %d, other 5xx %d; violations %d\n", h.api.requests, h.api.pg503, h.api.unallowed, len(h.bad.list()))
	h.api.mu.Unlock()
	return b.String()
}
