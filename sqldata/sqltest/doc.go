// Package sqltest starts private database servers for tests: PostgreSQL
// and MariaDB from their Debian packages (postgresql, mariadb-server),
// each in a temporary directory, listening on a unix socket only, as an
// unprivileged user when the test runs as root (the servers refuse to run
// as root). The test's cleanup stops the server, even when the test
// fails, and removes its directory.
//
// A missing server program skips the test, or fails it when CI is set
// (as sluicetest.NeedTool does): .ci/run installs the packages. The
// servers start on Unix systems only; elsewhere Postgres and MariaDB skip.
//
// The DSNs it returns are for sqldata with the drivers the sluice
// command links. The package links the SQLite driver, for Gate.
package sqltest
