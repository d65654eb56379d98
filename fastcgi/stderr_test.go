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
