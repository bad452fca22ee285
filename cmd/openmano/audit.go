package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

// auditCommands read the API's audit trail (admin scope).
func auditCommands() []spec {
	return []spec{
		{name: "audit-list", summary: "List the audit trail, oldest first: every request that changed something or was refused for\n" +
			"its credentials, with when, the API token's id (never the token), the client address, the\n" +
			"method and route, the ids it touched and its status. Needs a token with the admin scope.\n" +
			"--since starts at a time; a page holds --limit entries and --after <id> gives the next.", max: 0, setup: setupAuditList},
	}
}

func setupAuditList(fs *pflag.FlagSet) runFunc {
	since := fs.String("since", "", "only entries at or after this time (2006-01-02T15:04:05Z, or a date)")
	after := fs.Int64("after", 0, "only entries after this id (the last id of the previous page)")
	limit := fs.Int("limit", 0, "entries in the page, 1 to 1000 (the server's default: 100)")
	return func(ctx context.Context, s *session, _ []string) error {
		q := url.Values{}
		if *since != "" {
			q.Set("since", *since)
		}
		if *after != 0 {
			q.Set("after", strconv.FormatInt(*after, 10))
		}
		if *limit != 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		path := "/openmano/audit"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		r, err := s.do(ctx, "GET", path, nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) {
			m, _ := doc.(map[string]any)
			list, _ := m["audit"].([]any)
			tw := tabwriter.NewWriter(s.c.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAT\tTOKEN\tCLIENT\tMETHOD\tROUTE\tSTATUS\tOUTCOME\tOBJECTS")
			for _, x := range list {
				e, _ := x.(map[string]any)
				var objects []string
				if l, ok := e["objects"].([]any); ok {
					for _, o := range l {
						objects = append(objects, str(o))
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", whole(e["id"]), str(e["at"]), orDash(str(e["token_id"])), str(e["client"]),
					str(e["method"]), str(e["route"]), str(e["status"]), str(e["outcome"]), orDash(strings.Join(objects, " ")))
			}
			tw.Flush()
		})
		return nil
	}
}

// whole prints a JSON number as an integer: ids pass a million, which
// fmt prints as 1e+06.
func whole(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return str(v)
}
