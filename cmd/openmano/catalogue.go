package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// The rest of OSM's openmano commands: the VNF catalogue, SDN controller
// records with a datacenter's SDN port mapping, and the vim-* commands,
// which wimd refuses (it has no VIM connector) with an error naming why,
// printed on stderr as every server error.

func catalogueCommands() []spec {
	specs := []spec{
		{name: "vnf-create", args: "FILE", summary: "Add a VNF to the catalogue from an openmano VNF descriptor or OSM's VNFD catalogue (kept for scenarios, never deployed).",
			min: 1, max: 1, setup: setupVNFCreate},
		{name: "vnf-list", args: "[NAME] [-a]", summary: "List the VNFs of OPENMANO_TENANT (all with -a), or show one.", max: 1, setup: setupVNFList},
		{name: "vnf-delete", args: "NAME [-f] [-a]", summary: "Delete a VNF (not while a scenario names it).", min: 1, max: 1, setup: setupVNFDelete},
		{name: "sdn-controller-create", args: "NAME --ip IP --port P --dpid DPID --type T [--description D] [--user U] [--passwd P]",
			summary: "Record an SDN (OpenFlow) controller; wimd keeps the record only (no password).", min: 1, max: 1, setup: setupSDNControllerCreate},
		{name: "sdn-controller-edit", args: "NAME [--name N] [--ip IP] [--port P] [--dpid DPID] [--type T] [--description D] [--user U] [-f]",
			summary: "Edit an SDN controller record.", min: 1, max: 1, setup: setupSDNControllerEdit},
		{name: "sdn-controller-list", args: "[NAME]", summary: "List the SDN controller records, or show one.", max: 1, setup: setupSDNControllerList},
		{name: "sdn-controller-delete", args: "NAME [-f]", summary: "Delete an SDN controller record (not while a datacenter's config.sdn-controller names it).",
			min: 1, max: 1, setup: setupSDNControllerDelete},
		{name: "datacenter-sdn-port-mapping-set", complete: "datacenter", args: "NAME FILE [-f]",
			summary: "Set a datacenter's SDN port mapping: a list of {compute_node, ports: [{pci, switch_port|switch_mac}]}.", min: 2, max: 2, setup: setupSDNMappingSet},
		{name: "datacenter-sdn-port-mapping-list", complete: "datacenter", args: "NAME", summary: "Show a datacenter's SDN port mapping.", min: 1, max: 1, setup: setupSDNMappingList},
		{name: "datacenter-sdn-port-mapping-clear", complete: "datacenter", args: "NAME [-f]", summary: "Clear a datacenter's SDN port mapping.", min: 1, max: 1, setup: setupSDNMappingClear},
	}
	for _, item := range []struct{ cmd, path string }{{"vim-net", "networks"}, {"vim-tenant", "tenants"}, {"vim-image", "images"}} {
		specs = append(specs,
			spec{name: item.cmd + "-list", args: "[NAME] --datacenter DC", summary: "List the VIM's " + item.path + ": wimd has no VIM connector and refuses, saying so.",
				max: 1, setup: setupVIM("GET", item.path)},
			spec{name: item.cmd + "-delete", args: "NAME --datacenter DC", summary: "Delete at the VIM: wimd has no VIM connector and refuses, saying so.",
				min: 1, max: 1, setup: setupVIM("DELETE", item.path)})
		if item.path != "images" {
			specs = append(specs, spec{name: item.cmd + "-create", args: "[FILE] --name NAME --datacenter DC",
				summary: "Create at the VIM: wimd has no VIM connector and refuses, saying so.", max: 1, setup: setupVIM("POST", item.path)})
		}
	}
	return specs
}

func setupVNFCreate(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		doc, err := loadConfig(args[0])
		if err != nil {
			return err
		}
		path := seg(t, "vnfs")
		if doc["vnfd:vnfd-catalog"] != nil || doc["vnfd-catalog"] != nil {
			path = seg("v3", t, "vnfd")
		}
		return s.call(ctx, "POST", path, doc, nil)
	}
}

func setupVNFList(fs *pflag.FlagSet) runFunc {
	all := allFlag(fs, "the VNFs of every tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		path := seg(t, "vnfs")
		if len(args) == 1 {
			path = seg(t, "vnfs", args[0])
		}
		return s.call(ctx, "GET", path, nil, nil)
	}
}

func setupVNFDelete(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	all := allFlag(fs, "a VNF of any tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		if err := s.confirm(*force, fmt.Sprintf("Delete VNF %s", args[0])); err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg(t, "vnfs", args[0]), nil, nil)
	}
}

// sdnControllerFlags are the fields of an SDN controller body; set
// writes those given on the command line.
func sdnControllerFlags(fs *pflag.FlagSet) func(m map[string]any) {
	names := []string{"ip", "dpid", "type", "description", "user"}
	vals := map[string]*string{}
	for _, n := range names {
		vals[n] = fs.String(n, "", "the controller's "+n)
	}
	port := fs.Int("port", 0, "the controller's port")
	passwd := fs.String("passwd", "", "accepted as openmano's CLI sends it; wimd does not keep it")
	return func(m map[string]any) {
		for _, n := range names {
			optional(fs, m, n, n, *vals[n])
		}
		if fs.Changed("port") {
			m["port"] = *port
		}
		optional(fs, m, "passwd", "password", *passwd)
	}
}

func setupSDNControllerCreate(fs *pflag.FlagSet) runFunc {
	set := sdnControllerFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		var missing []string
		for _, n := range []string{"ip", "port", "dpid", "type"} {
			if !fs.Changed(n) {
				missing = append(missing, "--"+n)
			}
		}
		if len(missing) > 0 {
			return &usageError{msg: "sdn-controller-create needs " + strings.Join(missing, ", ")}
		}
		c := map[string]any{"name": args[0]}
		set(c)
		return s.call(ctx, "POST", seg(t, "sdn_controllers"), map[string]any{"sdn_controller": c}, nil)
	}
}

func setupSDNControllerEdit(fs *pflag.FlagSet) runFunc {
	set := sdnControllerFlags(fs)
	name := fs.String("name", "", "the controller's new name")
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		c := map[string]any{}
		optional(fs, c, "name", "name", *name)
		set(c)
		if len(c) == 0 {
			return &usageError{msg: "sdn-controller-edit: give at least one field to change"}
		}
		if err := s.confirm(*force, fmt.Sprintf("Update SDN controller %s", args[0])); err != nil {
			return err
		}
		return s.call(ctx, "PUT", seg(t, "sdn_controllers", args[0]), map[string]any{"sdn_controller": c}, nil)
	}
}

func setupSDNControllerList(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		path := seg(t, "sdn_controllers")
		if len(args) == 1 {
			path = seg(t, "sdn_controllers", args[0])
		}
		return s.call(ctx, "GET", path, nil, nil)
	}
}

func setupSDNControllerDelete(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		if err := s.confirm(*force, fmt.Sprintf("Delete SDN controller %s", args[0])); err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg(t, "sdn_controllers", args[0]), nil, nil)
	}
}

func setupSDNMappingSet(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		doc, err := loadFileOrYAML(args[1])
		if err != nil {
			return err
		}
		if m, ok := doc.(map[string]any); ok && m["sdn_port_mapping"] != nil {
			doc = m["sdn_port_mapping"]
		}
		if err := s.confirm(*force, fmt.Sprintf("Replace the SDN port mapping of datacenter %s", args[0])); err != nil {
			return err
		}
		return s.call(ctx, "POST", seg(t, "datacenters", args[0], "sdn_mapping"), map[string]any{"sdn_port_mapping": doc}, nil)
	}
}

func setupSDNMappingList(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		r, err := s.do(ctx, "GET", seg(t, "datacenters", args[0], "sdn_mapping"), nil)
		if err != nil {
			return err
		}
		// The mapping is a document, not a list of items: shown whole.
		s.emit(r, s.dumpYAML)
		return nil
	}
}

func setupSDNMappingClear(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenant()
		if err != nil {
			return err
		}
		if err := s.confirm(*force, fmt.Sprintf("Clear the SDN port mapping of datacenter %s", args[0])); err != nil {
			return err
		}
		r, err := s.do(ctx, "DELETE", seg(t, "datacenters", args[0], "sdn_mapping"), nil)
		if err != nil {
			return err
		}
		s.emit(r, func(doc any) { fmt.Fprintf(s.c.Stdout, "%v port(s) deleted\n", asMap(doc)["result"]) })
		return nil
	}
}

// setupVIM sends what OSM's client sends for a vim-* command; wimd
// answers 400 naming why (no VIM connector), printed as any server error.
func setupVIM(method, item string) func(fs *pflag.FlagSet) runFunc {
	return func(fs *pflag.FlagSet) runFunc {
		dc := fs.String("datacenter", "", "the datacenter (default OPENMANO_DATACENTER)")
		name := fs.String("name", "", "name of the item to create")
		return func(ctx context.Context, s *session, args []string) error {
			t, err := s.tenant()
			if err != nil {
				return err
			}
			d := *dc
			if d == "" {
				d = s.c.Getenv("OPENMANO_DATACENTER")
			}
			if d == "" {
				return cliErrorf("neither --datacenter nor OPENMANO_DATACENTER names the datacenter")
			}
			path := seg(t, "vim", d, item)
			var body any
			switch {
			case method == "POST":
				one := map[string]any{}
				if len(args) == 1 {
					if one, err = loadConfig(args[0]); err != nil {
						return err
					}
				}
				optional(fs, one, "name", "name", *name)
				body = map[string]any{strings.TrimSuffix(item, "s"): one}
			case len(args) == 1:
				path = seg(t, "vim", d, item, args[0])
			}
			return s.call(ctx, method, path, body, nil)
		}
	}
}
