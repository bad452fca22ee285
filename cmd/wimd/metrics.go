package main

import (
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wimro/wimro/coordinator"
	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// serveMetrics is the process's one Prometheus registry and the parts'
// metrics on it (docs/metrics.md).
type serveMetrics struct {
	reg     *prometheus.Registry
	workers *wimthread.Metrics
	http    *httpapi.RequestMetrics
}

// newMetrics makes the registry with the Go and process collectors under
// their standard names (go_goroutines, process_cpu_seconds_total, ...: the
// stock dashboards and alerts read those), wimro_build_info, the queue
// collector, and the workers' and HTTP API's metrics. The supervisor's
// collector is added once the supervisor exists.
func newMetrics(db *persistence.DB) (*serveMetrics, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(version, revision),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(wimthread.NewQueueCollector(db)); err != nil {
		return nil, err
	}
	if err := reg.Register(wimthread.NewAccountStatusCollector(db)); err != nil {
		return nil, err
	}
	if err := reg.Register(wimthread.NewLinkStatusCollector(db)); err != nil {
		return nil, err
	}
	m := &serveMetrics{reg: reg}
	var err error
	if m.workers, err = wimthread.NewMetrics(reg); err != nil {
		return nil, err
	}
	if m.http, err = httpapi.NewRequestMetrics(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// handler serves the registry; a collector that fails (the queue query
// with the database away) is logged and left out, the others are served.
func (m *serveMetrics) handler(logger *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// buildInfo is wimro_build_info{version,revision,goversion}, always 1: the
// build a process runs, to join on or to count the versions of a cluster
// in an upgrade. The revision is the one given at build time (-ldflags
// -X main.revision, as make build does), else the commit Go stamped in
// the binary (vcs.revision, "-dirty" when built from a modified tree; not
// under -buildvcs=false), else "unknown" (go run, go test).
func buildInfo(version, revision string) prometheus.Collector {
	if revision == "" {
		revision = stampedRevision()
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "wimro_build_info",
		Help:        "The build of this wimd, always 1: version (-ldflags main.version), revision (the commit it was built from) and the Go version.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	}, func() float64 { return 1 })
}

// stampedRevision is the commit Go stamped in the binary, "unknown" when
// it stamped none.
func stampedRevision() string {
	revision, dirty := "unknown", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty && revision != "unknown" {
		revision += "-dirty"
	}
	return revision
}

// registerClusterMetrics registers the cluster's gauges, read from the
// coordinator at each scrape (no I/O: it keeps them up to date itself).
func registerClusterMetrics(reg prometheus.Registerer, c coordinator.Coordinator) error {
	for _, g := range []struct {
		name, help string
		value      func(coordinator.Gauges) float64
	}{
		{"wimro_cluster_leader", "1 while this process leads the cluster (runs the cluster-wide chores), else 0.",
			func(g coordinator.Gauges) float64 { return boolFloat(g.Leader) }},
		{"wimro_cluster_members", "Live members of the cluster as this process last saw them (membership keys held by a Consul session).",
			func(g coordinator.Gauges) float64 { return float64(g.Members) }},
		{"wimro_cluster_assignment_generation", "Generation of the account assignment this process applied last: Consul's index of it; members that applied the same assignment show the same value.",
			func(g coordinator.Gauges) float64 { return float64(g.Generation) }},
	} {
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help},
			func() float64 { return g.value(c.Gauges()) })); err != nil {
			return err
		}
	}
	return nil
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
