// Package pgtest starts a real PostgreSQL server for tests, from the
// system's packages (Debian: apt-get install postgresql): initdb into a
// temporary directory, a postmaster on loopback and on a Unix socket in
// that directory, password (SCRAM) authentication for every role, torn
// down when the test ends. PostgreSQL refuses to run as root, so when the
// tests run as root (as CI does) the server runs as the system's postgres
// user, which Debian's package creates. A missing server fails the test
// with what to install: tests never skip for it.
//
// Only tests import it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Server is one running PostgreSQL cluster.
type Server struct {
	t        testing.TB
	bin      string // the directory of initdb, pg_ctl, postgres
	Dir      string // the cluster's directory (data, socket, log)
	Port     int
	password string // the superuser's
	runAs    *user.User
	// TLS, when the cluster was started with StartTLS: the server then
	// takes TLS, and the roles named in CertRoles log in with a client
	// certificate instead of a password.
	TLS *TLS
}

// Superuser is the name of the cluster's superuser.
const Superuser = "toolgate_admin"

// bindir finds the server's programs: Debian keeps them in
// /usr/lib/postgresql/VERSION/bin, off PATH; the newest wins.
func bindir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("these tests need a PostgreSQL server (initdb, pg_ctl, postgres) and none is installed: " +
		"apt-get install postgresql (Debian), or put its bin directory on PATH")
}

// Start starts a new cluster for t and stops it when t ends.
func Start(t testing.TB) *Server { return start(t, false, nil) }

// StartTLS starts a cluster that also takes TLS connections, with a test
// CA; certRoles log in over TLS with a certificate the CA issued them
// (TLS.Issue), and no password.
func StartTLS(t testing.TB, certRoles ...string) *Server { return start(t, true, certRoles) }

func start(t testing.TB, withTLS bool, certRoles []string) *Server {
	t.Helper()
	bin, err := bindir()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, password: randomHex(16)}
	if os.Getuid() == 0 {
		if s.runAs, err = user.Lookup("postgres"); err != nil {
			t.Fatalf("PostgreSQL refuses to run as root and there is no postgres user to run it as (%v): apt-get install postgresql creates one", err)
		}
	}
	// Not t.TempDir: its parent is private to root, and the server's user
	// must reach the cluster's directory.
	if s.Dir, err = os.MkdirTemp("", "toolgate-pg-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.Dir) })
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pwfile := filepath.Join(s.Dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.chown(s.Dir, pwfile)
	data := filepath.Join(s.Dir, "data")
	s.run("initdb", "-D", data, "-U", Superuser, "--pwfile", pwfile, "-A", "scram-sha-256", "-E", "UTF8", "--locale", "C.UTF-8", "--no-instructions")
	os.Remove(pwfile)
	if withTLS {
		s.setupTLS(data, certRoles)
	}
	if s.Port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(s.Dir, "data", "postmaster.pid")); err == nil {
			s.ctl("stop", "-m", "immediate")
		}
	})
	return s
}

// setupTLS gives the cluster a CA, a server certificate and, first in
// pg_hba.conf, certificate logins for certRoles over TLS.
func (s *Server) setupTLS(data string, certRoles []string) {
	dir := filepath.Join(s.Dir, "tls")
	if err := os.Mkdir(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	s.TLS = newTLS(s.t, dir)
	s.chown(s.TLS.Key, s.TLS.Cert, s.TLS.CA)
	hba := filepath.Join(data, "pg_hba.conf")
	old, err := os.ReadFile(hba)
	if err != nil {
		s.t.Fatal(err)
	}
	lines := ""
	for _, r := range certRoles {
		lines += "hostssl all " + r + " 127.0.0.1/32 cert\n"
	}
	if err := os.WriteFile(hba, append([]byte(lines), old...), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.chown(hba)
}

// Start starts the (stopped) server and returns once it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c max_connections=200", s.Port, s.Dir)
	if s.TLS != nil {
		opts += fmt.Sprintf(" -c ssl=on -c ssl_cert_file=%s -c ssl_key_file=%s -c ssl_ca_file=%s", s.TLS.Cert, s.TLS.Key, s.TLS.CA)
	}
	s.ctl("start", "-w", "-t", "60", "-l", filepath.Join(s.Dir, "log"), "-o", opts)
}

// Stop stops the server (fast shutdown: sessions are ended).
func (s *Server) Stop() {
	s.t.Helper()
	s.ctl("stop", "-w", "-m", "fast")
}

func (s *Server) ctl(args ...string) {
	s.t.Helper()
	s.run("pg_ctl", append([]string{"-D", filepath.Join(s.Dir, "data")}, args...)...)
}

// run runs one of the server's programs as the server's user.
func (s *Server) run(prog string, args ...string) {
	s.t.Helper()
	argv := append([]string{filepath.Join(s.bin, prog)}, args...)
	if s.runAs != nil {
		argv = append([]string{"setpriv", "--reuid", s.runAs.Uid, "--regid", s.runAs.Gid, "--init-groups", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
		s.t.Fatalf("%s %s: %v\n%s\nserver log:\n%s", prog, strings.Join(args, " "), err, out, log)
	}
}

func (s *Server) chown(paths ...string) {
	if s.runAs == nil {
		return
	}
	uid, _ := strconv.Atoi(s.runAs.Uid)
	gid, _ := strconv.Atoi(s.runAs.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			s.t.Fatal(err)
		}
	}
}

// DSN is a connection string for role with password to database db, over
// loopback TCP (so the server sees a client address).
func (s *Server) DSN(db, role, password string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role, password), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// NewDatabase creates a fresh database and returns its name.
func (s *Server) NewDatabase(ctx context.Context) string {
	s.t.Helper()
	name := "t_" + randomHex(6)
	s.Exec(ctx, "postgres", "CREATE DATABASE "+name)
	return name
}

// Password is a fresh random password for a test's role.
func Password() string { return randomHex(12) }

// SuperDSN is the superuser's DSN to database db.
func (s *Server) SuperDSN(db string) string { return s.DSN(db, Superuser, s.password) }

// Exec runs SQL as the superuser in database db.
func (s *Server) Exec(ctx context.Context, db, sql string, args ...any) {
	s.t.Helper()
	conn, err := pgx.Connect(ctx, s.SuperDSN(db))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		s.t.Fatalf("%s: %v", sql, err)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
