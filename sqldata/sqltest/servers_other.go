//go:build !unix

package sqltest

import "testing"

// StartTimeout bounds a server's start; see the Unix version.
const StartTimeout = 0

// Postgres skips the test: the servers start on Unix systems only.
func Postgres(t testing.TB) string {
	t.Skip("sqltest starts PostgreSQL on Unix systems only")
	return ""
}

// MariaDB skips the test: the servers start on Unix systems only.
func MariaDB(t testing.TB) string {
	t.Skip("sqltest starts MariaDB on Unix systems only")
	return ""
}
