package soak

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// leaseSeg is one stretch of polls that saw an account's lease the same.
// seenBy is the end of the first such poll (the state held at or before
// it), seenFrom the start of the last (held at or after it).
type leaseSeg struct {
	owner          string
	epoch          int64
	live           bool
	seenBy, seenTo time.Time
}

// leaseWatch polls the account leases (owner, epoch, expiry) while the
// soak runs, to hold the controllers' logs against them.
type leaseWatch struct {
	mu        sync.Mutex
	byAccount map[string][]leaseSeg
	polls     int
}

const leasePoll = 200 * time.Millisecond

func watchLeases(ctx context.Context, h *harness) *leaseWatch {
	w := &leaseWatch{byAccount: map[string][]leaseSeg{}}
	go func() {
		tick := time.NewTicker(leasePoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			w.poll(ctx, h)
		}
	}()
	return w
}

func (w *leaseWatch) poll(ctx context.Context, h *harness) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	rows, err := h.db.Query(ctx, `SELECT l.account_id::text, coalesce(l.owner, ''), l.epoch, COALESCE(p.expires_at > now(), false)
		FROM wim_account_leases l LEFT JOIN wim_process_leases p ON p.owner = l.owner AND p.epoch = l.proc_epoch`)
	if err != nil {
		return // PostgreSQL away: a gap in the watch
	}
	type row struct {
		account, owner string
		epoch          int64
		live           bool
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.account, &r.owner, &r.epoch, &r.live); err != nil {
			rows.Close()
			return
		}
		got = append(got, r)
	}
	rows.Close()
	if rows.Err() != nil {
		return
	}
	end := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	for _, r := range got {
		segs := w.byAccount[r.account]
		if n := len(segs); n > 0 && segs[n-1].owner == r.owner && segs[n-1].epoch == r.epoch && segs[n-1].live == r.live {
			segs[n-1].seenTo = start
			continue
		}
		w.byAccount[r.account] = append(segs, leaseSeg{owner: r.owner, epoch: r.epoch, live: r.live, seenBy: end, seenTo: start})
	}
}

// around returns the lease of account as last seen at or before t, and
// as first seen at or after u.
func (w *leaseWatch) around(account string, t, u time.Time) (before, after leaseSeg, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	segs := w.byAccount[account]
	bi := sort.Search(len(segs), func(i int) bool { return segs[i].seenBy.After(t) }) - 1
	ai := sort.Search(len(segs), func(i int) bool { return !segs[i].seenTo.Before(u) })
	if bi < 0 || ai >= len(segs) {
		return leaseSeg{}, leaseSeg{}, false
	}
	return segs[bi], segs[ai], true
}

// userAgentID reads the instance id out of wimd's User-Agent
// ("wimro/<version> (<instance id>)").
var userAgentID = regexp.MustCompile(`\(([^()]+)\)\s*$`)

func agentID(ua string) string {
	if m := userAgentID.FindStringSubmatch(ua); m != nil {
		return m[1]
	}
	return ua
}

// ownerID is the instance id of a lease owner ("<instance id>#<nonce>").
func ownerID(owner string) string {
	id, _, _ := strings.Cut(owner, "#")
	return id
}

// mutation is one request that changed (or tried to change) a
// controller for an account.
type mutation struct {
	ctrl, account, agent string
	req                  emulator.Request
}

// mutations returns every mutation the controllers logged, per account,
// in arrival order; a request whose client gave up before it was handled
// changed nothing and is left out.
func (h *harness) mutations() map[string][]mutation {
	out := map[string][]mutation{}
	for _, c := range h.ctrls {
		for _, r := range c.faults.Requests() {
			if !emulator.IsMutation(r.Method) || r.Status == emulator.StatusClientClosed {
				continue
			}
			tn := h.byUser[r.User]
			if tn == nil {
				h.bad.add("%s: a %s %s by %q for no known account (user %q)", c.wim, r.Method, r.Path, r.UserAgent, r.User)
				continue
			}
			out[tn.account] = append(out[tn.account], mutation{ctrl: c.wim, account: tn.account, agent: agentID(r.UserAgent), req: r})
		}
	}
	for _, ms := range out {
		slices.SortFunc(ms, func(a, b mutation) int { return a.req.Start.Compare(b.req.Start) })
	}
	return out
}

// writers checks the controllers' logs: overlaps are mutations of one
// account by two processes at overlapping times; late writes are
// mutations by a process while the account's lease was held, before and
// after the request, by another process under one epoch.
func (h *harness) writers() (overlaps, late []string, total int) {
	for account, ms := range h.mutations() {
		total += len(ms)
		var last mutation
		for _, m := range ms {
			if last.agent != "" && m.agent != last.agent && m.req.Start.Before(last.req.End) {
				overlaps = append(overlaps, fmt.Sprintf("account %s on %s: %s %s by %s until %s, and %s %s by %s from %s",
					account, m.ctrl, last.req.Method, last.req.Path, last.agent, last.req.End.Format("15:04:05.000"),
					m.req.Method, m.req.Path, m.agent, m.req.Start.Format("15:04:05.000")))
			}
			if m.req.End.After(last.req.End) || last.agent == "" {
				last = m
			}
			before, after, ok := h.leases.around(account, m.req.Start, m.req.End)
			if ok && before.live && after.live && before.owner == after.owner && before.epoch == after.epoch && ownerID(before.owner) != m.agent {
				late = append(late, fmt.Sprintf("account %s on %s: %s %s by %s at %s while %s held its lease (epoch %d)",
					account, m.ctrl, m.req.Method, m.req.Path, m.agent, m.req.Start.Format("15:04:05.000"), before.owner, before.epoch))
			}
		}
	}
	sort.Strings(overlaps)
	sort.Strings(late)
	return overlaps, late, total
}
