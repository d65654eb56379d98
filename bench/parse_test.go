package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

const wrkOut = `Running 5s test @ http://127.0.0.1:40000/
  1 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.10ms  512.00us  15.20ms   98.99%
    Req/Sec    48.10k     1.20k   50.00k    71.50%
  Latency Distribution
     50%    2.01ms
     75%    2.20ms
     90%    2.50ms
     99%    4.00ms
  239000 requests in 5.00s, 80.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 3
Requests/sec:  47800.00
Transfer/sec:     16.00MB
`

func TestParseWrk(t *testing.T) {
	got := parseWrk(wrkOut)
	want := wrkResult{requests: 239000, socketErrors: 3, non2xx: 3, rps: 47800, p50ms: 2.01, p99ms: 4, meanMs: 2.1, maxMs: 15.2,
		errText: "Socket errors: connect 0, read 2, write 0, timeout 1; 3 non-2xx or 3xx responses"}
	if got != want {
		t.Errorf("parseWrk =\n%+v, want\n%+v", got, want)
	}
	for _, c := range []struct {
		got, want float64
	}{
		{wrkDur("x 512.00us", `x (\S+)`), 0.512},
		{wrkDur("x 1.50s", `x (\S+)`), 1500},
	} {
		if c.got != c.want {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
}

func TestParseQuick(t *testing.T) {
	o, code := parse([]string{"--quick", "--servers", "nginx,sluice", "--scenarios", "warp"}, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if o.rounds != 1 || o.duration != time.Second || o.maxConns != 2000 || len(o.servers) != 2 || len(o.scenarios) != 1 {
		t.Errorf("quick options: %+v", o)
	}
	if o.reproduce != "go -C bench run ./cmd/sluicebench --quick=true" {
		t.Errorf("reproduce = %q", o.reproduce)
	}
	for _, bad := range [][]string{{"--servers", "iis"}, {"--scenarios", "nope"}, {"--rounds", "0"}, {"extra"},
		{"--client-cpu", "x"}, {"--server-cpu", "3-1"}, {"--workers-cpu", ""}} {
		if _, code := parse(bad, io.Discard); code != exitUsage {
			t.Errorf("parse(%q) = %d, want %d", bad, code, exitUsage)
		}
	}
}

// abOK is ab 2.3's report of a run in which every request succeeded.
const abOK = `This is ApacheBench, Version 2.3 <$Revision$>

Benchmarking 127.0.0.1 (be patient)
Finished 300 requests


Server Software:        sluice
Server Hostname:        127.0.0.1
Server Port:            18932

Document Path:          /
Document Length:        3 bytes

Concurrency Level:      20
Time taken for tests:   0.018 seconds
Complete requests:      300
Failed requests:        0
Total transferred:      76800 bytes
HTML transferred:       900 bytes
Requests per second:    16858.67 [#/sec] (mean)
Time per request:       1.186 [ms] (mean)
Time per request:       0.059 [ms] (mean, across all concurrent requests)
Transfer rate:          4214.67 [Kbytes/sec] received

Connection Times (ms)
              min  mean[+/-sd] median   max
Connect:        0    0   0.2      0       1
Processing:     0    1   0.2      1       1
Waiting:        0    0   0.1      0       1
Total:          0    1   0.3      1       2

Percentage of the requests served within a certain time (ms)
  50%      1
  66%      1
  75%      1
  80%      1
  90%      1
  95%      2
  98%      2
  99%      2
 100%      2 (longest request)
`

// abFailed has failed requests with ab's breakdown, and non-2xx
// responses, in ab's layout.
const abFailed = `Concurrency Level:      500
Time taken for tests:   21.030 seconds
Complete requests:      5000
Failed requests:        28
   (Connect: 0, Receive: 0, Length: 28, Exceptions: 0)
Non-2xx responses:      3
Total transferred:      732000000 bytes
Requests per second:    237.76 [#/sec] (mean)
Time per request:       2103.000 [ms] (mean)
Time per request:       4.206 [ms] (mean, across all concurrent requests)
Transfer rate:          34816.00 [Kbytes/sec] received

Percentage of the requests served within a certain time (ms)
  50%    120
  99%   9000
 100%  21000 (longest request)
`

func TestParseAB(t *testing.T) {
	got, err := parseAB(abOK)
	if err != nil {
		t.Fatal(err)
	}
	want := abResult{complete: 300, rps: 16858.67, meanMs: 1.186, acrossMs: 0.059, kbps: 4214.67, p50ms: 1, p99ms: 2, maxMs: 2}
	if got != want {
		t.Errorf("parseAB(ok) =\n%+v, want\n%+v", got, want)
	}

	got, err = parseAB(abFailed)
	if err != nil {
		t.Fatal(err)
	}
	want = abResult{complete: 5000, failed: 28, non2xx: 3, rps: 237.76, meanMs: 2103, acrossMs: 4.206, kbps: 34816,
		p50ms: 120, p99ms: 9000, maxMs: 21000,
		failedText: "Failed requests: 28 (Connect: 0, Receive: 0, Length: 28, Exceptions: 0)"}
	if got != want {
		t.Errorf("parseAB(failed) =\n%+v, want\n%+v", got, want)
	}

	// ab that gave up prints no report: an error, not a sample of zeros.
	if _, err := parseAB("apr_socket_recv: Connection reset by peer (104)\nTotal of 1234 requests completed\n"); err == nil {
		t.Error("parseAB without a report: no error")
	}
}

func TestWorkersScenarioFlags(t *testing.T) {
	o, code := parse(nil, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if slices.Contains(o.scenarios, "workers") {
		t.Errorf("default scenarios %v include workers, which takes minutes", o.scenarios)
	}
	if want := fmt.Sprintf("0-%d", runtime.NumCPU()-1); o.workersCPU != want {
		t.Errorf("workersCPU = %q, want every CPU, %q", o.workersCPU, want)
	}
	o, code = parse([]string{"--scenarios", "workers", "--workers-cpu", "1"}, io.Discard)
	if code != -1 || !slices.Equal(o.scenarios, []string{"workers"}) || o.workersCPU != "1" {
		t.Errorf("parse(--scenarios workers --workers-cpu 1) = %d, %v, %q", code, o.scenarios, o.workersCPU)
	}
}

// TestCommandNamesRepositoryBinaryRelatively: a --sluice binary inside the
// repository is shown as "$PWD/…" in the report's command, so that the
// report does not carry the location of the checkout it was made in; one
// outside it is shown as given.
func TestCommandNamesRepositoryBinaryRelatively(t *testing.T) {
	root := repoRoot()
	if root == "" {
		t.Skip("not inside the repository")
	}
	inside := filepath.Join(root, "bin", "sluice")
	o, code := parse([]string{"--sluice", inside, "--scenarios", "warp"}, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if want := `sluicebench --sluice "$PWD/bin/sluice" --scenarios warp`; o.commandStr != want {
		t.Errorf("command = %q, want %q", o.commandStr, want)
	}
	outside := filepath.Join(t.TempDir(), "sluice")
	if o, _ = parse([]string{"--sluice=" + outside}, io.Discard); o.commandStr != "sluicebench --sluice="+outside {
		t.Errorf("command = %q, want the path as given", o.commandStr)
	}
	for _, c := range []struct {
		path, rel string
		ok        bool
	}{
		{filepath.Join(root, "bin", "sluice"), "bin/sluice", true},
		{filepath.Dir(root) + "/other/sluice", "", false},
		{root + "x/sluice", "", false},
		{"bin/sluice", "", false},
	} {
		if rel, ok := inRepo(root, c.path); rel != c.rel || ok != c.ok {
			t.Errorf("inRepo(%q) = %q, %v; want %q, %v", c.path, rel, ok, c.rel, c.ok)
		}
	}
}
