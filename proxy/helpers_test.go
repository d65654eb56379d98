package proxy

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// upstreams starts n net/http test servers on loopback sockets, server i
// answering with h(i), and returns them with their URLs.
func upstreams(t *testing.T, n int, h func(i int) http.Handler) ([]*httptest.Server, []string) {
	t.Helper()
	var srvs []*httptest.Server
	var urls []string
	for i := range n {
		s := httptest.NewServer(h(i))
		t.Cleanup(s.Close)
		srvs = append(srvs, s)
		urls = append(urls, s.URL)
	}
	return srvs, urls
}

// front starts a Sluice server, configured by cfg, whose pipeline is the
// proxy opts describe.
func front(t *testing.T, opts Options, cfg ...sluicetest.Option) (*sluicetest.Server, *Proxy) {
	t.Helper()
	return frontPipeline(t, opts, nil, cfg...)
}

// frontPipeline is front with the components after following the proxy.
func frontPipeline(t *testing.T, opts Options, after []pipe.Component, cfg ...sluicetest.Option) (*sluicetest.Server, *Proxy) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger, _ = sluicetest.Logger()
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return sluicetest.NewServer(t, pipe.Handler(append(pipe.Chain{p}, after...)), cfg...), p
}

// rawUpstream is an upstream that reads each request head and answers
// with a fixed response, byte for byte, then closes the connection. It
// counts the requests it received.
type rawUpstream struct {
	URL      string
	requests atomic.Int64
	mu       sync.Mutex
	received []string // the request heads
}

func newRawUpstream(t *testing.T, response string) *rawUpstream {
	t.Helper()
	u := &rawUpstream{}
	u.URL = rawServer(t, func(c net.Conn, br *bufio.Reader) {
		head, err := readHead(br)
		if err != nil {
			return
		}
		u.requests.Add(1)
		u.mu.Lock()
		u.received = append(u.received, head)
		u.mu.Unlock()
		c.Write([]byte(response))
	})
	return u
}

// rawServer listens on loopback and runs serve on a goroutine of its own
// for each connection, which it closes when serve returns; it returns the
// server's URL. The test's cleanup closes the listener and waits for
// every connection's goroutine.
func rawServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sluicetest.ServeConns(t, ln, func(c net.Conn) { serve(c, bufio.NewReader(c)) })
	return "http://" + ln.Addr().String()
}

// readHead reads an HTTP head, up to its empty line.
func readHead(br *bufio.Reader) (string, error) {
	var head strings.Builder
	for {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			return head.String(), err
		}
		if line == "\r\n" {
			return head.String(), nil
		}
	}
}
