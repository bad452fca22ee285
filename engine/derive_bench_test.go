package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
)

// networks builds n networks: n/2 VLDs, each in two datacenters (with
// distinct VIMs), plus nothing else.
func benchNetworks(n int) (InstanceInput, []wimro.InstanceNet, map[string]string) {
	in := InstanceInput{Networks: make([]NetworkInput, n)}
	nets := make([]wimro.InstanceNet, n)
	vims := map[string]string{}
	for i := range 16 {
		vims[fmt.Sprintf("dc%d", i)] = fmt.Sprintf("http://vim%d", i)
	}
	var sce string
	for i := range n {
		if i%2 == 0 {
			sce = uuid.NewString()
		}
		s := sce
		nets[i] = wimro.InstanceNet{SceNetID: &s, DatacenterID: fmt.Sprintf("dc%d", (i/2+i%2)%16)}
	}
	return in, nets, vims
}

// quadraticGroups is the naive baseline: for every network, scan all the
// others for its VLD.
func quadraticGroups(nets []wimro.InstanceNet, vim func(string) string) int {
	links := 0
	done := make([]bool, len(nets))
	for i := range nets {
		if done[i] || nets[i].SceNetID == nil {
			continue
		}
		vims := map[string]bool{}
		for j := i; j < len(nets); j++ {
			if nets[j].SceNetID != nil && *nets[j].SceNetID == *nets[i].SceNetID {
				done[j] = true
				vims[vim(nets[j].DatacenterID)] = true
			}
		}
		if len(vims) > 1 {
			links++
		}
	}
	return links
}

// BenchmarkDeriveWANLinks measures the grouping of derive_wan_links at 1k
// and 10k networks and the naive quadratic grouping at 10k, in the same
// run: scaling n by 10 should cost ~10x (n log n), not ~100x.
func BenchmarkDeriveWANLinks(b *testing.B) {
	type input struct {
		in   InstanceInput
		nets []wimro.InstanceNet
		vim  func(string) string
	}
	mk := func(n int) input {
		in, nets, vims := benchNetworks(n)
		return input{in, nets, func(id string) string { return vims[id] }}
	}
	small, large := mk(1000), mk(10000)
	timeIt := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	var t1k, t10k, q10k time.Duration
	for b.Loop() {
		t1k += timeIt(func() {
			if g, _ := deriveGroups(small.in, small.in.Networks, listFields(len(small.nets)), small.nets, small.vim); len(g) != 500 {
				b.Fatal(len(g))
			}
		})
		t10k += timeIt(func() {
			if g, _ := deriveGroups(large.in, large.in.Networks, listFields(len(large.nets)), large.nets, large.vim); len(g) != 5000 {
				b.Fatal(len(g))
			}
		})
		q10k += timeIt(func() {
			if n := quadraticGroups(large.nets, large.vim); n != 5000 {
				b.Fatal(n)
			}
		})
	}
	n := float64(b.N)
	b.ReportMetric(float64(t10k.Microseconds())/1000/n, "ms-10k-networks")
	b.ReportMetric(float64(t1k.Microseconds())/1000/n, "ms-1k-networks")
	b.ReportMetric(float64(t10k)/float64(t1k), "cost-of-10x-n")
	b.ReportMetric(float64(q10k.Microseconds())/1000/n, "ms-10k-quadratic-baseline")
	b.ReportMetric(float64(q10k)/float64(t10k), "ratio-quadratic/engine")
}
