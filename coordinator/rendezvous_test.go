package coordinator

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
)

func testAccounts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "account-%d", i)).String()
	}
	return out
}

func testMembers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("wimd-%d:1234:abcd%04d", i, i)
	}
	return out
}

// ownerOf inverts owners' answer.
func ownerOf(byMember map[string][]string) map[string]string {
	out := map[string]string{}
	for m, accts := range byMember {
		for _, a := range accts {
			out[a] = m
		}
	}
	return out
}

func TestOwnersBalance(t *testing.T) {
	t.Parallel()
	accounts := testAccounts(10_000)
	for _, n := range []int{1, 2, 3, 4, 7} {
		t.Run(fmt.Sprint(n, " members"), func(t *testing.T) {
			t.Parallel()
			got := owners(testMembers(n), accounts)
			if len(got) != n {
				t.Fatalf("%d members in the answer, want %d", len(got), n)
			}
			even := float64(len(accounts)) / float64(n)
			total := 0
			for m, accts := range got {
				total += len(accts)
				if dev := (float64(len(accts)) - even) / even; dev > 0.06 || dev < -0.06 {
					t.Errorf("%s owns %d accounts, %.1f%% off an even share of %.0f", m, len(accts), 100*dev, even)
				}
			}
			if total != len(accounts) {
				t.Fatalf("%d accounts owned, want %d", total, len(accounts))
			}
		})
	}
}

func TestOwnersMinimalMovement(t *testing.T) {
	t.Parallel()
	accounts := testAccounts(10_000)
	members := testMembers(5)
	tests := []struct {
		name          string
		before, after []string
		// low and high bound the share of accounts that move.
		low, high float64
		// to, when set, is the only member accounts may move to; from,
		// the only member they may move from.
		to, from string
	}{
		{name: "3 to 4", before: members[:3], after: members[:4], low: 0.22, high: 0.28, to: members[3]},
		{name: "4 to 5", before: members[:4], after: members[:5], low: 0.17, high: 0.23, to: members[4]},
		{name: "4 to 3", before: members[:4], after: members[:3], low: 0.22, high: 0.28, from: members[3]},
		{name: "middle member leaves", before: members[:4], after: []string{members[0], members[2], members[3]}, low: 0.22, high: 0.28, from: members[1]},
		{name: "same members", before: members[:3], after: members[:3]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := ownerOf(owners(tc.before, accounts))
			after := ownerOf(owners(tc.after, accounts))
			moved := 0
			for _, a := range accounts {
				if before[a] == after[a] {
					continue
				}
				moved++
				if tc.to != "" && after[a] != tc.to {
					t.Fatalf("account %s moved %s → %s, not to the new member %s", a, before[a], after[a], tc.to)
				}
				if tc.from != "" && before[a] != tc.from {
					t.Fatalf("account %s moved %s → %s, but only %s's accounts should move", a, before[a], after[a], tc.from)
				}
			}
			share := float64(moved) / float64(len(accounts))
			if share < tc.low || share > tc.high {
				t.Fatalf("%d accounts moved (%.1f%%), want between %.0f%% and %.0f%%", moved, 100*share, 100*tc.low, 100*tc.high)
			}
		})
	}
}

func TestOwnersDeterministic(t *testing.T) {
	t.Parallel()
	accounts := testAccounts(1000)
	members := testMembers(4)
	want := owners(members, accounts)
	reversed := slices.Clone(members)
	slices.Reverse(reversed)
	shuffled := slices.Clone(accounts)
	slices.Reverse(shuffled)
	got := owners(reversed, shuffled)
	for _, m := range members {
		if !slices.Equal(got[m], want[m]) {
			t.Fatalf("%s: the answer depends on the order of the lists", m)
		}
	}
	if len(owners(nil, accounts)) != 0 {
		t.Fatal("no member must own nothing")
	}
	if got := owners(members, nil); len(got) != len(members) {
		t.Fatalf("with no account every member still has an (empty) entry: %v", got)
	}
}
