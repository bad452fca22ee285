package soak

import (
	"slices"
	"testing"
)

// The same seed gives the same faults; a narrowed run keeps the seed's
// sequence (other kinds become quiet gaps); every kind comes once in each
// round of ten.
func TestScheduleReplays(t *testing.T) {
	t.Parallel()
	draw := func(seed int64, kinds string, n int) []faultPlan {
		s, err := newSchedule(seed, kinds)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]faultPlan, n)
		for i := range out {
			out[i] = s.next()
		}
		return out
	}
	a, b := draw(42, "", 30), draw(42, "", 30)
	if !slices.Equal(a, b) {
		t.Fatalf("seed 42 drew two schedules:\n%v\n%v", a, b)
	}
	if slices.Equal(a, draw(43, "", 30)) {
		t.Fatal("seeds 42 and 43 drew the same schedule")
	}
	for round := range 3 {
		var kinds []string
		for _, p := range a[round*len(faultKinds) : (round+1)*len(faultKinds)] {
			kinds = append(kinds, p.kind)
		}
		slices.Sort(kinds)
		want := slices.Sorted(slices.Values(faultKinds))
		if !slices.Equal(kinds, want) {
			t.Fatalf("round %d drew %v, want each kind once", round, kinds)
		}
	}
	narrow := draw(42, "kill,ctrl-drop", 30)
	for i, p := range narrow {
		want := a[i]
		if want.kind != faultKill && want.kind != faultCtrlDropReply {
			want.kind, want.with = "", ""
		} else if want.with != "" && want.with != faultCtrlDropReply {
			want.with = ""
		}
		if p != want {
			t.Fatalf("plan %d of the narrowed schedule = %+v, want %+v", i, p, want)
		}
	}
	if _, err := newSchedule(1, "kill,nap"); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	if none := draw(42, "none", 10); slices.ContainsFunc(none, func(p faultPlan) bool { return p.kind != "" }) {
		t.Fatalf("none drew faults: %v", none)
	}
}
