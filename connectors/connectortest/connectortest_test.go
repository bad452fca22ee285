package connectortest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/connectortest"
	"github.com/wimro/wimro/connectors/rest"
)

// probe is a testing.TB that records failures instead of failing the test;
// Fatal ends the goroutine, as it does on a *testing.T.
type probe struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (p *probe) Helper() {}

func (p *probe) Errorf(format string, args ...any) { p.fail(fmt.Sprintf(format, args...)) }

func (p *probe) Fatalf(format string, args ...any) {
	p.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (p *probe) Fatal(args ...any) {
	p.fail(fmt.Sprint(args...))
	runtime.Goexit()
}

func (p *probe) fail(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures = append(p.failures, msg)
}

// failures runs check with a probe and returns what it reported.
func failures(t *testing.T, check func(tb testing.TB)) []string {
	p := &probe{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(p)
	}()
	<-done
	return p.failures
}

func TestNoSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		errs  []error
		logs  string
		fails int
	}{
		{"clean", []error{errors.New("refused")}, "level=INFO msg=ok", 0},
		{"in an error", []error{errors.New("refused"), errors.New("bad pw hunter2")}, "", 1},
		{"in the log", nil, "url=http://u:hunter2@x", 1},
		{"nil error", []error{nil}, "", 1},
	}
	for _, tt := range tests {
		got := failures(t, func(tb testing.TB) { connectortest.NoSecret(tb, "hunter2", tt.errs, tt.logs) })
		if len(got) != tt.fails {
			t.Errorf("%s: failures %q, want %d", tt.name, got, tt.fails)
		}
	}
}

func TestLogger(t *testing.T) {
	t.Parallel()
	logger, logs := connectortest.Logger(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { logger.Debug("line", "i", i) })
	}
	wg.Wait()
	if n := strings.Count(logs.String(), "level=DEBUG msg=line"); n != 8 {
		t.Fatalf("log holds %d debug lines, want 8:\n%s", n, logs)
	}
}

func TestWithUserInfo(t *testing.T) {
	t.Parallel()
	if got := connectortest.WithUserInfo("http://127.0.0.1:80/x", "u", "p@ss"); got != "http://u:p@ss@127.0.0.1:80/x" {
		t.Fatalf("WithUserInfo = %s", got)
	}
}

// check is a connector whose CheckCredentials is one GET through the
// shared REST client.
type check struct {
	connectors.Connector
	c *rest.Client
}

func (c check) CheckCredentials(ctx context.Context) error {
	rep, err := c.c.Do(ctx, "check", rest.Request{Method: http.MethodGet, Path: "/"})
	if err != nil {
		return err
	}
	if !rep.OK() {
		return c.c.Error("check", rep, "")
	}
	return nil
}

// builder builds check connectors, passing the REST client the config
// that change makes of the one given.
func builder(change func(*connectors.Config)) func(testing.TB, connectors.Config) connectors.Connector {
	return func(t testing.TB, cfg connectors.Config) connectors.Connector {
		t.Helper()
		change(&cfg)
		c, err := rest.New("check", cfg)
		if err != nil {
			t.Fatal(err)
		}
		return check{c: c}
	}
}

func TestCheckTransport(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	tests := []struct {
		name   string
		change func(*connectors.Config)
		fails  bool
	}{
		{"settings handed over", func(*connectors.Config) {}, false},
		{"settings dropped", func(c *connectors.Config) { c.AccountConfig = nil }, true},
		{"token dropped", func(c *connectors.Config) {
			if c.AccountConfig != nil {
				c.AccountConfig = map[string]any{"insecure_skip_verify": c.AccountConfig["insecure_skip_verify"]}
			}
		}, true},
		{"certificate never checked", func(c *connectors.Config) {
			c.AccountConfig = map[string]any{"insecure_skip_verify": true, "bearer_token": c.AccountConfig["bearer_token"]}
		}, true},
	}
	for _, tt := range tests {
		got := failures(t, func(tb testing.TB) { connectortest.CheckTransport(tb, builder(tt.change), ok) })
		if (len(got) > 0) != tt.fails {
			t.Errorf("%s: failures %q, want failing %v", tt.name, got, tt.fails)
		}
	}
}

// quoting is a connector whose CheckCredentials is one GET whose failure
// it reports with report.
type quoting struct {
	connectors.Connector
	c      *rest.Client
	report func(c *rest.Client, rep rest.Reply) error
}

func (q quoting) CheckCredentials(ctx context.Context) error {
	rep, err := q.c.Do(ctx, "check", rest.Request{Method: http.MethodGet, Path: "/"})
	if err != nil {
		return err
	}
	if !rep.OK() {
		return q.report(q.c, rep)
	}
	return nil
}

func TestCheckControllerError(t *testing.T) {
	t.Parallel()
	// The error format of a controller that sends {"message": …}.
	format := func(c *rest.Client, rep rest.Reply) error {
		var e struct{ Message string }
		_ = json.Unmarshal(rep.Body, &e)
		return c.Error("check", rep, rest.Clip(e.Message, rest.MaxSnippet))
	}
	tests := []struct {
		name   string
		report func(c *rest.Client, rep rest.Reply) error
		fails  bool
	}{
		{"error format read", format, false},
		{"error format read but not clipped", func(c *rest.Client, rep rest.Reply) error {
			var e struct{ Message string }
			_ = json.Unmarshal(rep.Body, &e)
			return c.Error("check", rep, e.Message)
		}, true},
		{"wrapped", func(c *rest.Client, rep rest.Reply) error { return fmt.Errorf("check: %w", format(c, rep)) }, false},
		{"error format ignored", func(c *rest.Client, rep rest.Reply) error { return c.Error("check", rep, "") }, true},
		{"raw body", func(_ *rest.Client, rep rest.Reply) error {
			return fmt.Errorf("check: HTTP %d: %s: %w", rep.Status, rep.Body, context.DeadlineExceeded)
		}, true},
		{"hint dropped", func(_ *rest.Client, rep rest.Reply) error {
			return connectors.HTTPError(rep.Status, "check: HTTP %d: %s", rep.Status, rest.Snippet(rep.Body))
		}, true},
		{"controller not quoted", func(c *rest.Client, rep rest.Reply) error { return c.Error("check", rep, "overloaded") }, true},
		{"not retryable", func(c *rest.Client, rep rest.Reply) error {
			return connectors.Errorf(connectors.KindPermanent, "check: %v", format(c, rep))
		}, true},
	}
	for _, tt := range tests {
		build := func(t testing.TB, cfg connectors.Config) connectors.Connector {
			c, err := rest.New("check", cfg)
			if err != nil {
				t.Fatal(err)
			}
			return quoting{c: c, report: tt.report}
		}
		got := failures(t, func(tb testing.TB) {
			connectortest.CheckControllerError(tb, build, map[string]any{"message": connectortest.Unstorable})
		})
		if (len(got) > 0) != tt.fails {
			t.Errorf("%s: failures %q, want failing %v", tt.name, got, tt.fails)
		}
	}
}
