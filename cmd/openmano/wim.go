package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
)

// wimCommands are the commands of WIMs.
func wimCommands() []spec {
	return []spec{
		{name: "wim-create", args: "NAME URL [--type T] [--description D] [--config YAML|file]",
			summary: "Create a WIM. The server requires a type, one of the connectors it offers (a wrong one is\nanswered with the list); config may carry wim_port_mapping.",
			min:     2, max: 2, setup: setupWIMCreate},
		{name: "wim-list", args: "[NAME] [-a]", summary: "List the WIMs of OPENMANO_TENANT (all with -a), or show one. The list has the status of the tenant's\n" +
			"account on each WIM, and why when it is not ACTIVE; one WIM is shown with its type, URL, the tenant's account\n" +
			"and its port mappings.", max: 1, complete: "wim", setup: setupWIMList},
		{name: "wim-edit", args: "[WIM] --file YAML|file [-f]", complete: "wim", summary: "Edit a WIM (PUT /openmano/wims/WIM); the content is wrapped in {\"wim\": ...} if needed.\nWIM defaults to OPENMANO_WIM.", max: 1, setup: setupWIMEdit},
		{name: "wim-delete", args: "NAME [-f]", complete: "wim", summary: "Delete a WIM with its accounts and port mappings.", min: 1, max: 1, setup: setupWIMDelete},
	}
}

func setupWIMCreate(fs *pflag.FlagSet) runFunc {
	typ := fs.String("type", "", "WIM type: a connector the server offers, e.g. ietfl2vpn, tapi, onos or dynpac (required; the server lists its types when it refuses one)")
	desc := fs.String("description", "", "description of the WIM")
	config := fs.String("config", "", "config as inline YAML/JSON or a file (may carry wim_port_mapping)")
	return func(ctx context.Context, s *session, args []string) error {
		w := map[string]any{"name": args[0], "wim_url": args[1]}
		optional(fs, w, "type", "type", *typ)
		optional(fs, w, "description", "description", *desc)
		if *config != "" {
			m, err := loadConfig(*config)
			if err != nil {
				return err
			}
			w["config"] = m
		}
		return s.call(ctx, "POST", seg("wims"), map[string]any{"wim": w}, nil)
	}
}

func setupWIMList(fs *pflag.FlagSet) runFunc {
	all := allFlag(fs, "the WIMs of every tenant")
	return func(ctx context.Context, s *session, args []string) error {
		t, err := s.tenantOrAny(*all)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			if *all {
				// A WIM has an account per tenant: no one status.
				return s.call(ctx, "GET", seg(t, "wims"), nil, nil)
			}
			return s.listWIMsWithStatus(ctx, t)
		}
		s.loadNames(ctx)
		return s.call(ctx, "GET", seg(t, "wims", args[0]), nil, s.printWIM)
	}
}

// printWIM prints one WIM: its line, then its type, URL and description,
// the tenant's account (with its status, and why when not ACTIVE) and its
// port mappings, datacenters by name.
func (s *session) printWIM(doc any) {
	w := asMap(asMap(doc)["wim"])
	s.printItem(w, s.columnsOf([]any{w}, s.verbose(), false), 0)
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(s.c.Stdout, "  %-14s %s\n", label+":", value)
		}
	}
	field("Type", str(w["type"]))
	field("URL", str(w["wim_url"]))
	field("Description", oneLine(str(w["description"])))
	if a := asMap(w["wim_account"]); a != nil {
		line := orDash(str(a["name"])) + " (" + str(a["uuid"]) + ")"
		if u := str(a["user"]); u != "" {
			line += ", user " + u
		}
		line += ", " + str(a["status"])
		if msg := statusMessage(a); msg != "" {
			line += ": " + msg
		}
		field("Account", line)
	} else {
		field("Account", "none for this tenant")
	}
	groups := asList(asMap(w["config"])["wim_port_mapping"])
	if len(groups) == 0 {
		field("Port mappings", "none")
		return
	}
	fmt.Fprintln(s.c.Stdout, "  Port mappings:")
	s.printMappingRows("    ", groups)
}

func setupWIMEdit(fs *pflag.FlagSet) runFunc {
	file := fs.String("file", "", "the new WIM fields as inline YAML/JSON or a file (required)")
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if *file == "" {
			return &usageError{msg: "At least one argument must be provided to modify the wim: --file"}
		}
		wim, err := s.wim(args)
		if err != nil {
			return err
		}
		doc, err := loadFileOrYAML(*file)
		if err != nil {
			return err
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return cliErrorf("--file: expected a mapping, got %T", doc)
		}
		if _, ok := m["wim"]; !ok {
			m = map[string]any{"wim": m}
		}
		if err := s.confirm(*force, fmt.Sprintf("Edit wim %s", wim)); err != nil {
			return err
		}
		return s.call(ctx, "PUT", seg("wims", wim), m, func(doc any) { s.printVerbose(doc, s.verbose()+1) })
	}
}

func setupWIMDelete(fs *pflag.FlagSet) runFunc {
	force := forceFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if err := s.confirm(*force, fmt.Sprintf("Delete wim %s", args[0])); err != nil {
			return err
		}
		return s.call(ctx, "DELETE", seg("wims", args[0]), nil, nil)
	}
}

// listWIMsWithStatus lists the WIMs of tenant t with the status of the
// tenant's account on each (the last credentials check: ACTIVE, ERROR,
// UNKNOWN), which the table shows in its STATUS column. The list answer
// has no account, so each WIM is read; a WIM detached meanwhile shows
// none. JSON and YAML output are the list answer as is.
func (s *session) listWIMsWithStatus(ctx context.Context, t string) error {
	r, err := s.do(ctx, "GET", seg(t, "wims"), nil)
	if err != nil {
		return err
	}
	if s.structured() {
		s.emit(r, nil)
		return nil
	}
	for _, w := range asList(asMap(r.doc)["wims"]) {
		wm := asMap(w)
		id := str(wm["uuid"])
		if wm == nil || id == "" {
			continue
		}
		one, err := s.do(ctx, "GET", seg(t, "wims", id), nil)
		if err != nil {
			continue
		}
		if a := asMap(asMap(asMap(one.doc)["wim"])["wim_account"]); a["status"] != nil {
			wm["status"], wm["status_msg"] = a["status"], a["status_msg"]
		}
	}
	s.emit(r, nil)
	return nil
}
