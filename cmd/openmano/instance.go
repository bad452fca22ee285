package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// instanceCommands are the commands of NS instances and their networks.
func instanceCommands() []spec {
	return []spec{
		{name: "instance-scenario-create", args: "FILE [--dry-run] [--wait [--timeout D]]",
			summary: "Create an NS instance from a YAML/JSON file or inline content: {\"instance\": {...}} or the inner object.\n--dry-run only shows the WAN links it would create.\n" + waitHelp, min: 1, max: 1, setup: setupInstanceCreate},
		{name: "instance-scenario-list", complete: "instance", args: "[NAME] [-w]", summary: "List the instances of OPENMANO_TENANT, or show one with its networks and WAN links.\n" +
			"-w/--watch: list them with the sum of their WAN links' statuses, then print an instance's row again each\n" +
			"time an event of its running actions changes it, until these actions settle.", max: 1, setup: setupInstanceList},
		{name: "instance-scenario-delete", complete: "instance", args: "NAME [-f] [--wait [--timeout D]]", summary: "Delete an NS instance (its WAN links are deleted by a new action).\n" + waitHelp, min: 1, max: 1, setup: setupInstanceDelete},
		{name: "instance-net-update", complete: "instance", args: "INSTANCE NET [--status S] [--encapsulation-type T] [--encapsulation-id N] [--error-msg M] [--wait [--timeout D]]",
			summary: "Report the status or encapsulation of a local network of an instance (NET: uuid, osm_id or VIM name).\n" +
				"A change of encapsulation edits the WAN links of its VLD on the controller (an EDIT action).\n" + waitHelp, min: 2, max: 2, setup: setupNetUpdate},
		{name: "instance-net-add", complete: "instance", args: "INSTANCE --vld SCE_NET_ID --datacenter DC [--encapsulation-id N] [--status S] [--wait [--timeout D]]",
			summary: "Scale out: add a network of an existing VLD in another datacenter; its WAN link grows (a multipoint\nservice past two datacenters, where the WIM makes one).\n" + waitHelp, min: 1, max: 1, setup: setupNetAdd},
		{name: "instance-net-delete", complete: "instance", args: "INSTANCE NET [--wait [--timeout D]]",
			summary: "Scale in: remove a network of an instance; its WAN link shrinks, or goes below two datacenters.\n" + waitHelp, min: 2, max: 2, setup: setupNetDelete},
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
			s.loadNames(ctx)
			s.emit(r, func(doc any) {
				fmt.Fprintf(s.c.Stdout, "%-38s %-6s %-20s %-38s %s\n", "SCE_NET_ID", "TYPE", "WIM", "WIM_ACCOUNT", "DATACENTERS")
				for _, l := range asList(asMap(asMap(doc)["plan"])["wan_links"]) {
					lm := asMap(l)
					var dcs []string
					for _, d := range asList(lm["datacenters"]) {
						dcs = append(dcs, s.datacenterName(str(d)))
					}
					fmt.Fprintf(s.c.Stdout, "%-38s %-6s %-20s %-38s %s\n", str(lm["sce_net_id"]), str(lm["service_type"]), str(lm["wim_name"]),
						str(lm["wim_account_id"]), strings.Join(dcs, ","))
					// Why each WIM was chosen or not, under its link.
					for _, v := range asList(lm["wims"]) {
						vm := asMap(v)
						fmt.Fprintf(s.c.Stdout, "  %-20s %s\n", str(vm["wim_name"])+":", str(vm["reason"]))
					}
				}
			})
			return nil
		}
		s.loadNames(ctx)
		s.emit(r, s.printInstance)
		if !*wait.wait {
			return nil
		}
		inst := asMap(r.doc) // openmano's flat instance
		return s.wait(ctx, s.progressOut(), t, str(inst["uuid"]), str(inst["action_id"]), *wait.timeout)
	}
}

func setupInstanceList(fs *pflag.FlagSet) runFunc {
	watch := watchFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		if *watch {
			path := seg(t, "instances")
			if len(args) == 1 {
				path = seg(t, "instances", args[0])
			}
			r, err := s.do(ctx, "GET", path, nil)
			if err != nil {
				return err
			}
			if len(args) == 1 { // one instance: watched as a list of one
				inst := asMap(r.doc) // openmano's flat instance
				r = &response{raw: r.raw, doc: map[string]any{"instances": []any{inst}}}
			}
			return s.watchInstances(ctx, t, r)
		}
		if len(args) == 0 {
			return s.call(ctx, "GET", seg(t, "instances"), nil, nil)
		}
		s.loadNames(ctx)
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
	wait := waitFlags(fs)
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
		// A change of encapsulation queues an EDIT of the WAN links: --wait
		// follows it until the controller holds the change.
		return s.networkChange(ctx, t, "PUT", seg(t, "instances", args[0], "networks", args[1]), map[string]any{"network": n}, "", wait)
	}
}

// networkChange sends a change of an instance's networks, prints the
// answer and, with --wait, follows the action it queued (an EDIT or
// DELETE of WAN links; none: done) of instance (empty: the answer's
// network's).
func (s *session) networkChange(ctx context.Context, t, method, path string, body any, instance string, wait waitOptions) error {
	r, err := s.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	s.emit(r, nil)
	m := asMap(r.doc)
	if !*wait.wait || str(m["action_id"]) == "" {
		return nil
	}
	if instance == "" {
		instance = str(asMap(m["network"])["instance_scenario_id"])
	}
	return s.wait(ctx, s.progressOut(), t, instance, str(m["action_id"]), *wait.timeout)
}

func setupNetAdd(fs *pflag.FlagSet) runFunc {
	vld := fs.String("vld", "", "the VLD (sce_net_id) the network belongs to")
	dc := fs.String("datacenter", "", "the datacenter of the new network")
	encID := fs.Int("encapsulation-id", 0, "VLAN id")
	status := fs.String("status", "", "status of the network (ACTIVE, BUILD, ...)")
	wait := waitFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if *vld == "" || *dc == "" {
			return &usageError{msg: "give --vld and --datacenter"}
		}
		n := map[string]any{"sce_net_id": *vld, "datacenter": *dc}
		optional(fs, n, "status", "status", *status)
		if fs.Changed("encapsulation-id") {
			n["encapsulation_type"], n["encapsulation_id"] = "vlan", *encID
		}
		t, err := s.tenant()
		if err != nil {
			return err
		}
		return s.networkChange(ctx, t, "POST", seg(t, "instances", args[0], "networks"), map[string]any{"network": n}, "", wait)
	}
}

func setupNetDelete(fs *pflag.FlagSet) runFunc {
	wait := waitFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		return s.networkChange(ctx, t, "DELETE", seg(t, "instances", args[0], "networks", args[1]), nil, args[0], wait)
	}
}

// printInstance prints an instance line, then its networks, WAN links and
// creating action.
func (s *session) printInstance(doc any) {
	inst := asMap(doc) // openmano's flat instance
	s.printItem(inst, s.columnsOf([]any{inst}, s.verbose(), false), s.verbose())
	// Networks and datacenters by name where they have one: a WAN link
	// is named by the networks it joins. A network without a VIM name is
	// named by its osm_id: an L2SM vpn-service's networks are its accesses
	// (osm_id the network-access-id), two of which may share a datacenter.
	netNames := map[string][]string{}
	for _, n := range asList(inst["networks"]) {
		m := asMap(n)
		name := str(m["vim_name"])
		if name == "" {
			name = str(m["osm_id"])
		}
		if vld := str(m["sce_net_id"]); vld != "" && name != "" {
			netNames[vld] = append(netNames[vld], name)
		}
		if name == "" {
			name = str(m["sce_net_id"])
		}
		fmt.Fprintf(s.c.Stdout, "  net      %-38s %-38s %-20s %s\n", str(m["uuid"]), name, s.datacenterName(str(m["datacenter_id"])), str(m["status"]))
	}
	for _, l := range asList(inst["wan_links"]) {
		m := asMap(l)
		names := netNames[str(m["sce_net_id"])]
		slices.Sort(names)
		names = slices.Compact(names) // a VLD's osm_id in each datacenter
		name := strings.Join(names, ",")
		if name == "" {
			name = str(m["sce_net_id"])
		}
		line := fmt.Sprintf("  wan_link %-38s %-38s %s", str(m["uuid"]), name, str(m["status"]))
		if typ := str(m["service_type"]); typ != "" && typ != "ELINE" {
			line += " " + typ // an ELINE is what a link was before any other type
		}
		if e := str(m["error_msg"]); e != "" {
			line += " " + e
		}
		fmt.Fprintln(s.c.Stdout, line)
	}
	if a := str(inst["action_id"]); a != "" {
		fmt.Fprintf(s.c.Stdout, "  action   %s\n", a)
	}
}
