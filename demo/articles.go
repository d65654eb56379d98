package demo

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ArticlesFile is the SQLite database of the site's /dynamic/article/ID
// pages, in the data directory.
const ArticlesFile = "articles.db"

// ArticleCount is the number of rows of the articles table, as in the C10K
// article Sluice takes its benchmark from.
const ArticleCount = 10_000

// ScriptArticle is the id of the row whose title is a script element, to
// show that pages print it as text.
const ScriptArticle = 13

// CreateArticles creates the table of the C10K article,
//
//	articles (article_id INTEGER PRIMARY KEY, article_title VARCHAR(128), article_text VARCHAR(128))
//
// in db with ArticleCount rows, ids 1 to ArticleCount, as Article
// returns them, and reports whether it did. A table already there is left
// as it is. It runs in one transaction, so a table is there whole or not
// at all; its statements use "?" placeholders (SQLite, MySQL).
func CreateArticles(ctx context.Context, db *sql.DB) (created bool, err error) {
	var n int
	if db.QueryRowContext(ctx, "SELECT COUNT(*) FROM articles").Scan(&n) == nil {
		return false, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE articles (
	article_id INTEGER NOT NULL PRIMARY KEY,
	article_title VARCHAR(128) NOT NULL,
	article_text VARCHAR(128) NOT NULL)`); err != nil {
		return false, err
	}
	insert, err := tx.PrepareContext(ctx, "INSERT INTO articles (article_id, article_title, article_text) VALUES (?, ?, ?)")
	if err != nil {
		return false, err
	}
	defer insert.Close()
	for id := 1; id <= ArticleCount; id++ {
		title, text := Article(id)
		if _, err := insert.ExecContext(ctx, id, title, text); err != nil {
			return false, err
		}
	}
	return true, tx.Commit()
}

var (
	articleTopics = []string{"light", "colours", "prisms", "lenses", "rainbows", "mirrors", "shadows",
		"thin films", "fringes", "refraction", "reflexion", "the eye", "telescopes", "soap bubbles"}
	articleTitles = []string{"On %s", "Notes on %s", "Experiments with %s", "A short history of %s",
		"Questions about %s", "%s, measured", "What Newton saw in %s", "%s in ten minutes"}
	articleTexts = []string{
		"Rays of different colours are refracted by different amounts; a prism only sorts them.",
		"White light is a mixture: take a colour out of it and the rest is no longer white.",
		"The thinner the film, the wider its rings of colour, until it turns black where thinnest.",
		"A lens cannot bring every colour to one focus, which is why Newton built a reflecting telescope.",
		"Every colour keeps its refrangibility: refract it again and it does not change.",
		"Two prisms, the second turned back on the first, make white light of colours again.",
	}
)

// Article returns the title and text of row id of the articles table:
// made up from its id, each at most 128 bytes. Row ScriptArticle's title
// is a script element.
func Article(id int) (title, text string) {
	topic := articleTopics[id%len(articleTopics)]
	title = fmt.Sprintf(articleTitles[(id/len(articleTopics))%len(articleTitles)], topic)
	title = strings.ToUpper(title[:1]) + title[1:]
	text = articleTexts[id%len(articleTexts)]
	if id == ScriptArticle {
		title = `<script>alert("article 13")</script>`
		text = "This title is a script element; the page prints it as text, escaped, and it never runs."
	}
	return fmt.Sprintf("%s (no. %d)", title, id), text
}
