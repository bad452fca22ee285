package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
	default:
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
// "uuid(38) name(20) [status(20)]", with created_at at -v, Type and
// Description at -vv, and the whole answer as YAML at -vvv. A list gets a
// header line.
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
			cols := columnsOf(x, verbose)
			s.printRow(cols, "UUID", "NAME", "STATUS", "CREATED_AT")
			for _, e := range x {
				s.printItem(e, cols, verbose)
			}
		case map[string]any:
			s.printItem(x, columnsOf([]any{x}, verbose), verbose)
		default:
			s.dumpYAML(doc)
		}
	}
}

// columns are the optional columns of a list of items.
type columns struct{ status, created bool }

// columnsOf has a status column when an item has a status, and a
// created_at column at -v when an item has one.
func columnsOf(items []any, verbose int) columns {
	var c columns
	for _, e := range items {
		m := asMap(e)
		c.status = c.status || m["status"] != nil
		c.created = c.created || (verbose >= 1 && m["created_at"] != nil)
	}
	return c
}

func (s *session) printRow(cols columns, id, name, status, created string) {
	line := fmt.Sprintf("%-38s %-20s", id, name)
	if cols.status {
		line += fmt.Sprintf(" %-20s", status)
	}
	if cols.created && created != "" {
		line += " " + created
	}
	fmt.Fprintln(s.c.Stdout, strings.TrimRight(line, " "))
}

func (s *session) printItem(e any, cols columns, verbose int) {
	m, ok := e.(map[string]any)
	if !ok {
		fmt.Fprintln(s.c.Stdout, str(e))
		return
	}
	id := m["uuid"]
	if id == nil {
		id = m["id"]
	}
	if id == nil {
		id = m["vim_id"]
	}
	s.printRow(cols, str(id), str(m["name"]), str(m["status"]), str(m["created_at"]))
	if verbose >= 2 {
		if t, ok := m["type"]; ok && t != nil {
			fmt.Fprintf(s.c.Stdout, "  Type: %s\n", str(t))
		}
		if d, ok := m["description"]; ok && d != nil {
			fmt.Fprintf(s.c.Stdout, "  Description: %s\n", str(d))
		}
	}
}
