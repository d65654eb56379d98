package sqldata

import (
	"errors"
	"strings"

	"github.com/sluice-server/sluice/sock"
)

// The errors of Run; test them with errors.Is, since they are wrapped
// with the query's name.
var (
	// ErrNoRows: a query with One set found no row.
	ErrNoRows = errors.New("no row")

	// ErrBusy: the query did not run because the data source was busy:
	// its MaxConcurrent queries were running and its Queue was full, or
	// the query's timeout passed while it waited in the queue. Retrying
	// after DB.RetryAfter may succeed.
	ErrBusy = errors.New("data source busy")

	// ErrTimeout: the query ran past its timeout and was cancelled.
	ErrTimeout = errors.New("query timed out")

	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("data source closed")
)

// fix returns what to do about err, a failure of one of d's queries, for
// the operator: how to reach a database server that cannot be connected
// to (sock.DialFix), or why an SQLite file cannot be opened; "" when
// there is nothing to add to err's own text.
func (d *DB) fix(err error) string {
	if d.driver == "sqlite" {
		if strings.Contains(err.Error(), "unable to open database file") {
			return "SQLite cannot open the file the dsn names: its directory must exist, and this process's user must be able " +
				"to read the file, and to write to it and to its directory (where SQLite keeps its journal) unless the dsn opens it read-only (mode=ro)"
		}
		return ""
	}
	return sock.DialFix(err, "the database server", "the database's dsn")
}
