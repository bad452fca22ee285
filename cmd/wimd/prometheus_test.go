package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/testkit/eventually"
)

const (
	alertsFile     = "../../contrib/prometheus/alerts.yml"
	alertTestsFile = "../../contrib/prometheus/alerts_test.yml"
	dashboardFile  = "../../contrib/grafana/wimro.json"
)

// promtool returns the path of promtool (lookTool).
func promtool(t *testing.T) string {
	t.Helper()
	return lookTool(t, "promtool", "scripts/ensure-promtool.sh", "Debian's prometheus package")
}

func runPromtool(t *testing.T, tool string, args ...string) {
	t.Helper()
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

var (
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promqlBrackets = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promqlLabels   = regexp.MustCompile(`(?i)\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlToken    = regexp.MustCompile(`[A-Za-z0-9_:.]+(\s*\()?`)
	promqlKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL expression selects: what
// is left once strings, label matchers, ranges and label lists are taken
// out, without numbers, durations, functions and keywords.
func metricNames(expr string) []string {
	expr = promqlStrings.ReplaceAllString(expr, `""`)
	expr = promqlBrackets.ReplaceAllString(expr, " ")
	expr = promqlLabels.ReplaceAllString(expr, " ")
	var names []string
	for _, m := range promqlToken.FindAllStringSubmatch(expr, -1) {
		tok := m[0]
		if m[1] != "" || tok[0] == '.' || (tok[0] >= '0' && tok[0] <= '9') || promqlKeywords[strings.ToLower(tok)] {
			continue // a function, a number or duration, a keyword
		}
		if !slices.Contains(names, tok) {
			names = append(names, tok)
		}
	}
	return names
}

func TestMetricNamesOfPromQL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want []string
	}{
		{`wimro_x`, []string{"wimro_x"}},
		{`sum without (instance) (increase(wimro_a_total{status="FAILED", x=~"a|b"}[15m])) > 0`, []string{"wimro_a_total"}},
		{`max by (job) (wimro_leader) < 1 or absent(wimro_leader)`, []string{"wimro_leader"}},
		{`histogram_quantile(0.95, sum by (le) (rate(h_bucket[5m] offset 1h)))`, []string{"h_bucket"}},
		{`a / on (instance) group_left (version) b * 1e3 and bool c`, []string{"a", "b", "c"}},
		{`count(x{l="by (y)"}) unless z`, []string{"x", "z"}},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%s) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

// alertRules reads alerts.yml: each alert's expression by name, and each
// recording rule's by the name it records.
func alertRules(t *testing.T) (alerts, records map[string]string) {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	readYAML(t, alertsFile, &f)
	alerts, records = map[string]string{}, map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = r.Expr
			}
			if r.Record != "" {
				records[r.Record] = r.Expr
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatalf("%s has no alert", alertsFile)
	}
	return alerts, records
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// firedInTests returns the alerts that alerts_test.yml expects to fire
// in at least one case.
func firedInTests(t *testing.T) map[string]bool {
	t.Helper()
	var f struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}
	readYAML(t, alertTestsFile, &f)
	fired := map[string]bool{}
	for _, c := range f.Tests {
		for _, a := range c.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	return fired
}

// grafanaVariable is a variable of the dashboard in an expression: $x,
// ${x}, ${x:fmt} or [[x]].
var grafanaVariable = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// grafanaBuiltins are Grafana's interval variables, given a value of their
// kind so the expression parses.
var grafanaBuiltins = map[string]string{"__rate_interval": "5m", "__interval": "1m", "__range": "1h", "__range_s": "3600", "__interval_ms": "60000"}

// dashboardQueries reads the dashboard: the expression of every target of
// every panel (rows' panels included) by "panel title/refId", with its
// variables replaced by values that parse, and the metrics its variables'
// label_values queries read.
func dashboardQueries(t *testing.T) (exprs map[string]string, variableMetrics []string) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		}
		Panels []json.RawMessage
	}
	var d struct {
		Panels     []json.RawMessage
		Templating struct {
			List []struct {
				Name  string
				Type  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	vars := maps.Clone(grafanaBuiltins)
	labelValues := regexp.MustCompile(`^label_values\((\w+),\s*\w+\)$`)
	for _, v := range d.Templating.List {
		vars[v.Name] = ".*" // every variable stands in a label matcher's regular expression
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(metric, label)", v.Name, q.Query)
		}
		variableMetrics = append(variableMetrics, m[1])
	}
	exprs = map[string]string{}
	var walk func([]json.RawMessage)
	walk = func(panels []json.RawMessage) {
		for _, r := range panels {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: a panel: %v", dashboardFile, err)
			}
			for _, tg := range p.Targets {
				expr := grafanaVariable.ReplaceAllStringFunc(tg.Expr, func(s string) string {
					m := grafanaVariable.FindStringSubmatch(s)
					if v, ok := vars[m[1]+m[2]+m[3]]; ok {
						return v
					}
					t.Errorf("panel %q/%s: unknown variable %s", p.Title, tg.RefID, s)
					return s
				})
				exprs[p.Title+"/"+tg.RefID] = expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(exprs) == 0 {
		t.Fatalf("%s has no expression", dashboardFile)
	}
	return exprs, variableMetrics
}

// scrapedNames returns the names of the samples of a /metrics answer.
func scrapedNames(text string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// The alerts and recording rules (contrib/prometheus) and the dashboard
// (contrib/grafana) are checked by promtool (the rules, their unit tests,
// every dashboard expression), each alert has a test case that fires it,
// and every metric they name is one a live wimd exports: an in-process wimd on its own
// PostgreSQL, with an instance ACTIVE, one link turned DOWN on the
// controller and one CREATE waiting for its networks.
func TestPrometheusFiles(t *testing.T) {
	t.Parallel()
	tool := promtool(t)

	rules, records := alertRules(t)
	runPromtool(t, tool, "check", "rules", alertsFile)
	runPromtool(t, tool, "test", "rules", alertTestsFile)
	fired := firedInTests(t)
	for name := range rules {
		if !fired[name] {
			t.Errorf("alert %s: no case of %s expects it to fire", name, alertTestsFile)
		}
	}

	exprs, variableMetrics := dashboardQueries(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var recorded []rule
	keys := make([]string, 0, len(exprs))
	for k := range exprs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		recorded = append(recorded, rule{Record: fmt.Sprintf("dashboard:expr_%d", i), Expr: exprs[k]})
	}
	raw, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": recorded}}})
	if err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(rulesFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, tool, "check", "rules", rulesFile)

	// Every metric named, and where.
	where := map[string][]string{}
	for alert, expr := range rules {
		for _, n := range metricNames(expr) {
			where[n] = append(where[n], "alert "+alert)
		}
	}
	for record, expr := range records {
		for _, n := range metricNames(expr) {
			where[n] = append(where[n], "recording rule "+record)
		}
	}
	for _, k := range keys {
		for _, n := range metricNames(exprs[k]) {
			where[n] = append(where[n], "panel "+k)
		}
	}
	for _, n := range variableMetrics {
		where[n] = append(where[n], "a dashboard variable")
	}
	scrape := liveWimd(t)
	eventually.Until(t, time.Minute, "every metric named by the alerts and the dashboard on /metrics", func() (bool, string) {
		names := scrapedNames(scrape())
		var missing []string
		for n, w := range where {
			if !names[n] {
				missing = append(missing, fmt.Sprintf("%s (%s)", n, strings.Join(w, ", ")))
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, "missing " + strings.Join(missing, "; ")
	})
}

// liveWimd starts an in-process wimd on a PostgreSQL of its own (the
// local-database metrics exist only then) with the fake connector, drives
// an instance to ACTIVE, turns its link DOWN on the controller, leaves a
// second instance's CREATE waiting for its networks, and returns a
// function that scrapes its /metrics.
func liveWimd(t *testing.T) func() string {
	t.Helper()
	url := "http://fake-" + uuid.NewString()
	ctrl := fake.ControllerFor(url)
	t.Cleanup(ctrl.Reset)
	b := setup(t)
	b.env["WIMRO_DEV_CONNECTORS"] = "true"
	b.env["WIMRO_API_TOKEN"] = "scrape-token"
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // the postgres user must reach its data folder
	addr, stop := b.serve(t, "--data-dir", dir, "--status-refresh", "100ms", "--monitor-interval", "100ms", "--reconcile-interval", "200ms")
	t.Cleanup(func() {
		if code := stop(); code != 0 {
			t.Errorf("wimd exit %d", code)
		}
	})
	a := api{t: t, addr: addr, token: "scrape-token"}
	a.fakeWIM(url)
	a.call("POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"config": map[string]any{"build_polls": 1}}})
	a.activeInstance("t0", 1)
	for _, s := range ctrl.Services() {
		ctrl.SetStatus(s.ID, connectors.StatusDown, "cut")
	}
	waiting := instanceBody(1, nil)
	waiting["instance"].(map[string]any)["name"] = "waiting"
	for _, n := range waiting["instance"].(map[string]any)["networks"].([]any) {
		n.(map[string]any)["status"] = "BUILD"
	}
	a.call("POST", "/openmano/t0/instances", waiting)
	return func() string {
		t.Helper()
		status, text := a.send("GET", "/metrics", nil)
		if status != 200 {
			t.Fatalf("/metrics = %d: %s", status, text)
		}
		return text
	}
}
