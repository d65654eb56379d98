package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// closingUpstream accepts connections and closes them at once, counting
// them: an upstream that fails every request.
func closingUpstream(t *testing.T) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String(), &n
}

// Passive checks: after Failures failed requests an upstream gets no more
// for DownFor, and the requests it failed were retried elsewhere.
func TestPassiveHealth(t *testing.T) {
	urls := whoami(t)
	bad, accepted := closingUpstream(t)
	urls[1] = bad
	srv, _ := front(t, Options{Upstreams: urls, Passive: PassiveHealth{Failures: 3, DownFor: time.Hour}})
	counts, _ := spread(t, srv.URL+"/", 60, nil)
	if counts[1] != 0 || counts[0]+counts[2] != 60 {
		t.Fatalf("answers %v, want all from upstreams 0 and 2", counts)
	}
	if n := accepted.Load(); n != 3 {
		t.Fatalf("the failing upstream was tried %d times, want 3, then left out", n)
	}

	// Turned off, it is tried on every round.
	bad2, accepted2 := closingUpstream(t)
	urls[1] = bad2
	srv2, _ := front(t, Options{Upstreams: urls, Passive: PassiveHealth{Failures: -1}})
	spread(t, srv2.URL+"/", 30, nil)
	if n := accepted2.Load(); n < 10 {
		t.Fatalf("with passive checks off the failing upstream was tried %d times in 30 rounds", n)
	}
}

// Active checks: an upstream whose health path fails is taken out; one
// killed is taken out, and brought back once it answers again on the
// same address.
func TestActiveHealth(t *testing.T) {
	var sick atomic.Bool
	handler := func(i int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				if i == 0 && sick.Load() {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
				return
			}
			fmt.Fprint(w, i)
		})
	}
	srvs, urls := upstreams(t, 3, handler)
	logger, logged := sluicetest.Logger()
	srv, p := front(t, Options{Upstreams: urls, Logger: logger, Passive: PassiveHealth{Failures: -1},
		Health: Health{Path: "/healthz", Interval: 5 * time.Millisecond, Rise: 2, Fall: 2}})
	isUp := func(i int) func() bool { return func() bool { return p.grp.Hosts()[i].Up(upstream.Now()) } }
	isDown := func(i int) func() bool { return func() bool { return !p.grp.Hosts()[i].Up(upstream.Now()) } }

	sick.Store(true)
	sluicetest.WaitFor(t, "upstream 0 marked down", isDown(0))
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts[0] != 0 {
		t.Fatalf("answers %v with upstream 0 down", counts)
	}
	sick.Store(false)
	sluicetest.WaitFor(t, "upstream 0 up again", isUp(0))
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts[0] != 10 {
		t.Fatalf("answers %v with upstream 0 back", counts)
	}

	// Killed, then started again on its address.
	addr := srvs[2].Listener.Addr().String()
	srvs[2].CloseClientConnections()
	srvs[2].Close()
	sluicetest.WaitFor(t, "killed upstream 2 marked down", isDown(2))
	if counts, _ := spread(t, srv.URL+"/", 30, nil); counts[2] != 0 || counts[0]+counts[1] != 30 {
		t.Fatalf("answers %v with upstream 2 killed", counts)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	again := &http.Server{Handler: handler(2)}
	go again.Serve(ln)
	t.Cleanup(func() { again.Close() })
	sluicetest.WaitFor(t, "upstream 2 up again", isUp(2))
	_, who := spread(t, srv.URL+"/", 30, nil)
	if !containsInt(who, 2) {
		t.Fatalf("upstream 2 back but unused: %v", who)
	}
	for _, want := range []string{"upstream down: health check failed", "upstream up again"} {
		if !containsString(logged.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logged.String())
		}
	}
}

// With its only upstream marked down by the active checks, a request is
// answered 503 at once. (Failed requests never take a proxy's last
// upstream out: TestSingleUpstreamStays.)
func TestAllUpstreamsMarkedDown(t *testing.T) {
	bad, _ := closingUpstream(t)
	srv, p := front(t, Options{Upstreams: []string{bad}, Retries: -1, Passive: PassiveHealth{Failures: -1},
		Health: Health{Path: "/healthz", Interval: 5 * time.Millisecond, Rise: 2, Fall: 1}})
	sluicetest.WaitFor(t, "the upstream marked down", func() bool { return !p.grp.Hosts()[0].Up(upstream.Now()) })
	resp, body := sluicetest.Get(t, srv.URL+"/")
	if resp.StatusCode != http.StatusServiceUnavailable || body != "503 Service Unavailable: no upstream available\n" {
		t.Fatalf("with its only upstream down: %d %q, want 503 no upstream available", resp.StatusCode, body)
	}
}

// A Group of one upstream keeps it in service whatever its requests do:
// malformed responses and timeouts, past the passive checks' count, are
// answered 502 and 504, and the next request is still sent to it (nginx
// ignores max_fails for a group of one server), not answered 503.
func TestSingleUpstreamStays(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			head, err := readHead(br)
			if err != nil {
				return
			}
			switch {
			case strings.HasPrefix(head, "GET /bad "):
				// A control byte in a field: refused by the strict parser.
				c.Write([]byte("HTTP/1.1 200 OK\r\nX-Echo: a\x01b\r\nContent-Length: 2\r\n\r\nok"))
			case strings.HasPrefix(head, "GET /slow "):
				io.Copy(io.Discard, br) // no answer: until the proxy closes
				return
			default:
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			}
		}
	})
	srv, p := front(t, Options{Upstreams: []string{url}, Retries: -1, ResponseHeaderTimeout: 100 * time.Millisecond,
		Passive: PassiveHealth{Failures: 3, DownFor: time.Hour}})
	for _, tc := range []struct {
		path   string
		status int
	}{{"/bad", http.StatusBadGateway}, {"/slow", http.StatusGatewayTimeout}} {
		for i := range 4 {
			if resp, _ := sluicetest.Get(t, srv.URL+tc.path); resp.StatusCode != tc.status {
				t.Fatalf("%s, request %d: %d, want %d (the upstream still tried)", tc.path, i+1, resp.StatusCode, tc.status)
			}
		}
		if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != http.StatusOK || body != "ok" {
			t.Fatalf("after failures on %s: %d %q, want 200 from the only upstream", tc.path, resp.StatusCode, body)
		}
	}
	if !p.grp.Hosts()[0].Up(upstream.Now()) {
		t.Error("the only upstream is marked down")
	}
}

// Health outlives a config reload: the next Proxy naming an upstream
// takes over its state from the one it replaces (a reload builds the new
// config before it retires the old); once no Proxy names it, it is
// forgotten.
func TestHealthOutlivesReload(t *testing.T) {
	bad, _ := closingUpstream(t)
	opts := Options{Upstreams: []string{bad}, Passive: PassiveHealth{Failures: 1, DownFor: time.Hour}}
	old := mustNew(t, opts)
	old.grp.Hosts()[0].Failed(time.Now(), &old.passive)
	next := mustNew(t, opts)
	old.Close()
	if next.grp.Hosts()[0].Up(upstream.Now()) {
		t.Fatal("the reloaded proxy forgot the upstream was down")
	}
	next.Close()
	if fresh := mustNew(t, opts); !fresh.grp.Hosts()[0].Up(upstream.Now()) {
		t.Fatal("an upstream no proxy named any more kept its state")
	} else {
		fresh.Close()
	}
}

func mustNew(t *testing.T, opts Options) *Proxy {
	t.Helper()
	opts.Logger, _ = sluicetest.Logger()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func containsString(s, sub string) bool { return strings.Contains(s, sub) }
