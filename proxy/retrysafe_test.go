package proxy

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// A request whose method is not idempotent is sent to one upstream only,
// even without a body (Content-Length: 0, or none): an upstream that read
// it and then closed the connection without answering, or answered a
// fail_status, may have acted on it, and another upstream must not act on
// it again. A GET in the same straits is tried on the other upstream,
// which shows the retry was there to be taken.
func TestNonIdempotentWithoutBodyNotRetried(t *testing.T) {
	for _, up := range []struct {
		name   string
		answer string // written after reading the request head; then the connection is closed
		status int    // what the client is told
	}{
		{"hang up", "", 502},
		{"fail_status", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 503},
	} {
		for _, c := range []struct {
			name, request string
			want          int64 // requests the upstreams saw between them
		}{
			{"POST Content-Length 0", "POST /act HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1},
			{"POST no length", "POST /act HTTP/1.1\r\nHost: x\r\n\r\n", 1},
			{"PATCH Content-Length 0", "PATCH /act HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 1},
			{"GET", "GET /act HTTP/1.1\r\nHost: x\r\n\r\n", 2},
		} {
			t.Run(up.name+"/"+c.name, func(t *testing.T) {
				var seen atomic.Int64
				serve := func(nc net.Conn, br *bufio.Reader) {
					if _, err := readHead(br); err == nil {
						seen.Add(1)
						io.WriteString(nc, up.answer)
					}
				}
				urls := []string{rawServer(t, serve), rawServer(t, serve)}
				srv, _ := front(t, Options{Upstreams: urls, Retries: 1, FailStatus: []int{503},
					Passive: PassiveHealth{Failures: -1}})
				resp, body := sluicetest.Dial(t, srv.Addr).RoundTrip(t, c.request)
				if resp.StatusCode != up.status {
					t.Errorf("every upstream failed: %d %q; want %d", resp.StatusCode, body, up.status)
				}
				if n := seen.Load(); n != c.want {
					t.Errorf("the upstreams received the request %d times; want %d", n, c.want)
				}
			})
		}
	}
}
