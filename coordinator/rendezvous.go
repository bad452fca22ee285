package coordinator

import (
	"hash/fnv"
	"sort"
)

// owners computes who should own each account: the member with the
// highest weight(member, account) (rendezvous, or highest-random-weight,
// hashing). It needs no state but the two lists, every leader computes
// the same answer for the same lists, and when a member comes or goes
// only the accounts whose best member changed move: those of a member
// that left, about 1/n of everyone's when the n-th member joins.
//
// The answer maps each member to its accounts, sorted; every member has
// an entry, possibly empty. With no member it is empty.
func owners(members, accounts []string) map[string][]string {
	out := make(map[string][]string, len(members))
	if len(members) == 0 {
		return out
	}
	for _, m := range members {
		out[m] = nil
	}
	for _, a := range accounts {
		best, bestW := "", uint64(0)
		for _, m := range members {
			w := weight(m, a)
			// Ties (as good as never with 64 bits) go to the smaller
			// id, so the answer never depends on the order of members.
			if best == "" || w > bestW || (w == bestW && m < best) {
				best, bestW = m, w
			}
		}
		out[best] = append(out[best], a)
	}
	for m := range out {
		sort.Strings(out[m])
	}
	return out
}

// weight is FNV-1a of member, a NUL and account, finished with
// MurmurHash3's fmix64 so that ids differing in their last bytes still
// spread over the whole range.
func weight(member, account string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	h.Write([]byte{0})
	h.Write([]byte(account))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
