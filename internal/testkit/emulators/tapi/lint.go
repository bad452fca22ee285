package tapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kinds of document yanglint checks (its -t values).
const (
	lintConfig = "config" // a configuration datastore (a data-mode create)
	lintData   = "data"   // a datastore with state (every GET answer)
	lintRPC    = "rpc"    // an RPC input
	lintReply  = "reply"  // an RPC output
)

// linter validates documents with yanglint against the modules of one
// TAPI version. Every result is recorded so that a test can fail on an
// answer of the emulator's own that the model refuses.
//
// One yanglint process in interactive mode serves every check: it loads
// the modules once (2.4.1's take about 0.3 s of CPU to load, too much per
// document). After each data command the linter asks it to load a module
// that does not exist, whose error message marks the end of the command's
// output; yanglint prints nothing for a document it accepts.
type linter struct {
	dir     string
	modules []string // module names
	setup   error    // yanglint or the modules are missing: every check fails

	mu       sync.Mutex
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      *os.File // yanglint's stdout and stderr
	lines    *bufio.Scanner
	tmp      string
	seq      int
	checked  int
	failures []string
}

func newLinter(dir string) *linter {
	l := &linter{dir: dir}
	files, err := filepath.Glob(filepath.Join(dir, "*.yang"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no *.yang module in %s", dir)
	}
	for _, f := range files {
		name, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yang"), "@")
		l.modules = append(l.modules, name)
	}
	l.setup = err
	return l
}

// start runs yanglint and loads the modules; l.mu is held.
func (l *linter) start() error {
	bin, err := exec.LookPath("yanglint")
	if err != nil {
		return fmt.Errorf("yanglint is not on PATH (`make deps` installs it): %w", err)
	}
	if l.tmp, err = os.MkdirTemp("", "tapi-lint-"); err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin)
	// Its history and configuration go to the temporary directory.
	cmd.Env = append(os.Environ(), "HOME="+l.tmp)
	cmd.Stdout, cmd.Stderr = w, w
	if l.stdin, err = cmd.StdinPipe(); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w.Close()
	l.cmd, l.out, l.lines = cmd, r, bufio.NewScanner(r)
	l.lines.Buffer(make([]byte, 1<<16), 1<<24)
	abs, err := filepath.Abs(l.dir)
	if err != nil {
		return err
	}
	out, err := l.command(fmt.Sprintf("searchpath %s\nload %s", abs, strings.Join(l.modules, " ")))
	if err == nil && out != "" {
		err = fmt.Errorf("loading the modules of %s: %s", l.dir, out)
	}
	return err
}

// command sends cmds, then the end marker, and returns what yanglint
// printed before the marker's error (warnings left out).
func (l *linter) command(cmds string) (string, error) {
	l.seq++
	marker := fmt.Sprintf("wimro-lint-end-%d", l.seq)
	if _, err := fmt.Fprintf(l.stdin, "%s\nload %s\n", cmds, marker); err != nil {
		return "", fmt.Errorf("yanglint: %w", err)
	}
	_ = l.out.SetReadDeadline(time.Now().Add(time.Minute))
	var out []string
	for l.lines.Scan() {
		line := l.lines.Text()
		if strings.Contains(line, `"`+marker+`"`) {
			if strings.Contains(line, "failed") {
				return strings.Join(out, "\n"), nil
			}
			continue
		}
		if line != "" && !strings.Contains(line, "[W]") {
			out = append(out, line)
		}
	}
	return "", fmt.Errorf("yanglint stopped: %v (%s)", l.lines.Err(), strings.Join(out, "\n"))
}

// check validates doc (RFC 7951 JSON, rooted as yanglint wants it) as kind,
// with operational, when not nil, as the operational datastore that RPC
// leafrefs point into. what names the document in the recorded failure.
func (l *linter) check(what, kind string, doc, operational any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.run(kind, doc, operational)
	l.checked++
	if err != nil {
		l.failures = append(l.failures, what+": "+err.Error())
	}
	return err
}

// run checks one document; l.mu is held.
func (l *linter) run(kind string, doc, operational any) error {
	if l.setup == nil && l.cmd == nil {
		l.setup = l.start()
	}
	if l.setup != nil {
		return l.setup
	}
	if operational != nil {
		return l.once(kind, doc, operational)
	}
	write := func(name string, v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		path := filepath.Join(l.tmp, fmt.Sprintf("%d-%s", l.seq, name))
		return path, os.WriteFile(path, b, 0o600)
	}
	docFile, err := write("doc.json", doc)
	if err != nil {
		return err
	}
	defer os.Remove(docFile)
	out, err := l.command("data -t " + kind + " " + docFile)
	if err != nil {
		l.setup = err // the process is gone or stuck: every later check fails
		return err
	}
	if out != "" {
		b, _ := json.Marshal(doc)
		return fmt.Errorf("yanglint -t %s refused it: %s (document %s)", kind, out, b)
	}
	return nil
}

// once checks a document whose leafrefs point into operational with a
// yanglint process of its own: yanglint 2.1's interactive mode resolves
// them against the first list entry of an operational file only.
func (l *linter) once(kind string, doc, operational any) error {
	var files []string
	for i, v := range []any{operational, doc} {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		path := filepath.Join(l.tmp, fmt.Sprintf("once-%d-%d.json", l.seq, i))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		defer os.Remove(path)
		files = append(files, path)
	}
	l.seq++
	modules, err := filepath.Glob(filepath.Join(l.dir, "*.yang"))
	if err != nil {
		return err
	}
	args := append(append([]string{"-p", l.dir, "-t", kind, "-O", files[0]}, modules...), files[1])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, l.cmd.Path, args...).CombinedOutput()
	if err != nil {
		b, _ := json.Marshal(doc)
		return fmt.Errorf("yanglint -t %s refused it: %s (document %s)", kind, strings.TrimSpace(string(out)), b)
	}
	return nil
}

// close stops yanglint.
func (l *linter) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cmd == nil {
		return
	}
	_ = l.stdin.Close()
	_ = l.cmd.Wait()
	_ = l.out.Close()
	_ = os.RemoveAll(l.tmp)
	l.cmd = nil
	if l.setup == nil {
		l.setup = errors.New("the emulator is closed")
	}
}

// Close stops the yanglint process that Options.YANGDir starts.
func (e *Emulator) Close() {
	if e.lint != nil {
		e.lint.close()
	}
}

// LintFailures returns what yanglint refused so far: request bodies (which
// the emulator answered 400) and answers of its own (a bug of the
// emulator, answered 500). Empty when Options.YANGDir is not set.
func (e *Emulator) LintFailures() []string {
	if e.lint == nil {
		return nil
	}
	e.lint.mu.Lock()
	defer e.lint.mu.Unlock()
	return slices.Clone(e.lint.failures)
}

// Linted returns how many documents yanglint has checked.
func (e *Emulator) Linted() int {
	if e.lint == nil {
		return 0
	}
	e.lint.mu.Lock()
	defer e.lint.mu.Unlock()
	return e.lint.checked
}
