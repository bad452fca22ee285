package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docs/configuration.md's tables are found by their header rows.
const (
	flagTableHeader = "| flag | variable | default | commands | meaning |"
	varTableHeader  = "| variable without a flag | commands | meaning |"
)

// flagDoc is what `wimd <command> -h` says of one flag.
type flagDoc struct {
	name     string
	commands []string // the commands that define it, sorted
	vars     []string // its variable, then the ones it falls back on; none without
	def      string   // the default the flag package prints; "" for a zero value
}

var (
	usageFlag = regexp.MustCompile(`^  -(\S+)(?: \S+)?$`)
	usageEnv  = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)((?:, else [A-Z][A-Z0-9_]*)*)`)
	usageDef  = regexp.MustCompile(`\s\(default (.+)\)$`)
	// wimdVar is a string literal that names a variable wimd reads.
	wimdVar = regexp.MustCompile(`^(WIMRO|CONSUL)_[A-Z0-9_]+$`)
)

// wimdFlags returns the flags of wimd serve and wimd migrate, by name,
// as their usage text shows them. It asks the program itself (with an
// empty environment, so the defaults shown are the built-in ones) rather
// than naming the functions that define them, which move between files.
func wimdFlags(t *testing.T) map[string]*flagDoc {
	t.Helper()
	flags := map[string]*flagDoc{}
	for _, cmd := range []string{"serve", "migrate"} {
		var stdout, stderr bytes.Buffer
		app := &App{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		if code := app.Run(t.Context(), []string{cmd, "-h"}); code != 0 {
			t.Fatalf("wimd %s -h exited with %d:\n%s", cmd, code, stderr.String())
		}
		var cur *flagDoc
		var help []string
		finish := func() {
			if cur == nil {
				return
			}
			text := strings.Join(help, " ")
			var vars []string
			if m := usageEnv.FindStringSubmatch(text); m != nil {
				vars = append(vars, m[1])
				vars = append(vars, strings.Split(m[2], ", else ")[1:]...)
			}
			def := ""
			if m := usageDef.FindStringSubmatch(text); m != nil {
				def = m[1]
				if s, err := strconv.Unquote(def); err == nil {
					def = s
				}
			}
			if f, ok := flags[cur.name]; ok {
				if !slices.Equal(f.vars, vars) || f.def != def {
					t.Errorf("--%s differs between commands: %v default %q, and in %s %v default %q", cur.name, f.vars, f.def, cmd, vars, def)
				}
				f.commands = append(f.commands, cmd)
			} else {
				cur.vars, cur.def, cur.commands = vars, def, []string{cmd}
				flags[cur.name] = cur
			}
			cur, help = nil, nil
		}
		n := 0
		for _, line := range strings.Split(stdout.String(), "\n") {
			if m := usageFlag.FindStringSubmatch(line); m != nil {
				finish()
				cur, n = &flagDoc{name: m[1]}, n+1
			} else if h, ok := strings.CutPrefix(line, "    \t"); ok && cur != nil {
				help = append(help, h)
			}
		}
		finish()
		if n == 0 {
			t.Fatalf("no flag found in the usage of wimd %s (has its format changed?):\n%s", cmd, stdout.String())
		}
	}
	for _, f := range flags {
		slices.Sort(f.commands)
	}
	return flags
}

// readVars returns the variables wimd reads: every string literal naming
// one (WIMRO_..., CONSUL_...) in the non-test Go files of this module's
// packages that the wimd binary is built from. It finds the variables
// without a flag (WIMRO_SECRET_KEY, WIMRO_PG_BINDIR), wherever they are
// read.
func readVars(t *testing.T) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps",
		"-f", `{{if and .Module .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		for _, name := range fields[1:] {
			f, err := parser.ParseFile(fset, filepath.Join(fields[0], name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && wimdVar.MatchString(s) {
						seen[s] = true
					}
				}
				return true
			})
		}
	}
	if !seen["WIMRO_DATABASE_URL"] {
		t.Fatalf("the source scan found no WIMRO_DATABASE_URL (found %v): is the scan broken?", seen)
	}
	return slices.Sorted(func(yield func(string) bool) {
		for v := range seen {
			if !yield(v) {
				return
			}
		}
	})
}

// knownVars returns every variable wimd reads: the variables of its
// flags (and their fallbacks) and those read without a flag.
func knownVars(t *testing.T, flags map[string]*flagDoc) (all, withoutFlag map[string]bool) {
	t.Helper()
	all, withoutFlag = map[string]bool{}, map[string]bool{}
	ofFlags := map[string]bool{}
	for _, f := range flags {
		for _, v := range f.vars {
			ofFlags[v], all[v] = true, true
		}
	}
	for _, v := range readVars(t) {
		all[v] = true
		if !ofFlags[v] {
			withoutFlag[v] = true
		}
	}
	return all, withoutFlag
}

// mdTable returns the rows (cells trimmed, header and rule left out) of
// the one table in md whose header row is header.
func mdTable(t *testing.T, md, header string) [][]string {
	t.Helper()
	lines := strings.Split(md, "\n")
	found := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == header {
			if found >= 0 {
				t.Fatalf("README.md has two tables headed %q", header)
			}
			found = i
		}
	}
	if found < 0 {
		t.Fatalf("README.md has no table headed %q", header)
	}
	var rows [][]string
	for _, l := range lines[found+2:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

func codeSpans(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// sameDefault compares the default the README shows with the one the
// flag package prints (720h with 720h0m0s, for a duration).
func sameDefault(readme, printed string) bool {
	if readme == printed {
		return true
	}
	a, errA := time.ParseDuration(readme)
	b, errB := time.ParseDuration(printed)
	return errA == nil && errB == nil && a == b
}

// TestReadmeConfigurationTable compares docs/configuration.md's table,
// both ways, with the flags wimd serve and wimd migrate define: every
// flag has one row, every row names a flag, and the row's variable(s),
// commands and (non-empty) default are the flag's. The table of
// variables without a flag lists exactly the variables wimd reads that no
// flag names.
func TestReadmeConfigurationTable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := wimdFlags(t)

	rows := map[string]bool{}
	for _, row := range mdTable(t, string(readme), flagTableHeader) {
		if len(row) != 5 {
			t.Errorf("README flag table row %q: %d cells, want 5", row, len(row))
			continue
		}
		names := codeSpans(row[0])
		if len(names) != 1 || !strings.HasPrefix(names[0], "--") {
			t.Errorf("README flag table row %q: the flag cell must be one `--flag`", row[0])
			continue
		}
		name := strings.TrimPrefix(names[0], "--")
		if rows[name] {
			t.Errorf("README flag table: --%s has two rows", name)
		}
		rows[name] = true
		f, ok := flags[name]
		if !ok {
			t.Errorf("README flag table: --%s is not a flag of wimd serve or wimd migrate", name)
			continue
		}
		vars := codeSpans(row[1])
		if len(vars) == 0 && row[1] != "none" {
			t.Errorf("README flag table, --%s: variable cell %q names no `VARIABLE` (write none when the flag has none)", name, row[1])
		}
		if !slices.Equal(vars, f.vars) {
			t.Errorf("README flag table, --%s: variables %v, but wimd's help says %v", name, vars, f.vars)
		}
		commands := strings.Split(row[3], ",")
		for i := range commands {
			commands[i] = strings.TrimSpace(commands[i])
		}
		slices.Sort(commands)
		if !slices.Equal(commands, f.commands) {
			t.Errorf("README flag table, --%s: commands %v, but it is a flag of %v", name, commands, f.commands)
		}
		if f.def != "" {
			if defs := codeSpans(row[2]); len(defs) == 0 || !sameDefault(defs[0], f.def) {
				t.Errorf("README flag table, --%s: default cell %q, but the default is `%s`", name, row[2], f.def)
			}
		}
	}
	for name, f := range flags {
		if !rows[name] {
			t.Errorf("--%s (wimd %s, variables %v, default %q) has no row in README's flag table", name, strings.Join(f.commands, ", "), f.vars, f.def)
		}
	}

	_, withoutFlag := knownVars(t, flags)
	listed := map[string]bool{}
	for _, row := range mdTable(t, string(readme), varTableHeader) {
		vars := codeSpans(row[0])
		if len(vars) != 1 {
			t.Errorf("README variable table row %q: the first cell must be one `VARIABLE`", row[0])
			continue
		}
		listed[vars[0]] = true
		if !withoutFlag[vars[0]] {
			t.Errorf("README variable table: %s is not a variable wimd reads without a flag (variables of flags go in the flag table)", vars[0])
		}
	}
	for v := range withoutFlag {
		if !listed[v] {
			t.Errorf("wimd reads %s, which no flag names, and README's table of variables without a flag lacks it", v)
		}
	}
}
