package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx", to fill the database

	"github.com/sluice-server/sluice/bench/mixsite"
)

// postgres is a private PostgreSQL server for the slow-database
// scenario: Debian's postgresql package, a fresh cluster in a scratch
// directory, listening on a unix socket there only, pinned to the
// servers' CPU (its queries sleep; they do not compute).
type postgres struct {
	dir     string
	dsn     string // for pgx and for Sluice's postgres data sources
	version string
	cmd     *exec.Cmd
	done    chan struct{}
}

// startPostgres initialises a cluster in dir and starts it, as user
// nobody when the harness runs as root (PostgreSQL refuses to run as
// root). It waits at most a minute for the server to accept
// connections.
func startPostgres(ctx context.Context, dir, cpus string) (*postgres, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cred, err := unprivileged("PostgreSQL")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	prepare := func(cmd *exec.Cmd) *exec.Cmd {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		return cmd
	}
	data := filepath.Join(dir, "data")
	initdb := prepare(exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"))
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, lastLines(string(out), 3))
	}
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	pg := &postgres{dir: dir, done: make(chan struct{}),
		dsn: "host=" + dir + " user=postgres dbname=postgres sslmode=disable"}
	pg.cmd = prepare(exec.Command("taskset", "-c", cpus, filepath.Join(bin, "postgres"), "-D", data, "-k", dir,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=200"))
	pg.cmd.Stdout, pg.cmd.Stderr = logf, logf
	if err := pg.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { pg.cmd.Wait(); close(pg.done) }()
	deadline := time.Now().Add(time.Minute)
	for {
		db, err := sql.Open("pgx", pg.dsn)
		if err == nil {
			err = db.QueryRowContext(ctx, "SELECT version()").Scan(&pg.version)
			db.Close()
		}
		if err == nil {
			pg.version, _, _ = strings.Cut(pg.version, " on ")
			return pg, nil
		}
		select {
		case <-pg.done:
			return nil, fmt.Errorf("postgres exited: %s", pg.logTail())
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			pg.stop()
			return nil, fmt.Errorf("postgres did not accept connections within a minute (%v): %s", err, pg.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fillSlow creates the articles of mixsite in a table of their own and,
// as articles, a view of it that sleeps delay in every query that reads
// it: the servers run the mix's query unchanged, and the database is
// slow.
func (pg *postgres) fillSlow(delay time.Duration) error {
	db, err := sql.Open("pgx", pg.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := mixsite.Fill(db, "$1"); err != nil {
		return err
	}
	for _, q := range []string{
		"ALTER TABLE articles RENAME TO article_rows",
		fmt.Sprintf("CREATE VIEW articles AS SELECT r.* FROM article_rows r CROSS JOIN pg_sleep(%g)", delay.Seconds()),
		"ANALYZE article_rows",
	} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	// The delay is the database's: check that a query takes it.
	t0 := time.Now()
	var id int
	var title, text string
	if err := db.QueryRow(mixsite.ArticleQuery, 42).Scan(&id, &title, &text); err != nil {
		return err
	}
	if took := time.Since(t0); took < delay {
		return fmt.Errorf("a query through the slow view took %v, less than its %v", took, delay)
	}
	return nil
}

// stop ends the server at once (its data is thrown away) and waits for it.
func (pg *postgres) stop() {
	if pg == nil || pg.cmd == nil {
		return
	}
	syscall.Kill(-pg.cmd.Process.Pid, syscall.SIGQUIT)
	select {
	case <-pg.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-pg.cmd.Process.Pid, syscall.SIGKILL)
		<-pg.done
	}
}

func (pg *postgres) logTail() string {
	data, _ := os.ReadFile(filepath.Join(pg.dir, "postgres.log"))
	return lastLines(string(data), 3)
}

// postgresBin finds the directory of initdb and postgres: Debian's
// /usr/lib/postgresql/VERSION/bin (the newest), or initdb's on the PATH.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL is not installed (Debian package postgresql)")
}

// unprivileged returns the credential of user nobody when running as
// root, else nil (run as oneself): what the database servers the
// scenarios start (what names one, in errors) run as, since they refuse
// root.
func unprivileged(what string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root and no user nobody to run %s as: %w", what, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}
