//go:build !race

package proxy

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// A proxied keep-alive GET costs no allocation end to end, once the
// proxy has seen the upstream's fields: the client's request, the
// exchange with the upstream over a pooled connection, and the response
// passed on. (The upstream, an engine server, allocates nothing either;
// its Date changing may cost one allocation a second, which the average
// over the runs rounds away.)
func TestProxiedGETAllocatesNothing(t *testing.T) {
	body := []byte("<!doctype html><title>hello</title><p>Hello through the proxy.</p>\n")
	up := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write(body)
	}))
	logger, _ := sluicetest.Logger()
	p, err := New(Options{Upstreams: []string{up.URL}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	front := sluicetest.NewServer(t, pipe.Handler(p))

	c, err := net.Dial("tcp", front.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test\r\nAccept: */*\r\n\r\n")
	br := bufio.NewReader(c)
	// Every response has the same length (Date is fixed-width): the
	// second one's is taken as theirs.
	var size int
	for range 2 {
		c.Write(req)
		var head []byte
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				t.Fatal(err)
			}
			head = append(head, line...)
			if string(line) == "\r\n" {
				break
			}
		}
		got := make([]byte, len(body))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != string(body) {
			t.Fatalf("body %q, %v; want %q", got, err, body)
		}
		size = len(head) + len(body)
	}
	if br.Buffered() != 0 {
		t.Fatalf("%d bytes beyond the response", br.Buffered())
	}
	buf := make([]byte, size)
	allocs := testing.AllocsPerRun(500, func() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a proxied keep-alive GET allocates %v times per request, want 0", allocs)
	}
}
