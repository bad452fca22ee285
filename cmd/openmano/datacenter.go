package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
)

// datacenterCommands are the commands of datacenters.
func datacenterCommands() []spec {
	return []spec{
		{name: "datacenter-create", args: "NAME URL [--type T] [--description D] [--config YAML|file]",
			summary: "Register a datacenter. Its config.external_connections holds its WAN exit rules, e.g.\n" +
				`--config '{external_connections: [{vim_external_port: {switch: "00:00:00:00:00:00:00:01", port: "1"}}]}'`,
			min: 2, max: 2, setup: setupDatacenterCreate},
		{name: "datacenter-list", complete: "datacenter", args: "[NAME] [-a]", summary: "List the datacenters of OPENMANO_TENANT (all with -a), or show one.", max: 1, setup: setupDatacenterList},
		{name: "datacenter-attach", complete: "datacenter", args: "NAME", summary: "Attach a datacenter to OPENMANO_TENANT.", min: 1, max: 1, setup: setupDatacenterAttach},
		{name: "datacenter-detach", complete: "datacenter", args: "NAME", summary: "Detach a datacenter from OPENMANO_TENANT.", min: 1, max: 1, setup: setupDatacenterDetach},
		{name: "datacenter-delete", complete: "datacenter", args: "NAME [-f]", summary: "Delete a datacenter and its port mappings.", min: 1, max: 1, setup: setupDatacenterDelete},
	}
}

func setupDatacenterCreate(fs *pflag.FlagSet) runFunc {
	typ := fs.String("type", "", "VIM type (server default: openvim)")
	desc := fs.String("description", "", "description of the datacenter")
	config := fs.String("config", "", "config as inline YAML/JSON or a file")
	return func(ctx context.Context, s *session, args []string) error {
		d := map[string]any{"name": args[0], "vim_url": args[1]}
		optional(fs, d, "type", "type", *typ)
		optional(fs, d, "description", "description", *desc)
		if *config != "" {
			m, err := loadConfig(*config)
			if err != nil {
				return err
			}
			d["config"] = m
		}
		return s.call(ctx, "POST", seg("datacenters"), map[string]any{"datacenter": d}, nil)
	}
}

func setupDatacenterList(fs *pflag.FlagSet) runFunc {
	all := allFlag(fs, "the datacenters of every tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		path := seg(t, "datacenters")
		if len(args) == 1 {
			path = seg(t, "datacenters", args[0])
		}
		return s.call(ctx, "GET", path, nil, nil)
	}
}

func setupDatacenterAttach(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		return s.call(ctx, "POST", seg(t, "datacenters", args[0]), map[string]any{"datacenter": map[string]any{}}, nil)
	}
}

func setupDatacenterDetach(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg(t, "datacenters", args[0]), nil, nil)
	}
}

func setupDatacenterDelete(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if err := s.confirm(*force, fmt.Sprintf("Delete datacenter %s", args[0])); err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg("datacenters", args[0]), nil, nil)
	}
}
