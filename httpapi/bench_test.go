package httpapi_test

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"
)

// latencies sends requests to path at a fixed rate (open loop: each
// request starts on schedule whatever the previous ones do) and returns
// the sorted latencies.
func latencies(b *testing.B, url string, rate, count int) []time.Duration {
	b.Helper()
	out := make([]time.Duration, count)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range count {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := http.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("%s: %d", url, resp.StatusCode)
			}
			out[i] = time.Since(start)
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func pct(l []time.Duration, p float64) float64 {
	return float64(l[int(float64(len(l)-1)*p)].Microseconds()) / 1000
}

// BenchmarkAPILatency: GET /openmano/{tenant}/wims and instance-action
// polling at 200 requests/s, p50/p99, against /healthz (one database
// ping) at the same rate in the same run.
func BenchmarkAPILatency(b *testing.B) {
	const rate, count = 200, 600
	for b.Loop() {
		b.StopTimer()
		api := setup(b, "")
		api.fixture()
		api.call("POST", "/openmano/tenant0/wims/wim0", map[string]any{"wim_account": map[string]any{}}, 200)
		r := api.call("POST", "/openmano/tenant0/instances", instanceBody("ns1"), 200)
		action := fmt.Sprintf("/openmano/tenant0/instances/%s/action/%s", r.str("uuid"), r.str("action_id"))
		b.StartTimer()
		base := latencies(b, api.srv.URL+"/healthz", rate, count)
		wims := latencies(b, api.srv.URL+"/openmano/tenant0/wims", rate, count)
		act := latencies(b, api.srv.URL+action, rate, count)
		b.ReportMetric(pct(base, 0.5), "ms-p50-healthz-baseline")
		b.ReportMetric(pct(wims, 0.5), "ms-p50-wims")
		b.ReportMetric(pct(wims, 0.99), "ms-p99-wims")
		b.ReportMetric(pct(act, 0.5), "ms-p50-action")
		b.ReportMetric(pct(act, 0.99), "ms-p99-action")
		b.ReportMetric(pct(wims, 0.5)/pct(base, 0.5), "ratio-p50-wims")
		b.ReportMetric(pct(act, 0.5)/pct(base, 0.5), "ratio-p50-action")
	}
}
