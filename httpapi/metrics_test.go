package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wimro/wimro/httpapi"
)

func TestRequestMetricsByRoutePatternAndMetricsBehindTheToken(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	rm, err := httpapi.NewRequestMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := httpapi.NewServer(httpapi.Options{Token: "tok", RequestMetrics: rm, Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})},
		httpapi.Route{Method: "GET", Pattern: "/things/{id}", Handler: func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }},
		httpapi.Route{Method: "GET", Pattern: "/boom", Handler: func(w http.ResponseWriter, r *http.Request) { panic("boom") }})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	get := func(path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, id := range []string{"a", "b", "c"} {
		if st, _ := get("/things/"+id, "tok"); st != 200 {
			t.Fatalf("/things/%s: %d", id, st)
		}
	}
	get("/things/a", "")
	get("/nowhere", "tok")
	get("/boom", "tok")
	if st, _ := get("/metrics", ""); st != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token: %d, want 401", st)
	}
	st, body := get("/metrics", "tok")
	if st != 200 || !strings.Contains(body, "wimro_http_request_duration_seconds_count") {
		t.Fatalf("/metrics: %d %s", st, body)
	}
	for _, c := range []struct {
		route, status string
		n             uint64
	}{{"/things/{id}", "200", 3}, {"/things/{id}", "401", 1}, {"unmatched", "404", 1}, {"/boom", "500", 1}, {"/metrics", "401", 1}} {
		var got uint64
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				if mf.GetName() == "wimro_http_request_duration_seconds" && l["method"] == "GET" && l["route"] == c.route && l["status"] == c.status {
					got = m.GetHistogram().GetSampleCount()
				}
			}
		}
		if got != c.n {
			t.Errorf("GET %s %s: %d requests, want %d", c.route, c.status, got, c.n)
		}
	}
	// One series per route pattern, never per path.
	if n := testutil.CollectAndCount(reg, "wimro_http_request_duration_seconds"); n != 6 {
		t.Errorf("%d series, want 6", n)
	}
}
