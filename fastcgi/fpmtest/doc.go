// Package fpmtest starts private PHP-FPM servers for tests: each with its
// own configuration in a temporary directory, listening on a Unix socket
// (or 127.0.0.1), reading no php.ini or pool file of the system, and
// killed with its workers when the test ends. It runs on Unix systems;
// elsewhere it has no API, and the FastCGI tests that need it are not
// built.
package fpmtest
