package coordinator

import (
	"context"
	"testing"

	"github.com/hashicorp/consul/api"
)

func TestNextWaitIndex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		prev, got, want uint64
	}{
		{"first read", 0, 42, 42},
		{"grows", 42, 57, 57},
		{"unchanged (timeout)", 57, 57, 57},
		{"goes backwards: plain read next", 57, 12, 0},
		{"goes to 0: block on 1", 57, 0, 1},
		{"0 on the first read", 0, 0, 1},
		{"back to 1 from 0", 1, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := nextWaitIndex(tc.prev, tc.got); got != tc.want {
				t.Fatalf("nextWaitIndex(%d, %d) = %d, want %d", tc.prev, tc.got, got, tc.want)
			}
		})
	}
}

func TestWatchFollowsIndex(t *testing.T) {
	t.Parallel()
	w := newWatch()
	ctx := context.Background()
	steps := []struct {
		answer uint64
		want   uint64
	}{{10, 10}, {15, 15}, {3, 0}, {0, 1}, {9, 9}}
	for _, s := range steps {
		q := w.options(ctx)
		if q == nil {
			t.Fatal("no options")
		}
		w.answered(&api.QueryMeta{LastIndex: s.answer})
		if w.index != s.want {
			t.Fatalf("after an answer with index %d: waiting on %d, want %d", s.answer, w.index, s.want)
		}
	}
	if q := w.options(ctx); q.WaitIndex != 9 || q.WaitTime != blockingWait {
		t.Fatalf("options: index %d wait %v", q.WaitIndex, q.WaitTime)
	}
	w.reset()
	if q := w.options(ctx); q.WaitIndex != 0 {
		t.Fatalf("after reset the next read must not block: index %d", q.WaitIndex)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	w.tokens = 0
	if q := w.options(cancelled); q != nil {
		t.Fatal("a wait for a token must end with its context")
	}
}
