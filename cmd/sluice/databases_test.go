package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sqldata"
	"github.com/sluice-server/sluice/sqldata/sqltest"
)

// sluice serves a template filled from each of the databases it links:
// SQLite in a file, and private PostgreSQL and MariaDB servers.
func TestServeDatabases(t *testing.T) {
	for _, c := range []struct {
		driver string
		dsn    func(t *testing.T) string
		ph     string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "site.db") }, "?"},
		{"postgres", func(t *testing.T) string { return sqltest.Postgres(t) }, "$1"},
		{"mysql", func(t *testing.T) string { return sqltest.MariaDB(t) }, "?"},
	} {
		t.Run(c.driver, func(t *testing.T) {
			dsn := c.dsn(t)
			db, err := sqldata.Open("setup", sqldata.Options{Driver: c.driver, DSN: dsn})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, s := range []string{
				"CREATE TABLE articles (id INTEGER PRIMARY KEY, title VARCHAR(100))",
				"INSERT INTO articles VALUES (7, '<script>x()</script>')",
			} {
				if _, err := db.SQL().Exec(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			dir := t.TempDir()
			writeConfig(t, filepath.Join(dir, "page.html"), "<h1>{{.DB.article.title}}</h1>")
			file := filepath.Join(dir, "site.yaml")
			writeConfig(t, file, fmt.Sprintf(`listen: 127.0.0.1:0
databases:
  main: {driver: %s, dsn: %q}
routes:
  - match: /dynamic/article/{id:int}
    pipeline:
      - template:
          file: page.html
          queries:
            article: {database: main, sql: "SELECT title FROM articles WHERE id = %s", one: true, args: [{path: id}]}
`, c.driver, dsn, c.ph))
			if r := sluice(t, "check", "-c", file); r.code != 0 {
				t.Fatalf("check = %d %s", r.code, r.stderr)
			}
			s := start(t, "serve", "-c", file)
			url := "http://" + s.addr + "/dynamic/article/"
			for _, want := range []struct {
				id     string
				status int
				body   string
			}{
				{"7", 200, "<h1>&lt;script&gt;x()&lt;/script&gt;</h1>"},
				{"8", 404, "404 Not Found: not found\n"},
				{"x", 400, ""},
			} {
				code, _, body := get(t, url+want.id)
				if code != want.status || want.body != "" && body != want.body {
					t.Errorf("%s: %d %q, want %d %q", want.id, code, body, want.status, want.body)
				}
			}
		})
	}
}

// sluice check does not connect: a config whose database is down checks.
func TestCheckDatabaseDown(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, filepath.Join(dir, "page.html"), "{{.DB.a}}")
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, `databases:
  main: {driver: postgres, dsn: "host=`+dir+` user=nobody dbname=none"}
routes:
  - match: /
    pipeline:
      - template: {file: page.html, queries: {a: {database: main, sql: SELECT 1}}}
`)
	if r := sluice(t, "check", "-c", file); r.code != 0 || strings.Contains(r.stderr, "error") {
		t.Errorf("check = %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".s.PGSQL.5432")); err == nil {
		t.Fatal("a server is listening")
	}
}

// A reload opens the new config's pools and closes the old config's once
// its requests are done; shutdown closes the rest: PostgreSQL sees the
// old connections go.
func TestReloadClosesPools(t *testing.T) {
	dsn := sqltest.Postgres(t)
	admin, err := sqldata.Open("admin", sqldata.Options{Driver: "postgres", DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	conns := func(app string) int {
		t.Helper()
		var n int
		err := admin.SQL().QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	dir := t.TempDir()
	writeConfig(t, filepath.Join(dir, "page.html"), "{{.DB.gen.g}}")
	file := filepath.Join(dir, "site.yaml")
	config := func(gen string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
databases:
  main: {driver: postgres, dsn: %q}
routes:
  - match: /
    pipeline:
      - template: {file: page.html, queries: {gen: {database: main, sql: "SELECT '%s' AS g", one: true}}}
`, dsn+" application_name="+gen, gen)
	}
	writeConfig(t, file, config("gen1"))
	s := start(t, "serve", "-c", file)
	if _, _, body := get(t, "http://"+s.addr+"/"); body != "gen1" {
		t.Fatalf("body %q", body)
	}
	if n := conns("gen1"); n != 1 {
		t.Fatalf("%d connections of gen1, want 1", n)
	}
	writeConfig(t, file, strings.Replace(config("gen2"), "127.0.0.1:0", s.addr, 1))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	if _, _, body := get(t, "http://"+s.addr+"/"); body != "gen2" {
		t.Fatalf("body after reload %q", body)
	}
	sluicetest.WaitFor(t, "the old pool's connection closed", func() bool { return conns("gen1") == 0 })
	if n := conns("gen2"); n != 1 {
		t.Errorf("%d connections of gen2, want 1", n)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit %d", code)
	}
	sluicetest.WaitFor(t, "the pool's connection closed at shutdown", func() bool { return conns("gen2") == 0 })
}
