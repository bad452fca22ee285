package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// PostmasterPID returns the pid that the postmaster.pid of the PostgreSQL
// data folder dir names, for the tests that kill a server or check that
// one is gone.
func PostmasterPID(t testing.TB, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// Alive says whether pid is a process that has not exited (a zombie
// waiting for its reaper has). It is the tests' own check, independent of
// the one internal/pglocal uses to find a running postmaster.
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
