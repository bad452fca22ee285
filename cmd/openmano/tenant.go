package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
)

// tenantCommands are the commands of tenants.
func tenantCommands() []spec {
	return []spec{
		{name: "tenant-create", args: "NAME [--description D]", summary: "Create an NFVO tenant.", min: 1, max: 1, setup: setupTenantCreate},
		{name: "tenant-list", complete: "tenant", args: "[NAME]", summary: "List the tenants, or show one.", max: 1, setup: setupTenantList},
		{name: "tenant-delete", complete: "tenant", args: "NAME [-f]", summary: "Delete a tenant.", min: 1, max: 1, setup: setupTenantDelete},
	}
}

func setupTenantCreate(fs *pflag.FlagSet) runFunc {
	desc := fs.String("description", "", "description of the tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t := map[string]any{"name": args[0]}
		optional(fs, t, "description", "description", *desc)
		return s.call(ctx, "POST", seg("tenants"), map[string]any{"tenant": t}, nil)
	}
}

func setupTenantList(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		path := seg("tenants")
		if len(args) == 1 {
			path = seg("tenants", args[0])
		}
		return s.call(ctx, "GET", path, nil, nil)
	}
}

func setupTenantDelete(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if err := s.confirm(*force, fmt.Sprintf("Delete tenant %s", args[0])); err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg("tenants", args[0]), nil, nil)
	}
}
