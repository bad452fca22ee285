package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/eventually"
	"github.com/wimro/wimro/internal/pgtest"
)

// buildWimd compiles the daemon once per test.
func buildWimd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wimd")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var servingAddr = regexp.MustCompile(`msg="wimd serving" addr=(\S+)`)

// process is a wimd serve child process.
type process struct {
	cmd  *exec.Cmd
	addr string
	log  *syncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

func startWimd(t *testing.T, bin string, env []string, args ...string) *process {
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
			if m := servingAddr.FindStringSubmatch(line); m != nil {
				addrc <- m[1]
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
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

func (p *process) call(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+p.addr+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s = %d: %s", method, path, resp.StatusCode, raw)
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out
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
	state := filepath.Join(t.TempDir(), "controller.json")
	env := []string{"WIMRO_DATABASE_URL=" + pgtest.URL(t), "WIMRO_SECRET_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "WIMRO_LOG_LEVEL=debug"}
	args := []string{"--data-dir", t.TempDir(), "--claim-lease", "2s", "--parallel", "3"}

	a := startWimd(t, bin, env, args...)
	a.call(t, "POST", "/openmano/tenants", map[string]any{"tenant": map[string]any{"name": "t0"}})
	var mappings []any
	for i, dc := range []string{"dcA", "dcB"} {
		dpid := fmt.Sprintf("00:00:00:00:00:00:00:0%d", i+1)
		a.call(t, "POST", "/openmano/datacenters", map[string]any{"datacenter": map[string]any{"name": dc, "vim_url": "http://" + dc,
			"config": map[string]any{"external_connections": []any{map[string]any{"vim_external_port": map[string]any{"switch": dpid, "port": "1"}}}}}})
		a.call(t, "POST", "/openmano/t0/datacenters/"+dc, nil)
		mappings = append(mappings, map[string]any{"datacenter_name": dc, "pop_wan_mappings": []any{map[string]any{"pop_switch_dpid": dpid, "pop_switch_port": "1", "wan_service_endpoint_id": "ep-" + dc}}})
	}
	a.call(t, "POST", "/openmano/wims", map[string]any{"wim": map[string]any{"name": "wan1", "type": "fake", "wim_url": "http://fake-" + uuid.NewString(),
		"config": map[string]any{"wim_port_mapping": mappings}}})
	a.call(t, "POST", "/openmano/t0/wims/wan1", map[string]any{"wim_account": map[string]any{"config": map[string]any{"latency_ms": 400, "state_file": state}}})

	const links = 6
	var nets []any
	for i := range links {
		vld := uuid.NewString()
		for _, dc := range []string{"dcA", "dcB"} {
			nets = append(nets, map[string]any{"sce_net_id": vld, "datacenter": dc, "status": "ACTIVE", "encapsulation_type": "vlan", "encapsulation_id": 100 + i})
		}
	}
	inst := a.call(t, "POST", "/openmano/t0/instances", map[string]any{"instance": map[string]any{"name": "ns", "networks": nets}})["instance"].(map[string]any)
	path := fmt.Sprintf("/openmano/t0/instances/%s/action/%s", inst["uuid"], inst["action_id"])

	// Kill A once the controller has made some services and others are in
	// flight (3 run at once, each call takes 400 ms).
	poll(t, "services on the controller", func() (bool, string) {
		s, _ := fake.ReadStateFile(state)
		return len(s) >= 2, fmt.Sprint(len(s))
	})
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	before, _ := fake.ReadStateFile(state)
	if len(before) >= links {
		t.Fatalf("A finished every create before it was killed (%d services): the test proves nothing", len(before))
	}

	b := startWimd(t, bin, env, args...)
	var last map[string]any
	poll(t, "every action DONE", func() (bool, string) {
		last = b.call(t, "GET", path, nil)["actions"].([]any)[0].(map[string]any)
		tasks, _ := last["vim_wim_actions"].([]any)
		var st []string
		all := len(tasks) == links
		for _, x := range tasks {
			s := x.(map[string]any)["status"].(string)
			st = append(st, s)
			all = all && s == "DONE"
		}
		return all, strings.Join(st, ",")
	})
	if last["number_done"] != float64(links) || last["number_failed"] != 0.0 {
		t.Fatalf("counters: %v done, %v failed", last["number_done"], last["number_failed"])
	}
	services, err := fake.ReadStateFile(state)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, s := range services {
		keys[s.Key] = true
	}
	if len(services) != links || len(keys) != links {
		t.Fatalf("%d services for %d keys on the controller, want exactly one per link (%d)", len(services), len(keys), links)
	}
	wanLinks := b.call(t, "GET", fmt.Sprintf("/openmano/t0/instances/%s/wan_links", inst["uuid"]), nil)["wan_links"].([]any)
	for _, l := range wanLinks {
		m := l.(map[string]any)
		if m["status"] != "ACTIVE" || !keys[m["uuid"].(string)] {
			t.Fatalf("link %v", m)
		}
	}

	// A clean stop exits 0.
	b.cmd.Process.Signal(os.Interrupt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-b.done:
		if b.err != nil {
			t.Fatalf("wimd exit: %v\n%s", b.err, b.log.String())
		}
	case <-ctx.Done():
		t.Fatal("wimd did not stop")
	}
}
