package engine_test

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// WriteInterim sends a 1xx with its own fields, leaving the final
// header alone, and without the framing fields a 1xx may not carry;
// HTTP/1.0 clients get none.
func TestWriteInterim(t *testing.T) {
	srv := sluicetest.NewServer(t, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Header().Set("X-Final", "f")
		w.(engine.InterimWriter).WriteInterim(103, "Content-Length", "5", "Link", "</a.css>; rel=preload", "transfer-encoding", "chunked")
		w.WriteString("ok")
	}))
	for _, c := range []struct{ proto, want string }{
		{"HTTP/1.1", "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n"},
		{"HTTP/1.0", "HTTP/1.1 200 OK\r\n"},
	} {
		conn, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, "GET / "+c.proto+"\r\nHost: x\r\n\r\n")
		got, err := bufio.NewReader(conn).Peek(len(c.want))
		conn.Close()
		if err != nil || string(got) != c.want {
			t.Errorf("%s: response starts %q, %v; want %q", c.proto, got, err, c.want)
		}
	}
}
