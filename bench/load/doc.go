// Package load is an HTTP/1.1 load generator for benchmarking servers.
//
// # Loops
//
// A closed loop (Config.Rate zero) keeps every connection busy: each
// connection writes Config.Pipeline requests in one write, reads as many
// responses, and repeats, so the offered load is whatever the server
// sustains. An open loop (Config.Rate set) schedules requests at a fixed
// rate, whatever the server does: request k is due at start + k/Rate, and
// its latency is measured from that intended time, not from when a busy
// connection finally sent it, so a stalled server shows up in the
// latency instead of slowing the client down (no coordinated omission).
// A request not sent within Config.Timeout of its intended time, or not
// answered by then, counts as a timeout error, so every scheduled request
// is either answered or counted as an error.
//
// # Connections
//
// Config.Conns connections (or, with Config.Close, workers that open a
// connection per request) run concurrently, each in its own goroutine.
// Keep-alive connections are all opened before the clock starts.
//
// # Mixes
//
// Config.Paths are taken in turn; Config.Mix instead draws each request
// at random from weighted targets (a path, or a path and a number from
// 1 to N, as in /dynamic/article/4711), with a generator per connection
// seeded from Config.Seed, and counts each class of target apart
// (Result.Classes: OK, errors, latency). A 503 is counted as
// Errors.Unavailable, apart from other statuses, so a server shedding
// load can be told from one failing.
//
// # Bounds
//
// Every run ends: after Config.Duration, after Config.Requests responses,
// or when the context is cancelled; every read and write has a deadline
// (Config.Timeout), so a server that stops answering cannot hold a run
// beyond Duration + Timeout.
//
// # Latency
//
// Latencies go into a Histogram: log-linear buckets in the manner of
// HdrHistogram, under 1.6 % relative error from nanoseconds to hours,
// shared by every connection and updated with atomic adds.
package load
