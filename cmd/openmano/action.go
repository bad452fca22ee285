package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// actionCommands are the commands of the actions of an NS instance.
func actionCommands() []spec {
	return []spec{
		{name: "action-list", complete: "instance", args: "INSTANCE [ACTION_ID [--wait [--timeout D]]] [-w]", summary: "List the actions of an instance with done/tasks/failed counters, or show one with its tasks.\n" +
			"-w/--watch: then print an action's row again each time an event changes it, until the actions settle.\n" +
			"With ACTION_ID, " + waitHelp, min: 1, max: 2, setup: setupActionList},
		{name: "action-cancel", complete: "instance", args: "INSTANCE ACTION_ID --reason R [--task N]",
			summary: "Cancel the unfinished tasks of an action (or only task N) that never reached the controller: not running now,\n" +
				"no run reached the controller, no service made. They become CANCELLED and nothing is left on the controller\n" +
				"(a cancelled CREATE's WAN link goes ERROR). All or nothing: the server refuses (409) naming each task that\n" +
				"reached the controller or is running. Recorded with who, when and the reason, and shown in the action's events.",
			min: 2, max: 2, setup: setupActionOverride("cancel")},
		{name: "action-abandon", complete: "instance", args: "INSTANCE ACTION_ID --force --reason R [--task N]",
			summary: "Abandon the unfinished DELETE tasks of an action (or only task N): wimro stops trying to delete their services,\n" +
				"which may REMAIN on the controller (a dead controller's DELETE otherwise retries for ever). The tasks become\n" +
				"ABANDONED and no longer block deleting the account or WIM (wim-delete); each service is recorded as abandoned\n" +
				"(WIM, account, controller URL, service key and id, who, when, why) and reconcile lists it as kind\n" +
				"\"abandoned\" (reconcile --fix --delete-abandoned deletes it once the controller answers). --force is\n" +
				"required. Shown in the action's events.",
			min: 2, max: 2, setup: setupActionOverride("abandon")},
	}
}

// setupActionOverride runs action-cancel or action-abandon: kind is the
// route's last segment and the body's key.
func setupActionOverride(kind string) func(fs *pflag.FlagSet) runFunc {
	return func(fs *pflag.FlagSet) runFunc {
		reason := fs.String("reason", "", "why (required): recorded with who asked and when")
		task := fs.Int("task", -1, "only this task index (default: every unfinished task the command applies to)")
		var force *bool
		if kind == "abandon" {
			force = fs.Bool("force", false, "required: confirm that the services may remain on the controller")
		}
		return func(ctx context.Context, s *session, args []string) error {
			if strings.TrimSpace(*reason) == "" {
				return &usageError{msg: "--reason is required: say why (it is recorded)"}
			}
			if force != nil && !*force {
				return &usageError{msg: "action-abandon needs --force: the abandoned DELETEs' services may remain on the controller"}
			}
			t, err := s.tenant()
			if err != nil {
				return err
			}
			in := map[string]any{"reason": *reason}
			if fs.Changed("task") {
				in["task_index"] = *task
			}
			if force != nil {
				in["force"] = true
			}
			return s.call(ctx, "POST", seg(t, "instances", args[0], "action", args[1], kind), map[string]any{kind: in}, func(doc any) {
				m := asMap(doc)
				fmt.Fprintln(s.c.Stdout, str(m["result"]))
				for _, o := range asList(m["overrides"]) {
					om := asMap(o)
					fmt.Fprintf(s.c.Stdout, "  task %s %s of WAN link %s: %s by %s at %s", str(om["task_index"]), str(om["action"]), str(om["wan_link_id"]),
						str(om["kind"]), str(om["actor"]), str(om["at"]))
					if kind == "abandon" {
						fmt.Fprintf(s.c.Stdout, "; service %s left on WIM %s (%s)", orDash(str(om["service_id"])), str(om["wim_name"]), str(om["wim_url"]))
					}
					fmt.Fprintln(s.c.Stdout)
				}
			})
		}
	}
}

func setupActionList(fs *pflag.FlagSet) runFunc {
	wait := waitFlags(fs)
	watch := watchFlag(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if *wait.wait && len(args) != 2 {
			return &usageError{msg: "--wait follows one action: give INSTANCE and ACTION_ID"}
		}
		if *wait.wait && *watch {
			return &usageError{msg: "--wait and -w/--watch are exclusive"}
		}
		t, err := s.tenant()
		if err != nil {
			return err
		}
		path := seg(t, "instances", args[0], "action")
		if len(args) == 2 {
			path = seg(t, "instances", args[0], "action", args[1])
		}
		r, err := s.do(ctx, "GET", path, nil)
		if err != nil {
			return err
		}
		s.emit(r, s.printActions)
		if *watch {
			only := ""
			if len(args) == 2 {
				only = args[1]
			}
			return s.watchActionRows(ctx, t, args[0], only, r)
		}
		if !*wait.wait {
			return nil
		}
		return s.wait(ctx, s.progressOut(), t, args[0], args[1], *wait.timeout)
	}
}

// printActions prints instance actions with their progress counters and,
// for a single action, each task.
func (s *session) printActions(doc any) {
	actions := asList(asMap(doc)["actions"])
	if len(actions) > 0 {
		s.actionRow("UUID", "DESCRIPTION", "PROGRESS", "AGE", "CREATED_AT")
	}
	for _, a := range actions {
		s.printAction(asMap(a))
	}
}

// actionRow prints one line of the action table.
func (s *session) actionRow(id, desc, progress, age, created string) {
	line := fmt.Sprintf("%-38s %-20s %-27s %-8s", id, desc, progress, age)
	if s.verbose() >= 1 || s.wide() {
		line += " " + created
	}
	fmt.Fprintln(s.c.Stdout, strings.TrimRight(line, " "))
}

// printAction prints an action's row, then its tasks when the answer has
// them (a single action).
func (s *session) printAction(m map[string]any) {
	s.actionRow(str(m["uuid"]), str(m["description"]), fmt.Sprintf("done=%s tasks=%s failed=%s",
		str(m["number_done"]), str(m["number_tasks"]), str(m["number_failed"])), s.age(str(m["created_at"])), str(m["created_at"]))
	for _, t := range asList(m["vim_wim_actions"]) {
		tm := asMap(t)
		line := fmt.Sprintf("  task %-3s %-7s %-17s %-38s %-10s", str(tm["task_index"]), str(tm["action"]),
			str(tm["item"]), str(tm["item_id"]), str(tm["status"]))
		if e := str(tm["error_msg"]); e != "" {
			line += " " + e
		}
		fmt.Fprintln(s.c.Stdout, strings.TrimRight(line, " "))
	}
}
