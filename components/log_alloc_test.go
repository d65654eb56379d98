//go:build !race

package components

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// An access log costs a keep-alive GET no allocation, in every preset and
// in a format of one's own naming fields of every kind: the format is
// compiled once and each field appended into a pooled buffer.
func TestLogAllocs(t *testing.T) {
	text, err := NewText(TextOptions{Body: "hello, world\n", ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	base := logKeepAliveAllocs(t, text, nil)
	for _, tt := range []struct{ format string }{
		{"common"}, {"combined"}, {"json"},
		{`{remote} {time} {time_iso} {time_unix} "{request}" {method} {uri} {path} {query} {proto} {host} {status} {bytes} ` +
			`{body_bytes_sent} {duration_ms} "{referer}" "{user_agent}" {cache_status} {upstream_addr} {upstream_time_ms} ` +
			`{tls_version} {tls_cipher} "{req.Accept}" "{resp.Content-Type}" {resp.Content-Length}`},
	} {
		l, err := newLog(LogOptions{File: filepath.Join(t.TempDir(), "access.log"), Format: tt.format, Buffer: 1 << 12})
		if err != nil {
			t.Fatal(err)
		}
		got := logKeepAliveAllocs(t, pipe.Chain{l, text}, l)
		l.Close()
		if got > base {
			t.Errorf("format %q: a logged keep-alive GET allocates %v times, %v without the log", tt.format, got, base)
		}
	}
}

// logKeepAliveAllocs returns the allocations of a keep-alive GET served
// by comp, which logs to l (nil for none).
//
// The log's writer goroutine may not run at all while one connection and
// its client hand the cores back and forth (the scheduler runs it once a
// time slice ends), so the lines of a whole measurement may queue up, each
// in its own buffer. What is measured is the steady state: a burst as long
// as the measurement is logged and written first, which leaves enough
// line buffers for reuse.
func logKeepAliveAllocs(t *testing.T, comp pipe.Component, l *Log) float64 {
	front := sluicetest.NewServer(t, pipe.Handler(comp))
	defer front.Close()
	c, err := net.Dial("tcp", front.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /index.html?a=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test/1.0\r\nAccept: */*\r\nReferer: http://r/\r\n\r\n")
	br := bufio.NewReader(c)
	const runs = 300
	warm := 2
	if l != nil {
		warm = runs + 2
	}
	var size int
	for range warm {
		c.Write(req)
		resp, err := readKeepAlive(br)
		if err != nil {
			t.Fatal(err)
		}
		size = resp
	}
	if l != nil {
		l.Sync()
	}
	buf := make([]byte, size)
	return testing.AllocsPerRun(runs, func() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
}

// readKeepAlive reads a response with a Content-Length and returns its
// size in bytes.
func readKeepAlive(br *bufio.Reader) (int, error) {
	n, length := 0, 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		n += len(line)
		if len(line) > 16 && string(line[:16]) == "Content-Length: " {
			for _, ch := range line[16:] {
				if ch >= '0' && ch <= '9' {
					length = length*10 + int(ch-'0')
				}
			}
		}
		if string(line) == "\r\n" {
			break
		}
	}
	if _, err := br.Discard(length); err != nil {
		return 0, err
	}
	return n + length, nil
}
