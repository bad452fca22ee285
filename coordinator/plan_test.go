package coordinator

import (
	"reflect"
	"slices"
	"testing"
)

func TestParseAssignments(t *testing.T) {
	t.Parallel()
	k := keys{prefix: "service/wimro"}
	got := k.parseAssignments([]string{
		"service/wimro/assignments/a/",
		"service/wimro/assignments/a/acct-1",
		"service/wimro/assignments/b/acct-2",
		"service/wimro/assignments/b/x/y", // not ours
		"service/wimro/assignments/c",     // not ours
		"service/wimro/leader",            // not ours
	})
	want := assignments{
		"a": {marker: true, accounts: map[string]bool{"acct-1": true}},
		"b": {accounts: map[string]bool{"acct-2": true}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestMakePlan(t *testing.T) {
	t.Parallel()
	cur := func(entries ...string) assignments {
		out := assignments{}
		for i := 0; i < len(entries); i += 2 {
			out.add(entries[i], entries[i+1])
		}
		return out
	}
	tests := []struct {
		name    string
		wanted  map[string][]string
		current assignments
		holders map[string]string
		// departed lists the members gone long enough for their leases
		// not to matter.
		departed []string
		// unknown: the leases could not be read.
		unknown bool
		want    plan
	}{
		{
			name:   "empty cluster: every member is confirmed",
			wanted: map[string][]string{"a": nil, "b": nil},
			want:   plan{markers: []string{"a", "b"}},
		},
		{
			name:    "nothing to do",
			wanted:  map[string][]string{"a": {"1"}, "b": {"2"}},
			current: cur("a", "", "a", "1", "b", "", "b", "2"),
			holders: map[string]string{"1": "b"}, // not read when nothing is to be given
			want:    plan{},
		},
		{
			name:    "new accounts, free leases",
			wanted:  map[string][]string{"a": {"1", "2"}, "b": {"3"}},
			current: cur("a", "", "b", ""),
			want:    plan{assign: []assignment{{"a", "1"}, {"a", "2"}, {"b", "3"}}},
		},
		{
			name:    "move waits while the old owner holds the lease",
			wanted:  map[string][]string{"a": {"1"}, "b": {"2"}, "c": {"3"}},
			current: cur("a", "", "a", "1", "b", "", "b", "2", "b", "3"),
			holders: map[string]string{"1": "a", "2": "b", "3": "b"},
			want:    plan{revoke: []assignment{{"b", "3"}}, markers: []string{"c"}, revoked: 1, pending: 1, moved: 1},
		},
		{
			name:    "move once the old owner let go",
			wanted:  map[string][]string{"a": {"1"}, "b": {"2"}, "c": {"3"}},
			current: cur("a", "", "a", "1", "b", "", "b", "2", "c", ""),
			holders: map[string]string{"1": "a", "2": "b"},
			want:    plan{assign: []assignment{{"c", "3"}}},
		},
		{
			name:    "revoked and given in one pass when the lease is free",
			wanted:  map[string][]string{"a": nil, "b": {"1"}},
			current: cur("a", "", "a", "1", "b", ""),
			holders: map[string]string{"1": "b"}, // the new owner's own lease
			want:    plan{revoke: []assignment{{"a", "1"}}, assign: []assignment{{"b", "1"}}, revoked: 1, moved: 1},
		},
		{
			name:     "a member departed: its folder goes, its accounts are given at once",
			wanted:   map[string][]string{"a": {"1", "2"}},
			current:  cur("a", "", "a", "1", "gone", "", "gone", "2"),
			holders:  map[string]string{"2": "gone"}, // its lease expires on its own
			departed: []string{"gone"},
			want:     plan{drop: []string{"gone"}, assign: []assignment{{"a", "2"}}, revoked: 1, moved: 1},
		},
		{
			name:    "a member just gone (it may be re-creating its session): its leased accounts wait",
			wanted:  map[string][]string{"a": {"1", "2"}},
			current: cur("a", "", "a", "1", "gone", "", "gone", "2"),
			holders: map[string]string{"2": "gone"},
			want:    plan{drop: []string{"gone"}, revoked: 1, moved: 1, pending: 1},
		},
		{
			name:    "Consul came back empty: leased accounts wait for their holder to rejoin",
			wanted:  map[string][]string{"a": {"1"}, "b": {"2"}},
			holders: map[string]string{"1": "c", "2": "b"},
			want:    plan{markers: []string{"a", "b"}, assign: []assignment{{"b", "2"}}, pending: 1, moved: 1},
		},
		{
			name:    "held by a third live member: wait for it",
			wanted:  map[string][]string{"a": {"1"}, "b": nil, "c": nil},
			current: cur("a", "", "b", "", "c", ""),
			holders: map[string]string{"1": "c"},
			want:    plan{pending: 1, moved: 1},
		},
		{
			name:    "leases unreadable: markers and revocations written, every move waits",
			wanted:  map[string][]string{"a": {"1"}, "b": {"2"}, "c": nil},
			current: cur("a", "", "a", "2", "b", ""),
			unknown: true,
			want:    plan{revoke: []assignment{{"a", "2"}}, markers: []string{"c"}, revoked: 1, pending: 2, moved: 1},
		},
		{
			name:    "lease owners carry a boot nonce: the member is what counts",
			wanted:  map[string][]string{"a": {"1"}, "b": {"2", "3"}},
			current: cur("a", "", "b", ""),
			holders: map[string]string{"1": "a#0f0f0f0f0f0f", "2": "a#1e1e1e1e1e1e", "3": "b#2d2d2d2d2d2d"},
			want:    plan{assign: []assignment{{"a", "1"}, {"b", "3"}}, pending: 1, moved: 1},
		},
		{
			name:    "assigned twice (broken state): the wrong one is revoked",
			wanted:  map[string][]string{"a": {"1"}, "b": nil},
			current: cur("a", "", "a", "1", "b", "", "b", "1"),
			want:    plan{revoke: []assignment{{"b", "1"}}, revoked: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			current := tc.current
			if current == nil {
				current = assignments{}
			}
			departed := func(m string) bool { return slices.Contains(tc.departed, m) }
			got := makePlan(tc.wanted, current, tc.holders, !tc.unknown, departed)
			// With the leases known, every pending account waits for one.
			if !tc.unknown && len(got.waiting) != got.pending {
				t.Fatalf("waiting %v for %d pending", got.waiting, got.pending)
			}
			got.waiting = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
