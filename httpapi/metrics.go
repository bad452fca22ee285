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
type RequestMetrics struct {
	duration *prometheus.HistogramVec
}

// NewRequestMetrics registers the HTTP metrics on reg.
func NewRequestMetrics(reg prometheus.Registerer) (*RequestMetrics, error) {
	m := &RequestMetrics{duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "wimro_http_request_duration_seconds",
		Help:    "Duration of HTTP API requests, by method, route pattern and status code.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route", "status"})}
	if err := reg.Register(m.duration); err != nil {
		return nil, err
	}
	return m, nil
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
