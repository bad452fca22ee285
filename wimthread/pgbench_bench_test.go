package wimthread_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+)`)

// BenchmarkPgbenchSimpleUpdate: pgbench's simple-update transaction rate
// on the same server, the ceiling a one-transaction-per-action queue can
// approach on this machine. Runs when pgbench is installed with the
// server binaries (Debian's postgresql-contrib / postgresql package).
func BenchmarkPgbenchSimpleUpdate(b *testing.B) {
	for b.Loop() {
		tps, ok := pgbenchTPS(b)
		if !ok {
			b.Skip("pgbench is not installed with the PostgreSQL binaries") // a baseline, not a test
		}
		b.ReportMetric(tps, "tps-simple-update")
	}
}

// pgbenchTPS runs pgbench simple-update (-N) for 5 s with 2 clients on a
// fresh database of the test server; false when pgbench is not installed.
func pgbenchTPS(b *testing.B) (float64, bool) {
	b.Helper()
	dir, err := pglocal.FindBinDir()
	if err != nil {
		b.Fatal(err)
	}
	pgbench := filepath.Join(dir, "pgbench")
	if _, err := exec.LookPath(pgbench); err != nil {
		return 0, false
	}
	url := pgtest.EmptyURL(b)
	if out, err := exec.Command(pgbench, "-i", "-q", "-s", "1", url).CombinedOutput(); err != nil {
		b.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	out, err := exec.Command(pgbench, "-N", "-c", "2", "-j", "2", "-T", "5", url).CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		b.Fatalf("no tps in:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	return tps, true
}
