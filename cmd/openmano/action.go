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
		{name: "action-list", args: "INSTANCE [ACTION_ID [--wait [--timeout D]]]", summary: "List the actions of an instance with done/tasks/failed counters, or show one with its tasks.\n" +
			"With ACTION_ID, " + waitHelp, min: 1, max: 2, setup: setupActionList},
	}
}

func setupActionList(fs *pflag.FlagSet) runFunc {
	wait := waitFlags(fs)
	return func(ctx context.Context, s *session, args []string) error {
		if *wait.wait && len(args) != 2 {
			return &usageError{msg: "--wait follows one action: give INSTANCE and ACTION_ID"}
		}
		t, err := s.tenant()
		if err != nil {
			return err
		}
		path := seg(t, "instances", args[0], "action")
		if len(args) == 2 {
			path = seg(t, "instances", args[0], "action", args[1])
		}
		if err := s.call(ctx, "GET", path, nil, s.printActions); err != nil || !*wait.wait {
			return err
		}
		return s.wait(ctx, s.progressOut(), t, args[0], args[1], *wait.timeout)
	}
}

// printActions prints instance actions with their progress counters and,
// for a single action, each task.
func (s *session) printActions(doc any) {
	actions := asList(asMap(doc)["actions"])
	if len(actions) > 0 {
		head := fmt.Sprintf("%-38s %-20s %s", "UUID", "DESCRIPTION", "PROGRESS")
		if s.verbose() >= 1 {
			head += "                    CREATED_AT"
		}
		fmt.Fprintln(s.c.Stdout, head)
	}
	for _, a := range actions {
		m := asMap(a)
		line := fmt.Sprintf("%-38s %-20s done=%s tasks=%s failed=%s", str(m["uuid"]), str(m["description"]),
			str(m["number_done"]), str(m["number_tasks"]), str(m["number_failed"]))
		if s.verbose() >= 1 {
			line += " " + str(m["created_at"])
		}
		fmt.Fprintln(s.c.Stdout, line)
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
}
