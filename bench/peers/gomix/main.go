// Command gomix-peer serves the C10K seed's mix (package mixsite) the way
// a Go developer would write it with the standard library alone:
// net/http's ServeMux and FileServer, html/template, and database/sql
// with a bounded pool and a per-query timeout. It is the benchmark
// harness's peer for the template and database pages.
//
//	/, /static/NAME.html  SITE/index.html, files under SITE/static
//	/template/NAME        SITE/templates/NAME.html, parsed at start, rendered with the request
//	/dynamic/article/ID   SITE/article.html filled from the articles row ID (400 if ID is
//	                      not a number, 404 if there is no such row, 500 on a database error)
package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"html/template"
	"log"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/sluice-server/sluice/bench/mixsite"
)

// page is what a /template/ page renders: the fields and methods of
// Sluice's template data, so that both servers render the same files.
type page struct {
	Method, Path, Host, RemoteAddr string
	Query                          url.Values
	Now                            time.Time
	r                              *http.Request
}

// Header returns the request header field name.
func (p *page) Header(name string) string { return p.r.Header.Get(name) }

// article is one row of the articles table.
type article struct {
	ID          int
	Title, Text string
}

type server struct {
	pages   *template.Template
	article *template.Template
	stmt    *sql.Stmt
	timeout time.Duration
	bufs    sync.Pool
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "listen address")
	site := flag.String("site", ".", "the site's directory (mixsite)")
	driver := flag.String("driver", "sqlite", "database/sql driver: sqlite or pgx")
	dsn := flag.String("dsn", "", "data source name; default: SITE/"+mixsite.DBFile+", read-only")
	pool := flag.Int("pool", 16, "most database connections open at once")
	timeout := flag.Duration("query-timeout", 5*time.Second, "bound on a query")
	flag.Parse()

	h, err := newHandler(*site, *driver, *dsn, *pool, *timeout)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{
		Addr:              *listen,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	log.Fatal(srv.ListenAndServe())
}

// newHandler opens the database and parses the templates of the site in
// dir, and returns the routes.
func newHandler(dir, driver, dsn string, pool int, timeout time.Duration) (http.Handler, error) {
	if dsn == "" {
		dsn = "file:" + filepath.Join(dir, mixsite.DBFile) + "?mode=ro"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	db.SetConnMaxIdleTime(5 * time.Minute)
	stmt, err := db.Prepare(mixsite.ArticleQuery)
	if err != nil {
		return nil, err
	}
	pages, err := template.ParseGlob(filepath.Join(dir, "templates", "*.html"))
	if err != nil {
		return nil, err
	}
	art, err := template.ParseFiles(filepath.Join(dir, "article.html"))
	if err != nil {
		return nil, err
	}
	s := &server{pages: pages, article: art, stmt: stmt, timeout: timeout,
		bufs: sync.Pool{New: func() any { return new(bytes.Buffer) }}}

	files := http.FileServer(http.Dir(dir))
	mux := http.NewServeMux()
	mux.Handle("GET /static/", files)
	mux.Handle("GET /{$}", files) // index.html
	mux.HandleFunc("GET /template/{name}", s.template)
	mux.HandleFunc("GET /dynamic/article/{id}", s.dynamic)
	return mux, nil
}

func (s *server) template(w http.ResponseWriter, r *http.Request) {
	t := s.pages.Lookup(r.PathValue("name") + ".html")
	if t == nil {
		http.NotFound(w, r)
		return
	}
	s.render(w, t, &page{Method: r.Method, Path: r.URL.Path, Host: r.Host, RemoteAddr: r.RemoteAddr,
		Query: r.URL.Query(), Now: time.Now(), r: r})
}

func (s *server) dynamic(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 1 {
		http.Error(w, "bad article id", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.timeout)
	defer cancel()
	var a article
	err = s.stmt.QueryRowContext(ctx, id).Scan(&a.ID, &a.Title, &a.Text)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		http.NotFound(w, r)
		return
	case err != nil:
		log.Printf("article %d: %v", id, err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s.render(w, s.article, &a)
}

// render executes t into a buffer first, so that a failing template
// answers a clean 500 and a page goes out with its Content-Length.
func (s *server) render(w http.ResponseWriter, t *template.Template, data any) {
	b := s.bufs.Get().(*bytes.Buffer)
	defer s.bufs.Put(b)
	b.Reset()
	if err := t.Execute(b, data); err != nil {
		log.Printf("%s: %v", t.Name(), err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.Write(b.Bytes())
}
