package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// RequestMetrics is the histogram of HTTP requests,
// wimro_http_request_duration_seconds{method,route,status}; the route is
// chi's pattern (/openmano/{tenant_id}/wims), never the path, so ids do
// not make new series. Requests no route matches count under route
// "unmatched".
//
// It also counts the event streams: wimro_event_streams (open now),
// wimro_event_stream_reads_total (their reads of the database: one per
// wake-up, not per timer tick) and wimro_event_streams_refused_total{limit}
// (429s of the caps, limit "process" or "token").
type RequestMetrics struct {
	duration *prometheus.HistogramVec
	streams  prometheus.Gauge
	reads    prometheus.Counter
	refused  *prometheus.CounterVec
}

// NewRequestMetrics registers the HTTP metrics on reg.
func NewRequestMetrics(reg prometheus.Registerer) (*RequestMetrics, error) {
	m := &RequestMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wimro_http_request_duration_seconds",
			Help:    "Duration of HTTP API requests, by method, route pattern and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "status"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wimro_event_streams",
			Help: "Event streams open in this process.",
		}),
		reads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wimro_event_stream_reads_total",
			Help: "Reads of the database by the event streams of this process (one per wake-up or safety poll).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wimro_event_streams_refused_total",
			Help: "Event streams refused with 429 by a cap, by the cap: process or token.",
		}, []string{"limit"}),
	}
	// Both caps exist from the start, at 0: an alert or a graph of their
	// increase sees the first refusal.
	for _, limit := range []string{"process", "token"} {
		m.refused.WithLabelValues(limit)
	}
	for _, c := range []prometheus.Collector{m.duration, m.streams, m.reads, m.refused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// streamOpen counts a stream open until the returned func is called; a
// nil RequestMetrics counts nothing (as for the other methods).
func (m *RequestMetrics) streamOpen() func() {
	if m == nil {
		return func() {}
	}
	m.streams.Inc()
	return m.streams.Dec
}

func (m *RequestMetrics) streamRead() {
	if m != nil {
		m.reads.Inc()
	}
}

func (m *RequestMetrics) streamRefused(limit string) {
	if m != nil {
		m.refused.WithLabelValues(limit).Inc()
	}
}

// observe is the middleware that times each request. It runs outermost,
// so it sees the status the recoverer writes for a panic.
func (s *Server) observe(next http.Handler) http.Handler {
	m := s.opts.RequestMetrics
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil {
			if p := rc.RoutePattern(); p != "" {
				route = p
			}
		}
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		m.duration.WithLabelValues(r.Method, route, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
	})
}
