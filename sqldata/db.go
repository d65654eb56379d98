package sqldata

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a data source (see Open). Zero fields take the
// defaults below.
type Options struct {
	// Driver is the kind of database: "sqlite", "postgres" or "mysql"
	// (MySQL and MariaDB). See Drivers.
	Driver string `yaml:"driver"`

	// DSN is the driver's data source name: for sqlite a file name or a
	// file: URI (file:./site.db?_pragma=journal_mode(WAL)); for postgres
	// a URL or key=value list (postgres://user@/db?host=/run/postgresql);
	// for mysql the go-sql-driver form (user:pass@unix(/run/mysqld/mysqld.sock)/db).
	DSN string `yaml:"dsn"`

	// Pool is the most connections open at once (database/sql's
	// SetMaxOpenConns and SetMaxIdleConns). Default DefaultPool.
	Pool int `yaml:"pool"`

	// Timeout bounds one query, the wait for a slot included: a query
	// still waiting then fails with ErrBusy, one running with ErrTimeout.
	// Default DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`

	// MaxConcurrent is the most queries running at once. Default: Pool,
	// so that a running query never waits for a connection.
	MaxConcurrent int `yaml:"max_concurrent"`

	// Queue is how many queries may wait for a slot once MaxConcurrent
	// run; one more fails at once with ErrBusy. Default: MaxConcurrent;
	// a negative Queue means none may wait.
	Queue int `yaml:"queue"`

	// RetryAfter is what a shed request is told to wait before trying
	// again (Retry-After, in whole seconds, at least 1). Default
	// DefaultRetryAfter.
	RetryAfter time.Duration `yaml:"retry_after"`
}

// Defaults for the zero fields of Options.
const (
	DefaultPool       = 10
	DefaultTimeout    = 5 * time.Second
	DefaultRetryAfter = time.Second
)

// drivers maps Options.Driver to the name the driver registers with
// database/sql, and the package a program imports to link it.
var drivers = map[string]struct{ name, pkg string }{
	"sqlite":   {"sqlite", "modernc.org/sqlite"},
	"postgres": {"pgx", "github.com/jackc/pgx/v5/stdlib"},
	"mysql":    {"mysql", "github.com/go-sql-driver/mysql"},
}

// driverAliases are the other names the drivers go by, which Open
// corrects.
var driverAliases = map[string]string{
	"postgresql": "postgres", "pgx": "postgres", "pg": "postgres", "psql": "postgres",
	"sqlite3": "sqlite", "mariadb": "mysql",
}

// Drivers lists the values of Options.Driver, sorted.
func Drivers() []string {
	var out []string
	for k := range drivers {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// DB is a data source: a pool of connections to one database with its
// limits. It is safe for concurrent use. Close it when no query needs it
// any more.
type DB struct {
	name   string
	driver string
	db     *sql.DB
	opts   Options
	gate   gate

	closed  atomic.Bool
	mu      sync.Mutex // guards queries, and closed's change
	queries []*Query

	rejected atomic.Uint64
	timedOut atomic.Uint64
	joining  atomic.Int32
}

// Open checks opts and returns the data source called name (the name
// appears in errors). It connects to nothing: database/sql connects when
// a query first needs a connection, so a config can be checked, and a
// server started, while its database is down (see Ping).
func Open(name string, opts Options) (*DB, error) {
	d, ok := drivers[opts.Driver]
	if !ok {
		if alias, ok := driverAliases[strings.ToLower(opts.Driver)]; ok {
			return nil, fmt.Errorf("database %s: driver %q is not one of %v: write driver: %s", name, opts.Driver, Drivers(), alias)
		}
		return nil, fmt.Errorf("database %s: driver %q is not one of %v", name, opts.Driver, Drivers())
	}
	if !slices.Contains(sql.Drivers(), d.name) {
		return nil, fmt.Errorf("database %s: driver %s is not linked into this program (import _ %q)", name, opts.Driver, d.pkg)
	}
	if opts.DSN == "" {
		return nil, fmt.Errorf("database %s: dsn is empty", name)
	}
	switch {
	case opts.Pool < 0:
		return nil, fmt.Errorf("database %s: pool must be positive, got %d", name, opts.Pool)
	case opts.MaxConcurrent < 0:
		return nil, fmt.Errorf("database %s: max_concurrent must be positive, got %d", name, opts.MaxConcurrent)
	case opts.Timeout < 0:
		return nil, fmt.Errorf("database %s: timeout must be positive, got %v", name, opts.Timeout)
	case opts.RetryAfter < 0:
		return nil, fmt.Errorf("database %s: retry_after must be positive, got %v", name, opts.RetryAfter)
	}
	if opts.Pool == 0 {
		opts.Pool = DefaultPool
	}
	if opts.MaxConcurrent == 0 {
		opts.MaxConcurrent = opts.Pool
	}
	switch {
	case opts.Queue == 0:
		opts.Queue = opts.MaxConcurrent
	case opts.Queue < 0:
		opts.Queue = 0
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RetryAfter == 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	db, err := sql.Open(d.name, opts.DSN)
	if err != nil {
		if opts.Driver == "mysql" {
			return nil, fmt.Errorf("database %s: dsn: %v: a mysql dsn is user:password@tcp(HOST:PORT)/DBNAME or user:password@unix(/run/mysqld/mysqld.sock)/DBNAME, not a URL", name, err)
		}
		return nil, fmt.Errorf("database %s: dsn: %v", name, err)
	}
	db.SetMaxOpenConns(opts.Pool)
	db.SetMaxIdleConns(opts.Pool)
	return &DB{
		name:   name,
		driver: opts.Driver,
		db:     db,
		opts:   opts,
		gate:   gate{slots: make(chan struct{}, opts.MaxConcurrent), queue: int32(opts.Queue)},
	}, nil
}

// Name returns the name given to Open.
func (d *DB) Name() string { return d.name }

// Driver returns Options.Driver.
func (d *DB) Driver() string { return d.driver }

// Options returns the options in effect, defaults filled in.
func (d *DB) Options() Options { return d.opts }

// RetryAfter returns how long a client shed with ErrBusy should wait,
// rounded up to whole seconds (at least one), for Retry-After.
func (d *DB) RetryAfter() int {
	return int(max(1, (d.opts.RetryAfter+time.Second-1)/time.Second))
}

// SQL returns the database/sql pool beneath, to create tables or load
// data outside the limits; queries for pages go through Query.
func (d *DB) SQL() *sql.DB { return d.db }

// Ping connects to the database if it is not connected, and reports
// whether it answers.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.db.PingContext(ctx); err != nil {
		if fix := d.fix(err); fix != "" {
			return fmt.Errorf("database %s: %w (%s)", d.name, err, fix)
		}
		return fmt.Errorf("database %s: %w", d.name, err)
	}
	return nil
}

// Stats is a moment's view of a data source's load.
type Stats struct {
	Running  int    // queries holding a slot
	Waiting  int    // queries in the queue
	Joining  int    // cached queries waiting for the same result another is fetching
	Rejected uint64 // queries failed with ErrBusy since Open
	TimedOut uint64 // queries failed with ErrTimeout since Open
}

// Stats returns the data source's load now.
func (d *DB) Stats() Stats {
	return Stats{
		Running:  len(d.gate.slots),
		Waiting:  int(d.gate.waiting.Load()),
		Joining:  int(d.joining.Load()),
		Rejected: d.rejected.Load(),
		TimedOut: d.timedOut.Load(),
	}
}

// Close closes the prepared statements and the pool; it waits for the
// queries running to finish. Queries run after it fail with ErrClosed,
// cached ones too.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return nil
	}
	d.closed.Store(true)
	queries := d.queries
	d.mu.Unlock()
	for _, q := range queries {
		q.closeStmt()
	}
	return d.db.Close()
}

// isClosed reports whether Close was called.
func (d *DB) isClosed() bool { return d.closed.Load() }

// gate admits at most cap(slots) queries at once and queue more waiting.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int32
	queue   int32
}

// enter takes a slot, waiting in the queue until ctx is done if none is
// free; it returns ErrBusy when the queue is full or ctx ends first.
func (g *gate) enter(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	if g.waiting.Add(1) > g.queue {
		g.waiting.Add(-1)
		return ErrBusy
	}
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ErrBusy
	}
}

// leave gives back the slot enter took.
func (g *gate) leave() { <-g.slots }
