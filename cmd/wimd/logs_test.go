package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"io/fs"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/wimdtest"
	"github.com/wimro/wimro/migrations"
)

// attrNumber is a numeric attribute of a JSON log line, -1 when absent.
func attrNumber(l wimdtest.Line, key string) float64 {
	if v, ok := l[key].(float64); ok {
		return v
	}
	return -1
}

// A normal cluster start, read from the JSON logs of two wimd processes
// probed as an orchestrator probes them: the /readyz 503s before the
// first account assignment are no ERROR and no WARN (readiness logs what
// changes, once), the probes' and the scrapes' access lines are DEBUG
// (an API request's stays INFO), each process says once that it is
// ready, and a SIGTERM ends each log with "wimd stopped".
func TestClusterStartLogs(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	var members []*process
	for _, id := range []string{"w1", "w2"} {
		// A leader soak of 2 s: both are serving, and probed, well
		// before the leader assigns any account, as in any cluster start.
		members = append(members, startWimd(t, c.bin, append(c.env, "WIMRO_LOG_JSON=true"), "--data-dir", t.TempDir(), "--instance-id", id,
			"--coordinator", "consul", "--consul", c.consul.Addr(), "--session-ttl", clusterTTL.String(),
			"--leader-soak", "2s", "--assignment-soak", clusterAssignSoak.String()))
	}
	probe := func(p *process, path string) int {
		resp, err := http.Get("http://" + p.addr + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	unready := 0
	eventually.Until(t, time.Minute, "both members ready", func() (bool, string) {
		var st []string
		ready := true
		for _, p := range members {
			code := probe(p, "/readyz")
			probe(p, "/healthz")
			probe(p, "/livez")
			probe(p, "/metrics")
			if code == http.StatusServiceUnavailable {
				unready++
			}
			ready = ready && code == http.StatusOK
			st = append(st, fmt.Sprintf("%s /readyz %d", p.addr, code))
		}
		return ready, strings.Join(st, ", ")
	})
	if unready == 0 {
		t.Fatal("/readyz never answered 503: the test proves nothing")
	}
	for _, p := range members {
		if code := probe(p, "/openmano/tenants"); code != http.StatusOK {
			t.Fatalf("GET /openmano/tenants = %d", code)
		}
	}
	for _, p := range members {
		p.stop(t, syscall.SIGTERM)
	}

	quiet := map[string]bool{"/readyz": true, "/healthz": true, "/livez": true, "/metrics": true}
	for _, p := range members {
		lines := wimdtest.JSONLines(t, p.log.String())
		var readyLines, probeLines, apiLines int
		for _, l := range lines {
			switch {
			case l.Level() == "ERROR":
				t.Errorf("%s: an ERROR in a normal start: %v", p.addr, l)
			case l.Level() == "WARN" && (l.Msg() == "not ready" || l.Msg() == "unhealthy"):
				t.Errorf("%s: a probe's answer logged at WARN in a normal start: %v", p.addr, l)
			case l.Msg() == "ready" && l.Level() != "DEBUG": // a repeated answer is DEBUG
				readyLines++
				if l.Level() != "INFO" {
					t.Errorf("%s: ready at %s, want INFO", p.addr, l.Level())
				}
			case l.Msg() == "http request":
				route, _ := l["route"].(string)
				want := "INFO"
				if quiet[route] {
					want = "DEBUG"
					probeLines++
				} else if route == "/openmano/tenants" {
					apiLines++
				}
				if l.Level() != want {
					t.Errorf("%s: access line of %s at %s, want %s: %v", p.addr, route, l.Level(), want, l)
				}
			}
		}
		if readyLines != 1 || probeLines == 0 || apiLines != 1 {
			t.Errorf("%s: %d INFO \"ready\" lines (want 1), %d probe access lines (want some), %d API access lines (want 1)", p.addr, readyLines, probeLines, apiLines)
		}
		if last := lines[len(lines)-1]; last.Msg() != "wimd stopped" || last.Level() != "INFO" {
			t.Errorf("%s: the log ends with %v, want INFO \"wimd stopped\"", p.addr, last)
		}
	}
}

// An upgrade says what it did: a database left at schema 3 (a build of
// long ago), served or migrated by this wimd, gets one INFO line "schema
// 3 → N, N-3 migrations, D ms" with the same figures as attributes.
func TestUpgradeLogsTheMigrations(t *testing.T) {
	t.Parallel()
	bin := buildWimd(t)
	files, err := fs.Glob(migrations.FS(), "*.sql")
	if err != nil || len(files) < 4 {
		t.Fatalf("migrations: %v, %v", files, err)
	}
	var sources []int64
	for _, f := range files {
		v, err := strconv.ParseInt(strings.SplitN(f, "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", f, err)
		}
		sources = append(sources, v)
	}
	latest := sources[len(sources)-1]
	tests := []struct {
		name string
		run  func(t *testing.T, url string) string // runs wimd on url, returns its log
	}{
		{"serve", func(t *testing.T, url string) string {
			p := startWimd(t, bin, []string{"WIMRO_DATABASE_URL=" + url, "WIMRO_SECRET_KEY=" + testSecretKey, "WIMRO_LOG_JSON=true"}, "--data-dir", t.TempDir())
			p.stop(t, syscall.SIGTERM)
			return p.log.String()
		}},
		{"migrate up", func(t *testing.T, url string) string {
			cmd := exec.Command(bin, "migrate", "up", "--database-url", url, "--log-json")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("wimd migrate up: %v\n%s%s", err, stdout.String(), stderr.String())
			}
			if n := strings.Count(stdout.String(), "applied "); n != len(sources)-3 {
				t.Errorf("migrate up printed %d applied migrations, want %d:\n%s", n, len(sources)-3, stdout.String())
			}
			return stderr.String()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.EmptyURL(t)
			db, err := sql.Open("pgx", url)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			p, err := migrations.NewProvider(db, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(t.Context(), 3); err != nil {
				t.Fatal(err)
			}
			log := tt.run(t, url)
			var found []wimdtest.Line
			for _, l := range wimdtest.JSONLines(t, log) {
				if strings.HasPrefix(l.Msg(), "schema ") {
					found = append(found, l)
				}
			}
			if len(found) != 1 {
				t.Fatalf("%d schema lines, want 1:\n%s", len(found), log)
			}
			l := found[0]
			n := len(sources) - 3
			want := fmt.Sprintf("schema 3 → %d, %d migrations, %d ms", latest, n, int64(attrNumber(l, "duration_ms")))
			if l.Level() != "INFO" || l.Msg() != want || attrNumber(l, "from") != 3 || attrNumber(l, "to") != float64(latest) ||
				attrNumber(l, "migrations") != float64(n) || attrNumber(l, "duration_ms") < 0 {
				t.Errorf("the upgrade line: %v\nwant INFO %q with from 3, to %d, migrations %d, duration_ms", l, want, latest, n)
			}
		})
	}
}
