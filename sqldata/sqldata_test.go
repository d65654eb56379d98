package sqldata_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sqldata"
	"github.com/sluice-server/sluice/sqldata/sqltest"
)

// server is a database the suite runs against, and how to hold its
// queries.
type server struct {
	driver, dsn string
	// ph returns the placeholder of the i'th argument (1-based).
	ph func(i int) string
	// hold makes blockSQL block until the returned function is called.
	hold     func(t *testing.T, d *sqldata.DB) (blockSQL string, release func())
	endless  string // a query that runs until cancelled
	idColumn string // the type of an integer key column
}

func sqliteServer(t *testing.T) server {
	return server{
		driver: "sqlite",
		dsn:    filepath.Join(t.TempDir(), "test.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)",
		ph:     func(int) string { return "?" },
		hold: func(t *testing.T, _ *sqldata.DB) (string, func()) {
			name, open := sqltest.Gate(t)
			return fmt.Sprintf("SELECT sluice_gate('%s') AS ok", name), open
		},
		endless:  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c",
		idColumn: "INTEGER",
	}
}

// holdTable holds queries on the table blocked by locking it on a
// connection of its own; lock and unlock are the statements.
func holdTable(lock []string, unlock string, blockSQL string) func(t *testing.T, d *sqldata.DB) (string, func()) {
	return func(t *testing.T, d *sqldata.DB) (string, func()) {
		ctx := context.Background()
		if _, err := d.SQL().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS blocker (x INTEGER)"); err != nil {
			t.Fatal(err)
		}
		conn, err := d.SQL().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range lock {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		var once sync.Once
		release := func() {
			once.Do(func() {
				if _, err := conn.ExecContext(ctx, unlock); err != nil {
					t.Errorf("%s: %v", unlock, err)
				}
				conn.Close()
			})
		}
		t.Cleanup(release)
		return blockSQL, release
	}
}

func TestSQLite(t *testing.T) { suite(t, sqliteServer(t)) }

func TestPostgres(t *testing.T) {
	suite(t, server{
		driver: "postgres",
		dsn:    sqltest.Postgres(t),
		ph:     func(i int) string { return fmt.Sprintf("$%d", i) },
		hold: holdTable([]string{"BEGIN", "LOCK TABLE blocker IN ACCESS EXCLUSIVE MODE"}, "COMMIT",
			"SELECT count(*) AS ok FROM blocker"),
		endless:  "SELECT pg_sleep(3600)",
		idColumn: "BIGINT",
	})
}

func TestMariaDB(t *testing.T) {
	suite(t, server{
		driver: "mysql",
		dsn:    sqltest.MariaDB(t),
		ph:     func(int) string { return "?" },
		hold: holdTable([]string{"LOCK TABLES blocker WRITE"}, "UNLOCK TABLES",
			"SELECT count(*) AS ok FROM blocker"),
		endless:  "SELECT SLEEP(3600)",
		idColumn: "BIGINT",
	})
}

// open opens a data source on s, closed by the test's cleanup.
func open(t *testing.T, s server, opts sqldata.Options) *sqldata.DB {
	t.Helper()
	opts.Driver, opts.DSN = s.driver, s.dsn
	d, err := sqldata.Open("test", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func query(t *testing.T, d *sqldata.DB, o sqldata.QueryOptions) *sqldata.Query {
	t.Helper()
	if o.Name == "" {
		o.Name = "q"
	}
	q, err := d.Query(o)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func suite(t *testing.T, s server) {
	ctx := context.Background()
	setup := open(t, s, sqldata.Options{})
	for _, stmt := range []string{
		"DROP TABLE IF EXISTS articles",
		"CREATE TABLE articles (id " + s.idColumn + " PRIMARY KEY, title VARCHAR(200) NOT NULL, body TEXT, score REAL)",
		"INSERT INTO articles VALUES (1, 'First', 'Hello', 1.5), (2, '<script>alert(1)</script>', NULL, 2)",
	} {
		if _, err := setup.SQL().ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	byID := "SELECT id, title, body FROM articles WHERE id = " + s.ph(1)

	t.Run("one row", func(t *testing.T) {
		q := query(t, setup, sqldata.QueryOptions{SQL: byID, One: true})
		res, err := q.Run(ctx, int64(2))
		if err != nil {
			t.Fatal(err)
		}
		if res.Row["title"] != "<script>alert(1)</script>" || res.Row["body"] != nil || fmt.Sprint(res.Row["id"]) != "2" {
			t.Errorf("row = %#v", res.Row)
		}
		if _, ok := res.Row["title"].(string); !ok {
			t.Errorf("title is a %T, want a string", res.Row["title"])
		}
		_, err = q.Run(ctx, int64(99))
		if !errors.Is(err, sqldata.ErrNoRows) {
			t.Errorf("no row: err = %v, want ErrNoRows", err)
		}
	})

	t.Run("many rows", func(t *testing.T) {
		q := query(t, setup, sqldata.QueryOptions{SQL: "SELECT id, title FROM articles ORDER BY id"})
		res, err := q.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 2 || res.Rows[0]["title"] != "First" || res.Rows[1]["title"] != "<script>alert(1)</script>" {
			t.Errorf("rows = %#v", res.Rows)
		}
	})

	t.Run("bad sql", func(t *testing.T) {
		q := query(t, setup, sqldata.QueryOptions{SQL: "SELECT nothing FROM nowhere"})
		_, err := q.Run(ctx)
		if err == nil || errors.Is(err, sqldata.ErrBusy) || errors.Is(err, sqldata.ErrTimeout) || errors.Is(err, sqldata.ErrNoRows) {
			t.Errorf("err = %v, want the database's error", err)
		}
	})

	t.Run("cache", func(t *testing.T) {
		cached := query(t, setup, sqldata.QueryOptions{SQL: byID, One: true, Cache: time.Hour})
		stale := query(t, setup, sqldata.QueryOptions{SQL: byID, One: true, Cache: time.Nanosecond})
		for _, q := range []*sqldata.Query{cached, stale} {
			if res, err := q.Run(ctx, int64(1)); err != nil || res.Row["title"] != "First" {
				t.Fatalf("first run: %v, %v", res, err)
			}
		}
		if _, err := setup.SQL().ExecContext(ctx, "UPDATE articles SET title = 'Changed' WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { setup.SQL().ExecContext(ctx, "UPDATE articles SET title = 'First' WHERE id = 1") })
		// The cached query does not reach the database: it still has the
		// old title. The one whose entries expire at once does.
		if res, err := cached.Run(ctx, int64(1)); err != nil || res.Row["title"] != "First" {
			t.Errorf("cached run: %v, %v; want the cached title First", res.Row, err)
		}
		if res, err := stale.Run(ctx, int64(1)); err != nil || res.Row["title"] != "Changed" {
			t.Errorf("expired run: %v, %v; want the new title Changed", res.Row, err)
		}
		// Other arguments are another entry; no row is cached as such.
		if res, err := cached.Run(ctx, int64(2)); err != nil || res.Row["title"] != "<script>alert(1)</script>" {
			t.Errorf("run for 2: %v, %v", res.Row, err)
		}
		if _, err := cached.Run(ctx, int64(3)); !errors.Is(err, sqldata.ErrNoRows) {
			t.Errorf("run for 3: %v, want ErrNoRows", err)
		}
		if _, err := setup.SQL().ExecContext(ctx, "INSERT INTO articles VALUES (3, 'Third', '', 0)"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { setup.SQL().ExecContext(ctx, "DELETE FROM articles WHERE id = 3") })
		if _, err := cached.Run(ctx, int64(3)); !errors.Is(err, sqldata.ErrNoRows) {
			t.Errorf("run for 3 after insert: %v, want the cached ErrNoRows", err)
		}
	})

	t.Run("shedding", func(t *testing.T) {
		d := open(t, s, sqldata.Options{Pool: 4, MaxConcurrent: 2, Queue: 1, Timeout: time.Hour})
		blockSQL, release := s.hold(t, d)
		q := query(t, d, sqldata.QueryOptions{SQL: blockSQL, One: true})
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for range 3 { // two run, one waits
			wg.Go(func() {
				_, err := q.Run(ctx)
				errs <- err
			})
		}
		sluicetest.WaitFor(t, "two queries running and one waiting", func() bool {
			st := d.Stats()
			return st.Running == 2 && st.Waiting == 1
		})
		// The queue is full: the next fails at once, though its timeout
		// is an hour away.
		if _, err := q.Run(ctx); !errors.Is(err, sqldata.ErrBusy) {
			t.Errorf("beyond the queue: err = %v, want ErrBusy", err)
		}
		// A waiter whose deadline passes in the queue gives up: busy too.
		short, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		<-short.Done()
		if _, err := q.Run(short); !errors.Is(err, sqldata.ErrBusy) {
			t.Errorf("deadline passed: err = %v, want ErrBusy", err)
		}
		if st := d.Stats(); st.Rejected != 2 {
			t.Errorf("Rejected = %d, want 2", st.Rejected)
		}
		release()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("held query: %v", err)
			}
		}
		if d.RetryAfter() != 1 {
			t.Errorf("RetryAfter = %d, want the default 1", d.RetryAfter())
		}
	})

	t.Run("one fetch per key", func(t *testing.T) {
		// No queue: a second query reaching the database would be shed.
		d := open(t, s, sqldata.Options{Pool: 2, MaxConcurrent: 1, Queue: -1, Timeout: time.Hour})
		blockSQL, release := s.hold(t, d)
		q := query(t, d, sqldata.QueryOptions{SQL: blockSQL, One: true, Cache: time.Hour})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		run := func() {
			wg.Go(func() {
				_, err := q.Run(ctx)
				errs <- err
			})
		}
		run()
		sluicetest.WaitFor(t, "the first query running", func() bool { return d.Stats().Running == 1 })
		for range 3 {
			run()
		}
		sluicetest.WaitFor(t, "three queries joining the first", func() bool { return d.Stats().Joining == 3 })
		release()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("run: %v", err)
			}
		}
		if st := d.Stats(); st.Rejected != 0 || st.Joining != 0 {
			t.Errorf("stats %+v", st)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		d := open(t, s, sqldata.Options{Timeout: 50 * time.Millisecond})
		q := query(t, d, sqldata.QueryOptions{SQL: s.endless})
		_, err := q.Run(ctx)
		if !errors.Is(err, sqldata.ErrTimeout) {
			t.Errorf("err = %v, want ErrTimeout", err)
		}
		if d.Stats().TimedOut != 1 {
			t.Errorf("TimedOut = %d, want 1", d.Stats().TimedOut)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		d := open(t, s, sqldata.Options{Pool: 4, Queue: 1000})
		cached := query(t, d, sqldata.QueryOptions{SQL: byID, One: true, Cache: time.Hour, CacheSize: 1})
		plain := query(t, d, sqldata.QueryOptions{SQL: byID, One: true})
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				for j := range 10 {
					q := plain
					if j%2 == 0 {
						q = cached
					}
					id := int64(1 + (i+j)%2)
					res, err := q.Run(ctx, id)
					if err != nil {
						t.Errorf("run: %v", err)
						return
					}
					if fmt.Sprint(res.Row["id"]) != fmt.Sprint(id) {
						t.Errorf("run for %d: row %v", id, res.Row)
						return
					}
				}
			})
		}
		wg.Wait()
	})

	t.Run("closed", func(t *testing.T) {
		d := open(t, s, sqldata.Options{})
		q := query(t, d, sqldata.QueryOptions{SQL: byID, One: true})
		cached := query(t, d, sqldata.QueryOptions{SQL: byID, One: true, Cache: time.Hour})
		if _, err := cached.Run(ctx, int64(1)); err != nil {
			t.Fatal(err)
		}
		d.Close()
		for _, q := range []*sqldata.Query{q, cached} {
			if _, err := q.Run(ctx, int64(1)); !errors.Is(err, sqldata.ErrClosed) {
				t.Errorf("err = %v, want ErrClosed", err)
			}
		}
	})
}

func TestOpenErrors(t *testing.T) {
	for _, c := range []struct {
		opts sqldata.Options
		want string
	}{
		{sqldata.Options{Driver: "oracle", DSN: "x"}, `driver "oracle" is not one of [mysql postgres sqlite]`},
		{sqldata.Options{Driver: "postgresql", DSN: "x"}, `driver "postgresql" is not one of [mysql postgres sqlite]: write driver: postgres`},
		{sqldata.Options{Driver: "sqlite3", DSN: "x"}, `: write driver: sqlite`},
		{sqldata.Options{Driver: "MariaDB", DSN: "x"}, `: write driver: mysql`},
		{sqldata.Options{Driver: "mysql", DSN: "mysql://u:p@localhost/db"}, `database main: dsn: default addr for network 'localhost' unknown: a mysql dsn is user:password@tcp(HOST:PORT)/DBNAME or user:password@unix(/run/mysqld/mysqld.sock)/DBNAME, not a URL`},
		{sqldata.Options{Driver: "mysql", DSN: "u:p@localhost:3306/db"}, `a mysql dsn is user:password@tcp(HOST:PORT)/DBNAME`},
		{sqldata.Options{Driver: "sqlite"}, "dsn is empty"},
		{sqldata.Options{Driver: "sqlite", DSN: "x", Pool: -1}, "pool must be positive"},
	} {
		_, err := sqldata.Open("main", c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%+v) = %v, want %q", c.opts, err, c.want)
		}
	}
}

// A query against a database that cannot be reached, or an SQLite file
// that cannot be opened, fails with an error that says what to do, and
// Ping's says the same; errors.Is still finds the cause.
func TestQueryErrorFix(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // nothing listens: connections are refused
	dir := t.TempDir()
	for _, c := range []struct {
		opts sqldata.Options
		want string
	}{
		{sqldata.Options{Driver: "postgres", DSN: "host=" + host + " port=" + port + " user=x dbname=y sslmode=disable"},
			"(nothing listens at that address: start the database server, or correct the host and port in the database's dsn)"},
		{sqldata.Options{Driver: "mysql", DSN: "x:y@tcp(" + host + ":" + port + ")/z"},
			"(nothing listens at that address: start the database server"},
		{sqldata.Options{Driver: "postgres", DSN: "host=" + filepath.Join(dir, "nosocket") + " user=x dbname=y"},
			"(no socket at that path: start the database server, or correct the path in the database's dsn)"},
		{sqldata.Options{Driver: "sqlite", DSN: dir},
			"(SQLite cannot open the file the dsn names: its directory must exist, and this process's user must be able to read the file"},
	} {
		db, err := sqldata.Open("main", c.opts)
		if err != nil {
			t.Fatal(err)
		}
		q, err := db.Query(sqldata.QueryOptions{Name: "q", SQL: "SELECT 1"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = q.Run(t.Context())
		if err == nil || !strings.HasPrefix(err.Error(), "database main: query q: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v\nwant %s", c.opts.Driver, c.opts.DSN, err, c.want)
		}
		if c.opts.Driver != "sqlite" && !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%s %s: errors.Is finds no ECONNREFUSED nor ENOENT in %v", c.opts.Driver, c.opts.DSN, err)
		}
		if err := db.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Ping %s %s: %v\nwant %s", c.opts.Driver, c.opts.DSN, err, c.want)
		}
		db.Close()
	}
}
