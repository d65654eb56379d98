package mixsite_test

import (
	"database/sql"
	"html/template"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/bench/mixsite"
)

// The site has its pages at their sizes, templates that parse, and the
// articles table with its rows, found by the dynamic route's query.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := mixsite.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range mixsite.Pages {
		fi, err := os.Stat(filepath.Join(dir, "static", name+".html"))
		if err != nil || fi.Size() != mixsite.StaticSize {
			t.Errorf("static/%s.html: %v, want %d bytes", name, err, mixsite.StaticSize)
		}
		if _, err := template.ParseFiles(filepath.Join(dir, "templates", name+".html")); err != nil {
			t.Error(err)
		}
	}
	if _, err := template.ParseFiles(filepath.Join(dir, "article.html")); err != nil {
		t.Error(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, mixsite.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM articles").Scan(&n); err != nil || n != mixsite.Articles {
		t.Fatalf("count: %d, %v; want %d", n, err, mixsite.Articles)
	}
	var id int
	var title, text string
	if err := db.QueryRow(mixsite.ArticleQuery, 4711).Scan(&id, &title, &text); err != nil {
		t.Fatal(err)
	}
	if wt, wx := mixsite.Row(4711); id != 4711 || title != wt || text != wx || len(text) > 128 || len(title) > 128 {
		t.Errorf("row 4711: %d %q %q; want %q %q, each at most 128 bytes (the seed's VARCHAR(128))", id, title, text, wt, wx)
	}
}
