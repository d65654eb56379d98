//lint:file-ignore SA1019 the tests drive x/net/http2's client on purpose.

package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2cServer serves h over cleartext HTTP/2 (and HTTP/1.x) on a loopback
// port, and returns the server and its address.
func h2cServer(t *testing.T, h Handler, lim Limits) (*Server, string) {
	t.Helper()
	s := &Server{Handler: h, Limits: lim, Logger: discardLogger()}
	s.init() // before the test looks at its connections (theH2Conn)
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeWith(ln, ListenerOptions{H2C: true}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-done
	})
	return s, ln.Addr().String()
}

// h2cClient is Go's HTTP/2 client over cleartext, dialing with dial.
func h2cClient(t *testing.T, dial func(addr string) (net.Conn, error)) *http.Client {
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(_ context.Context, _, addr string, _ *tls.Config) (net.Conn, error) {
		return dial(addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// theH2Conn returns s's one HTTP/2 connection, once it has one.
func theH2Conn(t *testing.T, s *Server) *h2Conn {
	t.Helper()
	var h *h2Conn
	waitFor(t, "an HTTP/2 connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for c := range s.h2conns {
			if st := c.h2.Load(); st != nil {
				h = st.own
			}
		}
		return h != nil
	})
	return h
}

// bigHead answers with a 5 KB header field and no body (HEAD, 204, 304
// all answer so): a head too large for the HPACK table, never indexed.
var bigHead = HandlerFunc(func(w ResponseWriter, r *Request) {
	w.Header().Set("X-Big", strings.Repeat("b", 5000))
	if r.IsMethod("POST") {
		body, _ := io.ReadAll(r.Body)
		w.Write(body)
	}
})

// A client that opens stream after stream of HEAD requests answered with
// a 5 KB head, and never reads, makes the server hold no more than its
// bound on queued output: the heads wait for room as DATA does, the
// streams keep their slots until their last frame is written, and the
// reader stops reading while too much is queued. Before, every head was
// queued and the reader read on: 5,000 streams held megabytes. Another
// client is served meanwhile.
func TestHTTP2HeadFloodIsBounded(t *testing.T) {
	s, addr := h2cServer(t, bigHead, Limits{})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()                         // before Shutdown: the server's write fails
	nc.(*net.TCPConn).SetReadBuffer(4 << 10) // the kernel keeps little of what the server writes
	io.WriteString(nc, http2.ClientPreface)
	fr := http2.NewFramer(nc, nil)
	fr.WriteSettings()
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, f := range [][2]string{{":method", "HEAD"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	// The client cannot know when a stream ends, as it does not read:
	// it opens 90 at a time, each batch once the server has handled the
	// last, until 5,000 streams, or until the server stops reading or
	// cuts the connection off. After each batch, the output the
	// connection holds (what is queued, and the write under way) stays
	// under twice h2MaxBuffered and a frame or header block more.
	const streams, batch = 5000, 90
	const bound = 2 * (h2MaxBuffered + 16<<10)
	h := theH2Conn(t, s)
	id, stop := uint32(1), false
	for id < 2*streams && !stop {
		for range batch {
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk.Bytes(), EndStream: true, EndHeaders: true}) != nil {
				stop = true
				break
			}
			id += 2
		}
		waitFor(t, "the server to handle the streams or stop reading", func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			// Handlers that wait for room in the output count as done.
			stop = stop || h.readWait || h.werr != nil
			return stop || h.maxID == id-2 && h.running == h.roomWait
		})
		h.mu.Lock()
		held := len(h.wbuf) + h.inflight
		h.mu.Unlock()
		if held > bound {
			t.Fatalf("the connection holds %d bytes of output after %d streams; want at most %d", held, id/2, bound)
		}
	}
	t.Logf("%d streams sent", id/2)

	// Another client is served meanwhile.
	res, err := h2cClient(t, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) }).Head("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || len(res.Header.Get("X-Big")) != 5000 {
		t.Errorf("another client got %d, X-Big of %d bytes", res.StatusCode, len(res.Header.Get("X-Big")))
	}
}

// slowConn reads at most 1 KB at a time, yielding between reads.
type slowConn struct{ net.Conn }

func (c slowConn) Read(p []byte) (int, error) {
	time.Sleep(100 * time.Microsecond)
	return c.Conn.Read(p[:min(len(p), 1<<10)])
}

// A client that reads slowly, and uploads while it reads, gets every
// response: the server's reader stops only while its output is over the
// bound, and what is queued drains as the client reads, so neither side
// waits for the other.
func TestHTTP2SlowReaderGetsEveryResponse(t *testing.T) {
	s, addr := h2cServer(t, bigHead, Limits{})
	c := h2cClient(t, func(addr string) (net.Conn, error) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return slowConn{nc}, nil
	})
	body := bytes.Repeat([]byte("u"), 64<<10)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res *http.Response
			var err error
			if i%2 == 0 {
				res, err = c.Head("http://" + addr + "/")
			} else {
				res, err = c.Post("http://"+addr+"/", "text/plain", bytes.NewReader(body))
			}
			if err != nil {
				errs <- err
				return
			}
			got, err := io.ReadAll(res.Body)
			res.Body.Close()
			switch {
			case err != nil:
				errs <- err
			case res.StatusCode != 200 || len(res.Header.Get("X-Big")) != 5000:
				errs <- fmt.Errorf("request %d: status %d, X-Big of %d bytes", i, res.StatusCode, len(res.Header.Get("X-Big")))
			case i%2 == 1 && !bytes.Equal(got, body):
				errs <- fmt.Errorf("request %d: body of %d bytes, want %d", i, len(got), len(body))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("the readers waited for their output %d times", s.stats.h2ReadStalls.Load())
}
