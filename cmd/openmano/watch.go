package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/spf13/pflag"
)

// -w/--watch: after a list, follow the event streams of the actions still
// running (GET .../action/{id}/events, as --wait does) and print the row
// of each item again when an event changed it, like kubectl get -w. It
// ends when every followed action settled (or on Ctrl-C): the server has
// no stream of new instances, so a watch follows what the list showed.

func watchFlag(fs *pflag.FlagSet) *bool {
	return fs.BoolP("watch", "w", false, "after the list, follow the actions still running and print a row again each time an event changes it, until they settle")
}

// rowPrinter prints the row of an instance, or of one of its actions,
// after an event of that action, and once more when it settled; links are
// the statuses of the action's WAN links by then (DELETED: gone).
type rowPrinter func(ctx context.Context, instance, action string, links map[string]string)

// watchActions follows the unsettled actions of the instances (of
// tenant t; only the action named, when one is) and calls row after each
// of their events, one call at a time. It returns when every action
// settled; a lost stream is an error, a task that failed is not (the rows
// show it).
func (s *session) watchActions(ctx context.Context, t string, instances []string, only string, row rowPrinter) error {
	type followed struct{ instance, action string }
	var todo []followed
	for _, inst := range instances {
		r, err := s.quiet(ctx, seg(t, "instances", inst, "action"))
		if err != nil {
			return err
		}
		for _, a := range asList(asMap(r.doc)["actions"]) {
			m := asMap(a)
			id := str(m["uuid"])
			if only != "" && id != only {
				continue
			}
			running, err := s.running(ctx, t, inst, m)
			if err != nil {
				return err
			}
			if running {
				todo = append(todo, followed{inst, id})
			}
		}
	}
	var (
		mu   sync.Mutex // one row at a time
		wg   sync.WaitGroup
		errs = make([]error, len(todo))
	)
	for i, f := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWatcher(io.Discard)
			printRow := func() {
				links := w.linkStatuses()
				mu.Lock()
				defer mu.Unlock()
				row(ctx, f.instance, f.action, links)
			}
			w.onChange = func(wireEvent) { printRow() }
			err := s.follow(ctx, w, t, f.instance, f.action, 0)
			var we *waitError
			if err == nil || errors.As(err, &we) {
				// Settled (a link may have left BUILD in the done event's
				// summary only); ending badly is no error of the watch.
				printRow()
				err = nil
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// running says whether an action (a row of the action list) has tasks
// still to end. Its counters cannot always say: a CREATE task counts as
// done once its service is made, while it stays BUILD until the link
// leaves BUILD; then its tasks are read.
func (s *session) running(ctx context.Context, t, inst string, action map[string]any) (bool, error) {
	n := func(k string) int {
		v, _ := strconv.Atoi(str(action[k])) // a json.Number
		return v
	}
	if n("number_done")+n("number_failed") < n("number_tasks") {
		return true, nil
	}
	r, err := s.quiet(ctx, seg(t, "instances", inst, "action", str(action["uuid"])))
	if err != nil {
		return false, err
	}
	for _, a := range asList(asMap(r.doc)["actions"]) {
		for _, task := range asList(asMap(a)["vim_wim_actions"]) {
			if st := str(asMap(task)["status"]); st == "SCHEDULED" || st == "BUILD" {
				return true, nil
			}
		}
	}
	return false, nil
}

// sumStatus sums up an instance's WAN links (link → status) in one
// status: the worst of them (ERROR, then anything not ACTIVE, e.g. BUILD),
// ACTIVE when all are, none when it has no links.
func sumStatus(links map[string]string, none string) string {
	if len(links) == 0 {
		return none
	}
	status := "ACTIVE"
	for _, st := range links {
		switch {
		case st == "ERROR":
			return st
		case st != "ACTIVE":
			status = st
		}
	}
	return status
}

// changedRows prints a watched row only when it differs from the last
// printed for the same item: an event often changes nothing a row shows.
type changedRows map[string]string

func (c changedRows) changed(key, text string) bool {
	if c[key] == text {
		return false
	}
	c[key] = text
	return true
}

// render is what print prints, as text.
func (s *session) render(print func(s *session)) string {
	var b bytes.Buffer
	c := *s.c
	c.Stdout = &b
	q := *s
	q.c = &c
	print(&q)
	return b.String()
}

// watchRow prints the row of a watched item when it changed: the answer
// r as a document (-o json, yaml), else the row that table renders.
func (s *session) watchRow(rows changedRows, key string, r *response, table func(s *session)) {
	if s.structured() {
		s.emit(r, nil)
		return
	}
	if text := s.render(table); rows.changed(key, text) {
		fmt.Fprint(s.c.Stdout, text)
	}
}

// watchInstances prints the instance list r, each instance with the sum
// of its WAN links' statuses, then its row again each time an event
// changes a link (the events, and the done event's summary, carry the
// links' statuses: no read needed).
func (s *session) watchInstances(ctx context.Context, t string, r *response) error {
	items := asList(asMap(r.doc)["instances"])
	var ids []string
	links := map[string]map[string]string{} // instance → link → status
	for _, e := range items {
		m := asMap(e)
		id := str(m["uuid"])
		ids, links[id] = append(ids, id), map[string]string{}
		one, err := s.quiet(ctx, seg(t, "instances", id))
		if err != nil {
			return err
		}
		for _, l := range asList(asMap(one.doc)["wan_links"]) { // openmano's flat instance
			links[id][str(asMap(l)["uuid"])] = str(asMap(l)["status"])
		}
		m["status"] = sumStatus(links[id], "")
	}
	rows := changedRows{}
	cols := s.columnsOf(items, s.verbose(), true)
	cols.status = true
	if s.structured() {
		s.emit(r, nil)
	} else if len(items) > 0 {
		s.printRow(cols, map[string]any{"uuid": "UUID", "name": "NAME", "status": "STATUS", "age": "AGE", "created_at": "CREATED_AT",
			"type": "TYPE", "url": "URL", "description": "DESCRIPTION", "message": "MESSAGE"})
		for _, e := range items {
			m := asMap(e)
			text := s.render(func(s *session) { s.printRow(cols, m) })
			rows.changed(str(m["uuid"]), text)
			fmt.Fprint(s.c.Stdout, text)
		}
	}
	byID := map[string]map[string]any{}
	for _, e := range items {
		byID[str(asMap(e)["uuid"])] = asMap(e)
	}
	return s.watchActions(ctx, t, ids, "", func(ctx context.Context, id, _ string, changed map[string]string) {
		for link, st := range changed {
			if st == "DELETED" {
				delete(links[id], link) // gone with its instance
			} else if st != "" {
				links[id][link] = st
			}
		}
		row := map[string]any{}
		for k, v := range byID[id] {
			row[k] = v
		}
		row["status"] = sumStatus(links[id], "DELETED")
		if s.structured() {
			b, _ := json.Marshal(map[string]any{"instance": row})
			s.emit(&response{raw: b, doc: map[string]any{"instance": row}}, nil)
			return
		}
		if text := s.render(func(s *session) { s.printRow(cols, row) }); rows.changed(id, text) {
			fmt.Fprint(s.c.Stdout, text)
		}
	})
}

// watchActionRows prints a row of an action of instance inst each time an
// event changes it (only the action named, when one is).
func (s *session) watchActionRows(ctx context.Context, t, inst, only string, listed *response) error {
	rows := changedRows{}
	for _, a := range asList(asMap(listed.doc)["actions"]) {
		m := withoutTasks(asMap(a))
		rows.changed(str(m["uuid"]), s.render(func(s *session) { s.printAction(m) }))
	}
	return s.watchActions(ctx, t, []string{inst}, only, func(ctx context.Context, inst, action string, _ map[string]string) {
		r, err := s.quiet(ctx, seg(t, "instances", inst, "action", action))
		if err != nil {
			return
		}
		actions := asList(asMap(r.doc)["actions"])
		if len(actions) == 0 {
			return
		}
		a := withoutTasks(asMap(actions[0]))
		s.watchRow(rows, action, r, func(s *session) { s.printAction(a) })
	})
}

// withoutTasks is an action without its tasks: a watched action is a row.
func withoutTasks(action map[string]any) map[string]any {
	a := map[string]any{}
	for k, v := range action {
		if k != "vim_wim_actions" {
			a[k] = v
		}
	}
	return a
}

// linkStatuses are the statuses of the links w knows, by link id.
func (w *watcher) linkStatuses() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.links))
	for id, l := range w.links {
		out[id] = l.status
	}
	return out
}
