// Package wimdtest builds the wimd and openmano binaries and runs wimd as
// a child process, for the tests that drive the real programs (the CLI's
// end-to-end test, the README's quick start, the soak).
package wimdtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles the module's cmd/<name> for each name into a temporary
// folder and returns the binaries' paths in the same order.
func Build(t testing.TB, names ...string) []string {
	t.Helper()
	dir := t.TempDir()
	bins := make([]string, len(names))
	for i, name := range names {
		bins[i] = filepath.Join(dir, name)
		if out, err := exec.Command("go", "build", "-o", bins[i], "github.com/wimro/wimro/cmd/"+name).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	return bins
}

// ServingAddr finds the address in wimd's "wimd serving" log line, text
// or JSON (WIMRO_LOG_JSON).
var ServingAddr = regexp.MustCompile(`(?:msg="wimd serving" addr=|"msg":"wimd serving","addr":")([^\s"]+)`)

// Line is one line of wimd's JSON log (WIMRO_LOG_JSON): its level and
// message, and every attribute (numbers as float64).
type Line map[string]any

// Level is the line's level: DEBUG, INFO, WARN or ERROR.
func (l Line) Level() string { s, _ := l["level"].(string); return s }

// Msg is the line's message.
func (l Line) Msg() string { s, _ := l["msg"].(string); return s }

// JSONLines parses a JSON log, one object per line; a line that is not
// JSON fails t (every line of a JSON log is one).
func JSONLines(t testing.TB, log string) []Line {
	t.Helper()
	var lines []Line
	for _, raw := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		if raw == "" {
			continue
		}
		var l Line
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("a log line that is not JSON: %v: %s", err, raw)
		}
		lines = append(lines, l)
	}
	return lines
}

// servingTimeout bounds the wait for a started wimd to serve.
const servingTimeout = 2 * time.Minute

// failedLogLines is how much of a wimd's log a failed test shows: the end
// (a soak's processes log for many minutes).
const failedLogLines = 300

// Start runs bin with args (e.g. "serve", "--listen", "127.0.0.1:0") and
// env added to this process's environment, and returns the address it
// serves on, read from its log. The process is killed when the test ends,
// and its log shown if the test failed.
func Start(t testing.TB, bin string, env []string, args ...string) string {
	t.Helper()
	return Launch(t, bin, env, args...).Addr()
}

// Process is a wimd child process that a test can signal, kill and start
// again with the same arguments (a soak's faults). Its methods are safe
// for concurrent use.
type Process struct {
	bin  string
	env  []string
	args []string
	log  *lockedBuffer // every run's log, one after the other

	mu   sync.Mutex
	cmd  *exec.Cmd
	addr string
	done chan struct{} // closed when the current run has exited
	err  error         // its exit status, once done is closed
}

// Launch is Start returning the Process. It fails the test when wimd does
// not serve.
func Launch(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{bin: bin, env: append(os.Environ(), env...), args: args, log: &lockedBuffer{}}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("wimd log, last %d lines:\n%s", failedLogLines, tail(p.Log(), failedLogLines))
		}
	})
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	return p
}

// Restart starts the process again, with the same arguments, once its
// last run has exited (Kill it first), and waits until it serves: its
// address may change. The error carries the end of the log when it exits
// or does not serve within two minutes.
func (p *Process) Restart() error {
	p.mu.Lock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			p.mu.Unlock()
			return errors.New("wimdtest: restart of a running process")
		}
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		p.mu.Unlock()
		return err
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return err
	}
	done := make(chan struct{})
	p.cmd, p.done, p.addr, p.err = cmd, done, "", nil
	p.mu.Unlock()

	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.log.Write([]byte(line + "\n"))
			if m := ServingAddr.FindStringSubmatch(line); m != nil {
				select {
				case addrc <- m[1]:
				default:
				}
			}
		}
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	select {
	case addr := <-addrc:
		p.mu.Lock()
		p.addr = addr
		p.mu.Unlock()
		return nil
	case <-done:
		return fmt.Errorf("wimdtest: wimd exited (%v):\n%s", p.ExitErr(), tail(p.Log(), 30))
	case <-time.After(servingTimeout):
		return fmt.Errorf("wimdtest: wimd not serving after %v:\n%s", servingTimeout, tail(p.Log(), 30))
	}
}

// Addr is the address the current run serves on ("" before it serves).
func (p *Process) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// Pid is the current run's process id.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Signal sends sig to the current run.
func (p *Process) Signal(sig os.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Signal(sig)
}

// Kill kills the current run (SIGKILL; a stopped process too) and waits
// until it has exited. Killing an exited process does nothing.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Exited is closed when the current run has exited.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// ExitErr is the current run's exit status once it has exited.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Log is the log of every run so far.
func (p *Process) Log() string { return p.log.String() }

// DumpGoroutines ends the current run with SIGQUIT, on which the Go
// runtime writes every goroutine's stack to stderr, and returns what the
// run wrote from the signal on: the dump of a process that stopped
// answering (which it leaves exited; Restart starts it again). It waits
// for the exit at most wait, then kills the run.
func (p *Process) DumpGoroutines(wait time.Duration) string {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return ""
	}
	from := p.log.Len()
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return fmt.Sprintf("wimdtest: SIGQUIT: %v", err)
	}
	select {
	case <-done:
	case <-time.After(wait):
		p.Kill()
	}
	return p.log.From(from)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// lockedBuffer is a bytes.Buffer safe for the log-reading goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Len is how many bytes were written so far.
func (s *lockedBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// From is what was written from offset on.
func (s *lockedBuffer) From(offset int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b.Bytes()[offset:])
}

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
