package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// instanceCommands are the commands of NS instances and their networks.
func instanceCommands() []spec {
	return []spec{
		{name: "instance-scenario-create", args: "FILE [--dry-run] [--wait [--timeout D]]",
			summary: "Create an NS instance from a YAML/JSON file or inline content: {\"instance\": {...}} or the inner object.\n--dry-run only shows the WAN links it would create.\n" + waitHelp, min: 1, max: 1, setup: setupInstanceCreate},
		{name: "instance-scenario-list", args: "[NAME]", summary: "List the instances of OPENMANO_TENANT, or show one with its networks and WAN links.", max: 1, setup: setupInstanceList},
		{name: "instance-scenario-delete", args: "NAME [-f] [--wait [--timeout D]]", summary: "Delete an NS instance (its WAN links are deleted by a new action).\n" + waitHelp, min: 1, max: 1, setup: setupInstanceDelete},
		{name: "instance-net-update", args: "INSTANCE NET [--status S] [--encapsulation-type T] [--encapsulation-id N] [--error-msg M]",
			summary: "Report the status or encapsulation of a local network of an instance (NET: uuid, osm_id or VIM name).", min: 2, max: 2, setup: setupNetUpdate},
	}
}

func setupInstanceCreate(fs *pflag.FlagSet) runFunc {
	dry := fs.Bool("dry-run", false, "only show the WAN links the instance would get (nothing is created)")
	wait := waitFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		doc, err := loadFileOrYAML(args[0])
		if err != nil {
			return err
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return cliErrorf("%s: expected a mapping", args[0])
		}
		if _, ok := m["instance"]; !ok {
			m = map[string]any{"instance": m}
		}
		path := seg(t, "instances")
		if *dry {
			path += "?dry_run=true"
		}
		r, err := s.do(ctx, "POST", path, m)
		if err != nil {
			return err
		}
		if *dry {
			s.emit(r, func(doc any) {
				fmt.Fprintf(s.c.Stdout, "%-38s %-20s %-38s %s\n", "SCE_NET_ID", "WIM", "WIM_ACCOUNT", "DATACENTERS")
				for _, l := range asList(asMap(asMap(doc)["plan"])["wan_links"]) {
					lm := asMap(l)
					var dcs []string
					for _, d := range asList(lm["datacenters"]) {
						dcs = append(dcs, str(d))
					}
					fmt.Fprintf(s.c.Stdout, "%-38s %-20s %-38s %s\n", str(lm["sce_net_id"]), str(lm["wim_name"]), str(lm["wim_account_id"]), strings.Join(dcs, ","))
				}
			})
			return nil
		}
		s.emit(r, s.printInstance)
		if !*wait.wait {
			return nil
		}
		inst := asMap(r.doc) // openmano's flat instance
		return s.wait(ctx, s.progressOut(), t, str(inst["uuid"]), str(inst["action_id"]), *wait.timeout)
	}
}

func setupInstanceList(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return s.call(ctx, "GET", seg(t, "instances"), nil, nil)
		}
		return s.call(ctx, "GET", seg(t, "instances", args[0]), nil, s.printInstance)
	}
}

func setupInstanceDelete(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	wait := waitFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		if err := s.confirm(*force, fmt.Sprintf("Delete scenario instance %s", args[0])); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg(t, "instances", args[0]), nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) {
			m := asMap(doc)
			fmt.Fprintln(s.c.Stdout, str(m["result"]))
			if a := str(m["action_id"]); a != "" {
				fmt.Fprintf(s.c.Stdout, "action %s\n", a)
			}
		})
		if !*wait.wait {
			return nil
		}
		// The instance is gone: its actions are found by its uuid.
		m := asMap(r.doc)
		return s.wait(ctx, s.progressOut(), t, str(m["instance_id"]), str(m["action_id"]), *wait.timeout)
	}
}

func setupNetUpdate(fs *pflag.FlagSet) runFunc {
	status := fs.String("status", "", "new status: ACTIVE, BUILD, DOWN, ERROR, ...")
	encType := fs.String("encapsulation-type", "", "none or vlan")
	encID := fs.Int("encapsulation-id", 0, "VLAN id")
	errMsg := fs.String("error-msg", "", "error message of the network")
	return func(ctx context.Context, s *session, args []string) error {
		n := map[string]any{}
		optional(fs, n, "status", "status", *status)
		optional(fs, n, "encapsulation-type", "encapsulation_type", *encType)
		optional(fs, n, "error-msg", "error_msg", *errMsg)
		if fs.Changed("encapsulation-id") {
			n["encapsulation_id"] = *encID
		}
		if len(n) == 0 {
			return &usageError{msg: "nothing to update: give --status, --encapsulation-type, --encapsulation-id or --error-msg"}
		}
		t, err := s.tenant()
		if err != nil {
			return err
		}
		return s.call(ctx, "PUT", seg(t, "instances", args[0], "networks", args[1]), map[string]any{"network": n}, nil)
	}
}

// printInstance prints an instance line, then its networks, WAN links and
// creating action.
func (s *session) printInstance(doc any) {
	inst := asMap(doc) // openmano's flat instance
	s.printItem(inst, columnsOf([]any{inst}, s.verbose()), s.verbose())
	for _, n := range asList(inst["networks"]) {
		m := asMap(n)
		name := str(m["sce_net_id"])
		if name == "" {
			name = str(m["vim_name"])
		}
		fmt.Fprintf(s.c.Stdout, "  net      %-38s %-38s %-38s %s\n", str(m["uuid"]), name, str(m["datacenter_id"]), str(m["status"]))
	}
	for _, l := range asList(inst["wan_links"]) {
		m := asMap(l)
		line := fmt.Sprintf("  wan_link %-38s %-38s %s", str(m["uuid"]), str(m["sce_net_id"]), str(m["status"]))
		if e := str(m["error_msg"]); e != "" {
			line += " " + e
		}
		fmt.Fprintln(s.c.Stdout, line)
	}
	if a := str(inst["action_id"]); a != "" {
		fmt.Fprintf(s.c.Stdout, "  action   %s\n", a)
	}
}
