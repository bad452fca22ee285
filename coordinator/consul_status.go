package coordinator

import (
	"context"
	"fmt"
	"time"

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
	members := c.parseMembers(pairs).live
	pairs, _, err = c.api.KV().List(c.keys.assignments(), q)
	if err != nil {
		return Status{}, fmt.Errorf("coordinator: read assignments: %w", err)
	}
	st := Status{
		Coordinator: "consul",
		InstanceID:  c.cfg.InstanceID,
		Members:     members,
		Assignments: map[string][]string{},
	}
	health, err := c.health(q)
	if err != nil {
		return Status{}, fmt.Errorf("coordinator: read the catalog's health: %w", err)
	}
	now := time.Now().UTC()
	c.mu.Lock()
	for i := range st.Members {
		m := &st.Members[i]
		m.Health = health[m.ID]
		if m.LastSeen = c.seen[m.ID]; m.LastSeen.IsZero() {
			m.LastSeen = now // read live just now
		}
	}
	c.mu.Unlock()
	if leader != nil && leader.Session != "" {
		st.Leader = string(leader.Value)
	}
	if st.Members == nil {
		st.Members = []Member{}
	}
	// Each member's assignment as it applies it, in either layout.
	for m, a := range c.keys.parseStored(pairs).applied() {
		st.Assignments[m] = sortedSet(a.accounts)
	}
	return st, nil
}

// health reads the status of every member's check in Consul's catalog
// (by instance id; none without a check).
func (c *Consul) health(q *api.QueryOptions) (map[string]string, error) {
	out := map[string]string{}
	if c.check == nil {
		return out, nil
	}
	entries, _, err := c.api.Health().Service(c.cfg.Service, "", false, q)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Service == nil || e.Service.Meta["consul_prefix"] != c.cfg.Prefix {
			continue
		}
		out[e.Service.Meta["instance_id"]] = e.Checks.AggregatedStatus()
	}
	return out, nil
}

// Gauges is Coordinator.Gauges.
func (c *Consul) Gauges() Gauges {
	return Gauges{Leader: c.leading.Load(), Members: int(c.members.Load()), Generation: c.generation.Load()}
}
