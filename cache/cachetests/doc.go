// Package cachetests runs the public HTTP cache test suite
// (cache-tests.fyi, github.com/http-tests/cache-tests) against Sluice's
// cache component. It has no API: its test, TestSuite, does the work.
//
// testdata/cache-tests is the suite's engine and tests, copied unchanged
// from its repository at commit b55b8bda3dbb8c927c04e85bd8d496a8caa3e4ba
// (BSD-3-Clause, testdata/cache-tests/LICENSE): the npm package
// http-cache-tests (0.4.5, its only release) carries an older test set
// whose figures differ from the ones cache-tests.fyi publishes. Its one
// npm dependency, undici 7 (whose handler API its tests of interim
// responses use), is pinned in testdata/package.json and
// package-lock.json; `npm ci` in testdata installs it (.ci/run does).
// undici 7 needs Node 20.18.1 or later.
//
// TestSuite starts the suite's origin server (testdata/origin.mjs) on a
// loopback port and `sluice serve` with a route whose pipeline is
// `cache` then `proxy` to that origin, runs the whole suite through
// Sluice (testdata/run.mjs) and classifies each result with the suite's
// own determineTestResult, as cache-tests.fyi does (testdata/count.mjs).
// It fails when a required test that baseline.txt lists as passed no
// longer passes (after running that test again once, with the tests it
// depends on, to rule out a chance failure), and when sluice, built with
// the race detector when the test is, reports a data race. It skips when
// the cache component is not registered, and when node (20.18.1 or later)
// or the npm modules are missing, unless CI is set: then it fails.
//
//	go test ./cache/cachetests -run TestSuite -v            # the figures, and the failed required tests
//	go test ./cache/cachetests -run TestSuite -update       # rewrite baseline.txt from this run
//	go test ./cache/cachetests -run TestSuite -v -nocache   # the proxy alone, no cache in the route
//
// compare.sh runs the suite against Sluice, nginx's proxy_cache and
// Varnish, configured as the suite's own docker setup configures them,
// in one run, and prints their figures in a table (docs/cache-suite.md).
package cachetests
