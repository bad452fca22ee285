package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wimro/wimro/internal/testkit/browsertest"
)

// BenchmarkConsoleRender: the console's topology of a tenant with 1,000
// WAN links, against a tenant with 10 in the same run, in headless
// Chromium over a real wimd. Two figures per size, medians over the
// iterations: load, from the start of the page's navigation to every
// link's row in the table (the page's performance.now() when the last row
// is there: wimd's answers included), and render, from the answers in
// hand to the rows shown (the page's own marks: the console's part).
// Target: 1,000 links rendered in 1 s.
func BenchmarkConsoleRender(b *testing.B) {
	const token = "console-bench-token-77aa"
	a, _ := consoleWimd(b, token)
	sizes := []int{10, 1000}
	tenants := map[int]string{}
	for _, n := range sizes {
		name := fmt.Sprintf("bench%d", n)
		tenants[n] = a.call("POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": name}})["tenant"].(map[string]any)["uuid"].(string)
		for _, dc := range []string{"dcA", "dcB"} {
			a.call("POST", "/openmano/"+name+"/datacenters/"+dc, nil)
		}
		a.call("POST", "/openmano/"+name+"/wims/wan1", map[string]any{"wim_account": map[string]any{"name": "acct-" + name}})
		// Networks BUILD: the links wait in BUILD, no controller call
		// runs while the page is timed.
		a.call("POST", "/openmano/"+name+"/instances", map[string]any{"instance": map[string]any{"name": "ns-" + name, "networks": vldNets(n, "BUILD")}})
	}
	br := browsertest.New(b)
	br.SignIn(b, "http://"+a.addr, token, "topology")
	br.WaitText(b, "#status", "Up to date")

	load, render := map[int][]float64{}, map[int][]float64{}
	for b.Loop() {
		for _, n := range sizes {
			l, r := renderTime(b, br, tenants[n], n)
			load[n], render[n] = append(load[n], l), append(render[n], r)
		}
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	for _, n := range sizes {
		b.ReportMetric(median(load[n]), fmt.Sprintf("ms-load-%d", n))
		b.ReportMetric(median(render[n]), fmt.Sprintf("ms-render-%d", n))
	}
	b.ReportMetric(median(load[1000])/median(load[10]), "ratio-load-1000/10")
	b.ReportMetric(median(render[1000])/median(render[10]), "ratio-render-1000/10")
	b.ReportMetric(0, "ns/op")
	if r := median(render[1000]); r > 1000 {
		b.Errorf("1,000 links rendered in %.0f ms, target 1,000 ms", r)
	}
	br.Clean(b)
}

// renderTime reloads the console on tenant's topology and returns, in
// milliseconds, the time from the navigation's start until the table
// holds rows rows, and the part of it from the answers read to the rows
// shown.
func renderTime(b testing.TB, br *browsertest.Browser, tenant string, rows int) (load, render float64) {
	b.Helper()
	// A reload, not a navigation to the same address (which would be
	// the same document): the page, its script and its reads start anew.
	browsertest.Eval[chromedp.Void](b, br, fmt.Sprintf(`sessionStorage.setItem("wimro.tenant", %q); location.hash = "topology"`, tenant))
	br.Run(b, "reload the console", chromedp.Reload())
	js := fmt.Sprintf(`document.querySelectorAll("#links tbody tr").length === %d && performance.getEntriesByName("wimro-topology-shown").length > 0 && performance.now()`, rows)
	load, err := chromedp.Run(br.Ctx, chromedp.Poll[float64](js, chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		br.Fail(b, fmt.Sprintf("%d rows", rows), err)
	}
	render = browsertest.Eval[float64](b, br, `performance.getEntriesByName("wimro-topology-shown")[0].startTime - performance.getEntriesByName("wimro-topology-read")[0].startTime`)
	return load, render
}
