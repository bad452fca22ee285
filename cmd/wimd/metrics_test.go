package main

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// sample is the value of the series of name whose labels include every
// pair of labels (k="v"), summed over the series that match; false when
// none does.
func sample(text, name string, labels ...string) (float64, bool) {
	var (
		sum   float64
		found bool
	)
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") || !strings.HasPrefix(line, name) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		series, value := line[:i], line[i+1:]
		if s := strings.TrimPrefix(series, name); s != "" && s[0] != '{' {
			continue // a longer name
		}
		match := true
		for j := 0; j+1 < len(labels); j += 2 {
			match = match && strings.Contains(series, fmt.Sprintf("%s=%q", labels[j], labels[j+1]))
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		sum, found = sum+v, true
	}
	return sum, found
}

// An in-process wimd with the fake connector: /metrics, behind the API
// token, moves as an instance's links go ACTIVE.
func TestMetricsMoveAsAnInstanceGoesActive(t *testing.T) {
	t.Parallel()
	url := "http://fake-" + uuid.NewString()
	ctrl := fake.ControllerFor(url)
	t.Cleanup(ctrl.Reset)
	b := setup(t)
	b.env["WIMRO_DATABASE_URL"] = pgtest.URL(t)
	b.env["WIMRO_SECRET_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	b.env["WIMRO_API_TOKEN"] = "metrics-token"
	addr, stop := b.serve(t, "--data-dir", t.TempDir(), "--status-refresh", "100ms")
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	}()
	if status, _ := (api{t: t, addr: addr}).send("GET", "/metrics", nil); status != 401 {
		t.Fatalf("/metrics without the token = %d, want 401", status)
	}
	a := api{t: t, addr: addr, token: "metrics-token"}
	scrape := func() string {
		t.Helper()
		status, text := a.send("GET", "/metrics", nil)
		if status != 200 {
			t.Fatalf("/metrics = %d: %s", status, text)
		}
		return text
	}
	before := scrape()
	// The Go and process collectors under their standard names: stock
	// dashboards read go_goroutines and process_cpu_seconds_total.
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes",
		"wimro_workers_running", "wimro_claims_held", "wimro_accounts_owned"} {
		if _, ok := sample(before, name); !ok {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	if v, ok := sample(before, "wimro_build_info", "version", version, "goversion", runtime.Version()); !ok || v != 1 {
		t.Errorf("wimro_build_info{version=%q,goversion=%q} = %v (present %v), want 1", version, runtime.Version(), v, ok)
	}
	if !regexp.MustCompile(`(?m)^wimro_build_info\{.*revision="[^"]+".*\} 1$`).MatchString(before) {
		t.Errorf("wimro_build_info has no revision label")
	}
	for _, line := range strings.Split(before, "\n") {
		if line == "" || strings.HasPrefix(line, "# ") {
			continue
		}
		if strings.HasPrefix(line, "wimro_go_") || strings.HasPrefix(line, "wimro_process_") ||
			!(strings.HasPrefix(line, "wimro_") || strings.HasPrefix(line, "go_") || strings.HasPrefix(line, "process_")) {
			t.Errorf("series neither wimro_... nor a standard go_/process_ one: %s", line)
		}
	}
	finished := func(text string) float64 {
		v, _ := sample(text, "wimro_actions_finished_total", "action", "CREATE", "status", "DONE", "connector", "fake")
		return v
	}
	calls := func(text string) float64 {
		v, _ := sample(text, "wimro_connector_call_duration_seconds_count", "connector", "fake", "operation", "create_service", "outcome", "ok")
		return v
	}
	requests := func(text string) float64 {
		v, _ := sample(text, "wimro_http_request_duration_seconds_count", "method", "POST", "route", "/openmano/{tenant_id}/instances", "status", "200")
		return v
	}

	a.fakeWIM(url)
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"config": map[string]any{"build_polls": 1}}})
	a.activeInstance("t0", 2)

	// An outcome is counted once written: the metric may trail the links
	// a moment.
	var after string
	eventually.Until(t, 10*time.Second, "the two CREATEs counted", func() (bool, string) {
		after = scrape()
		d := finished(after) - finished(before)
		return d >= 2, fmt.Sprint(d)
	})
	if d := finished(after) - finished(before); d != 2 {
		t.Errorf("wimro_actions_finished_total{CREATE,DONE,fake} moved by %v, want 2", d)
	}
	if d := calls(after) - calls(before); d < 2 {
		t.Errorf("create_service calls observed moved by %v, want at least 2", d)
	}
	if d := requests(after) - requests(before); d != 1 {
		t.Errorf("POST /openmano/{tenant_id}/instances requests moved by %v, want 1", d)
	}
	// The outcomes of the two CREATEs were written before they counted as
	// finished: the completer's batches show them.
	batched := func(text string) float64 { v, _ := sample(text, "wimro_outcome_batch_actions_sum"); return v }
	if d := batched(after) - batched(before); d < 2 {
		t.Errorf("wimro_outcome_batch_actions_sum moved by %v, want at least 2", d)
	}
	if v, _ := sample(after, "wimro_claim_actions_count"); v < 1 {
		t.Errorf("wimro_claim_actions_count = %v, want at least one claim", v)
	}
	if v, _ := sample(after, "wimro_workers_running"); v != 1 {
		t.Errorf("wimro_workers_running = %v, want 1", v)
	}
	if v, _ := sample(after, "wimro_accounts_owned"); v != 1 {
		t.Errorf("wimro_accounts_owned = %v, want 1", v)
	}
	if v, _ := sample(after, "wimro_http_request_duration_seconds_count", "route", "/metrics", "status", "200"); v < 1 {
		t.Errorf("the scrapes themselves not counted: %v", v)
	}
}

// wimro_build_info takes the revision given at build time, else the one
// Go stamped, else says it is unknown (go test stamps none).
func TestBuildInfoRevision(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ given, want string }{
		{"0123abcd", "0123abcd"},
		{"", "unknown"},
	} {
		want := fmt.Sprintf(`# HELP wimro_build_info The build of this wimd, always 1: version (-ldflags main.version), revision (the commit it was built from) and the Go version.
# TYPE wimro_build_info gauge
wimro_build_info{goversion=%q,revision=%q,version="v9.9.9"} 1
`, runtime.Version(), tt.want)
		if err := testutil.CollectAndCompare(buildInfo("v9.9.9", tt.given), strings.NewReader(want)); err != nil {
			t.Errorf("revision %q: %v", tt.given, err)
		}
	}
}
