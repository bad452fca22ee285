package pglocal_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// killOnCleanup kills pid when the test ends, should the test fail
// before the process is stopped the ordinary way.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() {
		if pgtest.Alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// A second Start on an owned folder whose owner lives fails with
// ErrInUse; with Attach it uses the owner's server, and its Stop, Halt
// and Resume leave that server alone.
func TestAttachToTheOwnersServer(t *testing.T) {
	t.Parallel()
	dir := ownedDir(t)
	owner := start(t, dir)
	keep(t, owner.URL("postgres"))

	_, err := pglocal.Start(t.Context(), pglocal.Options{DataDir: dir})
	if !errors.Is(err, pglocal.ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second owner: %v, want ErrInUse naming pid %d", err, os.Getpid())
	}
	a, err := pglocal.Start(t.Context(), pglocal.Options{DataDir: dir, Attach: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.Port() != owner.Port() {
		t.Fatalf("attached to port %d, the owner's server is on %d", a.Port(), owner.Port())
	}
	kept(t, a.URL("postgres"), "attached server")
	if err := a.Halt(t.Context()); err == nil {
		t.Fatal("an attached server halted the owner's")
	}
	if err := a.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	kept(t, owner.URL("postgres"), "the owner's server after the attached one stopped")

	// Once the owner stopped, the folder is free again.
	if err := owner.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	kept(t, start(t, dir).URL("postgres"), "the next owner")
}

// TestHelperOwner is not a test on its own: TestOrphanedPostmaster runs
// the test binary with it to get an owner process it can SIGKILL.
func TestHelperOwner(t *testing.T) {
	dir := os.Getenv("PGLOCAL_HELPER_DIR")
	if dir == "" {
		return
	}
	s, err := pglocal.Start(context.Background(), pglocal.Options{DataDir: dir})
	if err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	keep(t, s.URL("postgres"))
	fmt.Println("ready")
	select {} // until killed
}

// An owner SIGKILLed leaves its postmaster running; the next Start stops
// it cleanly and runs its own, with the data there.
func TestOrphanedPostmaster(t *testing.T) {
	t.Parallel()
	dir := ownedDir(t)
	cmd := osexec.Command(os.Args[0], "-test.run=^TestHelperOwner$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PGLOCAL_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
			t.Log("helper:", sc.Text())
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the helper owner did not start its server")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the helper owner did not start its server in time")
	}
	orphan := pgtest.PostmasterPID(t, dir)
	killOnCleanup(t, orphan)
	cmd.Process.Kill()
	cmd.Wait()
	if !pgtest.Alive(orphan) {
		t.Fatal("the postmaster died with its owner: the test proves nothing")
	}

	s := start(t, dir)
	if pgtest.Alive(orphan) {
		t.Fatalf("the orphaned postmaster %d still runs", orphan)
	}
	kept(t, s.URL("postgres"), "data after the orphan was stopped")
	own := pgtest.PostmasterPID(t, dir)
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if pgtest.Alive(own) {
		t.Fatalf("postmaster %d still runs after Stop", own)
	}
}

// syncLog is a log buffer safe for the server's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A supervised server whose postmaster is killed comes back on the same
// port with its data, says so at WARN with the exit status, and counts
// the restart.
func TestSupervisedRestart(t *testing.T) {
	t.Parallel()
	dir := ownedDir(t)
	log := &syncLog{}
	restarted := make(chan struct{}, 10)
	s, err := pglocal.Start(t.Context(), pglocal.Options{DataDir: dir, Supervise: true,
		Logger:    slog.New(slog.NewTextHandler(log, nil)),
		Restarted: func() { restarted <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	keep(t, s.URL("postgres"))
	port := s.Port()

	for round := range 2 {
		pid := pgtest.PostmasterPID(t, dir)
		killOnCleanup(t, pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-restarted:
		case <-time.After(2 * time.Minute):
			t.Fatalf("round %d: no restart; log:\n%s", round, log.String())
		}
		kept(t, s.URL("postgres"), "data after the restart")
		if s.Port() != port || pgtest.PostmasterPID(t, dir) == pid {
			t.Fatalf("round %d: port %d (was %d), postmaster %d (was %d)", round, s.Port(), port, pgtest.PostmasterPID(t, dir), pid)
		}
	}
	for _, want := range []string{`level=WARN msg="local PostgreSQL exited unexpectedly; restarting it"`, "exit_status=\"signal: killed\"", `level=WARN msg="local PostgreSQL restarted"`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, log.String())
		}
	}

	// Halt is not a crash: no restart follows it.
	if err := s.Halt(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	last := pgtest.PostmasterPID(t, dir)
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if pgtest.Alive(last) {
		t.Fatalf("postmaster %d still runs after Stop", last)
	}
	if n := len(restarted); n != 0 {
		t.Fatalf("%d restarts after Halt, Resume and Stop", n)
	}
}
