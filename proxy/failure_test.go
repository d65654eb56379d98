package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// An upstream killed under load — its connections cut, requests in
// flight included — costs the clients nothing: idempotent requests are
// retried on the others.
func TestUpstreamKilledMidLoad(t *testing.T) {
	srvs, urls := upstreams(t, 3, func(i int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	})
	front, _ := front(t, Options{Upstreams: urls})
	var done atomic.Int64
	var errs sync.Map
	var wg sync.WaitGroup
	const clients, each = 8, 150
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				resp, err := sluicetest.Client.Get(front.URL + "/")
				if err != nil {
					errs.Store(c*each+i, err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "ok" {
					errs.Store(c*each+i, resp.Status+" "+string(b))
				}
				done.Add(1)
			}
		}()
	}
	sluicetest.WaitFor(t, "a third of the requests", func() bool { return done.Load() >= clients*each/3 })
	srvs[1].CloseClientConnections()
	srvs[1].Listener.Close()
	srvs[1].CloseClientConnections()
	wg.Wait()
	n := 0
	errs.Range(func(k, v any) bool {
		if n++; n <= 5 {
			t.Errorf("request %v: %v", k, v)
		}
		return true
	})
	if n > 0 {
		t.Fatalf("%d of %d requests failed", n, clients*each)
	}
}

// With every upstream down, the client is answered 502 at once, not
// after retries that wait; the log says what to do about a refused
// connection.
func TestAllUpstreamsDown(t *testing.T) {
	var urls []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "http://"+ln.Addr().String())
		ln.Close() // nothing listens: connections are refused
	}
	logger, log := sluicetest.Logger()
	srv, _ := front(t, Options{Upstreams: urls, Logger: logger})
	resp, body := sluicetest.Get(t, srv.URL+"/")
	if resp.StatusCode != http.StatusBadGateway || body != "502 Bad Gateway: upstream unreachable\n" {
		t.Fatalf("got %d %q, want 502 upstream unreachable", resp.StatusCode, body)
	}
	if l := log.String(); !strings.Contains(l, `connect: connection refused" fix="nothing listens at that address: start the upstream, or correct the host and port in proxy"`) {
		t.Errorf("the log does not say what to do about a refused connection:\n%s", l)
	}
}

// An upstream that does not answer in time is answered 504; a request
// finding every upstream at max_conns, without a queue, 503 at once.
func TestUpstreamTimeoutAndBusy(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	entered := make(chan struct{}, 10)
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			<-release
		})
	})
	srv, _ := front(t, Options{Upstreams: urls, ResponseHeaderTimeout: 50 * time.Millisecond})
	resp, body := sluicetest.Get(t, srv.URL+"/")
	if resp.StatusCode != http.StatusGatewayTimeout || body != "504 Gateway Timeout: upstream timed out\n" {
		t.Fatalf("got %d %q, want 504 upstream timed out", resp.StatusCode, body)
	}

	busy, _ := front(t, Options{Upstreams: urls, MaxConns: 1, Queue: -1})
	first := make(chan int)
	go func() {
		resp, err := sluicetest.Client.Get(busy.URL + "/")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-entered // the first (timed-out) request's
	<-entered // this one's: the only connection allowed is in use
	resp, body = sluicetest.Get(t, busy.URL+"/")
	if resp.StatusCode != http.StatusServiceUnavailable || body != "503 Service Unavailable: upstreams busy\n" || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("got %d %q, Retry-After %q; want 503 upstreams busy, 1", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	once.Do(func() { close(release) })
	if code := <-first; code != 200 {
		t.Fatalf("the request in flight got %d", code)
	}
}

// The pool keeps at most max_idle_conns idle connections per upstream,
// and at most max_conns open; the requests over max_conns wait in the
// queue, and are all served.
func TestPoolBounds(t *testing.T) {
	var open atomic.Int64
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	})
	srv, p := front(t, Options{Upstreams: urls, MaxIdleConns: 2, MaxConns: 4})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				resp, err := sluicetest.Client.Get(srv.URL + "/")
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 200 {
						open.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	u := p.grp.Hosts()[0]
	idle, total := len(u.Idle()), u.Open()
	if idle > 2 || total > 2 || open.Load() != 8*20 {
		t.Fatalf("after the load: %d idle, %d open, %d answered; want at most 2 idle and open, 160 answered", idle, total, open.Load())
	}
}

// A connection idle longer than idle_timeout is not reused but closed;
// one within it is reused.
func TestIdleTimeout(t *testing.T) {
	for _, c := range []struct {
		idle    time.Duration
		wantNew int64
	}{{time.Hour, 1}, {time.Nanosecond, 10}} {
		var conns atomic.Int64
		up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
		up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		up.Start()
		t.Cleanup(up.Close)
		srv, p := front(t, Options{Upstreams: []string{up.URL}, IdleTimeout: c.idle})
		for range 10 {
			sluicetest.Get(t, srv.URL+"/")
		}
		open := p.grp.Hosts()[0].Open()
		if n := conns.Load(); n != c.wantNew || open != 1 {
			t.Errorf("idle_timeout %v: %d connections made, %d open; want %d, 1", c.idle, n, open, c.wantNew)
		}
	}
}

// An idle connection the upstream closed (its own idle timeout, say) is
// not used again: a POST, which must not be sent twice, is sent on a new
// connection when the peek finds the old one closed; a GET sent on it
// unpeeked (within peekAfter) is sent again on a new one. Either way the
// client gets its answer, and the upstream is not marked down.
func TestStaleIdleConnectionNotUsed(t *testing.T) {
	for _, c := range []struct {
		peekAfter time.Duration
		method    string
	}{{0, "POST"}, {time.Hour, "GET"}} {
		t.Run(c.method, func(t *testing.T) {
			defer func(d time.Duration) { peekAfter = d }(peekAfter)
			peekAfter = c.peekAfter
			testStaleIdleConnection(t, c.method)
		})
	}
}

func testStaleIdleConnection(t *testing.T, method string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{}, 10)
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				// One exchange, answered as keep-alive, then the
				// connection is closed as an idle timeout would.
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err == nil {
					io.Copy(io.Discard, req.Body)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
				c.Close()
				closed <- struct{}{}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	srv, _ := front(t, Options{Upstreams: []string{"http://" + ln.Addr().String()},
		Passive: PassiveHealth{Failures: 1}})
	for i := range 3 {
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("body")
		}
		req, _ := http.NewRequest(method, srv.URL+"/", body)
		resp, err := sluicetest.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d (%s) after the upstream closed its idle connection: %d %q", i, method, resp.StatusCode, b)
		}
		<-closed // the FIN is on its way before the next request
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections made, want 3", n)
	}
}

// Deadlines set for one exchange do not outlive it: after a POST (whose
// body write had a deadline) and a GET (whose whole response came with
// its head) on one pooled connection, both deadlines long past, the next
// requests still go through on that connection.
func TestDeadlinesNotLeftForNextExchange(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	const timeout = 20 * time.Millisecond
	srv, _ := front(t, Options{Upstreams: []string{up.URL}, ResponseHeaderTimeout: timeout})
	for i, method := range []string{"POST", "GET", "GET", "POST", "POST"} {
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("body")
		}
		req, _ := http.NewRequest(method, srv.URL+"/", body)
		resp, err := sluicetest.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		end := time.Now()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d (%s): %d %q", i, method, resp.StatusCode, b)
		}
		// Every deadline this exchange set, at most timeout after a
		// moment before end, has passed once timeout has since end.
		sluicetest.WaitFor(t, "this exchange's deadlines to pass", func() bool { return time.Since(end) > timeout })
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d upstream connections, want 1", n)
	}
}

// statusUpstreams starts two upstreams: the first answers every request
// with status and a body of its own, the second 200; each counts the
// requests it got.
func statusUpstreams(t *testing.T, status int) (urls []string, hits *[2]atomic.Int64) {
	hits = new([2]atomic.Int64)
	_, urls = upstreams(t, 2, func(i int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			io.Copy(io.Discard, r.Body)
			if i == 0 {
				w.WriteHeader(status)
				io.WriteString(w, "upstream's own "+strconv.Itoa(status))
				return
			}
			io.WriteString(w, "ok")
		})
	})
	return urls, hits
}

// An upstream answering a fail_status counts as failing for the passive
// checks, which leave it out; the responses themselves are passed on
// (a POST is not tried again).
func TestFailStatusPassive(t *testing.T) {
	urls, hits := statusUpstreams(t, http.StatusBadGateway)
	srv, _ := front(t, Options{Upstreams: urls, FailStatus: []int{502, 503}, Retries: -1,
		Passive: PassiveHealth{Failures: 2, Window: time.Hour, DownFor: time.Hour}})
	var passed int
	for range 10 {
		resp, err := sluicetest.Client.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusBadGateway {
			if string(b) != "upstream's own 502" {
				t.Fatalf("the upstream's 502 became %q", b)
			}
			passed++
		}
	}
	if n := hits[0].Load(); n != 2 || passed != 2 {
		t.Fatalf("the upstream answering 502 got %d requests, %d answers passed on; want 2 and 2, then left out", n, passed)
	}
}

// A request that may be retried is tried on another upstream when one
// answers a fail_status, until none is left: the last answer is then
// passed on. A request with a body is not retried.
func TestFailStatusRetry(t *testing.T) {
	urls, hits := statusUpstreams(t, http.StatusServiceUnavailable)
	srv, _ := front(t, Options{Upstreams: urls, FailStatus: []int{503}, Passive: PassiveHealth{Failures: -1}})
	for range 6 {
		if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("GET: %d %q; want the other upstream's 200", resp.StatusCode, body)
		}
	}
	if n := hits[0].Load(); n == 0 {
		t.Errorf("the upstream answering 503 got none of the GETs: nothing was retried")
	}
	// Of two POSTs in a row, round_robin sends one to the upstream
	// answering 503, whose answer is passed on.
	var passed int
	for range 2 {
		resp, err := sluicetest.Client.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 503 && string(b) == "upstream's own 503" {
			passed++
		}
	}
	if passed != 1 {
		t.Errorf("%d of two POSTs got the upstream's 503; want 1, not retried", passed)
	}

	// Every upstream failing: the last one's answer is passed on.
	urls2, _ := statusUpstreams(t, http.StatusServiceUnavailable)
	bad, _ := front(t, Options{Upstreams: []string{urls[0], urls2[0]}, FailStatus: []int{503}, Passive: PassiveHealth{Failures: -1}})
	if resp, body := sluicetest.Get(t, bad.URL+"/"); resp.StatusCode != 503 || body != "upstream's own 503" {
		t.Errorf("every upstream answering 503: %d %q; want the last one's answer", resp.StatusCode, body)
	}
}
