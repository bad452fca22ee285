package coordinator

import "sort"

// assignment is one account given to one member.
type assignment struct {
	member, account string
}

// assignments is what the assignment keys say: for each member that has
// a folder, whether the folder's marker is there and its accounts.
type assignments map[string]*memberAssignment

type memberAssignment struct {
	marker   bool
	accounts map[string]bool
}

func (as assignments) add(member, account string) {
	m := as[member]
	if m == nil {
		m = &memberAssignment{accounts: map[string]bool{}}
		as[member] = m
	}
	if account == "" {
		m.marker = true
		return
	}
	m.accounts[account] = true
}

// plan is what the leader writes in one pass, revocations first.
type plan struct {
	drop    []string     // members gone: their whole folder is deleted
	revoke  []assignment // accounts taken from live members
	assign  []assignment // accounts given, their old owner having let go
	markers []string     // live members without a folder marker yet
	// revoked counts every assignment removed, those of drop included.
	revoked int
	// pending counts the accounts still held by their old owner: they
	// are given on a later pass.
	pending int
	// waiting lists the pending accounts whose lease is known to be held.
	waiting []string
	// moved counts the accounts given or pending whose owner changes.
	moved int
}

func (p plan) empty() bool {
	return len(p.drop) == 0 && len(p.revoke) == 0 && len(p.assign) == 0 && len(p.markers) == 0
}

// makePlan compares the wanted owners with the current assignments. A
// wanted assignment is written only once nobody else holds the account:
// its PostgreSQL lease (holders: account → lease owner, LeaseOwner of a
// member id) is free (released, or expired: a member cut from the database
// holds nothing once its leases ran out) or the new owner's, or its holder
// departed (its session has been gone for a while; the lease expires on
// its own). Otherwise it is pending, and the next pass tries again. With
// known false the leases could not be read: every assignment still to
// write is pending, but revocations and folder markers, which need no
// lease, are written all the same (a new member is confirmed, and becomes
// ready, even while the leader cannot read the database).
func makePlan(wanted map[string][]string, current assignments, holders map[string]string, known bool, departed func(member string) bool) plan {
	var p plan
	n := 0
	for _, accts := range wanted {
		n += len(accts)
	}
	owner := make(map[string]string, n)
	for m, accts := range wanted {
		for _, a := range accts {
			owner[a] = m
		}
	}
	// Who holds each account now, according to Consul: one member (two
	// only in a broken state, kept in others).
	assignedTo := make(map[string]string, n)
	others := make(map[string][]string)
	for _, m := range sortedKeys(current) {
		ma := current[m]
		_, live := wanted[m]
		if !live {
			p.drop = append(p.drop, m)
			p.revoked += len(ma.accounts)
		}
		for _, a := range sortedSet(ma.accounts) {
			if _, dup := assignedTo[a]; dup {
				others[a] = append(others[a], m)
			} else {
				assignedTo[a] = m
			}
			if live && owner[a] != m {
				p.revoke = append(p.revoke, assignment{m, a})
				p.revoked++
			}
		}
	}
	for _, m := range sortedKeys(wanted) {
		if ma := current[m]; ma == nil || !ma.marker {
			p.markers = append(p.markers, m)
		}
		for _, a := range wanted[m] {
			if ma := current[m]; ma != nil && ma.accounts[a] {
				continue
			}
			prev, held := assignedTo[a]
			moving := held && prev != m
			for _, prev := range others[a] {
				moving = moving || prev != m
			}
			if h := memberOf(holders[a]); !known || h != "" && h != m && !departed(h) {
				p.pending++
				if known {
					p.waiting = append(p.waiting, a)
				}
				if known || moving {
					p.moved++
				}
				continue
			}
			if moving {
				p.moved++
			}
			p.assign = append(p.assign, assignment{m, a})
		}
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedSet(m map[string]bool) []string { return sortedKeys(m) }
