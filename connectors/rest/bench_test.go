package rest_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/rest"
)

// BenchmarkDo measures requests per second on keep-alive connections, over
// HTTP and TLS, of reads (GET) and of changes (PUT, with a fence that
// holds): one request at a time, and 8 at once (wimthread's default
// Options.Parallel of an account).
func BenchmarkDo(b *testing.B) {
	for _, scheme := range []string{"http", "https"} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("{}"))
		}))
		// Connections opened: keep-alive reuse shows as a handful.
		var conns atomic.Int64
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		if scheme == "https" {
			srv.EnableHTTP2 = true // as a controller may
			srv.StartTLS()
		} else {
			srv.Start()
		}
		b.Cleanup(srv.Close)
		c, err := rest.New("bench", connectors.Config{URL: srv.URL, AccountConfig: map[string]any{"insecure_skip_verify": true}})
		if err != nil {
			b.Fatal(err)
		}
		ctx := connectors.WithFence(b.Context(), func() error { return nil })
		for _, method := range []string{http.MethodGet, http.MethodPut} {
			req := rest.Request{Method: method, Path: "/x"}
			if method == http.MethodPut {
				req.Body = []byte(`{"a":1}`)
			}
			do := func(b *testing.B) {
				if _, err := c.Do(ctx, "bench", req); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time per request (client and server: one process) is
			// what a loaded machine does not blur as it does req/s.
			report := func(b *testing.B, start time.Time, cpu0 time.Duration, conns0 int64) {
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
				b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64(conns.Load()-conns0), "conns")
			}
			b.Run(scheme+"/"+method, func(b *testing.B) {
				start, cpu0, conns0 := time.Now(), cpuTime(b), conns.Load()
				for b.Loop() {
					do(b)
				}
				report(b, start, cpu0, conns0)
			})
			b.Run(scheme+"/"+method+"/parallel", func(b *testing.B) {
				b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
				start, cpu0, conns0 := time.Now(), cpuTime(b), conns.Load()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						do(b)
					}
				})
				report(b, start, cpu0, conns0)
			})
		}
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
