package bench

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/mixsite"
)

// The slow database answers the mix's query with the right row, and
// takes its delay over it.
func TestSlowPostgres(t *testing.T) {
	if _, err := postgresBin(); err != nil {
		t.Skip(err)
	}
	// Not t.TempDir: its parent is not reachable by the user PostgreSQL
	// runs as, as the harness's scratch directory is.
	parent, err := os.MkdirTemp("", "sluicebench-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	os.Chmod(parent, 0o755)
	pg, err := startPostgres(context.Background(), filepath.Join(parent, "postgres"), "0")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.stop()
	const delay = 100 * time.Millisecond
	if err := pg.fillSlow(delay); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", pg.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Now()
	var id int
	var title, text string
	if err := db.QueryRow(mixsite.ArticleQuery, 9999).Scan(&id, &title, &text); err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	if wt, wx := mixsite.Row(9999); id != 9999 || title != wt || text != wx {
		t.Errorf("row 9999: %d %q %q", id, title, text)
	}
	if took < delay {
		t.Errorf("the query took %v, less than the database's delay %v", took, delay)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM article_rows").Scan(&n); err != nil || n != mixsite.Articles {
		t.Errorf("article_rows: %d rows, %v", n, err)
	}
}
