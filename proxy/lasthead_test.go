package proxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// A remembered head is a copy: the read buffer it came from may be
// reused at once. It repeats only under the limits it was parsed under,
// and only a head short enough is kept.
func TestLastHeadIsACopy(t *testing.T) {
	const resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: a\r\n\r\nok"
	buf := []byte(resp)
	var h responseHead
	n, err := parseResponseHead(buf, &h, DefaultMaxHeaderBytes, DefaultMaxHeaderCount)
	if err != nil {
		t.Fatal(err)
	}
	var l lastHead
	l.remember(buf[:n], &h, DefaultMaxHeaderBytes, DefaultMaxHeaderCount)
	for i := range buf {
		buf[i] = 'x' // the read buffer, reused
	}
	if l.repeats(buf, DefaultMaxHeaderBytes, DefaultMaxHeaderCount) {
		t.Fatal("a different head repeats the remembered one")
	}
	if !l.repeats([]byte(resp), DefaultMaxHeaderBytes, DefaultMaxHeaderCount) {
		t.Fatal("the same head does not repeat")
	}
	if l.repeats([]byte(resp[:n-1]), DefaultMaxHeaderBytes, DefaultMaxHeaderCount) {
		t.Fatal("a head cut short repeats")
	}
	if l.repeats([]byte(resp), DefaultMaxHeaderBytes, DefaultMaxHeaderCount-1) {
		t.Fatal("a head repeats under other limits")
	}
	var got responseHead
	got.copyFrom(&l.head)
	var fields []string
	for _, f := range got.fields {
		fields = append(fields, string(f.name)+"="+string(f.value))
	}
	if strings.Join(fields, " ") != "Content-Length=2 X-A=a" || got.status != 200 || string(got.reason) != "OK" || got.contentLength != 2 {
		t.Fatalf("remembered head: %d %q %v length %d", got.status, got.reason, fields, got.contentLength)
	}

	big := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", maxLastHead) + "\r\nContent-Length: 0\r\n\r\n"
	n, err = parseResponseHead([]byte(big), &h, DefaultMaxHeaderBytes, DefaultMaxHeaderCount)
	if err != nil {
		t.Fatal(err)
	}
	l.remember([]byte(big)[:n], &h, DefaultMaxHeaderBytes, DefaultMaxHeaderCount)
	if l.repeats([]byte(big), DefaultMaxHeaderBytes, DefaultMaxHeaderCount) || l.repeats([]byte(resp), DefaultMaxHeaderBytes, DefaultMaxHeaderCount) {
		t.Fatal("a head over maxLastHead was kept, or the one before it was not forgotten")
	}
}

// scriptedUpstream answers the requests it gets, on however many
// connections, with responses in turn, each after reading a request head;
// a connection closes when the proxy closes it.
func scriptedUpstream(t *testing.T, responses ...string) string {
	t.Helper()
	var mu sync.Mutex
	next := 0
	return rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			mu.Lock()
			resp := responses[next%len(responses)]
			next++
			mu.Unlock()
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	})
}

// A head the same as the last one on its upstream connection is taken
// from the connection's copy, not parsed again; one that differs, even
// by a byte, is parsed as strictly as ever.
func TestRepeatedUpstreamHead(t *testing.T) {
	const good = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: a\r\n\r\nok"
	const bad = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: a\rb\r\n\r\nok" // bare CR
	up := scriptedUpstream(t, good, good, bad, good)
	srv, p := front(t, Options{Upstreams: []string{up}, Retries: -1})
	// hits returns how many heads the idle connection took from its last
	// one, -1 if there is none idle (the bad response closed it).
	hits := func() int {
		idle := p.grp.Hosts()[0].Idle()
		if len(idle) != 1 {
			return -1
		}
		return idle[0].last.hits
	}
	for i, want := range []struct {
		status int
		hits   int
	}{{200, 0}, {200, 1}, {502, -1}, {200, 0}, {200, 1}} {
		resp, body := sluicetest.Get(t, srv.URL+"/")
		if resp.StatusCode != want.status || (want.status == 200 && (body != "ok" || resp.Header.Get("X-A") != "a")) {
			t.Fatalf("request %d: %d %q X-A %q, want %d", i, resp.StatusCode, body, resp.Header.Get("X-A"), want.status)
		}
		if got := hits(); got != want.hits {
			t.Errorf("request %d: the idle connection took %d heads from its last one, want %d", i, got, want.hits)
		}
	}
}
