// Package consultest runs a real Consul agent for tests: `consul agent
// -dev` (one in-memory server) on free loopback ports, with
// session_ttl_min lowered to 1 s so that session tests take seconds.
//
// The binary is WIMRO_CONSUL_BIN, else what scripts/ensure-consul.sh
// prints (it builds Consul once from the Go module proxy and caches it
// outside the repository; the first build takes minutes). When neither
// gives a binary the test fails with the reason; it never skips.
//
// An agent is cheap (about a second to elect itself): a test that
// restarts or stops its agent should have its own; others may share one
// and keep apart with distinct key prefixes.
package consultest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// EnvBinary names the variable that points at a consul binary to use as
// it is.
const EnvBinary = "WIMRO_CONSUL_BIN"

// readyTimeout bounds the wait for a started agent to elect itself and
// pass its serfHealth check (sessions need it).
const readyTimeout = time.Minute

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary returns the consul binary the tests run, building it once if
// needed (see the package comment).
func Binary() (string, error) {
	binOnce.Do(func() { binPath, binErr = findBinary() })
	return binPath, binErr
}

func findBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s is not an executable file", EnvBinary, p)
		}
		return p, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the module root (runtime.Caller)")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	script := filepath.Join(root, "scripts", "ensure-consul.sh")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(script)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s is not set and %s failed: %v: %s", EnvBinary, script, err, tail(stderr.String(), 20))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	p := strings.TrimSpace(lines[len(lines)-1])
	if p == "" {
		return "", fmt.Errorf("%s printed no path", script)
	}
	return p, nil
}

// Agent is one running `consul agent -dev`.
type Agent struct {
	t       testing.TB
	bin     string
	node    string
	logPath string
	http    int
	serfLAN int
	serfWAN int
	server  int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// Start runs an agent for t and waits until it is its own leader and its
// node's serfHealth check passes. It stops when t ends; its log is shown
// if t failed.
func Start(t testing.TB) *Agent {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("consultest: no consul binary: %v", err)
	}
	dir := t.TempDir()
	ports, err := freePorts(4)
	if err != nil {
		t.Fatalf("consultest: free ports: %v", err)
	}
	a := &Agent{
		t: t, bin: bin, logPath: filepath.Join(dir, "consul.log"),
		node: "wimro-test-" + strconv.Itoa(ports[0]),
		http: ports[0], serfLAN: ports[1], serfWAN: ports[2], server: ports[3],
	}
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			a.dumpLog()
		}
	})
	a.start()
	return a
}

// Addr is the agent's HTTP address (host:port).
func (a *Agent) Addr() string { return "127.0.0.1:" + strconv.Itoa(a.http) }

// Client returns an API client of the agent.
func (a *Agent) Client() *api.Client {
	a.t.Helper()
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = a.Addr()
	cfg.Token = ""
	c, err := api.NewClient(cfg)
	if err != nil {
		a.t.Fatalf("consultest: client: %v", err)
	}
	return c
}

// Stop kills the agent (Consul disappears; a dev agent loses its data)
// and waits for it to exit. Stopping a stopped agent does nothing.
func (a *Agent) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.exited
	a.cmd, a.exited = nil, nil
	_ = a.log.Close()
}

// Restart stops the agent and starts a new, empty one on the same ports.
func (a *Agent) Restart() {
	a.t.Helper()
	a.Stop()
	a.start()
}

// Resume starts a new, empty agent on the same ports after Stop (Consul
// comes back after an outage); it does nothing while the agent runs.
func (a *Agent) Resume() {
	a.t.Helper()
	a.mu.Lock()
	running := a.cmd != nil
	a.mu.Unlock()
	if !running {
		a.start()
	}
}

func (a *Agent) start() {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		a.t.Fatalf("consultest: log file: %v", err)
	}
	ports := fmt.Sprintf("ports {\n http = %d\n https = -1\n dns = -1\n grpc = -1\n grpc_tls = -1\n serf_lan = %d\n serf_wan = %d\n server = %d\n}",
		a.http, a.serfLAN, a.serfWAN, a.server)
	cmd := exec.Command(a.bin, "agent", "-dev",
		"-bind", "127.0.0.1", "-client", "127.0.0.1", "-node", a.node,
		"-hcl", `session_ttl_min = "1s"`,
		"-hcl", `disable_update_check = true`,
		"-hcl", ports)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		a.t.Fatalf("consultest: start %s: %v", a.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	a.cmd, a.exited, a.log = cmd, exited, logFile
	if err := a.waitReady(exited); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		a.cmd, a.exited = nil, nil
		logFile.Close()
		a.dumpLog()
		a.t.Fatalf("consultest: agent on %s not ready: %v", a.Addr(), err)
	}
}

// waitReady polls the agent until it has a leader and its node's
// serfHealth check passes (sessions are refused before), or it exits, or
// readyTimeout passes. There is no event to wait on: the agent is another
// process.
func (a *Agent) waitReady(exited <-chan struct{}) error {
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = a.Addr()
	cfg.Token = ""
	client, err := api.NewClient(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		if state, ok := readyState(ctx, client, a.node); ok {
			return nil
		} else if state != "" {
			last = state
		}
		select {
		case <-exited:
			return errors.New("the agent exited")
		case <-ctx.Done():
			return fmt.Errorf("timed out after %v; last: %s", readyTimeout, last)
		case <-tick.C:
		}
	}
}

func readyState(ctx context.Context, client *api.Client, node string) (string, bool) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	q := (&api.QueryOptions{}).WithContext(cctx)
	leader, err := client.Status().LeaderWithQueryOptions(q)
	if err != nil {
		return err.Error(), false
	}
	if leader == "" {
		return "no leader", false
	}
	checks, _, err := client.Health().Node(node, q)
	if err != nil {
		return err.Error(), false
	}
	for _, c := range checks {
		if c.CheckID == "serfHealth" && c.Status == api.HealthPassing {
			return "", true
		}
	}
	return "serfHealth not passing", false
}

func (a *Agent) dumpLog() {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		a.t.Logf("consultest: read agent log: %v", err)
		return
	}
	a.t.Logf("consultest: agent log (%s), last lines:\n%s", a.logPath, tail(string(b), 80))
}

// freePorts finds n distinct loopback ports free for both TCP and UDP
// (serf uses both).
func freePorts(n int) ([]int, error) {
	var ports []int
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for attempts := 0; len(ports) < n && attempts < 100; attempts++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			l.Close()
			continue
		}
		closers = append(closers, func() { l.Close(); u.Close() })
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, errors.New("not enough free ports")
	}
	return ports, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
