package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wimro/wimro/internal/yamljson"
)

// errorDoc is an error as printed on stderr with -o json or yaml: the
// server's error fields when it answered one (code is its HTTP status),
// else code 0 and type usage, connection, client, aborted or interrupted;
// exit_status is the process's.
type errorDoc struct {
	Code        int    `json:"code"`
	Type        string `json:"type"`
	Description string `json:"description"`
	Field       string `json:"field,omitempty"`
	ExitStatus  int    `json:"exit_status"`
}

func printErrorDoc(w io.Writer, format string, e errorDoc) {
	doc := map[string]errorDoc{"error": e}
	if format == "yaml" {
		var generic any
		b, _ := json.Marshal(doc)
		json.Unmarshal(b, &generic)
		b, _ = yamljson.MarshalYAML(generic)
		w.Write(b)
		return
	}
	b, _ := json.MarshalIndent(doc, "", "    ")
	fmt.Fprintf(w, "%s\n", b)
}

func (s *session) dumpYAML(doc any) {
	b, err := yamljson.MarshalYAML(doc)
	if err != nil {
		fmt.Fprintln(s.c.Stdout, doc)
		return
	}
	s.c.Stdout.Write(b)
}

// emit prints a response: verbatim JSON, YAML, or the table form made by
// table (nil: printVerbose at the current verbosity); json and yaml show
// the answer as the server sent it (its warnings, in headers, are printed
// on stderr already).
func (s *session) emit(r *response, table func(doc any)) {
	switch s.g.output {
	case "json":
		s.c.Stdout.Write(r.raw)
		if len(r.raw) > 0 && r.raw[len(r.raw)-1] != '\n' {
			fmt.Fprintln(s.c.Stdout)
		}
	case "yaml":
		s.dumpYAML(r.doc)
	default: // table, wide
		if table == nil {
			s.printVerbose(r.doc, s.verbose())
			return
		}
		table(r.doc)
	}
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// printVerbose is openmano's _print_verbose: one line per element,
// "uuid(38) name(20) [status(20)]", and, in a list, the AGE of each
// element (kubectl's column) and a header line; a MESSAGE column when an
// element is not ACTIVE for a reason (an account in ERROR, ...). -v adds
// created_at, -vv Type and Description lines, -vvv the whole answer as
// YAML; -o wide adds TYPE, URL, CREATED_AT and DESCRIPTION columns.
func (s *session) printVerbose(doc any, verbose int) {
	m, ok := doc.(map[string]any)
	if !ok || len(m) != 1 || verbose >= 3 {
		s.dumpYAML(doc)
		return
	}
	for _, v := range m {
		switch x := v.(type) {
		case string:
			fmt.Fprintln(s.c.Stdout, x)
		case []any:
			if len(x) == 0 {
				return
			}
			cols := s.columnsOf(x, verbose, true)
			s.printRow(cols, map[string]any{"uuid": "UUID", "name": "NAME", "status": "STATUS", "age": "AGE", "created_at": "CREATED_AT",
				"type": "TYPE", "url": "URL", "description": "DESCRIPTION", "message": "MESSAGE"})
			for _, e := range x {
				s.printItem(e, cols, verbose)
			}
		case map[string]any:
			s.printItem(x, s.columnsOf([]any{x}, verbose, false), verbose)
		default:
			s.dumpYAML(doc)
		}
	}
}

// columns are the optional columns of a list of items.
type columns struct{ status, age, created, typ, url, desc, message bool }

// columnsOf has a status column when an item has a status, an AGE column
// in a list whose items have created_at, created_at at -v, a MESSAGE
// column when an item has a reason for its status, and the wide columns
// that some item fills.
func (s *session) columnsOf(items []any, verbose int, list bool) columns {
	var c columns
	wide := s.wide()
	for _, e := range items {
		m := asMap(e)
		c.status = c.status || m["status"] != nil
		c.age = c.age || (list && m["created_at"] != nil)
		c.created = c.created || ((verbose >= 1 || wide) && m["created_at"] != nil)
		c.message = c.message || statusMessage(m) != ""
		c.typ = c.typ || (wide && m["type"] != nil)
		c.url = c.url || (wide && itemURL(m) != "")
		c.desc = c.desc || (wide && m["description"] != nil)
	}
	return c
}

// wide says whether the tables get their wide columns (-o wide).
func (s *session) wide() bool { return s.g.output == "wide" }

// statusMessage is why an item is in its status: the account check's
// status_msg (or an error_msg) of an item that is not ACTIVE.
func statusMessage(m map[string]any) string {
	if st := str(m["status"]); st == "" || st == "ACTIVE" {
		return ""
	}
	if msg := str(m["status_msg"]); msg != "" {
		return oneLine(msg)
	}
	return oneLine(str(m["error_msg"]))
}

// oneLine keeps a table row on one line: a controller's multi-line error
// becomes one line.
func oneLine(text string) string { return strings.Join(strings.Fields(text), " ") }

func itemURL(m map[string]any) string {
	if u := str(m["wim_url"]); u != "" {
		return u
	}
	return str(m["vim_url"])
}

// printRow prints one row: the header when row holds the column names.
func (s *session) printRow(cols columns, row map[string]any) {
	id := row["uuid"]
	if id == nil {
		id = row["id"]
	}
	if id == nil {
		id = row["vim_id"]
	}
	line := fmt.Sprintf("%-38s %-20s", str(id), str(row["name"]))
	if cols.status {
		line += fmt.Sprintf(" %-20s", str(row["status"]))
	}
	if cols.age {
		age := str(row["age"])
		if age == "" {
			age = s.age(str(row["created_at"]))
		}
		line += fmt.Sprintf(" %-8s", age)
	}
	if cols.created {
		line += fmt.Sprintf(" %-32s", str(row["created_at"]))
	}
	if cols.typ {
		line += fmt.Sprintf(" %-12s", str(row["type"]))
	}
	if cols.url {
		u := str(row["url"])
		if u == "" {
			u = itemURL(row)
		}
		line += fmt.Sprintf(" %-30s", u)
	}
	if cols.desc {
		line += " " + oneLine(str(row["description"]))
	}
	if cols.message {
		msg := str(row["message"])
		if msg == "" {
			msg = statusMessage(row)
		}
		line += " " + msg
	}
	fmt.Fprintln(s.c.Stdout, strings.TrimRight(line, " "))
}

func (s *session) printItem(e any, cols columns, verbose int) {
	m, ok := e.(map[string]any)
	if !ok {
		fmt.Fprintln(s.c.Stdout, str(e))
		return
	}
	s.printRow(cols, m)
	if verbose >= 2 {
		if t, ok := m["type"]; ok && t != nil {
			fmt.Fprintf(s.c.Stdout, "  Type: %s\n", str(t))
		}
		if d, ok := m["description"]; ok && d != nil {
			fmt.Fprintf(s.c.Stdout, "  Description: %s\n", str(d))
		}
	}
}

// age is the time since created (an RFC 3339 time or a date) as kubectl
// shows it: 42s, 5m12s, 3h, 4d; "" when created does not parse.
func (s *session) age(created string) string {
	at, err := time.Parse(time.RFC3339Nano, created)
	if err != nil {
		if at, err = time.Parse(time.DateOnly, created); err != nil {
			return ""
		}
	}
	return humanDuration(s.c.now().Sub(at))
}

// humanDuration is kubectl's short form of a duration: two units while the
// second one still matters, one after.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	sec := int64(d / time.Second)
	mins, hours, days := sec/60, sec/3600, sec/86400
	switch {
	case sec < 120:
		return fmt.Sprintf("%ds", sec)
	case mins < 10:
		return twoUnits(mins, "m", sec%60, "s")
	case mins < 180:
		return fmt.Sprintf("%dm", mins)
	case hours < 8:
		return twoUnits(hours, "h", mins%60, "m")
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 24*8:
		return twoUnits(days, "d", hours%24, "h")
	case days < 365*2:
		return fmt.Sprintf("%dd", days)
	case days < 365*8:
		return twoUnits(days/365, "y", days%365, "d")
	}
	return fmt.Sprintf("%dy", days/365)
}

// twoUnits is "3h20m", or "3h" when the second unit is zero.
func twoUnits(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, ua)
	}
	return fmt.Sprintf("%d%s%d%s", a, ua, b, ub)
}

// structured says whether the output is a document (json, yaml) rather
// than a table.
func (s *session) structured() bool { return s.g.output == "json" || s.g.output == "yaml" }

// loadNames reads the datacenters' names, so that tables show a
// datacenter by name rather than by uuid. The names are a convenience: a
// failure leaves the uuids, and a document output does not need them.
func (s *session) loadNames(ctx context.Context) {
	if s.structured() || s.dcNames != nil {
		return
	}
	s.dcNames = map[string]string{}
	r, err := s.quiet(ctx, seg("any", "datacenters"))
	if err != nil {
		return
	}
	for _, d := range asList(asMap(r.doc)["datacenters"]) {
		m := asMap(d)
		s.dcNames[str(m["uuid"])] = str(m["name"])
	}
}

// quiet is a GET whose warnings and debug lines are not printed: a read
// made for the table's sake, not the one the user asked for.
func (s *session) quiet(ctx context.Context, path string) (*response, error) {
	q := *s
	g := *s.g
	g.debug = false
	q.g = &g
	c := *s.c
	c.Stderr = io.Discard
	q.c = &c
	return q.do(ctx, "GET", path, nil)
}

// datacenterName is the name of the datacenter id, or id itself when its
// name is not known.
func (s *session) datacenterName(id string) string {
	if n := s.dcNames[id]; n != "" {
		return n
	}
	return id
}
