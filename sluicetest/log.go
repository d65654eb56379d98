package sluicetest

import (
	"bytes"
	"log/slog"
	"sync"
)

// Log holds what a logger wrote, for a test to read while the server
// goes on writing: Write and String are safe for concurrent use. The
// zero value is an empty Log.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the log.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger returns a logger writing text records (slog's TextHandler, at
// Info and above) to a new Log, and the Log.
func Logger() (*slog.Logger, *Log) {
	l := &Log{}
	return slog.New(slog.NewTextHandler(l, nil)), l
}
