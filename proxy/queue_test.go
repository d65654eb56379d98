package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// gatedUpstream starts an upstream whose requests wait for the gate to
// open, each announced on entered as it comes in; a request for /close
// has its connection closed, unanswered, once the gate opens. It counts
// the connections made to it.
func gatedUpstream(t *testing.T) (url string, entered <-chan string, open func(), conns *atomic.Int64) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	in := make(chan string, 16)
	conns = new(atomic.Int64)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- r.URL.Path
		<-gate
		if r.URL.Path == "/close" {
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		}
		io.WriteString(w, "ok "+r.URL.Path)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	t.Cleanup(open)
	return up.URL, in, open, conns
}

// getAsync sends GET url and returns where its status and body arrive.
func getAsync(url string) <-chan string {
	got := make(chan string, 1)
	go func() {
		resp, err := sluicetest.Client.Get(url)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- resp.Status + " " + string(b)
	}()
	return got
}

// waiting waits until n requests wait in p's queue.
func waiting(t *testing.T, p *Proxy, n int32) {
	t.Helper()
	sluicetest.WaitFor(t, "requests waiting in the queue", func() bool { return p.queue.Len() == int(n) })
}

// At max_conns a request waits in the queue for the connection in use,
// and is served on it once the request using it ends; a request finding
// the queue full is answered 503 at once, with Retry-After.
func TestQueueAtMaxConns(t *testing.T) {
	url, entered, open, conns := gatedUpstream(t)
	srv, p := front(t, Options{Upstreams: []string{url}, MaxConns: 1, Queue: 1, QueueTimeout: time.Hour})
	first := getAsync(srv.URL + "/first")
	<-entered
	second := getAsync(srv.URL + "/second")
	waiting(t, p, 1)

	resp, body := sluicetest.Get(t, srv.URL+"/third")
	if resp.StatusCode != http.StatusServiceUnavailable || body != "503 Service Unavailable: upstreams busy, too many requests waiting\n" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("with the queue full: %d %q, Retry-After %q; want 503, too many waiting, 1", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}

	open()
	if got := <-first; got != "200 OK ok /first" {
		t.Errorf("first request: %s", got)
	}
	if got := <-second; got != "200 OK ok /second" {
		t.Errorf("the request that waited: %s", got)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections made to the upstream; want 1, handed from the first request to the second", n)
	}
}

// A connection closed (the upstream cut it) frees its place for the
// request waiting, which dials a new one.
func TestQueueWokenByClose(t *testing.T) {
	url, entered, open, conns := gatedUpstream(t)
	srv, p := front(t, Options{Upstreams: []string{url}, MaxConns: 1, QueueTimeout: time.Hour})
	first := getAsync(srv.URL + "/close")
	<-entered
	second := getAsync(srv.URL + "/second")
	waiting(t, p, 1)
	open()
	if got := <-first; got != "502 Bad Gateway 502 Bad Gateway: upstream closed the connection\n" {
		t.Errorf("the request whose connection was cut: %s", got)
	}
	if got := <-second; got != "200 OK ok /second" {
		t.Errorf("the request that waited: %s", got)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections made to the upstream; want 2", n)
	}
}

// A request that waits longer than queue_timeout is answered 503, with
// Retry-After, and leaves the queue.
func TestQueueTimeout(t *testing.T) {
	url, entered, open, _ := gatedUpstream(t)
	srv, p := front(t, Options{Upstreams: []string{url}, MaxConns: 1, QueueTimeout: time.Millisecond})
	first := getAsync(srv.URL + "/first")
	<-entered
	resp, body := sluicetest.Get(t, srv.URL+"/second")
	if resp.StatusCode != http.StatusServiceUnavailable || body != "503 Service Unavailable: upstreams busy, no connection came free in time\n" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("after queue_timeout: %d %q, Retry-After %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if n := p.queue.Len(); n != 0 {
		t.Errorf("%d requests still in the queue", n)
	}
	open()
	if got := <-first; got != "200 OK ok /first" {
		t.Errorf("first request: %s", got)
	}
}

// An upstream at max_conns is passed over for another without spending
// a retry: with retries -1, a request whose upstream (by hash) is busy
// is still served by the other, without waiting.
func TestBusyUpstreamPassedOver(t *testing.T) {
	url0, entered0, open0, _ := gatedUpstream(t)
	url1, entered1, open1, _ := gatedUpstream(t)
	srv, _ := front(t, Options{Upstreams: []string{url0, url1}, Policy: Hash, HashKey: "path", MaxConns: 1, Retries: -1, QueueTimeout: time.Hour})
	first := getAsync(srv.URL + "/same")
	other := entered1
	select {
	case <-entered0:
	case <-entered1:
		other = entered0
	}
	second := getAsync(srv.URL + "/same")
	select {
	case <-other:
	case got := <-second:
		open0()
		open1()
		t.Fatalf("with its upstream busy, the request was not sent to the other: %s", got)
	}
	open0()
	open1()
	for _, got := range []string{<-first, <-second} {
		if got != "200 OK ok /same" {
			t.Errorf("got %s", got)
		}
	}
}
