package coordinator

import (
	"context"
	"fmt"

	"github.com/hashicorp/consul/api"
)

// Status reads the cluster from Consul: the leader (empty while the key
// is vacant), the live members, and each member's assigned accounts (a
// member the leader confirmed with no account has an empty list). It
// fails when Consul does not answer within ctx.
func (c *Consul) Status(ctx context.Context) (Status, error) {
	q := (&api.QueryOptions{}).WithContext(ctx)
	leader, _, err := c.api.KV().Get(c.keys.leader(), q)
	if err != nil {
		return Status{}, fmt.Errorf("coordinator: read leader key: %w", err)
	}
	pairs, _, err := c.api.KV().List(c.keys.members(), q)
	if err != nil {
		return Status{}, fmt.Errorf("coordinator: read members: %w", err)
	}
	list, _, err := c.api.KV().Keys(c.keys.assignments(), "", q)
	if err != nil {
		return Status{}, fmt.Errorf("coordinator: read assignments: %w", err)
	}
	st := Status{
		Coordinator: "consul",
		InstanceID:  c.cfg.InstanceID,
		Members:     c.parseMembers(pairs),
		Assignments: map[string][]string{},
	}
	if leader != nil && leader.Session != "" {
		st.Leader = string(leader.Value)
	}
	if st.Members == nil {
		st.Members = []Member{}
	}
	for m, a := range c.keys.parseAssignments(list) {
		st.Assignments[m] = sortedSet(a.accounts)
	}
	return st, nil
}
