package components

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sqldata"
	"github.com/sluice-server/sluice/sqldata/sqltest"
)

// templateDB opens a SQLite data source in a temporary directory with an
// articles table, closed by the test's cleanup.
func templateDB(t *testing.T, opts sqldata.Options) *sqldata.DB {
	t.Helper()
	opts.Driver = "sqlite"
	opts.DSN = filepath.Join(t.TempDir(), "site.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
	db, err := sqldata.Open("main", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, s := range []string{
		"CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT)",
		"INSERT INTO articles VALUES (1, 'First', 'Hello'), (2, '<script>alert(1)</script>', 'x\" onload=\"alert(2)')",
	} {
		if _, err := db.SQL().Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// templateDBServe serves one template file with the queries on db.
func templateDBServe(t *testing.T, db *sqldata.DB, page string, queries map[string]TemplateQuery) (string, *sluicetest.Buffer) {
	t.Helper()
	root := templateFiles(t, map[string]string{"page.html": page})
	tp, lb := templateNew(t, TemplateOptions{
		File:      filepath.Join(root, "page.html"),
		Queries:   queries,
		Databases: map[string]*sqldata.DB{"main": db},
	})
	return "http://" + sluicetest.NewServer(t, pipe.Handler(tp)).Addr, lb
}

func strp(s string) *string { return &s }

// A row read from the database is data: html/template escapes it where
// it lands, so a title holding <script> renders inert.
func TestTemplateQueryEscaping(t *testing.T) {
	db := templateDB(t, sqldata.Options{})
	url, _ := templateDBServe(t, db,
		`<h1>{{.DB.article.title}}</h1><a title="{{.DB.article.body}}">{{.DB.article.id}}</a>`+
			`<ul>{{range .DB.all}}<li>{{.title}}</li>{{end}}</ul>`,
		map[string]TemplateQuery{
			"article": {Database: "main", SQL: "SELECT id, title, body FROM articles WHERE id = ?", One: true,
				Args: []QueryArg{{Query: "id", Int: true}}},
			"all": {Database: "main", SQL: "SELECT title FROM articles ORDER BY id"},
		})
	resp, body := sluicetest.Get(t, url+"/?id=2")
	want := `<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1><a title="x&#34; onload=&#34;alert(2)">2</a>` +
		`<ul><li>First</li><li>&lt;script&gt;alert(1)&lt;/script&gt;</li></ul>`
	if resp.StatusCode != 200 || body != want {
		t.Errorf("got %d %q\nwant %q", resp.StatusCode, body, want)
	}
}

// A path parameter of the route's pattern is a query's argument: the
// router answers 400 for a non-integer {id:int} before the pipeline, the
// query 404 for an id with no row.
func TestTemplateQueryPathParam(t *testing.T) {
	db := templateDB(t, sqldata.Options{})
	root := templateFiles(t, map[string]string{"article.html": `<h1>{{.DB.article.title}}</h1>{{.Param "id"}}`})
	tp, _ := templateNew(t, TemplateOptions{
		File: filepath.Join(root, "article.html"),
		Queries: map[string]TemplateQuery{"article": {Database: "main", One: true,
			SQL: "SELECT title FROM articles WHERE id = ?", Args: []QueryArg{{Path: "id", Int: true}}}},
		Databases: map[string]*sqldata.DB{"main": db},
	})
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/dynamic/article/{id:int}"}, Pipeline: tp})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + sluicetest.NewServer(t, pipe.Handler(rt)).Addr
	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{"/dynamic/article/1", 200, "<h1>First</h1>1"},
		{"/dynamic/article/2", 200, "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>2"},
		{"/dynamic/article/3", 404, "404 Not Found: not found\n"},
		{"/dynamic/article/-0", 404, "404 Not Found: not found\n"},
	} {
		resp, body := sluicetest.Get(t, url+c.path)
		if resp.StatusCode != c.status || body != c.body {
			t.Errorf("%s: got %d %q, want %d %q", c.path, resp.StatusCode, body, c.status, c.body)
		}
	}
	for _, p := range []string{"/dynamic/article/x", "/dynamic/article/1.5", "/dynamic/article/99999999999999999999"} {
		if resp, body := sluicetest.Get(t, url+p); resp.StatusCode != 400 {
			t.Errorf("%s: got %d %q, want 400", p, resp.StatusCode, body)
		}
	}
}

// Arguments are checked before any query runs: 400 for a missing or
// non-integer one, the default when set; no row is 404; the database's
// own error is a 500 whose detail is logged, never sent.
func TestTemplateQueryArgs(t *testing.T) {
	db := templateDB(t, sqldata.Options{})
	url, _ := templateDBServe(t, db, `{{.DB.article.title}}|{{len .DB.search}}`,
		map[string]TemplateQuery{
			"article": {Database: "main", SQL: "SELECT title FROM articles WHERE id = ?", One: true,
				Args: []QueryArg{{Query: "id", Int: true}}},
			"search": {Database: "main", SQL: "SELECT title FROM articles WHERE title LIKE ? AND ? = 'lit'",
				Args: []QueryArg{{Query: "q", Default: strp("%")}, {Value: strp("lit")}}},
		})
	for _, c := range []struct {
		query  string
		status int
		body   string
	}{
		{"?id=1", 200, "First|2"},
		{"?id=1&q=F%25", 200, "First|1"},
		{"?id=x", 400, "400 Bad Request: parameter id: want an integer\n"},
		{"?id=1%20", 400, "400 Bad Request: parameter id: want an integer\n"},
		{"?id=99999999999999999999", 400, "400 Bad Request: parameter id: want an integer\n"},
		{"", 400, "400 Bad Request: missing parameter id\n"},
		{"?id=1&q=" + strings.Repeat("a", MaxQueryArg+1), 400, "400 Bad Request: parameter q is too long\n"},
		{"?id=7", 404, "404 Not Found: not found\n"},
	} {
		resp, body := sluicetest.Get(t, url+"/"+c.query)
		if resp.StatusCode != c.status || body != c.body {
			t.Errorf("%s: got %d %q, want %d %q", c.query, resp.StatusCode, body, c.status, c.body)
		}
	}

	broken, lb2 := templateDBServe(t, db, `{{.DB.x}}`, map[string]TemplateQuery{
		"x": {Database: "main", SQL: "SELECT secret_column FROM secret_table"},
	})
	resp, body := sluicetest.Get(t, broken+"/")
	if resp.StatusCode != 500 || strings.Contains(body, "secret") {
		t.Errorf("broken query: got %d %q, want a 500 that names nothing", resp.StatusCode, body)
	}
	if !strings.Contains(lb2.String(), "secret_table") {
		t.Errorf("the database's error is not logged: %q", lb2.String())
	}
}

// A slow database sheds load: with its slots held and its queue full, the
// next request is answered 503 with Retry-After at once, and the held
// ones complete once the database answers.
func TestTemplateQueryShedding(t *testing.T) {
	gate, open := sqltest.Gate(t)
	db := templateDB(t, sqldata.Options{Pool: 2, MaxConcurrent: 1, Queue: 1, Timeout: time.Hour, RetryAfter: 3 * time.Second})
	url, _ := templateDBServe(t, db, `ok={{.DB.held.ok}}`, map[string]TemplateQuery{
		"held": {Database: "main", SQL: "SELECT sluice_gate(?) AS ok", One: true, Args: []QueryArg{{Value: &gate}}},
	})
	var wg sync.WaitGroup
	results := make(chan string, 2)
	for range 2 { // one runs, one waits
		wg.Go(func() {
			resp, body := sluicetest.Get(t, url+"/")
			results <- http.StatusText(resp.StatusCode) + " " + body
		})
	}
	sluicetest.WaitFor(t, "one query running and one waiting", func() bool {
		st := db.Stats()
		return st.Running == 1 && st.Waiting == 1
	})
	resp, body := sluicetest.Get(t, url+"/")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("beyond the queue: got %d Retry-After %q %q, want 503 with Retry-After 3", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	open()
	wg.Wait()
	close(results)
	for r := range results {
		if r != "OK ok=1" {
			t.Errorf("held request: %q, want OK ok=1", r)
		}
	}
}

// A query past its timeout is a 504, logged.
func TestTemplateQueryTimeout(t *testing.T) {
	db := templateDB(t, sqldata.Options{Timeout: 20 * time.Millisecond})
	url, lb := templateDBServe(t, db, `{{.DB.forever}}`, map[string]TemplateQuery{
		"forever": {Database: "main", SQL: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c"},
	})
	resp, _ := sluicetest.Get(t, url+"/")
	if resp.StatusCode != 504 {
		t.Errorf("got %d, want 504", resp.StatusCode)
	}
	if !strings.Contains(lb.String(), "timed out") {
		t.Errorf("log: %q", lb.String())
	}
}

// A cached query does not reach the database again within its TTL.
func TestTemplateQueryCache(t *testing.T) {
	db := templateDB(t, sqldata.Options{})
	url, _ := templateDBServe(t, db, `{{.DB.a.title}}`, map[string]TemplateQuery{
		"a": {Database: "main", SQL: "SELECT title FROM articles WHERE id = ?", One: true, Cache: time.Hour,
			Args: []QueryArg{{Query: "id", Int: true}}},
	})
	if _, body := sluicetest.Get(t, url+"/?id=1"); body != "First" {
		t.Fatalf("first: %q", body)
	}
	if _, err := db.SQL().ExecContext(context.Background(), "UPDATE articles SET title = 'Changed'"); err != nil {
		t.Fatal(err)
	}
	if _, body := sluicetest.Get(t, url+"/?id=1"); body != "First" {
		t.Errorf("second request: %q, want the cached First", body)
	}
	if _, body := sluicetest.Get(t, url+"/?id=2"); body != "Changed" {
		t.Errorf("other arguments: %q, want Changed from the database", body)
	}
}

func TestTemplateQueryOptionsErrors(t *testing.T) {
	db := templateDB(t, sqldata.Options{})
	root := templateFiles(t, map[string]string{"p.html": "x"})
	for _, c := range []struct {
		q    TemplateQuery
		name string
		want string
	}{
		{TemplateQuery{Database: "other", SQL: "SELECT 1"}, "a", `query a: no database "other"`},
		{TemplateQuery{SQL: "SELECT 1"}, "a", "query a: database is not set"},
		{TemplateQuery{Database: "main"}, "a", "sql is empty"},
		{TemplateQuery{Database: "main", SQL: "SELECT 1"}, "Bad-Name", `query "Bad-Name": a name is`},
		{TemplateQuery{Database: "main", SQL: "SELECT ?", Args: []QueryArg{{}}}, "a", "args[0]: set one of path, query and value"},
		{TemplateQuery{Database: "main", SQL: "SELECT ?", Args: []QueryArg{{Query: "a", Value: strp("b")}}}, "a", "args[0]: set one of"},
		{TemplateQuery{Database: "main", SQL: "SELECT ?", Args: []QueryArg{{Value: strp("b"), Int: true}}}, "a", `value "b" is not an integer`},
		{TemplateQuery{Database: "main", SQL: "SELECT ?", Args: []QueryArg{{Value: strp("b"), Default: strp("1")}}}, "a", "default is for a query argument"},
	} {
		_, err := NewTemplate(TemplateOptions{File: filepath.Join(root, "p.html"),
			Queries: map[string]TemplateQuery{c.name: c.q}, Databases: map[string]*sqldata.DB{"main": db}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.q, err, c.want)
		}
	}
}
