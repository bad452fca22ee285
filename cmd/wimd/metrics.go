package main

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wimro/wimro/httpapi"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// serveMetrics is the process's one Prometheus registry and the parts'
// metrics on it (README, "Metrics").
type serveMetrics struct {
	reg     *prometheus.Registry
	workers *wimthread.Metrics
	http    *httpapi.RequestMetrics
}

// newMetrics makes the registry with the Go and process collectors (named
// wimro_go_... and wimro_process_..., so every series of wimd starts with
// wimro_), the queue collector, and the workers' and HTTP API's metrics.
// The supervisor's collector is added once the supervisor exists.
func newMetrics(db *persistence.DB) (*serveMetrics, error) {
	reg := prometheus.NewRegistry()
	prefixed := prometheus.WrapRegistererWithPrefix("wimro_", reg)
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := prefixed.Register(c); err != nil {
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
