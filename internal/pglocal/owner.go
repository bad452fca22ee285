package pglocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// OwnerSuffix makes the name of the lock file beside an owned server's data
// folder (<data folder>.owner; beside it, not in it, because initdb wants
// an empty folder and the lock is taken before initdb) that the process
// owning the server holds locked (flock) for as long as it runs, with its
// pid inside for the messages of the others. The kernel drops the lock
// when the owner dies, however it dies, so a held lock means a live owner;
// the postgres children do not inherit it (Go opens files close-on-exec).
const OwnerSuffix = ".owner"

// ErrInUse is returned (wrapped, naming the owner's pid) by Start when
// another live process owns the data folder's server and Attach is not
// set.
var ErrInUse = errors.New("the data folder is owned by another process")

// ownerLock is a held owner lock file.
type ownerLock struct{ f *os.File }

// lockOwner takes the data folder's owner lock without waiting. When a
// live process holds it, it returns ErrInUse wrapped with that process's
// pid.
func lockOwner(dir string) (*ownerLock, error) {
	path := filepath.Clean(dir) + OwnerSuffix
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pglocal: owner lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := os.ReadFile(path)
			return nil, fmt.Errorf("pglocal: %s: %w (pid %s)", dir, ErrInUse, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("pglocal: owner lock: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &ownerLock{f: f}, nil
}

// release drops the lock (closing the file is enough); nil does nothing.
func (l *ownerLock) release() {
	if l != nil {
		l.f.Close()
	}
}

// postmaster is what postmaster.pid says of a running server.
type postmaster struct {
	pid  int
	port int
}

// runningPostmaster reads the data folder's postmaster.pid and returns the
// postmaster it names if that process is alive and is a postgres of this
// folder; ok is false when there is none (no file, a stale one left by a
// crash, or a pid reused by another program).
func runningPostmaster(dir string) (pm postmaster, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return pm, false
	}
	// Lines: pid, data folder, start time, port, socket folder, ...
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 || filepath.Clean(strings.TrimSpace(lines[1])) != filepath.Clean(dir) {
		return pm, false
	}
	pm.pid, err = strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pm.pid <= 0 {
		return pm, false
	}
	if pm.port, err = strconv.Atoi(strings.TrimSpace(lines[3])); err != nil {
		return pm, false
	}
	return pm, alivePostgres(pm.pid)
}

// alivePostgres says whether pid is a live (not zombie) postgres process.
// Where /proc cannot tell, a process that exists is taken as one.
func alivePostgres(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses, so
	// read from the last ')'.
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 >= len(s) {
		return true
	}
	// A dead postmaster whose parent died too waits for a reaper as a
	// zombie; it holds nothing.
	return s[open+1:end] == "postgres" && s[end+2] != 'Z'
}

// stopOrphan shuts down a postmaster that no live owner holds (its wimd was
// killed): a fast shutdown, which ends its sessions and writes a
// checkpoint, then waits for the process to be gone. It is not our child,
// so there is no Wait: the pid is watched until it is gone.
func stopOrphan(ctx context.Context, dir string, pm postmaster, logger *slog.Logger) error {
	logger.Warn("stopping a local PostgreSQL left running by a wimd that is gone",
		slog.String("data_dir", dir), slog.Int("pid", pm.pid), slog.Int("port", pm.port))
	if err := syscall.Kill(pm.pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("pglocal: stop the PostgreSQL (pid %d) left running in %s: %w", pm.pid, dir, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	delay := 10 * time.Millisecond
	for alivePostgres(pm.pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pglocal: the PostgreSQL (pid %d) left running in %s did not stop: %w", pm.pid, dir, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
	return nil
}

// attach returns a Server for the running server of another owner: its
// port from postmaster.pid, its password from PasswordFile. The result
// never stops, halts or restarts that server.
func attach(ctx context.Context, s *Server, inUse error) (*Server, error) {
	pm, ok := runningPostmaster(s.dataDir)
	if !ok {
		return nil, fmt.Errorf("%w, and its PostgreSQL is not running (starting or stopping?); try again", inUse)
	}
	b, err := os.ReadFile(filepath.Join(s.dataDir, PasswordFile))
	if err != nil {
		return nil, fmt.Errorf("pglocal: attach to the running server: %w", err)
	}
	s.password = strings.TrimSpace(string(b))
	s.port = pm.port
	s.attached = true
	s.stopped = true // nothing of ours to stop
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, s.URL("postgres"))
	if err != nil {
		return nil, fmt.Errorf("pglocal: attach to the running server (pid %d, port %d): %w", pm.pid, pm.port, err)
	}
	conn.Close(context.WithoutCancel(ctx))
	s.logger.Info("local PostgreSQL already running: using it", slog.String("data_dir", s.dataDir), slog.Int("port", s.port))
	return s, nil
}
