package tapi

import (
	"context"
	"encoding/json"
	"fmt"
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
type linter struct {
	bin     string
	dir     string
	modules []string
	setup   error // yanglint or the modules are missing: every check fails

	mu       sync.Mutex
	checked  int
	failures []string
}

func newLinter(dir string) *linter {
	l := &linter{dir: dir}
	bin, err := exec.LookPath("yanglint")
	if err != nil {
		l.setup = fmt.Errorf("yanglint is not on PATH (`make deps` installs it): %w", err)
		return l
	}
	l.bin = bin
	l.modules, err = filepath.Glob(filepath.Join(dir, "*.yang"))
	if err == nil && len(l.modules) == 0 {
		err = fmt.Errorf("no *.yang module in %s", dir)
	}
	l.setup = err
	return l
}

// check validates doc (RFC 7951 JSON, rooted as yanglint wants it) as kind,
// with operational, when not nil, as the operational datastore that RPC
// leafrefs point into. what names the document in the recorded failure.
func (l *linter) check(what, kind string, doc, operational any) error {
	err := l.run(kind, doc, operational)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checked++
	if err != nil {
		l.failures = append(l.failures, what+": "+err.Error())
	}
	return err
}

func (l *linter) run(kind string, doc, operational any) error {
	if l.setup != nil {
		return l.setup
	}
	dir, err := os.MkdirTemp("", "tapi-lint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	write := func(name string, v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, name)
		return path, os.WriteFile(path, b, 0o600)
	}
	docFile, err := write("doc.json", doc)
	if err != nil {
		return err
	}
	args := []string{"-p", l.dir, "-t", kind}
	if operational != nil {
		opFile, err := write("operational.json", operational)
		if err != nil {
			return err
		}
		args = append(args, "-O", opFile)
	}
	args = append(append(args, l.modules...), docFile)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, l.bin, args...).CombinedOutput()
	if err != nil {
		b, _ := json.Marshal(doc)
		return fmt.Errorf("yanglint -t %s refused it: %s (document %s)", kind, strings.TrimSpace(string(out)), b)
	}
	return nil
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
