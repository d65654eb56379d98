package fastcgi

import (
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":       "plain text",
		"a\nb\r\x1b[31m\\": `a\x0ab\x0d\x1b[31m\x5c`,
		"caf\xc3\xa9\x00":  `caf\xc3\xa9\x00`,
	} {
		if got := escape([]byte(in)); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStderrLimits checks the per-request bounds and the count of lines
// left out.
func TestStderrLimits(t *testing.T) {
	logger, log := sluicetest.Logger()
	cl := &Client{log: logger}
	var n stderrCount
	c := []byte("/x.php")
	cl.logStderr(&n, c, []byte(strings.Repeat("line\n", 50)))
	cl.stderrDropped(&n, c)
	if got := strings.Count(log.String(), `msg="fastcgi: stderr" `); got != stderrLinesPerRequest {
		t.Errorf("%d lines logged, want %d", got, stderrLinesPerRequest)
	}
	if !strings.Contains(log.String(), "count=30") {
		t.Errorf("no count of the 30 lines left out:\n%s", log)
	}
	// Bytes: one long line is truncated, and the bound counts what is
	// logged.
	n = stderrCount{}
	cl.logStderr(&n, c, []byte(strings.Repeat("x", 5000)))
	if n.lines != 1 || n.bytes != stderrMaxLine {
		t.Errorf("a 5000-byte line: %+v", n)
	}
}

// TestStderrDropNoticeBounded: the notice of lines left out is itself
// bounded (one a second across the Client), so that a script writing to
// stderr on every request cannot flood the log through it. 1000
// requests with a line each log at most the second's 100 lines and a
// notice or two (the test may straddle a second).
func TestStderrDropNoticeBounded(t *testing.T) {
	logger, log := sluicetest.Logger()
	cl := &Client{log: logger}
	line := []byte(strings.Repeat("x", 100) + "\n")
	for range 1000 {
		var n stderrCount
		cl.logStderr(&n, []byte("/a.php"), line)
		cl.stderrDropped(&n, []byte("/a.php"))
	}
	notices := strings.Count(log.String(), "stderr lines not logged")
	if c := strings.Count(log.String(), "\n"); c > 2*stderrLinesPerSecond+2 || notices == 0 || notices > 2 {
		t.Errorf("%d log lines, %d notices, for 1000 requests' stderr in a second or two; bound %d lines/s and 1 notice/s", c, notices, stderrLinesPerSecond)
	}
}
