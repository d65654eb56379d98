package demo_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/sluice-server/sluice/demo"
)

func TestCreateArticles(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), demo.ArticlesFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if created, err := demo.CreateArticles(ctx, db); !created || err != nil {
		t.Fatalf("CreateArticles = %v, %v", created, err)
	}
	var n, lo, hi int
	if err := db.QueryRow("SELECT COUNT(*), MIN(article_id), MAX(article_id) FROM articles").Scan(&n, &lo, &hi); err != nil ||
		n != demo.ArticleCount || lo != 1 || hi != demo.ArticleCount {
		t.Errorf("articles: %d rows, ids %d to %d, %v", n, lo, hi, err)
	}
	for _, id := range []int{1, demo.ScriptArticle, demo.ArticleCount} {
		var title, text string
		if err := db.QueryRow("SELECT article_title, article_text FROM articles WHERE article_id = ?", id).Scan(&title, &text); err != nil {
			t.Fatal(err)
		}
		if wantTitle, wantText := demo.Article(id); title != wantTitle || text != wantText {
			t.Errorf("row %d = %q, %q; want %q, %q", id, title, text, wantTitle, wantText)
		}
		if len(title) > 128 || len(text) > 128 {
			t.Errorf("row %d is longer than the table's VARCHAR(128)", id)
		}
	}
	// A table already there is kept.
	db.Exec("UPDATE articles SET article_text = 'kept' WHERE article_id = 1")
	if created, err := demo.CreateArticles(ctx, db); created || err != nil {
		t.Errorf("CreateArticles again = %v, %v; want false, nil", created, err)
	}
	var text string
	if db.QueryRow("SELECT article_text FROM articles WHERE article_id = 1").Scan(&text); text != "kept" {
		t.Errorf("row 1 after CreateArticles again = %q, want it kept", text)
	}
}
