// Package sqldata runs named SQL queries for pages: a data source (DB) is
// a database/sql pool with a per-query timeout, a bound on the queries
// running at once with a short queue behind it, and prepared statements
// (Query) whose results may be cached for a while.
//
// The package imports database/sql and no driver: a program links the
// drivers it wants with blank imports, and Open names them by the
// drivers this package knows (see Drivers):
//
//	import (
//		_ "github.com/go-sql-driver/mysql" // mysql (MySQL, MariaDB)
//		_ "github.com/jackc/pgx/v5/stdlib"  // postgres
//		_ "modernc.org/sqlite"              // sqlite, no cgo
//	)
//
// The sluice command links the three.
//
// # Load shedding
//
// A DB runs at most MaxConcurrent queries at once; up to Queue more wait
// for a slot, each until its timeout. A query beyond those, or one whose
// timeout passes while it waits, fails at once with ErrBusy, which a web
// server answers with 503 and Retry-After: when the database is slow,
// requests are turned away instead of piling up behind it, and the
// database is not sent more work than it can do.
//
// # Errors
//
// Run's errors are typed so that a caller can choose its answer without
// reading messages: ErrNoRows (a one-row query found none: 404),
// ErrBusy (shed: 503 with Retry-After), ErrTimeout (the query ran past
// its timeout: 504), and anything else (the database failed: 500, with
// the error logged and never shown to the client, since it may hold the
// SQL, table names or the server's address).
package sqldata
