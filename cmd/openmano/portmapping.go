package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
)

// portMappingCommands are the commands of the port mappings of a WIM.
func portMappingCommands() []spec {
	return []spec{
		{name: "wim-port-mapping-create", aliases: []string{"wim-port-mapping-set"}, args: "[WIM] FILE [-f]",
			summary: "Set the port mappings of a WIM from a YAML/JSON list (alias wim-port-mapping-set). Existing mappings are\nreplaced after confirmation. WIM defaults to OPENMANO_WIM.", min: 1, max: 2, setup: setupPortMappingCreate},
		{name: "wim-port-mapping-list", args: "[WIM]", summary: "Show the port mappings of a WIM. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupPortMappingList},
		{name: "wim-port-mapping-delete", aliases: []string{"wim-port-mapping-clear"}, args: "[WIM] [-f]",
			summary: "Delete every port mapping of a WIM (alias wim-port-mapping-clear). WIM defaults to OPENMANO_WIM.", max: 1, setup: setupPortMappingDelete},
	}
}

// printMappings prints port mappings as openmano did: YAML.
func (s *session) printMappings(doc any) { s.dumpYAML(doc) }

func setupPortMappingCreate(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		file := args[len(args)-1]
		t, wim, err := s.tenantWIM(false, args[:len(args)-1])
		if err != nil {
			return err
		}
		doc, err := loadFileOrYAML(file)
		if err != nil {
			return err
		}
		if m, ok := doc.(map[string]any); ok && m["wim_port_mapping"] != nil {
			doc = m["wim_port_mapping"]
		}
		if _, ok := doc.([]any); !ok {
			return cliErrorf("%s: expected a list of port mappings", file)
		}
		cur, err := s.do(ctx, "GET", seg(t, "wims", wim, "port_mapping"), nil)
		if err != nil {
			return err
		}
		if len(asList(asMap(cur.doc)["wim_port_mapping"])) > 0 {
			if err := s.confirm(*force, fmt.Sprintf("WIM %s already contains a port mapping. Overwrite?", wim)); err != nil {
				return err
			}
			if _, err := s.do(ctx, "DELETE", seg(t, "wims", wim, "port_mapping"), nil); err != nil {
				return err
			}
		}
		return s.call(ctx, "POST", seg(t, "wims", wim, "port_mapping"), map[string]any{"wim_port_mapping": doc}, s.printMappings)
	}
}

func setupPortMappingList(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, wim, err := s.tenantWIM(false, args)
		if err != nil {
			return err
		}
		return s.call(ctx, "GET", seg(t, "wims", wim, "port_mapping"), nil, s.printMappings)
	}
}

func setupPortMappingDelete(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, wim, err := s.tenantWIM(false, args)
		if err != nil {
			return err
		}
		if err := s.confirm(*force, fmt.Sprintf("Clear WIM port mapping for wim %s", wim)); err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg(t, "wims", wim, "port_mapping"), nil, nil)
	}
}
