package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sqldata"
)

// A config's databases are opened with it, reach the template queries
// that name them, and are closed with it; a relative SQLite file name is
// relative to the config file.
func TestDatabases(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "page.html"), []byte(`{{range .DB.all}}[{{.title}}]{{end}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseString(t, dir, `
databases:
  main: {driver: sqlite, dsn: "file:data/site.db?_pragma=busy_timeout(5000)", pool: 3, timeout: 4s}
routes:
  - match: /
    pipeline:
      - template:
          file: page.html
          queries:
            all: {database: main, sql: SELECT title FROM t ORDER BY title}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
	db := cfg.Databases["main"]
	if db == nil {
		t.Fatalf("Databases = %v", cfg.Databases)
	}
	o := db.Options()
	if want := "file:" + filepath.Join(dir, "data", "site.db") + "?_pragma=busy_timeout(5000)"; o.DSN != want || o.Pool != 3 || o.Timeout.String() != "4s" {
		t.Errorf("options %+v, want DSN %s", o, want)
	}
	if _, err := db.SQL().Exec("CREATE TABLE t (title TEXT); INSERT INTO t VALUES ('a<b'), ('c')"); err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	if resp, body := sluicetest.Get(t, "http://"+srv.Addr+"/"); resp.StatusCode != 200 || body != "[a&lt;b][c]" {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
	q, err := db.Query(sqldata.QueryOptions{Name: "x", SQL: "SELECT 1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Close()
	if _, err := q.Run(t.Context()); !errors.Is(err, sqldata.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// A database no route queries is a warning.
func TestDatabaseUnused(t *testing.T) {
	cfg, err := parseString(t, t.TempDir(), `
databases:
  spare: {driver: sqlite, dsn: x.db}
routes: [{match: /, pipeline: [echo]}]
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].String(), "test.yaml:3:3: warning: databases.spare: no route queries it") {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
}

// A sqlite dsn naming a directory, or a file in a directory that does not
// exist, is an error that says so, at the dsn; in-memory databases and
// files to be made in a directory that exists are not.
func TestDatabaseSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dsn, want string }{
		{"data", "test.yaml:2:31: databases.main.dsn: " + filepath.Join(dir, "data") + " is a directory: name the database file (" + filepath.Join(dir, "data", "site.db") + ", say)"},
		{"file:data?_pragma=busy_timeout(5000)", "databases.main.dsn: " + filepath.Join(dir, "data") + " is a directory"},
		{"missing/site.db", "test.yaml:2:31: databases.main.dsn: directory " + filepath.Join(dir, "missing") + " does not exist: create it, or correct the path"},
		{"data/site.db", ""},
		{"new.db", ""},
		{":memory:", ""},
		{"file::memory:?cache=shared", ""},
		{"file:missing/x.db?mode=memory", ""},
	} {
		cfg, err := parseString(t, dir, "databases:\n  main: {driver: sqlite, dsn: \""+c.dsn+"\"}\n"+tlsRoutes)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("dsn %q: %v", c.dsn, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("dsn %q: error %v, want %q", c.dsn, err, c.want)
		}
		if cfg != nil {
			cfg.Close()
		}
	}
}
