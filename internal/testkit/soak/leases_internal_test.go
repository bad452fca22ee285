package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/emulators/emulator"
)

// logged is a controller's request log as given, for the checker's test.
type logged struct {
	emulator.Recorder
	reqs []emulator.Request
}

func (l *logged) Requests() []emulator.Request { return l.reqs }

// The checker of the controllers' logs finds two processes writing one
// account at overlapping times, and a process writing while another held
// the account's lease before and after its request; it lets a handover
// (one writer after the other, each under its lease) and reads pass.
func TestWritersSeeOverlapsAndLateWrites(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 17, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	req := func(method, ua string, from, to int) emulator.Request {
		return emulator.Request{Method: method, Path: "/x", User: "u00", UserAgent: "wimro/dev (" + ua + ")", Status: 200, Start: at(from), End: at(to)}
	}
	// w1 holds the lease (epoch 1) until 1000 ms, w2 (epoch 2) from 2000.
	leases := []leaseSeg{
		{owner: "w1#a", epoch: 1, live: true, seenBy: at(0), seenTo: at(1000)},
		{owner: "w1#a", epoch: 1, live: false, seenBy: at(1200), seenTo: at(1800)},
		{owner: "w2#b", epoch: 2, live: true, seenBy: at(2000), seenTo: at(9000)},
	}
	tests := []struct {
		name           string
		reqs           []emulator.Request
		overlaps, late int
	}{
		{"handover", []emulator.Request{req("PUT", "w1", 100, 300), req("PUT", "w2", 2500, 2600)}, 0, 0},
		{"reads are not writes", []emulator.Request{req("GET", "w1", 2500, 2600), req("PUT", "w2", 2500, 2600)}, 0, 0},
		{"overlap, by a process without the lease", []emulator.Request{req("PUT", "w1", 100, 300), req("DELETE", "w2", 200, 250)}, 1, 1},
		{"late write", []emulator.Request{req("PUT", "w2", 2500, 2600), req("PUT", "w1", 3000, 3100)}, 0, 1},
		{"the lease's edge is not late", []emulator.Request{req("PUT", "w1", 1900, 2100)}, 0, 0},
		{"client gone", []emulator.Request{req("PUT", "w1", 100, 300), {Method: "PUT", User: "u00", UserAgent: "wimro/dev (w2)",
			Status: emulator.StatusClientClosed, Start: at(200), End: at(250)}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tn := &tenant{name: "t00", user: "u00", account: "acct-0"}
			h := &harness{log: &eventLog{begin: t0}, byUser: map[string]*tenant{"u00": tn},
				ctrls:  []*controller{{wim: "wan", faults: &logged{reqs: tt.reqs}}},
				leases: &leaseWatch{byAccount: map[string][]leaseSeg{"acct-0": leases}}}
			h.bad = &violations{log: h.log}
			overlaps, late, _ := h.writers()
			if len(overlaps) != tt.overlaps || len(late) != tt.late {
				t.Fatalf("overlaps %q, late %q; want %d and %d", overlaps, late, tt.overlaps, tt.late)
			}
			if v := h.bad.list(); len(v) != 0 {
				t.Fatalf("violations: %s", strings.Join(v, "; "))
			}
		})
	}
}
