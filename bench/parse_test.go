package bench

import (
	"io"
	"testing"
	"time"
)

const wrkOut = `Running 5s test @ http://127.0.0.1:40000/
  1 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.10ms  512.00us  15.20ms   90.00%
    Req/Sec    48.10k     1.20k   50.00k    80.00%
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

func TestWrkParsing(t *testing.T) {
	for _, c := range []struct {
		got, want float64
	}{
		{num(wrkOut, `Requests/sec:\s+([\d.]+)`), 47800},
		{num(wrkOut, `(\d+) requests in`), 239000},
		{num(wrkOut, `Non-2xx or 3xx responses:\s+(\d+)`), 3},
		{wrkDur(wrkOut, `50%\s+(\S+)`), 2.01},
		{wrkDur(wrkOut, `99%\s+(\S+)`), 4},
		{wrkDur(wrkOut, `Latency\s+(\S+)`), 2.1},
		{wrkDur(wrkOut, `Latency\s+\S+\s+\S+\s+(\S+)`), 15.2},
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
	for _, bad := range [][]string{{"--servers", "iis"}, {"--scenarios", "nope"}, {"--rounds", "0"}, {"extra"}} {
		if _, code := parse(bad, io.Discard); code != exitUsage {
			t.Errorf("parse(%q) = %d, want %d", bad, code, exitUsage)
		}
	}
}
