package sqldata

import "errors"

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
