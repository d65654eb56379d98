//go:build unix && !race

package fastcgi_test

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/fastcgi/fpmtest"
)

// A keep-alive GET of a PHP script costs Sluice no allocation end to
// end, once a connection to PHP-FPM has seen the script's response head:
// the client's request, the records to PHP-FPM in one write on a pooled
// connection, the response read in place and passed on.
func TestFastCGIGETAllocatesNothing(t *testing.T) {
	s := newSite(t, fpmtest.Options{Children: 1}, fastcgi.Options{Options: upstreamOpts(1)})
	c, err := net.Dial("tcp", s.srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /hello.php?a=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test\r\nAccept: */*\r\n\r\n")
	br := bufio.NewReader(c)
	var size int
	for range 3 {
		c.Write(req)
		n := 0
		length := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				t.Fatal(err)
			}
			n += len(line)
			if string(line) == "\r\n" {
				break
			}
			if len(line) > 16 && string(line[:16]) == "Content-Length: " {
				length = 0
				for _, ch := range line[16 : len(line)-2] {
					length = length*10 + int(ch-'0')
				}
			}
		}
		if length < 0 {
			t.Fatal("no Content-Length")
		}
		if _, err := io.ReadFull(br, make([]byte, length)); err != nil {
			t.Fatal(err)
		}
		size = n + length
	}
	if br.Buffered() != 0 {
		t.Fatalf("%d bytes beyond the response", br.Buffered())
	}
	buf := make([]byte, size)
	allocs := testing.AllocsPerRun(300, func() {
		c.Write(req)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a keep-alive GET through fastcgi allocates %v times per request, want 0", allocs)
	}
}
