package pglocal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options configure Start.
type Options struct {
	// DataDir "" starts a throwaway server in a new temporary folder,
	// removed by Stop. Otherwise the server is owned: initdb runs only when
	// the folder holds no cluster yet, and the data stays.
	DataDir string
	// BinDir holds initdb and postgres; "" finds them (FindBinDir).
	BinDir string
	// Port 0 picks a free loopback port; an owned server then takes the
	// port it had last time (PortFile) while that port is free, so that a
	// restart does not move it.
	Port int
	// TLSCert and TLSKey, PEM files, turn TLS on (ssl=on): the server
	// presents that certificate (chain) to clients asking for TLS. They are
	// copied into the data folder, readable by the server alone.
	TLSCert, TLSKey string
	// HBA, for a throwaway server, replaces its pg_hba.conf (whose default
	// trusts every local connection): a test of an access recipe. It must
	// trust the Unix socket ("local all postgres trust"), which Start uses
	// to see the server up. An owned server always has its own (see the
	// package comment).
	HBA string
	// Logger is injected; nil discards.
	Logger *slog.Logger
	// Attach, for an owned server, connects to the server of the data
	// folder's live owner (another wimd serving it) instead of failing
	// with ErrInUse. The Server returned then leaves that server alone:
	// Stop does nothing, Halt and Resume fail.
	Attach bool
	// Supervise restarts the server, on the same port, when its process
	// exits by itself, with back-off, until Stop or Halt.
	Supervise bool
	// Restarted, if set, is called after each such restart succeeded.
	Restarted func()
}

// Server is a PostgreSQL server started by Start: running, halted (Halt)
// or stopped (Stop). Its methods are safe for concurrent use.
type Server struct {
	port      int
	dataDir   string
	throwaway bool
	bin       string
	cred      *syscall.Credential
	tls       bool   // ssl=on with server.crt and server.key (Options.TLSCert)
	ownHBA    bool   // Options.HBA: only its socket line is known to let Start in
	password  string // the superuser's password of an owned server
	logPath   string
	logger    *slog.Logger
	attached  bool       // another process owns the server (Options.Attach)
	owner     *ownerLock // held while we own an owned server's folder
	restarted func()     // Options.Restarted
	life      context.Context
	endLife   context.CancelFunc // ends life: Stop was called

	// mu serialises Halt, Resume and Stop, and guards what follows.
	mu        sync.Mutex
	proc      *proc // the last postgres process started; nil before the first
	stopped   bool
	stopErr   error
	halted    bool // by Halt, until Resume: no supervised restart
	supervise bool // set once Start succeeded with Options.Supervise
}

// proc is one run of the postgres process.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait has returned
	err    error         // what cmd.Wait returned, once exited is closed
	// stopping is set before we stop or kill the process ourselves, so
	// its exit is not taken for a crash.
	stopping atomic.Bool
}

// running reports whether p is a process that has not exited.
func (p *proc) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill kills the process and waits for it.
func (p *proc) kill() {
	p.stopping.Store(true)
	p.cmd.Process.Kill()
	<-p.exited
}

// FindBinDir returns the folder of the PostgreSQL server binaries:
// $WIMRO_PG_BINDIR, the folder of postgres on PATH, or the newest
// /usr/lib/postgresql/*/bin.
func FindBinDir() (string, error) {
	if d := os.Getenv("WIMRO_PG_BINDIR"); d != "" {
		if isExec(filepath.Join(d, "postgres")) && isExec(filepath.Join(d, "initdb")) {
			return d, nil
		}
		return "", fmt.Errorf("pglocal: WIMRO_PG_BINDIR=%s has no postgres and initdb", d)
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		d := filepath.Dir(p)
		if isExec(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "postgres")) && isExec(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", errors.New("pglocal: no PostgreSQL server binaries found (searched $WIMRO_PG_BINDIR, postgres on PATH, /usr/lib/postgresql/*/bin); run `make deps` or scripts/ensure-postgres.sh, which installs Debian's postgresql package")
}

func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// runAs returns the credentials to run PostgreSQL with: the postgres user
// when we are root, nil (ourselves) otherwise.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("pglocal: running as root, and PostgreSQL refuses root, but there is no \"postgres\" user to run it as; install Debian's postgresql package (make deps), which creates it")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Start starts a server and waits until it accepts connections.
func Start(ctx context.Context, opts Options) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	bin := opts.BinDir
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return nil, errors.New("pglocal: TLSCert and TLSKey go together")
	}
	s := &Server{logger: logger, bin: bin, cred: cred, restarted: opts.Restarted, tls: opts.TLSCert != "", ownHBA: opts.HBA != ""}
	s.life, s.endLife = context.WithCancel(context.Background())
	if opts.DataDir == "" {
		tmp, err := os.MkdirTemp("", "wimro-pg-")
		if err != nil {
			return nil, fmt.Errorf("pglocal: temp dir: %w", err)
		}
		s.dataDir, s.throwaway = filepath.Join(tmp, "data"), true
	} else {
		if s.dataDir, err = filepath.Abs(opts.DataDir); err != nil {
			return nil, err
		}
	}
	fail := func(err error) (*Server, error) {
		s.endLife()
		s.owner.release()
		if s.throwaway {
			os.RemoveAll(filepath.Dir(s.dataDir))
		}
		return nil, err
	}
	if err := prepareDir(s.dataDir, cred); err != nil {
		return fail(err)
	}
	if !s.throwaway {
		// Before initdb: two wimd starting on a fresh folder must not both
		// create it.
		if s.owner, err = lockOwner(s.dataDir); err != nil {
			if opts.Attach && errors.Is(err, ErrInUse) {
				s.endLife()
				return attach(ctx, s, err)
			}
			return fail(err)
		}
		// We own the folder, so a postmaster still running in it was left
		// by an owner that died (a SIGKILLed wimd): see the package comment
		// for why it is stopped rather than reused.
		if pm, ok := runningPostmaster(s.dataDir); ok {
			if err := stopOrphan(ctx, s.dataDir, pm, logger); err != nil {
				return fail(err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initdb(ctx, bin, s.dataDir, cred); err != nil {
			return fail(err)
		}
	}
	s.logPath = filepath.Join(s.dataDir, "wimro-postgres.log")
	if !s.throwaway {
		if s.password, err = ownedAccess(s.dataDir, cred); err != nil {
			return fail(err)
		}
	} else if opts.HBA != "" {
		if err := writeOwnedBy(filepath.Join(s.dataDir, "pg_hba.conf"), []byte(opts.HBA), cred); err != nil {
			return fail(err)
		}
	}
	if s.tls {
		if err := installTLS(s.dataDir, opts.TLSCert, opts.TLSKey, cred); err != nil {
			return fail(err)
		}
	}
	last := 0 // the port of an owned server's previous run, while free
	if opts.Port == 0 && !s.throwaway {
		last = s.lastPort()
	}
	for try := 0; ; try++ {
		port := opts.Port
		if port == 0 && last != 0 && try == 0 {
			port = last
		} else if port == 0 {
			if port, err = freePort(); err != nil {
				return fail(err)
			}
		}
		s.port = port
		err = s.start(ctx, true)
		if err == nil && !s.throwaway {
			if err = s.setPassword(ctx); err != nil {
				s.Stop(ctx)
				return fail(err)
			}
		}
		if err == nil {
			if !s.throwaway {
				s.keepPort(last)
			}
			if opts.Supervise {
				s.mu.Lock()
				s.supervise = true
				if !s.proc.running() {
					go s.restart(s.proc) // it died before it was watched
				}
				s.mu.Unlock()
			}
			return s, nil
		}
		if opts.Port != 0 || try >= 3 || !strings.Contains(err.Error(), "in use") {
			return fail(err)
		}
	}
}

// PortFile is the name of the file, in an owned server's data folder, that
// holds the TCP port of its last start.
const PortFile = ".wimro-port"

// lastPort is the port of the owned server's previous start when it is
// free now, else 0 (a new free port is picked: the move is logged).
func (s *Server) lastPort() int {
	b, err := os.ReadFile(filepath.Join(s.dataDir, PortFile))
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || port <= 0 || port > 65535 {
		return 0
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		s.logger.Warn("local PostgreSQL: its previous port is taken, moving to another", slog.Int("previous_port", port), slog.Any("error", err))
		return 0
	}
	l.Close()
	return port
}

// keepPort records the port of this start for the next one.
func (s *Server) keepPort(last int) {
	if s.port == last {
		return
	}
	if err := os.WriteFile(filepath.Join(s.dataDir, PortFile), []byte(strconv.Itoa(s.port)+"\n"), 0o600); err != nil {
		s.logger.Warn("local PostgreSQL: cannot record its port", slog.Any("error", err))
	}
}

// EmbeddedClusterName is the cluster_name of an owned server: any client
// can read it (SHOW cluster_name), so a wimd pointed at another wimd's
// local server can tell (see cmd/wimd).
const EmbeddedClusterName = "wimro-embedded"

// installTLS copies the certificate and key into the data folder as
// server.crt and server.key, readable by the server's user alone (the key
// must be: postgres refuses a key others can read).
func installTLS(dir, cert, key string, cred *syscall.Credential) error {
	for src, dst := range map[string]string{cert: "server.crt", key: "server.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("pglocal: TLS: %w", err)
		}
		if err := writeOwnedBy(filepath.Join(dir, dst), b, cred); err != nil {
			return fmt.Errorf("pglocal: TLS: %w", err)
		}
	}
	return nil
}

// writeOwnedBy writes a 0600 file owned by the server's user.
func writeOwnedBy(path string, data []byte, cred *syscall.Credential) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	if cred != nil {
		return os.Chown(path, int(cred.Uid), int(cred.Gid))
	}
	return nil
}

// prepareDir creates the data folder (and makes sure the postgres user can
// reach it).
func prepareDir(dir string, cred *syscall.Credential) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pglocal: data dir: %w", err)
	}
	if cred == nil {
		return nil
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return fmt.Errorf("pglocal: chown data dir: %w", err)
	}
	// Every parent must be traversable by the postgres user. Temporary
	// folders (ours, or a test's) are opened up; anything else is the
	// operator's to decide, so it is an error naming the folder.
	tmp := filepath.Clean(os.TempDir())
	for p := filepath.Dir(dir); p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 != 0 {
			continue
		}
		if !strings.HasPrefix(p, tmp+string(filepath.Separator)) {
			return fmt.Errorf("pglocal: PostgreSQL runs as the postgres user, which cannot enter %s (mode %v) to reach %s: choose a data folder it can reach (--data-dir / WIMRO_DATA_DIR), or chmod o+x %s", p, st.Mode().Perm(), dir, p)
		}
		if err := os.Chmod(p, st.Mode().Perm()|0o011); err != nil {
			return fmt.Errorf("pglocal: open %s to the postgres user: %w", p, err)
		}
	}
	return nil
}

func initdb(ctx context.Context, bin, dir string, cred *syscall.Credential) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pglocal: initdb %s: %w\n%s", dir, err, tail(out.String()))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pglocal: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start starts postgres on s.port and waits until it answers; the caller
// holds s.mu or owns s alone. first truncates the log file; a restart
// appends to it.
func (s *Server) start(ctx context.Context, first bool) error {
	sockDir := filepath.Join(s.dataDir, "socket")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		return err
	}
	if s.cred != nil {
		os.Chown(sockDir, int(s.cred.Uid), int(s.cred.Gid))
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if first {
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	}
	logf, err := os.OpenFile(s.logPath, flags, 0o600)
	if err != nil {
		return fmt.Errorf("pglocal: log file: %w", err)
	}
	args := []string{"-D", s.dataDir, "-p", strconv.Itoa(s.port), "-h", "127.0.0.1", "-k", sockDir,
		"-c", "max_connections=300", "-c", "shared_buffers=64MB"}
	if s.throwaway {
		// A throwaway database need not survive a crash of the machine:
		// skip the flushes to disk. Commits still reach the kernel before
		// they return (synchronous_commit stays on, cheap without fsync),
		// so a crash of postgres itself (HaltImmediate, a SIGKILL) loses
		// nothing that was committed, as on a real server.
		args = append(args, "-c", "fsync=off", "-c", "full_page_writes=off")
	} else {
		args = append(args, "-c", "cluster_name="+EmbeddedClusterName)
	}
	if s.tls {
		args = append(args, "-c", "ssl=on", "-c", "ssl_cert_file=server.crt", "-c", "ssl_key_file=server.key")
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), args...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	if s.throwaway {
		// Do not outlive a test binary that dies. The signal follows the
		// thread that started the child, so keep this goroutine on one.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("pglocal: start postgres: %w", err)
	}
	logf.Close()
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	s.proc = p
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
		s.exited(p)
	}()
	if err := s.waitReady(ctx, p); err != nil {
		p.kill()
		return err
	}
	s.logger.Info("local PostgreSQL started", slog.String("data_dir", s.dataDir), slog.Int("port", s.port))
	return nil
}

// PasswordFile is the name of the file, in an owned server's data folder,
// that holds the password of its superuser postgres.
const PasswordFile = ".wimro-password"

// hbaOwned is the pg_hba.conf of an owned server: the socket (in a 0700
// folder) is trusted, TCP needs the password.
const hbaOwned = `# Written by wimro on every start of its local PostgreSQL (internal/pglocal).
# Unix socket: its folder is 0700, so only wimd's user and the server's reach it.
local   all   all                  trust
# TCP: the password in ` + PasswordFile + `.
host    all   all   127.0.0.1/32   scram-sha-256
host    all   all   ::1/128        scram-sha-256
`

// ownedAccess loads (or generates) the password of an owned server and
// writes its pg_hba.conf.
func ownedAccess(dir string, cred *syscall.Credential) (string, error) {
	path := filepath.Join(dir, PasswordFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		raw := make([]byte, 24)
		if _, err := rand.Read(raw); err != nil {
			return "", err
		}
		b = []byte(hex.EncodeToString(raw))
		if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
			return "", fmt.Errorf("pglocal: password file: %w", err)
		}
	case err != nil:
		return "", fmt.Errorf("pglocal: password file: %w", err)
	}
	pw := strings.TrimSpace(string(b))
	if pw == "" || strings.ContainsAny(pw, "'\\") {
		return "", fmt.Errorf("pglocal: password file %s: empty or holds a quote or backslash", path)
	}
	hba := filepath.Join(dir, "pg_hba.conf")
	if err := os.WriteFile(hba, []byte(hbaOwned), 0o600); err != nil {
		return "", fmt.Errorf("pglocal: pg_hba.conf: %w", err)
	}
	if cred != nil {
		if err := os.Chown(hba, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", fmt.Errorf("pglocal: pg_hba.conf: %w", err)
		}
	}
	return pw, nil
}

// setPassword sets the superuser's password of an owned server, through
// the trusted socket.
func (s *Server) setPassword(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.socketURL("postgres"))
	if err != nil {
		return fmt.Errorf("pglocal: connect through the socket: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SET password_encryption = 'scram-sha-256'`); err != nil {
		return fmt.Errorf("pglocal: set the password: %w", err)
	}
	// The password is hex (checked free of quotes): safe in a literal,
	// which ALTER ROLE needs (it takes no parameters).
	if _, err := conn.Exec(ctx, `ALTER ROLE postgres PASSWORD '`+s.password+`'`); err != nil {
		return fmt.Errorf("pglocal: set the password: %w", err)
	}
	return nil
}

// socketURL is a URL of database dbname through the server's Unix socket.
func (s *Server) socketURL(dbname string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d", dbname, url.QueryEscape(filepath.Join(s.dataDir, "socket")), s.port)
}

// waitReady connects until the server answers, p exits, or ctx ends.
func (s *Server) waitReady(ctx context.Context, p *proc) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	delay := 20 * time.Millisecond
	probe := s.URL("postgres")
	if !s.throwaway || s.ownHBA {
		probe = s.socketURL("postgres")
	}
	for {
		conn, err := pgx.Connect(ctx, probe)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("pglocal: postgres exited during start (%v):\n%s", p.err, tail(string(b)))
		case <-ctx.Done():
			b, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("pglocal: postgres not ready: %w\n%s", ctx.Err(), tail(string(b)))
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// URL returns a URL of database dbname on the server, as superuser
// postgres, over loopback TCP (TLS when on): with the password for an
// owned server, without for a throwaway one (trust). It holds a secret:
// never log it.
func (s *Server) URL(dbname string) string {
	user := "postgres"
	if s.password != "" {
		user += ":" + url.QueryEscape(s.password)
	}
	mode := "disable"
	if s.tls {
		mode = "require" // encrypted; loopback, so the name is not verified
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=%s", user, s.port, dbname, mode)
}

// Port returns the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// DataDir returns the server's data folder.
func (s *Server) DataDir() string { return s.dataDir }

// shutdown asks p for a fast shutdown (active sessions are ended) and
// waits for it; when ctx ends first, p is killed and the error says so.
// The caller holds s.mu.
func (s *Server) shutdown(ctx context.Context, p *proc) error {
	return s.shutdownWith(ctx, p, syscall.SIGINT)
}

// shutdownWith is shutdown with the postmaster's signal: SIGINT for a
// fast shutdown, SIGQUIT for an immediate one.
func (s *Server) shutdownWith(ctx context.Context, p *proc, sig syscall.Signal) error {
	if !p.running() {
		return nil
	}
	p.stopping.Store(true)
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		p.kill()
		return fmt.Errorf("pglocal: postgres did not stop in time; killed: %w", ctx.Err())
	}
}

// Halt shuts the server down (fast shutdown: active sessions are ended)
// and waits for it, keeping its data folder, even a throwaway one, and its
// port for Resume. Connections fail until Resume. Halting a halted server
// does nothing; halting a stopped one is an error.
func (s *Server) Halt(ctx context.Context) error { return s.halt(ctx, syscall.SIGINT, "fast") }

// HaltImmediate is Halt with an immediate shutdown: the server exits at
// once without a checkpoint, as after a crash, and Resume runs crash
// recovery from the write-ahead log. Tests use it for a database that
// goes away abruptly.
func (s *Server) HaltImmediate(ctx context.Context) error {
	return s.halt(ctx, syscall.SIGQUIT, "immediate")
}

func (s *Server) halt(ctx context.Context, sig syscall.Signal, mode string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached {
		return errors.New("pglocal: halt: the server belongs to another process")
	}
	if s.stopped {
		return errors.New("pglocal: halt: the server is stopped")
	}
	s.halted = true
	if err := s.shutdownWith(ctx, s.proc, sig); err != nil {
		return err
	}
	s.logger.Info("local PostgreSQL halted", slog.String("data_dir", s.dataDir), slog.Int("port", s.port), slog.String("mode", mode))
	return nil
}

// Resume starts a halted server again on the same port and data folder
// and waits until it accepts connections. Resuming a running server does
// nothing; resuming a stopped one is an error. It also restarts a server
// whose process ended by itself.
func (s *Server) Resume(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attached {
		return errors.New("pglocal: resume: the server belongs to another process")
	}
	if s.stopped {
		return errors.New("pglocal: resume: the server is stopped")
	}
	s.halted = false
	if s.proc.running() {
		return nil
	}
	// The port was free a moment ago; should something else hold it
	// briefly (a client's socket bound to it), try again.
	delay := 100 * time.Millisecond
	for try := 1; ; try++ {
		err := s.start(ctx, false)
		if err == nil || try >= 5 || !strings.Contains(err.Error(), "in use") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// Stop shuts the server down (fast shutdown: active sessions are ended)
// and waits for it; a throwaway server's folder is removed. Stop is
// idempotent, and works on a halted server too.
func (s *Server) Stop(ctx context.Context) error {
	s.endLife() // first: a supervised restart in progress gives up the lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return s.stopErr
	}
	s.stopped = true
	s.stopErr = s.shutdown(ctx, s.proc)
	s.owner.release()
	if s.throwaway {
		if err := os.RemoveAll(filepath.Dir(s.dataDir)); err != nil && s.stopErr == nil {
			s.stopErr = fmt.Errorf("pglocal: remove %s: %w", s.dataDir, err)
		}
	}
	return s.stopErr
}

// exited runs when the process p has exited. Unless we stopped it, it was
// killed or crashed: a supervised server is restarted.
func (s *Server) exited(p *proc) {
	if p.stopping.Load() {
		return
	}
	s.mu.Lock()
	// Again under the lock: a start that fails kills its process, and
	// marks it, while holding it.
	watch := !p.stopping.Load() && s.supervise && !s.stopped && !s.halted && s.proc == p
	s.mu.Unlock()
	if watch {
		s.restart(p)
	}
}

// restart starts the server again after its process p exited by itself,
// retrying with back-off (a postmaster killed with SIGKILL leaves backends
// that hold its shared memory for a moment, and a start fails until they
// are gone), until it runs or Stop or Halt comes.
func (s *Server) restart(p *proc) {
	status := "unknown"
	if p.cmd.ProcessState != nil {
		status = p.cmd.ProcessState.String()
	}
	s.logger.Warn("local PostgreSQL exited unexpectedly; restarting it",
		slog.String("data_dir", s.dataDir), slog.Int("port", s.port), slog.String("exit_status", status))
	delay := 100 * time.Millisecond
	for try := 1; ; try++ {
		s.mu.Lock()
		if s.stopped || s.halted || s.proc.running() {
			s.mu.Unlock()
			return
		}
		err := s.start(s.life, false)
		s.mu.Unlock()
		if err == nil {
			s.logger.Warn("local PostgreSQL restarted", slog.String("data_dir", s.dataDir), slog.Int("port", s.port), slog.Int("attempt", try))
			if s.restarted != nil {
				s.restarted()
			}
			return
		}
		if s.life.Err() != nil {
			return // Stop came during the attempt
		}
		s.logger.Warn("local PostgreSQL restart failed; trying again",
			slog.String("data_dir", s.dataDir), slog.Int("attempt", try), slog.Int64("retry_in_ms", delay.Milliseconds()), slog.Any("error", err))
		select {
		case <-s.life.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}
