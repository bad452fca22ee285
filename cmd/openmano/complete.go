package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
)

// What a command's first argument names, for the completion of names:
// the list route that has them (tenant: OPENMANO_TENANT) and the key of
// its answer.
var completions = map[string]struct {
	tenantScoped bool
	path, key    string
}{
	"tenant":     {false, "tenants", "tenants"},
	"wim":        {true, "wims", "wims"},
	"datacenter": {true, "datacenters", "datacenters"},
	"instance":   {true, "instances", "instances"},
}

// completeNames is the ValidArgsFunction of a command whose first
// argument is a kind of item: the names (else uuids) the server lists that
// start with what is typed, read with the client's settings (environment,
// token, --ca-file). Other arguments complete as files; a server that
// does not answer completes nothing.
func (t *tree) completeNames(kind string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		c := completions[kind]
		sess, err := t.c.session(t.g)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		path := seg(c.path)
		if c.tenantScoped {
			tenant := t.c.Getenv("OPENMANO_TENANT")
			if tenant == "" {
				tenant = "any"
			}
			path = seg(tenant, c.path)
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		r, err := sess.quiet(ctx, path)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, e := range asList(asMap(r.doc)[c.key]) {
			m := asMap(e)
			name := str(m["name"])
			if name == "" {
				name = str(m["uuid"])
			}
			if name != "" && strings.HasPrefix(name, toComplete) {
				names = append(names, name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
