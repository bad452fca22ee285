package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
)

// buildWimd compiles the daemon once per test.
func buildWimd(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wimd")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is a wimd serve child process.
type process struct {
	cmd  *exec.Cmd
	addr string
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

func startWimd(t testing.TB, bin string, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.log.Write([]byte(line + "\n"))
			if m := wimdtest.ServingAddr.FindStringSubmatch(line); m != nil {
				addrc <- m[1]
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("wimd %s log, last lines:\n%s", p.addr, lastLines(p.log.String(), 60))
		}
	})
	select {
	case p.addr = <-addrc:
	case <-p.done:
		t.Fatalf("wimd exited (%v):\n%s", p.err, p.log.String())
	case <-time.After(time.Minute):
		t.Fatalf("wimd not serving:\n%s", p.log.String())
	}
	return p
}

// caller is p.call for t, in the shape twoDatacenters takes.
func (p *process) caller(t testing.TB) func(method, path string, body any) map[string]any {
	return func(method, path string, body any) map[string]any { return p.call(t, method, path, body) }
}

func (p *process) call(t testing.TB, method, path string, body any) map[string]any {
	t.Helper()
	return api{t: t, addr: p.addr, unchecked: true}.call(method, path, body)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// poll waits for the system's state (a file, an HTTP answer).
func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	eventually.Until(t, 90*time.Second, what, cond)
}

// The wimd process is killed (SIGKILL) while it has a batch of CREATEs in
// flight. A second wimd takes over once the claims' lease expires. Every
// action ends DONE and the controller holds exactly one service per link.
func TestKillMidBatchAndRestart(t *testing.T) {
	t.Parallel()
	bin := buildWimd(t)
	dataDir := t.TempDir()
	state := filepath.Join(dataDir, "controller.json")
	url := pgtest.URL(t)
	env := []string{"WIMRO_DATABASE_URL=" + url, "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_LOG_LEVEL=debug", "WIMRO_DEV_CONNECTORS=true"}
	args := []string{"--data-dir", dataDir, "--claim-lease", "2s", "--parallel", "3"}

	a := startWimd(t, bin, env, args...)
	a.fakeWAN(t, []string{"t0"}, map[string]any{"latency_ms": 400, "state_file": state})
	const links = 6
	inst := a.createInstance(t, "t0", links)

	// Kill A once the controller has made some services and others are in
	// flight (3 run at once, each call takes 400 ms).
	poll(t, "services on the controller", func() (bool, string) {
		n := services(state)
		return n >= 2, fmt.Sprint(n)
	})
	a.kill9(t)
	if n := services(state); n >= links {
		t.Fatalf("A finished every create before it was killed (%d services): the test proves nothing", n)
	}

	b := startWimd(t, bin, env, args...)
	pool := connect(t, url)
	waitFinished(t, pool, 90*time.Second)
	checkOutcome(t, b, pool, state, []instance{inst})

	// A clean stop exits 0.
	b.stop(t, syscall.SIGINT)
}
