package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

// reconcileCommands are the commands of drift reconcile.
func reconcileCommands() []spec {
	return []spec{
		{name: "reconcile", summary: "Compare the WIM accounts' controllers with wimro's database: orphan services (wimro's key,\n" +
			"and no WAN link or unfinished action of any account knows it), missing links (made, but gone\n" +
			"from the controller), mismatches (endpoints, or an L3VPN's sites, differ) and abandoned\n" +
			"services (their DELETE abandoned by an operator: known leftovers). --fix deletes the orphans\n" +
			"and re-queues the missing links as CREATEs and the mismatched ones as EDITs; abandoned\n" +
			"services are deleted only with --fix --delete-abandoned. Services without wimro's key are\n" +
			"never touched. The exit status is 0 whenever the server answered: read the report\n" +
			"(-o json: reconcile.accounts[].drift[]) to tell drift.", max: 0, setup: setupReconcile},
	}
}

func setupReconcile(fs *pflag.FlagSet) runFunc {
	account := fs.String("account", "", "reconcile only this WIM account (uuid or name)")
	fix := fs.Bool("fix", false, "delete orphan services and re-queue missing links")
	deleteAbandoned := fs.Bool("delete-abandoned", false, "with --fix, also delete the services whose DELETE an operator abandoned")
	return func(ctx context.Context, s *session, _ []string) error {
		q := url.Values{}
		if *account != "" {
			q.Set("account", *account)
		}
		if *fix {
			q.Set("fix", "true")
		}
		if *deleteAbandoned {
			q.Set("delete_abandoned", "true")
		}
		path := "/openmano/reconcile"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		r, err := s.do(ctx, "POST", path, nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) {
			m, _ := doc.(map[string]any)
			rep, _ := m["reconcile"].(map[string]any)
			accounts, _ := rep["accounts"].([]any)
			tw := tabwriter.NewWriter(s.c.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACCOUNT\tWIM\tTYPE\tLINKS\tSERVICES\tDRIFT\tERROR")
			var items [][]string
			for _, x := range accounts {
				a, _ := x.(map[string]any)
				drift, _ := a["drift"].([]any)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%v\t%d\t%s\n", str(a["account_name"]), str(a["wim_name"]), str(a["wim_type"]), a["links"], a["services"], len(drift), orDash(str(a["error"])))
				for _, y := range drift {
					d, _ := y.(map[string]any)
					fixed := "no"
					switch {
					case d["fixed"] == true && str(d["action_id"]) != "":
						fixed = "re-queued (action " + str(d["action_id"]) + ")"
					case d["fixed"] == true:
						fixed = "deleted"
					case str(d["fix_error"]) != "":
						fixed = "failed: " + str(d["fix_error"])
					}
					items = append(items, []string{str(a["account_name"]), str(d["kind"]), orDash(str(d["wan_link_id"])), orDash(str(d["service_id"])),
						orDash(str(d["link_status"])), fixed, str(d["detail"])})
				}
			}
			tw.Flush()
			for _, x := range accounts {
				if a, _ := x.(map[string]any); str(a["note"]) != "" {
					fmt.Fprintf(s.c.Stdout, "%s: %s\n", str(a["account_name"]), str(a["note"]))
				}
			}
			if len(items) == 0 {
				fmt.Fprintln(s.c.Stdout, "\nno drift")
				return
			}
			fmt.Fprintln(s.c.Stdout)
			fmt.Fprintln(tw, "ACCOUNT\tKIND\tWAN LINK\tSERVICE\tLINK STATUS\tFIXED\tDETAIL")
			for _, it := range items {
				fmt.Fprintln(tw, strings.Join(it, "\t"))
			}
			tw.Flush()
		})
		return nil
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
