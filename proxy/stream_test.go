package proxy

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// Server-Sent Events arrive as the upstream sends them: the client reads
// each event while the upstream waits for it to have done so before it
// sends the next, which only works if every flush is passed on at once.
func TestSSE(t *testing.T) {
	next := make(chan struct{})
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: event %d\n\n", i)
				w.(http.Flusher).Flush()
				<-next
			}
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	resp, err := sluicetest.Client.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: event %d\n", i) {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}
}

// pattern is an endless reader of a repeating, non-trivial byte pattern.
type pattern struct{ n int64 }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(p.n*7 + p.n>>9)
		p.n++
	}
	return len(b), nil
}

func patternSum(n int64) string {
	h := sha256.New()
	io.CopyN(h, &pattern{}, n)
	return hex.EncodeToString(h.Sum(nil))
}

// heapPeak samples the heap in use while f runs and returns the most it
// grew above what it was before.
func heapPeak(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-stop:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	f()
	close(stop)
	<-sampled
	return peak.Load()
}

// A 100 MB download and a 100 MB upload (with a length, and chunked) pass
// through the proxy intact with the heap growing by a few buffers, not by
// the body: both directions are streamed.
func TestLargeBodiesStreamed(t *testing.T) {
	const size = 100 << 20
	const bound = 16 << 20 // the whole process: upstream, proxy and client
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == "GET" {
				w.Header().Set("Content-Length", fmt.Sprint(size))
				io.CopyN(w, &pattern{}, size)
				return
			}
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%d %s %v %q", n, hex.EncodeToString(h.Sum(nil)), err, r.Trailer.Get("X-Sum"))
		})
	})
	srv, _ := front(t, Options{Upstreams: urls}, sluicetest.Configure(func(s *engine.Server) {
		s.Limits.MaxBodyBytes = -1
	}))
	want := patternSum(size)

	grew := heapPeak(func() {
		resp, err := sluicetest.Client.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		resp.Body.Close()
		if err != nil || n != size || hex.EncodeToString(h.Sum(nil)) != want {
			t.Fatalf("download: %d bytes, %v, sum match %v", n, err, hex.EncodeToString(h.Sum(nil)) == want)
		}
	})
	t.Logf("download of %d MB: heap grew at most %.1f MB", size>>20, float64(grew)/(1<<20))
	if grew > bound {
		t.Errorf("download: heap grew by %d bytes, want under %d", grew, bound)
	}

	for _, chunked := range []bool{false, true} {
		grew := heapPeak(func() {
			req, _ := http.NewRequest("POST", srv.URL+"/", io.LimitReader(&pattern{}, size))
			if !chunked {
				req.ContentLength = size
			} else {
				req.Trailer = http.Header{"X-Sum": {"abc"}}
			}
			resp, body := sluicetest.Do(t, req)
			wantBody := fmt.Sprintf("%d %s <nil> %q", size, want, map[bool]string{true: "abc"}[chunked])
			if resp.StatusCode != 200 || body != wantBody {
				t.Fatalf("upload (chunked %v): %d %q, want %q", chunked, resp.StatusCode, body, wantBody)
			}
		})
		t.Logf("upload of %d MB (chunked %v): heap grew at most %.1f MB", size>>20, chunked, float64(grew)/(1<<20))
		if grew > bound {
			t.Errorf("upload (chunked %v): heap grew by %d bytes, want under %d", chunked, grew, bound)
		}
	}
}

// Hop-by-hop fields go no further, either way: the fixed set and every
// field the Connection header names (RFC 9110 §7.6.1). (An Upgrade that
// Connection does not name asks for no protocol switch: it is dropped.
// TE's "trailers" alone goes on: TestTETrailersUpstream.)
func TestHopByHopRemoved(t *testing.T) {
	var got http.Header
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = r.Header.Clone()
			w.Header().Set("Connection", "X-Up-Private")
			w.Header().Set("X-Up-Private", "secret")
			w.Header().Set("Keep-Alive", "timeout=5")
			w.Header().Set("Proxy-Connection", "keep-alive")
			w.Header().Set("X-End-To-End", "kept")
			io.WriteString(w, "ok")
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	resp, _ := sluicetest.Get(t, srv.URL+"/",
		"Connection", "X-Private", "Connection", "X-Other",
		"X-Private", "p", "X-Other", "o", "Keep-Alive", "300", "Proxy-Connection", "keep-alive",
		"TE", "gzip", "Upgrade", "websocket", "X-Kept", "k")
	for _, name := range []string{"X-Private", "X-Other", "Keep-Alive", "Proxy-Connection", "Te", "Upgrade"} {
		if v := got.Values(name); len(v) > 0 {
			t.Errorf("upstream received %s: %q", name, v)
		}
	}
	if got.Get("X-Kept") != "k" {
		t.Errorf("upstream lost X-Kept")
	}
	for _, name := range []string{"X-Up-Private", "Keep-Alive", "Proxy-Connection"} {
		if v := resp.Header.Values(name); len(v) > 0 {
			t.Errorf("client received %s: %q", name, v)
		}
	}
	if resp.Header.Get("X-End-To-End") != "kept" {
		t.Errorf("client lost X-End-To-End")
	}
}

// Requests the engine refuses — smuggling shapes among them — never reach
// an upstream.
func TestSmugglingNeverReachesUpstream(t *testing.T) {
	up := newRawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	srv, _ := front(t, Options{Upstreams: []string{up.URL}})
	for _, req := range []string{
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX-A: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
		"GET /%2e%2e/etc HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
	} {
		if resp, _ := srv.RoundTrip(t, req); resp.StatusCode < 400 {
			t.Errorf("%q: answered %d", req, resp.StatusCode)
		}
	}
	if n := up.requests.Load(); n != 0 {
		up.mu.Lock()
		t.Fatalf("the upstream received %d requests: %q", n, up.received)
	}
}

// A client that leaves an event stream ends the upstream exchange too,
// even while the upstream is silent: the upstream sees its request
// cancelled.
func TestClientGoneEndsUpstream(t *testing.T) {
	cancelled := make(chan struct{})
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // silent until the proxy goes
			close(cancelled)
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	conn, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "data: first") {
			break
		}
	}
	conn.Close()
	select {
	case <-cancelled:
	case <-time.After(sluicetest.WaitTimeout):
		t.Fatal("the upstream request was never cancelled after the client left")
	}
}

// Trailer fields pass through the proxy both ways; those RFC 9110 §6.5.1
// keeps out of trailers do not.
func TestTrailersPassedOn(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Trailer", "X-Sum, Set-Cookie")
			io.WriteString(w, "body;")
			w.Header().Set("X-Sum", "up:"+r.Trailer.Get("X-Req-Sum")+","+r.Trailer.Get("Host"))
			w.Header().Set("Set-Cookie", "a=b")
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	req, _ := http.NewRequest("POST", srv.URL+"/", io.MultiReader(strings.NewReader("chunked body")))
	req.ContentLength = -1
	req.Trailer = http.Header{"X-Req-Sum": {"r1"}, "Host": {"evil"}}
	resp, err := sluicetest.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "body;" || resp.Trailer.Get("X-Sum") != "up:r1," || resp.Trailer.Get("Set-Cookie") != "" {
		t.Fatalf("body %q, trailers %v; want X-Sum up:r1, and no Set-Cookie", b, resp.Trailer)
	}
}
