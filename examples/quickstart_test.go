// Package examples_test runs the README's quick start: the command lines
// of its code blocks, read from README.md, with the demo files of this
// folder, against a wimd and an openmano built by the test on a
// throwaway PostgreSQL. Editing the README changes what is run, so the
// quick start cannot drift from what works.
package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// repoRoot is where the README's commands run (they name examples/...).
const repoRoot = ".."

// TestQuickStart runs every line of the README's quick start in order:
// `make run` starts the built wimd with the flags of the Makefile's run
// recipe, `export` sets the environment of the next lines, and
// `bin/openmano ...` runs the built client, which must succeed; a line
// commented "repeat until a line shows: W1 W2 ..." is run again until one
// line of its output holds every word. Any other line fails the test: the
// quick start holds nothing untested. At the end the instance's DELETE
// must have deleted its WAN link; before the delete, the console shows
// the quick start's topology (quickStartConsole).
func TestQuickStart(t *testing.T) {
	t.Parallel()
	steps := quickStart(t, filepath.Join(repoRoot, "README.md"))
	wimdArgs := makeRunArgs(t, filepath.Join(repoRoot, "Makefile"))
	wimd, openmano := buildBinaries(t)
	dbURL := pgtest.URL(t)

	env := []string{"OPENMANO_HOST=127.0.0.1"}
	started, consoleSeen := false, false
	var base string
	for _, st := range steps {
		args, err := shellFields(st.command)
		if err != nil {
			t.Fatalf("README line %d %q: %v", st.lineNo, st.command, err)
		}
		switch {
		case st.command == "make run":
			addr := wimdtest.Start(t, wimd, []string{"WIMRO_DATABASE_URL=" + dbURL, "WIMRO_DATA_DIR=" + t.TempDir()},
				append(wimdArgs, "--listen", "127.0.0.1:0")...)
			env = append(env, "OPENMANO_PORT="+addr[strings.LastIndex(addr, ":")+1:])
			base = "http://" + addr
			started = true
		case len(args) == 2 && args[0] == "export" && strings.Contains(args[1], "="):
			env = append(env, args[1])
		case len(args) > 0 && args[0] == "bin/openmano":
			if !started {
				t.Fatalf("README line %d runs openmano before make run", st.lineNo)
			}
			// Before the delete, with the link ACTIVE: what the console
			// shows of the quick start (the README's screenshots).
			if len(args) > 1 && args[1] == "instance-scenario-delete" && !consoleSeen {
				quickStartConsole(t, base)
				consoleSeen = true
			}
			run := func() (string, error) { return runOpenmano(openmano, env, args[1:]) }
			if st.until == nil {
				if out, err := run(); err != nil {
					t.Fatalf("README line %d: %s: %v\n%s", st.lineNo, st.command, err, out)
				}
				continue
			}
			eventually.Until(t, time.Minute, fmt.Sprintf("README line %d (%s) to show %v", st.lineNo, st.command, st.until), func() (bool, string) {
				out, err := run()
				return err == nil && hasLineWith(out, st.until), fmt.Sprintf("%v\n%s", err, out)
			})
		default:
			t.Fatalf("README line %d: %q is not a line the quick-start test knows how to run (make run, export K=V, bin/openmano ...)", st.lineNo, st.command)
		}
	}
	if !started {
		t.Fatal("the README's quick start never runs make run")
	}
	if !consoleSeen {
		t.Fatal("the README's quick start never deletes its instance: the console was not opened")
	}
	// The delete went through: the link's DELETE ran on the controller
	// and no WAN link is left.
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	eventually.Until(t, time.Minute, "the WAN link's DELETE to be done", func() (bool, string) {
		var done, deletes, links int
		err := conn.QueryRow(t.Context(), `SELECT
			(SELECT count(*) FROM vim_wim_actions WHERE action = 'DELETE' AND status = 'DONE'),
			(SELECT count(*) FROM vim_wim_actions WHERE action = 'DELETE'),
			(SELECT count(*) FROM instance_wim_nets)`).Scan(&done, &deletes, &links)
		return err == nil && deletes == 1 && done == 1 && links == 0,
			fmt.Sprintf("err %v, %d of %d DELETE actions done, %d WAN links", err, done, deletes, links)
	})
}

// step is one command line of the quick start.
type step struct {
	lineNo  int
	command string
	// until are the words one output line must hold ("repeat until a
	// line shows: ..." in the line's comment); nil runs the line once.
	until []string
}

var untilComment = regexp.MustCompile(`repeat until a line shows:\s*(.+)$`)

// quickStart reads the command lines of the ```sh blocks of the README's
// "## Quick start" section.
func quickStart(t *testing.T, readme string) []step {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		steps            []step
		inSection, inSh  bool
		sawSection, lnNo = false, 0
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lnNo++
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = strings.TrimSpace(line) == "## Quick start"
			sawSection = sawSection || inSection
			continue
		case !inSection:
			continue
		case strings.HasPrefix(line, "```"):
			inSh = !inSh && strings.TrimSpace(line) == "```sh"
			continue
		case !inSh:
			continue
		}
		command, comment := splitComment(line)
		if command == "" {
			continue
		}
		st := step{lineNo: lnNo, command: command}
		if m := untilComment.FindStringSubmatch(comment); m != nil {
			st.until = strings.Fields(m[1])
		}
		steps = append(steps, st)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !sawSection || len(steps) == 0 {
		t.Fatalf("%s has no \"## Quick start\" section with ```sh blocks", readme)
	}
	return steps
}

// splitComment cuts a shell line at its first # outside quotes that
// starts a word.
func splitComment(line string) (command, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i]), line[i+1:]
		}
	}
	return strings.TrimSpace(line), ""
}

// shellFields splits a command line into words as sh would for the
// simple lines of a quick start: blanks separate words, single and double
// quotes group. Anything that needs a shell (variables, pipes,
// redirections, substitutions) is refused, so the test never runs
// something other than what the README shows.
func shellFields(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inW   bool
		quote rune
	)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inW = r, true
		case r == ' ' || r == '\t':
			if inW {
				words, inW = append(words, cur.String()), false
				cur.Reset()
			}
		case strings.ContainsRune("$|&;<>`\\()", r):
			return nil, fmt.Errorf("%q needs a shell; the quick start keeps to plain commands", r)
		default:
			cur.WriteRune(r)
			inW = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if inW {
		words = append(words, cur.String())
	}
	return words, nil
}

// makeRunArgs returns the arguments that the Makefile's run recipe gives
// wimd, so the test starts wimd as `make run` does.
func makeRunArgs(t *testing.T, makefile string) []string {
	t.Helper()
	b, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "run:") {
			continue
		}
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "\t") {
				break
			}
			if f := strings.Fields(r); len(f) > 0 && strings.HasSuffix(f[0], "/wimd") {
				return f[1:]
			}
		}
	}
	t.Fatalf("%s: no run recipe that starts wimd", makefile)
	return nil
}

// buildBinaries compiles wimd and openmano into a temporary folder.
func buildBinaries(t *testing.T) (wimd, openmano string) {
	bins := wimdtest.Build(t, "wimd", "openmano")
	return bins[0], bins[1]
}

// runOpenmano runs the client in the repository root (the README's paths
// are relative to it) and returns its stdout and stderr.
func runOpenmano(bin string, env, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// hasLineWith reports whether one line of out holds every word.
func hasLineWith(out string, words []string) bool {
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			return true
		}
	}
	return false
}
