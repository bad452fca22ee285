package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/consultest"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/tlstest"
)

// readmeRecipe is the recipe of docs/cluster.md's "A cluster on a real
// PostgreSQL": the SQL run on the server's postgres database and on the
// new database, the pg_hba.conf line(s) and the URL template.
type readmeRecipe struct {
	adminSQL, databaseSQL []string
	hba                   []string
	url                   string
}

func clusterRecipeOf(t *testing.T) readmeRecipe {
	t.Helper()
	raw, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "## A cluster on a real PostgreSQL")
	if start < 0 {
		t.Fatal(`docs/cluster.md has no "## A cluster on a real PostgreSQL"`)
	}
	section := text[start:]
	if end := regexp.MustCompile(`\n##+ `).FindStringIndex(section[4:]); end != nil {
		section = section[:end[0]+4]
	}
	var r readmeRecipe
	sqlBlock := regexp.MustCompile("(?s)```sql\n(.*?)```").FindStringSubmatch(section)
	if sqlBlock == nil {
		t.Fatal("the recipe has no sql block")
	}
	target := &r.adminSQL
	for _, line := range strings.Split(sqlBlock[1], "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "-- then in the new database"):
			target = &r.databaseSQL
		case line == "" || strings.HasPrefix(line, "--"):
		default:
			*target = append(*target, strings.TrimSuffix(line, ";"))
		}
	}
	r.hba = regexp.MustCompile(`(?m)^hostssl .*$`).FindAllString(section, -1)
	if m := regexp.MustCompile(`(?m)^WIMRO_DATABASE_URL='([^']+)'`).FindStringSubmatch(section); m != nil {
		r.url = m[1]
	}
	if len(r.adminSQL) == 0 || len(r.databaseSQL) == 0 || len(r.hba) == 0 || r.url == "" {
		t.Fatalf("recipe incomplete: %+v", r)
	}
	return r
}

// TestClusterOnRealPostgreSQL runs docs/cluster.md's recipe as written: on a
// PostgreSQL with TLS on and the recipe's pg_hba.conf line (its network
// made 127.0.0.1/32), the role, database and grants as a superuser; then
// two wimd of a Consul cluster on the recipe's URL (sslmode=verify-full
// against the CA). A connection without TLS, or with a wrong password, is
// refused; the two processes connect over TLS as the role, elect one
// leader and are ready; neither warns of an embedded database.
func TestClusterOnRealPostgreSQL(t *testing.T) {
	t.Parallel()
	recipe := clusterRecipeOf(t)
	pki := tlstest.New(t)
	// The server runs as postgres: it must read the certificate and key
	// to copy them (pglocal makes its copies 0600).
	os.Chmod(filepath.Dir(pki.Cert), 0o755)
	os.Chmod(pki.Key, 0o644)
	os.Chmod(pki.Cert, 0o644)
	// The socket line lets pglocal (and this test) in as the superuser;
	// the rest is the recipe's.
	hba := "local all postgres trust\nhostssl all postgres 127.0.0.1/32 trust\n"
	for _, l := range recipe.hba {
		f := strings.Fields(l)
		f[3] = "127.0.0.1/32"
		hba += strings.Join(f, " ") + "\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{TLSCert: pki.Cert, TLSKey: pki.Key, HBA: hba})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	password := hex.EncodeToString(func() []byte { b := make([]byte, 16); rand.Read(b); return b }())
	run := func(db string, stmts []string) {
		conn, err := pgx.Connect(ctx, srv.URL(db))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		for _, s := range stmts {
			if _, err := conn.Exec(ctx, strings.ReplaceAll(s, "CHANGE-ME", password)); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	run("postgres", recipe.adminSQL) // creates the database first
	run("wimro", recipe.databaseSQL)

	// The recipe's URL, aimed at this server.
	u := strings.NewReplacer("CHANGE-ME", password, "db.example:5432", "localhost:"+strconv.Itoa(srv.Port()), "/etc/wimro/db-ca.pem", pki.CA).Replace(recipe.url)
	if !strings.Contains(u, "sslmode=verify-full") {
		t.Fatalf("the recipe's URL does not verify the server: %s", recipe.url)
	}
	refused := map[string]string{
		"without TLS":      strings.Replace(u, "sslmode=verify-full", "sslmode=disable", 1),
		"a wrong password": strings.Replace(u, password, "guess", 1),
		"an unknown CA":    strings.Replace(u, pki.CA, tlstest.New(t).CA, 1),
	}
	for what, bad := range refused {
		if conn, err := pgx.Connect(ctx, bad); err == nil {
			conn.Close(context.Background())
			t.Errorf("a connection with %s was accepted", what)
		}
	}

	consul := consultest.Start(t)
	bin := buildWimd(t)
	var procs []*process
	for _, id := range []string{"pg-a", "pg-b"} {
		procs = append(procs, startWimd(t, bin, []string{"WIMRO_DATABASE_URL=" + u, "WIMRO_SECRET_KEY=" + testSecretKey},
			"--data-dir", t.TempDir(), "--instance-id", id, "--coordinator", "consul", "--consul", consul.Addr(),
			"--session-ttl", clusterTTL.String(), "--leader-soak", clusterLeaderSoak.String(), "--assignment-soak", clusterAssignSoak.String()))
	}
	for _, p := range procs {
		waitReadyz(t, p.addr, 200, "")
	}
	eventually.Until(t, time.Minute, "both members see one leader", func() (bool, string) {
		a, okA := clusterOf(procs[0])
		b, okB := clusterOf(procs[1])
		return okA && okB && a.Leader != "" && a.Leader == b.Leader && len(a.Members) == 2, fmt.Sprintf("%+v / %+v", a, b)
	})
	// Every connection of the role is encrypted, from both processes.
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var total, encrypted int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE s.ssl)
		FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.usename = 'wimro'`).Scan(&total, &encrypted); err != nil {
		t.Fatal(err)
	}
	if total < 2 || encrypted != total {
		t.Errorf("connections of wimro: %d, %d of them TLS", total, encrypted)
	}
	for _, p := range procs {
		if strings.Contains(p.log.String(), "local PostgreSQL (cluster_name") {
			t.Errorf("a warning of an embedded database on a real server:\n%s", p.log.String())
		}
	}
}

// A wimd in a Consul cluster given another wimd's local PostgreSQL (its
// port and the password file, as one could share it) warns at start,
// naming the recipe; the wimd that owns it does not, and keeps the port
// across its restart.
func TestEmbeddedDatabaseWarning(t *testing.T) {
	t.Parallel()
	bin := buildWimd(t)
	dir := ownedDataDir(t)
	owner := startWimd(t, bin, []string{"WIMRO_SECRET_KEY=" + testSecretKey}, "--data-dir", dir, "--instance-id", "owner")
	waitReadyz(t, owner.addr, 200, "")
	pgDir := filepath.Join(dir, localDir)
	portOf := func() int {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(pgDir, pglocal.PortFile))
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return port
	}
	port := portOf()
	pw, err := os.ReadFile(filepath.Join(pgDir, pglocal.PasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("postgres://postgres:%s@%s/%s?sslmode=disable", strings.TrimSpace(string(pw)), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), localDatabase)

	consul := consultest.Start(t)
	guest := startWimd(t, bin, []string{"WIMRO_DATABASE_URL=" + url, "WIMRO_SECRET_KEY=" + testSecretKey},
		"--data-dir", t.TempDir(), "--instance-id", "guest", "--coordinator", "consul", "--consul", consul.Addr())
	waitReadyz(t, guest.addr, 200, "")
	warn := regexp.MustCompile(`level=WARN msg="the database is another wimd's local PostgreSQL \(cluster_name wimro-embedded\): .*` +
		regexp.QuoteMeta(`see docs/cluster.md, \"A cluster on a real PostgreSQL\"`))
	if !warn.MatchString(guest.log.String()) {
		t.Errorf("no warning naming the recipe:\n%s", guest.log.String())
	}
	if strings.Contains(owner.log.String(), "another wimd's local PostgreSQL") {
		t.Errorf("the owner warns of its own server:\n%s", owner.log.String())
	}
	// The owner restarted: its server is on the same port, so the URL
	// above still reaches it.
	guest.stop(t, syscall.SIGTERM)
	owner.stop(t, syscall.SIGTERM)
	owner = startWimd(t, bin, []string{"WIMRO_SECRET_KEY=" + testSecretKey}, "--data-dir", dir, "--instance-id", "owner")
	waitReadyz(t, owner.addr, 200, "")
	if got := portOf(); got != port {
		t.Fatalf("the local PostgreSQL moved from port %d to %d across a restart", port, got)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("the URL of the first start no longer connects: %v", err)
	}
	conn.Close(context.Background())
}
