package engine

import (
	"fmt"
	"testing"

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
// and 10k networks against the naive quadratic grouping, in the same run:
// scaling 10x in n should cost ~10x (n log n), not ~100x.
func BenchmarkDeriveWANLinks(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		in, nets, vims := benchNetworks(n)
		vim := func(id string) string { return vims[id] }
		b.Run(fmt.Sprintf("engine/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				groups, err := deriveGroups(in, nets, vim)
				if err != nil || len(groups) != n/2 {
					b.Fatalf("%d groups, %v", len(groups), err)
				}
			}
		})
		b.Run(fmt.Sprintf("quadratic-baseline/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if got := quadraticGroups(nets, vim); got != n/2 {
					b.Fatalf("%d links", got)
				}
			}
		})
	}
}
