package sluicetest

import "log/slog"

// Logger returns a logger writing text records (slog's TextHandler, at
// Info and above) to a new Buffer, and the Buffer, for a test to read
// what a component logs while it runs.
func Logger() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}
