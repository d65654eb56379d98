// Package mixsite writes the site of the benchmark harness's mix
// scenarios, the C10K seed's: a corporate site whose pages are flat
// files, templates parsed against the request, and templates filled from
// a database.
//
//	/                      index.html, a small page linking the others
//	/static/NAME.html      three flat HTML pages of 80 KB each (static/)
//	/template/NAME         three html/template pages that show the request (templates/NAME.html)
//	/dynamic/article/ID    a template (article.html) filled from the row of
//	                       the articles table with article_id ID (articles.db)
//
// NAME is each of Pages. The database is SQLite (modernc.org/sqlite, no
// cgo) holding the seed's table, articles (article_id, article_title,
// article_text), with Articles rows; Schema and Rows let another
// database be filled the same way. Every server of the scenario serves
// these same files, so their responses are alike byte for byte but for
// the headers and the time a template prints.
package mixsite

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // driver "sqlite"
)

// The site's shape.
const (
	StaticSize = 80 << 10 // bytes of each static page ("each trimmed to 80 KB")
	Articles   = 10000    // rows of the articles table
	DBFile     = "articles.db"
)

// Pages names the static and the template pages: /static/about.html,
// /template/about, and so on.
var Pages = []string{"about", "products", "contact"}

// Schema creates the seed's table (its MySQL AUTO_INCREMENT left out:
// the rows are inserted with their ids).
const Schema = `CREATE TABLE articles (
	article_id INTEGER NOT NULL PRIMARY KEY,
	article_title VARCHAR(128) NOT NULL,
	article_text VARCHAR(128) NOT NULL
)`

// ArticleQuery is the query of the dynamic route, with the article id as
// its one parameter ($1: PostgreSQL's placeholder, which SQLite takes too).
const ArticleQuery = `SELECT article_id, article_title, article_text FROM articles WHERE article_id = $1`

// Row returns the title and text of article id (1 to Articles).
func Row(id int) (title, text string) {
	title = fmt.Sprintf("Quarterly report %d: the company grows", id)
	text = fmt.Sprintf("Article %d of %d. Our teams shipped on time, our customers <b>stayed</b>, and the servers kept up with 10,000 connections.", id, Articles)
	return title, text
}

// Write writes the site into dir (created if needed): index.html,
// static/, templates/, article.html, article-sluice.html and the SQLite
// database DBFile.
func Write(dir string) error {
	for _, d := range []string{"static", "templates"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	for _, name := range Pages {
		if err := os.WriteFile(filepath.Join(dir, "static", name+".html"), StaticPage(name), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "templates", name+".html"), []byte(TemplatePage(name)), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "article.html"), []byte(ArticleTemplate), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "article-sluice.html"), []byte(SluiceArticleTemplate), 0o644); err != nil {
		return err
	}
	index := fmt.Sprintf(head, "Home", "Example Corp") + "</body>\n</html>\n"
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(index), 0o644); err != nil {
		return err
	}
	return writeDB(filepath.Join(dir, DBFile))
}

// writeDB creates the SQLite database at path afresh.
func writeDB(path string) error {
	os.Remove(path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	return Fill(db, "?")
}

// Fill creates the articles table in db and inserts its rows, in one
// transaction; placeholder is the driver's for the first parameter ("?"
// or "$1"; the others follow from it).
func Fill(db *sql.DB, placeholder string) error {
	if _, err := db.Exec(Schema); err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ph := []string{"?", "?", "?"}
	if placeholder == "$1" {
		ph = []string{"$1", "$2", "$3"}
	}
	stmt, err := tx.Prepare("INSERT INTO articles (article_id, article_title, article_text) VALUES (" + strings.Join(ph, ", ") + ")")
	if err != nil {
		return err
	}
	for id := 1; id <= Articles; id++ {
		title, text := Row(id)
		if _, err := stmt.Exec(id, title, text); err != nil {
			return err
		}
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}

const head = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>%s — Example Corp</title>
<style>body{font-family:sans-serif;max-width:48em;margin:auto}nav a{margin-right:1em}</style>
</head>
<body>
<nav><a href="/static/about.html">About</a><a href="/static/products.html">Products</a><a href="/static/contact.html">Contact</a><a href="/template/about">Live</a><a href="/dynamic/article/1">News</a></nav>
<h1>%s</h1>
`

const paragraph = `<p>Example Corp builds the infrastructure a rapidly expanding company needs: web servers that answer ten thousand visitors at once, databases that keep their records, and pages that load before anyone notices. This paragraph is one of many that make the page as heavy as the C10K seed asks.</p>
`

// StaticPage returns the flat page name, StaticSize bytes long.
func StaticPage(name string) []byte {
	title := strings.ToUpper(name[:1]) + name[1:]
	var b strings.Builder
	fmt.Fprintf(&b, head, title, title)
	tail := "</body>\n</html>\n"
	for b.Len()+len(paragraph)+len(tail) <= StaticSize {
		b.WriteString(paragraph)
	}
	pad := StaticSize - b.Len() - len(tail)
	if pad > 0 {
		b.WriteString(strings.Repeat(" ", pad-1) + "\n")
	}
	b.WriteString(tail)
	return []byte(b.String())
}

// TemplatePage returns the html/template text of the page name: a few
// KB of layout around the request's method, path, query, host and
// User-Agent and the time. It uses the fields and methods of Sluice's
// components.TemplateData, which the net/http peer mirrors.
func TemplatePage(name string) string {
	title := strings.ToUpper(name[:1]) + name[1:]
	var b strings.Builder
	fmt.Fprintf(&b, head, title+" (live)", title)
	b.WriteString(`<table>
<tr><th>method</th><td>{{.Method}}</td></tr>
<tr><th>path</th><td>{{.Path}}</td></tr>
<tr><th>query</th><td>{{range $k, $v := .Query}}{{$k}}={{index $v 0}} {{end}}</td></tr>
<tr><th>host</th><td>{{.Host}}</td></tr>
<tr><th>user agent</th><td>{{.Header "User-Agent"}}</td></tr>
<tr><th>rendered</th><td>{{.Now.UTC.Format "2006-01-02 15:04:05"}}</td></tr>
</table>
`)
	for range 12 {
		b.WriteString(paragraph)
	}
	b.WriteString("</body>\n</html>\n")
	return b.String()
}

// ArticleTemplate is the page of the dynamic route for the net/http
// peer: {{.ID}}, {{.Title}} and {{.Text}} are the row's columns.
var ArticleTemplate = articlePage(".ID", ".Title", ".Text")

// SluiceArticleTemplate is the same page for Sluice, whose template
// source gives the row of its query named article as .DB.article, a map
// of the row's columns.
var SluiceArticleTemplate = articlePage(".DB.article.article_id", ".DB.article.article_title", ".DB.article.article_text")

func articlePage(id, title, text string) string {
	return strings.NewReplacer("{{ID}}", "{{"+id+"}}", "{{TITLE}}", "{{"+title+"}}", "{{TEXT}}", "{{"+text+"}}").Replace(articleText)
}

const articleText = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{TITLE}} — Example Corp</title>
</head>
<body>
<nav><a href="/static/about.html">About</a><a href="/dynamic/article/1">News</a></nav>
<article>
<h1>{{TITLE}}</h1>
<p>{{TEXT}}</p>
<footer>Article {{ID}}</footer>
</article>
</body>
</html>
`
