package startstop_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/startstop"
)

func TestServiceLifecycle(t *testing.T) {
	t.Parallel()
	var s startstop.Service
	s.Name = "part"
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("stop of a stopped service: %v", err)
	}
	for round := range 2 { // started again after Stop
		ran := make(chan struct{})
		ended := make(chan struct{})
		if err := s.Start(t.Context(), func(ctx context.Context) {
			close(ran)
			<-ctx.Done()
			close(ended)
		}); err != nil {
			t.Fatalf("round %d: start: %v", round, err)
		}
		<-ran
		if !s.Started() {
			t.Fatalf("round %d: not started after Start", round)
		}
		if err := s.Start(t.Context(), func(context.Context) {}); !errors.Is(err, startstop.ErrStarted) {
			t.Fatalf("round %d: second start: %v, want ErrStarted", round, err)
		}
		if err := s.Stop(t.Context()); err != nil {
			t.Fatalf("round %d: stop: %v", round, err)
		}
		select {
		case <-ended: // Stop returned after the run did
		default:
			t.Fatalf("round %d: Stop returned before the run ended", round)
		}
		if s.Started() {
			t.Fatalf("round %d: started after Stop", round)
		}
	}
}

func TestServiceStartAndStopBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(t *testing.T, s *startstop.Service)
	}{
		{"a done ctx starts nothing", func(t *testing.T, s *startstop.Service) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if err := s.Start(ctx, func(context.Context) { t.Error("ran") }); !errors.Is(err, context.Canceled) {
				t.Fatalf("start with a done ctx: %v", err)
			}
		}},
		{"the start ctx does not stop the run", func(t *testing.T, s *startstop.Service) {
			ctx, cancel := context.WithCancel(t.Context())
			stopped := make(chan struct{})
			if err := s.Start(ctx, func(ctx context.Context) { <-ctx.Done(); close(stopped) }); err != nil {
				t.Fatal(err)
			}
			cancel()
			select {
			case <-stopped:
				t.Fatal("the run ended with the start ctx")
			default:
			}
			if err := s.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
		}},
		{"Stop gives up when its ctx ends", func(t *testing.T, s *startstop.Service) {
			release := make(chan struct{})
			if err := s.Start(t.Context(), func(context.Context) { <-release }); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			if err := s.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("stop of a run that does not return: %v", err)
			}
			close(release)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, &startstop.Service{Name: c.name})
		})
	}
}
