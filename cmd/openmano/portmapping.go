package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// portMappingCommands are the commands of the port mappings of a WIM.
func portMappingCommands() []spec {
	return []spec{
		{name: "wim-port-mapping-create", aliases: []string{"wim-port-mapping-set"}, args: "[WIM] FILE [-f]", complete: "wim",
			summary: "Set the port mappings of a WIM from a YAML/JSON list (alias wim-port-mapping-set). Existing mappings are\nreplaced after confirmation. WIM defaults to OPENMANO_WIM.", min: 1, max: 2, setup: setupPortMappingCreate},
		{name: "wim-port-mapping-list", args: "[WIM]", complete: "wim", summary: "Show the port mappings of a WIM. WIM defaults to OPENMANO_WIM.", max: 1, setup: setupPortMappingList},
		{name: "wim-port-mapping-delete", aliases: []string{"wim-port-mapping-clear"}, args: "[WIM] [-f]", complete: "wim",
			summary: "Delete every port mapping of a WIM (alias wim-port-mapping-clear). WIM defaults to OPENMANO_WIM.", max: 1, setup: setupPortMappingDelete},
		osmMappingCommand(),
	}
}

// printMappings prints port mappings as rows, one per mapping, like the
// other lists: the datacenter by name, the switch and port, the WAN
// service endpoint (-o yaml shows openmano's YAML).
func (s *session) printMappings(doc any) {
	groups := asList(asMap(doc)["wim_port_mapping"])
	if len(groups) == 0 {
		fmt.Fprintln(s.c.Stdout, "no port mappings")
		return
	}
	s.printMappingRows("", groups)
}

// printMappingRows prints port mapping groups ({datacenter_id,
// pop_wan_mappings}) as a table, each line starting with indent.
func (s *session) printMappingRows(indent string, groups []any) {
	row := func(dc, dpid, port, ep, info string) {
		fmt.Fprintln(s.c.Stdout, strings.TrimRight(fmt.Sprintf("%s%-20s %-24s %-8s %-38s %s", indent, dc, dpid, port, ep, info), " "))
	}
	row("DATACENTER", "SWITCH_DPID", "PORT", "SERVICE_ENDPOINT_ID", "")
	name := func(g any) string {
		gm := asMap(g)
		if dc := s.datacenterName(str(gm["datacenter_id"])); dc != "" {
			return dc
		}
		return str(gm["datacenter_name"])
	}
	// By datacenter name: the server orders them by uuid.
	groups = slices.Clone(groups)
	slices.SortStableFunc(groups, func(a, b any) int { return strings.Compare(name(a), name(b)) })
	for _, g := range groups {
		gm := asMap(g)
		dc := name(g)
		for _, m := range asList(gm["pop_wan_mappings"]) {
			mm := asMap(m)
			info := ""
			if s.wide() && mm["wan_service_mapping_info"] != nil {
				b, _ := json.Marshal(mm["wan_service_mapping_info"])
				info = string(b)
			}
			row(dc, str(mm["pop_switch_dpid"]), str(mm["pop_switch_port"]), str(mm["wan_service_endpoint_id"]), info)
		}
	}
}

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
		s.loadNames(ctx)
		return s.call(ctx, "POST", seg(t, "wims", wim, "port_mapping"), map[string]any{"wim_port_mapping": doc}, s.printMappings)
	}
}

func setupPortMappingList(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, wim, err := s.tenantWIM(false, args)
		if err != nil {
			return err
		}
		s.loadNames(ctx)
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
