package emulator

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
	LintConfig = "config" // a configuration datastore (a create or a replace)
	LintData   = "data"   // a datastore with state (every GET answer)
	LintRPC    = "rpc"    // an RPC input
	LintReply  = "reply"  // an RPC output
)

// Linter validates documents with yanglint against a set of YANG modules.
// Every result is recorded so that a test can fail on a body the model
// refuses, or on an answer of the emulator's own.
//
// One yanglint process in interactive mode serves every check: it loads
// the modules once (yanglint takes about 0.3 s of CPU to load a large
// model, too much per document). After each data command the linter asks
// it to load a module that does not exist, whose error message marks the
// end of the command's output; yanglint prints nothing for a document it
// accepts.
type Linter struct {
	dir     string
	modules []string // module names, with "@revision" when the file has one
	files   []string // the module files, for a one-off yanglint run
	flags   []string // load flags, e.g. "-i"
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

// NewLinter returns a linter of the modules files (file names in dir, e.g.
// "ietf-l2vpn-ntw@2022-09-20.yang"; none: every *.yang in dir), whose
// imports yanglint finds in dir. flags go to yanglint's load: "-i" makes
// the imported modules implemented, which a model needs when its defaults
// are identities of an imported module (L2NM, L3NM). yanglint enables
// every feature of the modules named, so a module whose features the
// documents use is named even when another imports it. yanglint starts
// at the first check; a missing yanglint or module fails every check.
func NewLinter(dir string, files []string, flags ...string) *Linter {
	l := &Linter{dir: dir, flags: slices.Clone(flags)}
	var err error
	if len(files) == 0 {
		files, err = filepath.Glob(filepath.Join(dir, "*.yang"))
		if err == nil && len(files) == 0 {
			err = fmt.Errorf("no *.yang module in %s", dir)
		}
	} else {
		abs := make([]string, len(files))
		for i, f := range files {
			abs[i] = filepath.Join(dir, f)
			if _, serr := os.Stat(abs[i]); serr != nil && err == nil {
				err = serr
			}
		}
		files = abs
	}
	for _, f := range files {
		l.modules = append(l.modules, strings.TrimSuffix(filepath.Base(f), ".yang"))
	}
	l.files = files
	l.setup = err
	return l
}

// start runs yanglint and loads the modules; l.mu is held.
func (l *Linter) start() error {
	bin, err := exec.LookPath("yanglint")
	if err != nil {
		return fmt.Errorf("yanglint is not on PATH (`make deps` installs it): %w", err)
	}
	if l.tmp, err = os.MkdirTemp("", "wimro-lint-"); err != nil {
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
	load := append(append([]string{"load"}, l.flags...), l.modules...)
	out, err := l.command(fmt.Sprintf("searchpath %s\n%s", abs, strings.Join(load, " ")))
	if err == nil && out != "" {
		err = fmt.Errorf("loading the modules of %s: %s", l.dir, out)
	}
	return err
}

// command sends cmds, then the end marker, and returns what yanglint
// printed before the marker's error (warnings left out).
func (l *Linter) command(cmds string) (string, error) {
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

// Check validates doc (RFC 7951 JSON, rooted as yanglint wants it) as kind,
// with operational, when not nil, as the operational datastore that RPC
// leafrefs point into. what names the document in the recorded failure.
func (l *Linter) Check(what, kind string, doc, operational any) error {
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
func (l *Linter) run(kind string, doc, operational any) error {
	if l.setup == nil && l.cmd == nil {
		l.setup = l.start()
	}
	if l.setup != nil {
		return l.setup
	}
	if operational != nil {
		return l.once(kind, doc, operational)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	docFile := filepath.Join(l.tmp, fmt.Sprintf("%d-doc.json", l.seq))
	if err := os.WriteFile(docFile, b, 0o600); err != nil {
		return err
	}
	defer os.Remove(docFile)
	out, err := l.command("data -t " + kind + " " + docFile)
	if err != nil {
		l.setup = err // the process is gone or stuck: every later check fails
		return err
	}
	if out != "" {
		return fmt.Errorf("yanglint -t %s refused it: %s (document %s)", kind, out, b)
	}
	return nil
}

// once checks a document whose leafrefs point into operational with a
// yanglint process of its own: yanglint 2.1's interactive mode resolves
// them against the first list entry of an operational file only.
func (l *Linter) once(kind string, doc, operational any) error {
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
	args := append(append([]string{"-p", l.dir}, l.flags...), "-t", kind, "-O", files[0])
	args = append(append(args, l.files...), files[1])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, l.cmd.Path, args...).CombinedOutput()
	if err != nil {
		b, _ := json.Marshal(doc)
		return fmt.Errorf("yanglint -t %s refused it: %s (document %s)", kind, strings.TrimSpace(string(out)), b)
	}
	return nil
}

// Close stops yanglint; every later check fails.
func (l *Linter) Close() {
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

// Failures returns what yanglint refused so far, each named by the what
// of its Check.
func (l *Linter) Failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.failures)
}

// Checked returns how many documents yanglint has checked.
func (l *Linter) Checked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checked
}
