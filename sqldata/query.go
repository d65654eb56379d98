package sqldata

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// QueryOptions define a named query (see DB.Query).
type QueryOptions struct {
	// Name names the query in errors.
	Name string

	// SQL is the statement, with the driver's placeholders for its
	// arguments: ? for sqlite and mysql, $1, $2… for postgres.
	SQL string

	// One makes the query read a single row: Result.Row is set, and no
	// row is ErrNoRows. Otherwise every row is read into Result.Rows.
	One bool

	// Cache, if positive, keeps each result (an ErrNoRows included) for
	// that long, per distinct arguments: a request for the same
	// arguments meanwhile does not reach the database, and while one
	// fetches a result, others asking for it wait for that one instead
	// of querying too.
	Cache time.Duration

	// CacheSize bounds the results kept; default DefaultCacheSize. When
	// it is full, expired results are dropped, then arbitrary ones.
	CacheSize int
}

// DefaultCacheSize is the default QueryOptions.CacheSize.
const DefaultCacheSize = 1024

// Row is one row of a result: column name → value. Text and blobs are
// strings, numbers int64 or float64, booleans bool, timestamps
// time.Time (as the driver gives them), NULL nil. A template reads a
// column as {{.title}}.
type Row map[string]any

// Result is what a query read. A Result may be shared by every request
// its cache serves: it is read-only.
type Result struct {
	Row  Row   // with One: the row
	Rows []Row // without One: every row, in order
}

// Query is a named query of a DB, prepared on its first run (so a
// config naming it can be checked while the database is down) and again
// after a failed preparation. It is safe for concurrent use.
type Query struct {
	db   *DB
	opts QueryOptions

	prep sync.Mutex // held while preparing
	stmt *sql.Stmt  // under prep

	cache *cache // nil without Cache
}

// Query defines a query on d. It checks opts but does not prepare the
// statement, which needs the database.
func (d *DB) Query(opts QueryOptions) (*Query, error) {
	if strings.TrimSpace(opts.SQL) == "" {
		return nil, fmt.Errorf("query %s: sql is empty", opts.Name)
	}
	if opts.Cache < 0 || opts.CacheSize < 0 {
		return nil, fmt.Errorf("query %s: cache and cache size must be positive", opts.Name)
	}
	q := &Query{db: d, opts: opts}
	if opts.Cache > 0 {
		size := opts.CacheSize
		if size == 0 {
			size = DefaultCacheSize
		}
		q.cache = &cache{entries: map[string]*cacheEntry{}, max: size, ttl: opts.Cache, joining: &d.joining}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, fmt.Errorf("query %s: %w", opts.Name, ErrClosed)
	}
	d.queries = append(d.queries, q)
	return q, nil
}

// DB returns the data source the query runs on.
func (q *Query) DB() *DB { return q.db }

// Name returns QueryOptions.Name.
func (q *Query) Name() string { return q.opts.Name }

// Run runs the query with args (int64, float64, string, bool, []byte,
// time.Time or nil), within the DB's timeout and ctx, from its cache if
// it has one. Its errors wrap ErrNoRows, ErrBusy, ErrTimeout or
// ErrClosed, or are the database's (see the package doc).
func (q *Query) Run(ctx context.Context, args ...any) (*Result, error) {
	if q.db.isClosed() {
		return nil, q.errorf(ErrClosed)
	}
	ctx, cancel := context.WithTimeout(ctx, q.db.opts.Timeout)
	defer cancel()
	if q.cache == nil {
		return q.run(ctx, args)
	}
	return q.cache.get(ctx, cacheKey(args), func() (*Result, error) { return q.run(ctx, args) })
}

// run runs the query on the database.
func (q *Query) run(ctx context.Context, args []any) (*Result, error) {
	d := q.db
	if d.isClosed() {
		return nil, q.errorf(ErrClosed)
	}
	if err := d.gate.enter(ctx); err != nil {
		d.rejected.Add(1)
		return nil, q.errorf(err)
	}
	defer d.gate.leave()
	stmt, err := q.prepare(ctx)
	if err != nil {
		return nil, q.failed(ctx, err)
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, q.failed(ctx, err)
	}
	res, err := q.read(rows)
	if err != nil {
		return nil, q.failed(ctx, err)
	}
	return res, nil
}

// prepare returns the prepared statement, preparing it if need be.
func (q *Query) prepare(ctx context.Context) (*sql.Stmt, error) {
	q.prep.Lock()
	defer q.prep.Unlock()
	if q.stmt != nil {
		return q.stmt, nil
	}
	stmt, err := q.db.db.PrepareContext(ctx, q.opts.SQL)
	if err != nil {
		return nil, err
	}
	q.stmt = stmt
	return stmt, nil
}

func (q *Query) closeStmt() {
	q.prep.Lock()
	defer q.prep.Unlock()
	if q.stmt != nil {
		q.stmt.Close()
		q.stmt = nil
	}
}

// read reads rows into a Result, closing them.
func (q *Query) read(rows *sql.Rows) (*Result, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(Row, len(cols))
		for i, c := range cols {
			v := vals[i]
			if b, ok := v.([]byte); ok {
				v = string(b) // a copy: the driver may reuse b
			}
			row[c] = v
		}
		if q.opts.One {
			res.Row = row
			break
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if q.opts.One && res.Row == nil {
		return res, q.errorf(ErrNoRows)
	}
	return res, nil
}

// failed classifies err from the database: a cancellation by the
// timeout is ErrTimeout.
func (q *Query) failed(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, ErrNoRows):
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		q.db.timedOut.Add(1)
		return fmt.Errorf("database %s: query %s: %w (after %v): %v", q.db.name, q.opts.Name, ErrTimeout, q.db.opts.Timeout, err)
	case q.db.isClosed(): // closed while the query ran
		return q.errorf(ErrClosed)
	}
	if fix := q.db.fix(err); fix != "" {
		return fmt.Errorf("database %s: query %s: %w (%s)", q.db.name, q.opts.Name, err, fix)
	}
	return fmt.Errorf("database %s: query %s: %w", q.db.name, q.opts.Name, err)
}

func (q *Query) errorf(err error) error {
	return fmt.Errorf("database %s: query %s: %w", q.db.name, q.opts.Name, err)
}
