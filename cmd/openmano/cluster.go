package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
)

// clusterCommands are the commands of the wimd cluster.
func clusterCommands() []spec {
	return []spec{
		{name: "cluster-list", summary: "Show the wimd cluster as the server sees it: coordinator, leader, members with the accounts\nassigned to each, their health in Consul's catalog and when the server last saw them; the\naccounts the server owns now (holds the lease of).", setup: setupClusterList},
	}
}

func setupClusterList(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		r, err := s.do(ctx, "GET", "/cluster", nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) {
			m, _ := doc.(map[string]any)
			assigned, _ := m["assignments"].(map[string]any)
			fmt.Fprintf(s.c.Stdout, "coordinator %s, this process %s, leader %s\n", str(m["coordinator"]), str(m["instance_id"]), str(m["leader"]))
			members, _ := m["members"].([]any)
			if len(members) > 0 {
				fmt.Fprintf(s.c.Stdout, "  %-30s %-24s %14s  %-8s  %-24s  %s\n", "MEMBER (* leader)", "ADDRESS", "ACCOUNTS", "HEALTH", "LAST SEEN", "SINCE")
			}
			for _, x := range members {
				mem, _ := x.(map[string]any)
				id := str(mem["id"])
				accts, _ := assigned[id].([]any)
				mark := " "
				if id == str(m["leader"]) {
					mark = "*"
				}
				fmt.Fprintf(s.c.Stdout, "%s %-30s %-24s %5d accounts  %-8s  %-24s  since %s\n", mark, id, str(mem["address"]), len(accts),
					orDash(str(mem["health"])), orDash(str(mem["last_seen"])), str(mem["started_at"]))
			}
			owned, _ := m["owned"].([]any)
			fmt.Fprintf(s.c.Stdout, "owned by this process: %d accounts\n", len(owned))
		})
		return nil
	}
}
