// Package wimdtest builds the wimd and openmano binaries and runs wimd as
// a child process, for the tests that drive the real programs (the CLI's
// end-to-end test, the README's quick start).
package wimdtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// Start runs bin with args (e.g. "serve", "--listen", "127.0.0.1:0") and
// env added to this process's environment, and returns the address it
// serves on, read from its log. The process is killed when the test ends,
// and its log shown if the test failed.
func Start(t testing.TB, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	done := make(chan struct{})
	addrc := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.Write([]byte(line + "\n"))
			if m := ServingAddr.FindStringSubmatch(line); m != nil {
				addrc <- m[1]
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("wimd log:\n%s", log.String())
		}
	})
	select {
	case addr := <-addrc:
		return addr
	case <-done:
		t.Fatalf("wimd exited:\n%s", log.String())
	case <-time.After(time.Minute):
		t.Fatalf("wimd not serving:\n%s", log.String())
	}
	return ""
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

func (s *lockedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
