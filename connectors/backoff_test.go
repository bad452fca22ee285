package connectors_test

import (
	"math"
	"testing"
	"time"

	"github.com/wimro/wimro/connectors"
)

// almostOne is the largest float64 below 1, the most rand.Float64 returns.
var almostOne = math.Nextafter(1, 0)

func constant(r float64) func() float64 { return func() float64 { return r } }

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	const base, limit = 100 * time.Millisecond, 5 * time.Minute
	window := base // base·2^(attempt-1) capped at limit, by doubling
	for attempt := 1; attempt <= 100; attempt++ {
		if got := connectors.Backoff(attempt, base, limit, 0, constant(0)); got != 0 {
			t.Errorf("attempt %d, rnd 0: %v, want 0 (full jitter)", attempt, got)
		}
		// r·window truncated to nanoseconds: window or 1ns below.
		if got := connectors.Backoff(attempt, base, limit, 0, constant(almostOne)); got < window-1 || got > window {
			t.Errorf("attempt %d, rnd ~1: %v, want %v", attempt, got, window)
		}
		if got := connectors.Backoff(attempt, base, limit, 0, constant(0.5)); got != window/2 {
			t.Errorf("attempt %d, rnd 0.5: %v, want %v", attempt, got, window/2)
		}
		window = min(2*window, limit)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	const huge = time.Duration(math.MaxInt64)
	tests := []struct {
		name                    string
		attempt                 int
		base, limit, retryAfter time.Duration
		r                       float64
		want                    time.Duration
	}{
		{"first retry", 1, time.Second, time.Minute, 0, almostOne, time.Second - 1},
		{"third retry", 3, time.Second, time.Minute, 0, 0.5, 2 * time.Second},
		{"capped", 10, time.Second, time.Minute, 0, 0.5, 30 * time.Second},
		{"attempt 0 counts as 1", 0, time.Second, time.Minute, 0, 0.5, time.Second / 2},
		{"negative attempt counts as 1", -5, time.Second, time.Minute, 0, 0.5, time.Second / 2},
		// No overflow, whatever the attempt.
		{"attempt 63", 63, time.Second, time.Minute, 0, 1, time.Minute},
		{"attempt 64", 64, time.Second, time.Minute, 0, 1, time.Minute},
		{"attempt 65", 65, time.Second, time.Minute, 0, 1, time.Minute},
		{"attempt 10,000", 10000, time.Second, time.Minute, 0, 1, time.Minute},
		{"attempt MaxInt", math.MaxInt, time.Second, time.Minute, 0, 1, time.Minute},
		{"1ns doubled 62 times", 63, 1, huge, 0, 1, 1 << 62},
		{"1ns doubled 63 times", 64, 1, huge, 0, 1, huge},
		{"huge limit", 10000, time.Second, huge, 0, 1, huge},
		{"huge limit and a hint", 10000, time.Second, huge, time.Hour, 1, huge},
		// Odd settings.
		{"limit below base", 5, time.Minute, time.Second, 0, 1, time.Minute},
		{"zero base", 5, 0, time.Minute, 0, 1, 0},
		{"negative base", 5, -time.Second, time.Minute, 0, 1, 0},
		{"rnd above 1", 2, time.Second, time.Minute, 0, 7, 2 * time.Second},
		{"rnd negative", 2, time.Second, time.Minute, 0, -7, 0},
		{"rnd NaN", 2, time.Second, time.Minute, 0, math.NaN(), 0},
		// Retry-After is a floor, above the cap too; the jitter comes on top.
		{"hint below the window", 5, time.Second, time.Minute, 2 * time.Second, 0, 2 * time.Second},
		{"hint, jitter on top", 1, time.Second, time.Minute, 30 * time.Second, 0.5, 30*time.Second + time.Second/2},
		{"hint above the cap", 10, time.Second, time.Minute, 10 * time.Minute, 0, 10 * time.Minute},
		{"hint above the cap, rnd ~1", 10, time.Second, time.Minute, 10 * time.Minute, 1, 11 * time.Minute},
		{"hint capped at an hour", 1, time.Second, time.Minute, 48 * time.Hour, 0, time.Hour},
		{"negative hint", 1, time.Second, time.Minute, -time.Hour, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := connectors.Backoff(tt.attempt, tt.base, tt.limit, tt.retryAfter, constant(tt.r)); got != tt.want {
				t.Errorf("Backoff(%d, %v, %v, %v, %v) = %v, want %v", tt.attempt, tt.base, tt.limit, tt.retryAfter, tt.r, got, tt.want)
			}
		})
	}
}

// TestBackoffSpreadsAStorm: links that failed together on one outage, and
// were told the same Retry-After, come back spread over the window.
func TestBackoffSpreadsAStorm(t *testing.T) {
	t.Parallel()
	const links = 1000
	for _, hint := range []time.Duration{0, 30 * time.Second} {
		seen := make(map[time.Duration]bool, links)
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for range links {
			d := connectors.Backoff(4, time.Second, time.Minute, hint, nil) // math/rand/v2
			if d < hint || d > hint+8*time.Second {
				t.Fatalf("hint %v: delay %v outside [%v, %v]", hint, d, hint, hint+8*time.Second)
			}
			seen[d] = true
			lo, hi = min(lo, d), max(hi, d)
		}
		// 1000 uniform draws over 8s: the extremes are within 0.1s of the
		// ends but for a chance below 1e-40.
		if len(seen) < links/2 || lo > hint+time.Second/10 || hi < hint+8*time.Second-time.Second/10 {
			t.Errorf("hint %v: %d distinct delays in [%v, %v], want them spread over [%v, %v]", hint, len(seen), lo, hi, hint, hint+8*time.Second)
		}
	}
}
