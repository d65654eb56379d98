package sqldata_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the program links the driver it uses

	"github.com/sluice-server/sluice/sqldata"
)

// A SQLite data source in a file, a one-row query whose results are
// cached, and its errors.
func Example() {
	dir, _ := os.MkdirTemp("", "sqldata-example")
	defer os.RemoveAll(dir)
	db, err := sqldata.Open("site", sqldata.Options{
		Driver:  "sqlite",
		DSN:     filepath.Join(dir, "site.db"),
		Pool:    4,
		Timeout: 2 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	db.SQL().Exec(`CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT);
		INSERT INTO articles VALUES (1, 'Hello'), (2, 'World')`)

	article, err := db.Query(sqldata.QueryOptions{
		Name:  "article",
		SQL:   "SELECT id, title FROM articles WHERE id = ?",
		One:   true,
		Cache: 10 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	res, err := article.Run(ctx, int64(2))
	fmt.Println(res.Row["id"], res.Row["title"], err)

	_, err = article.Run(ctx, int64(3))
	fmt.Println(errors.Is(err, sqldata.ErrNoRows), err)
	// Output:
	// 2 World <nil>
	// true database site: query article: no row
}
