package pipe

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A component learns that its client went away through Conn.Gone,
// served by the engine, behind net/http middleware and inside net/http;
// a net/http handler made a source learns it from its request's context.
func TestConnGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the engine learns that a client went on Linux only")
	}
	told := make(chan bool, 1)
	entered := make(chan struct{}, 1)
	wait := func(gone <-chan struct{}) {
		entered <- struct{}{}
		select {
		case <-gone:
			told <- true
		case <-time.After(10 * time.Second):
			told <- false
		}
	}
	probe := Source(func(c *Conn) Content {
		return func(w Writer) error { wait(c.Gone()); return nil }
	})
	viaContext := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait(r.Context().Done())
	}))
	pass := func(next http.Handler) http.Handler { return next }

	tests := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"engine", func(t *testing.T) string { return sluicetest.NewServer(t, Handler(probe)).URL }},
		{"middleware", func(t *testing.T) string { return sluicetest.NewServer(t, Handler(Chain{Middleware(pass), probe})).URL }},
		{"FromHTTP", func(t *testing.T) string { return sluicetest.NewServer(t, Handler(viaContext)).URL }},
		{"HTTPHandler", func(t *testing.T) string {
			ts := httptest.NewServer(HTTPHandler(probe))
			t.Cleanup(ts.Close)
			return ts.URL
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := strings.TrimPrefix(tt.url(t), "http://")
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the request did not reach the component")
			}
			c.Close()
			if !<-told {
				t.Error("not told the client went")
			}
		})
	}
}

// Without a connection to watch (a writer that is not the engine's),
// Gone is nil: never ready.
func TestConnGoneUnknown(t *testing.T) {
	c := acquireConn(struct{ engine.ResponseWriter }{}, nil)
	defer releaseConn(c)
	if g := c.Gone(); g != nil {
		t.Errorf("Gone() = %v, want nil", g)
	}
}
