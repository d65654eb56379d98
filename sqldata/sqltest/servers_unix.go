//go:build unix

package sqltest

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// StartTimeout bounds a server's start (MariaDB's system tables are
// created at each start). It is a bound on a hung test, not a figure a
// test asserts.
const StartTimeout = 2 * time.Minute

// Postgres starts a PostgreSQL server for the test and returns a DSN for
// sqldata's "postgres" driver: the superuser postgres, database postgres.
func Postgres(t testing.TB) string {
	t.Helper()
	bin := postgresBin(t)
	dir := privateDir(t, "sluice-pg-")
	data := filepath.Join(dir, "data")
	run(t, exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"))
	start(t, dir, "database system is ready to accept connections",
		exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir,
			"-c", "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off",
			"-c", "max_connections=50"),
		syscall.SIGQUIT) // immediate shutdown: the data is thrown away
	return "host=" + dir + " user=postgres dbname=postgres sslmode=disable"
}

// MariaDB starts a MariaDB server for the test and returns a DSN for
// sqldata's "mysql" driver: root, database sluice.
func MariaDB(t testing.TB) string {
	t.Helper()
	server := need(t, "mariadbd", "mariadb-server", "/usr/sbin/mariadbd")
	install := need(t, "mariadb-install-db", "mariadb-server", "/usr/bin/mariadb-install-db")
	dir := privateDir(t, "sluice-my-")
	data := filepath.Join(dir, "data")
	run(t, exec.Command(install, "--no-defaults", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"))
	initFile := filepath.Join(dir, "init.sql")
	if err := os.WriteFile(initFile, []byte("CREATE DATABASE IF NOT EXISTS sluice;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "mysqld.sock")
	start(t, dir, "ready for connections",
		exec.Command(server, "--no-defaults", "--datadir="+data, "--socket="+sock,
			"--pid-file="+filepath.Join(dir, "mysqld.pid"), "--skip-networking",
			"--skip-name-resolve", "--init-file="+initFile, "--innodb-buffer-pool-size=16M",
			"--innodb-flush-log-at-trx-commit=0", "--skip-log-bin", "--max-connections=50"),
		syscall.SIGTERM)
	return "root@unix(" + sock + ")/sluice"
}

// postgresBin finds the directory of initdb and postgres: on the PATH, or
// Debian's /usr/lib/postgresql/VERSION/bin (the newest).
func postgresBin(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d
		}
	}
	sluicetest.MissingTool(t, "postgres", "postgresql")
	return ""
}

func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// need returns the path of the program name: on the PATH, or at fallback.
func need(t testing.TB, name, pkg, fallback string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback
	}
	sluicetest.MissingTool(t, name, pkg)
	return ""
}

// cred is the unprivileged user the servers run as when the test runs
// as root, or nil.
func cred(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("the tests run as root and there is no user nobody to run the database as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
}

// privateDir makes a temporary directory the server's user owns, removed
// by the test's cleanup. (t.TempDir's parent is not reachable by another
// user.)
func privateDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if c := cred(t); c != nil {
		if err := os.Chown(dir, int(c.Uid), int(c.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// prepare sets cmd to run as the server's user, in its own process group.
func prepare(t testing.TB, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred(t)}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
}

// run runs a setup program to its end.
func run(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	prepare(t, cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

// start starts the server cmd, its output in dir/server.log, and waits
// until the log says ready. The test's cleanup sends it stop, and kills
// its process group if it has not exited StartTimeout later.
func start(t testing.TB, dir, ready string, cmd *exec.Cmd, stop syscall.Signal) {
	t.Helper()
	logName := filepath.Join(dir, "server.log")
	log, err := os.Create(logName)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	prepare(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(stop)
		select {
		case <-exited:
		case <-time.After(StartTimeout):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// A server's children (PostgreSQL's) leave with it; kill any
		// straggler of the group all the same.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	deadline := time.Now().Add(StartTimeout)
	for {
		b, _ := os.ReadFile(logName)
		switch {
		case strings.Contains(string(b), ready):
			return
		case time.Now().After(deadline):
			t.Fatalf("%s did not start within %v:\n%s", filepath.Base(cmd.Path), StartTimeout, b)
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("%s exited: %v\n%s", filepath.Base(cmd.Path), err, b)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
