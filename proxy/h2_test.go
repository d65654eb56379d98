package proxy

import (
	"context"
	"crypto/tls"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// h2cUpstream starts a net/http server speaking HTTP/2 with prior
// knowledge only (h2c), answering h, allowing maxStreams streams per
// connection (0: net/http's default), and counting its connections.
func h2cUpstream(t *testing.T, maxStreams uint32, h http.Handler) (url string, conns *atomic.Int64) {
	t.Helper()
	conns = new(atomic.Int64)
	s := httptest.NewUnstartedServer(h)
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: int(maxStreams)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s.URL, conns
}

// h2Front starts Sluice over TLS with HTTP/2 proxying by opts, after
// the components before, and returns it with an HTTP/2 client of it.
func h2Front(t *testing.T, opts Options, before ...pipe.Component) (*sluicetest.Server, *http.Client) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger, _ = sluicetest.Logger()
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	srv := sluicetest.NewTLSServer(t, pipe.Handler(append(pipe.Chain(before), p)), sluicetest.HTTP2())
	return srv, srv.Client()
}

// Requests in flight to an h2c upstream are bounded by max_streams per
// connection and by max_conns connections; those past the bound wait
// and are all served, on no more connections than max_conns. The
// upstream's own SETTINGS_MAX_CONCURRENT_STREAMS bounds them too.
func TestH2StreamLimits(t *testing.T) {
	for _, c := range []struct {
		name                 string
		serverMax            uint32
		maxStreams, maxConns int
		bound, conns         int64
	}{
		{"max_streams and max_conns", 0, 3, 2, 6, 2},
		{"the upstream's SETTINGS_MAX_CONCURRENT_STREAMS", 2, 100, 1, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var active, peak atomic.Int64
			gate := make(chan struct{})
			url, conns := h2cUpstream(t, c.serverMax, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := active.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				<-gate
				active.Add(-1)
				io.WriteString(w, "ok "+r.Proto)
			}))
			logger, logs := sluicetest.Logger()
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(logs)
				}
			})
			srv, client := h2Front(t, Options{Upstreams: []string{url}, Transport: TransportH2C, MaxStreams: c.maxStreams, MaxConns: c.maxConns, Logger: logger})
			const requests = 20
			var wg sync.WaitGroup
			errs := make(chan string, requests)
			for range requests {
				wg.Go(func() {
					resp, err := client.Get(srv.URL + "/")
					if err != nil {
						errs <- err.Error()
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || string(body) != "ok HTTP/2.0" {
						errs <- resp.Status + " " + string(body)
					}
				})
			}
			sluicetest.WaitFor(t, "the bound reached", func() bool { return active.Load() == c.bound })
			close(gate)
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			if peak.Load() != c.bound || conns.Load() > c.conns {
				t.Fatalf("peak %d streams on %d connections, want %d on at most %d", peak.Load(), conns.Load(), c.bound, c.conns)
			}
		})
	}
}

// An HTTP/1.1 client's request body and trailer reach an h2c upstream,
// and the upstream's trailer reaches the client; the upstream sees one
// connection for requests in a row.
func TestH2FromHTTP1(t *testing.T) {
	url, conns := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, r.Method+" "+r.Proto+" "+string(body)+" "+r.Trailer.Get("X-Check")+" "+r.Header.Get("X-Forwarded-For"))
		w.Header().Set("X-Sum", "done")
	}))
	srv, _ := front(t, Options{Upstreams: []string{url}, Transport: TransportH2C})
	for range 3 {
		req, _ := http.NewRequest("POST", srv.URL+"/up", io.NopCloser(strings.NewReader("hello")))
		req.ContentLength = -1 // chunked, with a trailer
		req.Trailer = http.Header{"X-Check": {"sum"}}
		req.Header.Set("TE", "trailers")
		resp, err := sluicetest.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != "POST HTTP/2.0 hello sum 127.0.0.1" || resp.Trailer.Get("X-Sum") != "done" {
			t.Fatalf("got %q, trailer %v", got, resp.Trailer)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections to the upstream, want 1", n)
	}
}

// A grpc-timeout bounds the call at the proxy, even with an upstream
// that ignores it: the upstream's stream is reset, and the client gets
// DEADLINE_EXCEEDED in a trailers-only answer.
func TestH2GRPCTimeout(t *testing.T) {
	ended := make(chan error, 1)
	url, _ := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		ended <- r.Context().Err()
	}))
	srv, client := h2Front(t, Options{Upstreams: []string{url}, Transport: TransportH2C})
	req, _ := http.NewRequest("POST", srv.URL+"/test.Echo/Unary", strings.NewReader("\x00\x00\x00\x00\x00"))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	req.Header.Set("Grpc-Timeout", "50m")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := <-ended; err != context.Canceled {
		t.Fatalf("the upstream's request ended with %v, want it cancelled", err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Grpc-Status") != "4" || !strings.Contains(resp.Header.Get("Grpc-Message"), "deadline") {
		t.Fatalf("got %d %v, want grpc-status 4", resp.StatusCode, resp.Header)
	}
}

// The upstream gets what is left of the call's grpc-timeout, not the
// value the client sent: 10S arrives as the time left, below 10 s.
func TestH2GRPCTimeoutPassedOnDiminished(t *testing.T) {
	got := make(chan string, 1)
	url, _ := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Grpc-Timeout")
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(200)
		w.Header().Set("Grpc-Status", "0")
	}))
	srv, client := h2Front(t, Options{Upstreams: []string{url}, Transport: TransportH2C})
	req, _ := http.NewRequest("POST", srv.URL+"/test.Echo/Unary", strings.NewReader("\x00\x00\x00\x00\x00"))
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	req.Header.Set("Grpc-Timeout", "10S")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	v := <-got
	r := &engine.Request{Fields: []engine.Field{{Name: []byte("Grpc-Timeout"), Value: []byte(v)}}}
	d, ok := grpcTimeout(r)
	if !ok || d >= 10*time.Second || d < 5*time.Second {
		t.Fatalf("the upstream got grpc-timeout %q (%v), want the rest of 10S", v, d)
	}
}

// appendGRPCTimeout encodes in at most 8 digits, rounding up.
func TestAppendGRPCTimeout(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0n"}, {-time.Second, "0n"}, {1, "1n"}, {99999999, "99999999n"},
		{100000000, "100000u"}, {100000001, "100001u"}, {10 * time.Second, "10000000u"},
		{9999*time.Second + 1, "9999001m"}, {1e8 * time.Millisecond, "100000S"},
		{1e8 * time.Second, "1666667M"}, {1 << 62, "76861434M"}, {math.MaxInt64, "2562048H"},
	} {
		got := string(appendGRPCTimeout(nil, tc.d))
		if got != tc.want {
			t.Errorf("appendGRPCTimeout(%v) = %q, want %q", tc.d, got, tc.want)
			continue
		}
		if tc.d > 1<<62 {
			continue // past a Duration when read back: grpcTimeout drops it
		}
		r := &engine.Request{Fields: []engine.Field{{Name: []byte("Grpc-Timeout"), Value: []byte(got)}}}
		if back, ok := grpcTimeout(r); !ok || back < tc.d {
			t.Errorf("%q reads back as %v, %v: want at least %v", got, back, ok, tc.d)
		}
	}
}

// Active health checks of an h2 upstream go over HTTP/2 and TLS.
func TestH2Health(t *testing.T) {
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, t.TempDir())
	var checks atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && r.ProtoMajor == 2 && r.TLS != nil {
			checks.Add(1)
		}
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "127.0.0.1")}}
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	h2Front(t, Options{Upstreams: []string{s.URL}, Transport: TransportH2, TLS: TLSOptions{CA: caFile},
		Health: Health{Path: "/healthz", Interval: 10 * time.Millisecond}})
	sluicetest.WaitFor(t, "health checks over HTTP/2", func() bool { return checks.Load() >= 2 })
}

// FuzzGRPCTimeout checks that grpcTimeout never panics, and accepts only
// 1 to 8 digits and a unit.
func FuzzGRPCTimeout(f *testing.F) {
	for _, s := range []string{"1S", "100m", "99999999H", "5u", "0n", "", "S", "1s", "-1S", "123456789S"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := &engine.Request{Fields: []engine.Field{{Name: []byte("Grpc-Timeout"), Value: []byte(s)}}}
		d, ok := grpcTimeout(r)
		if ok && (len(s) < 2 || len(s) > 9 || d < 0) {
			t.Fatalf("%q: accepted as %v", s, d)
		}
	})
}

// An h2c upstream that shuts down gracefully (GOAWAY) in the middle of
// a load loses no request: those it did not take are sent to the other.
func TestH2GoAwayMidLoad(t *testing.T) {
	var served atomic.Int64
	h := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			io.WriteString(w, name)
		})
	}
	a := httptest.NewUnstartedServer(h("a"))
	a.Config.Protocols = new(http.Protocols)
	a.Config.Protocols.SetUnencryptedHTTP2(true)
	a.Start()
	t.Cleanup(a.Close)
	urlB, _ := h2cUpstream(t, 0, h("b"))
	srv, client := h2Front(t, Options{Upstreams: []string{a.URL, urlB}, Transport: TransportH2C})
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	shut := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for i := range 50 {
				if i == 10 {
					<-shut
				}
				resp, err := client.Get(srv.URL + "/")
				if err != nil {
					errs <- err.Error()
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- resp.Status + " " + string(body)
				}
			}
		})
	}
	sluicetest.WaitFor(t, "requests served", func() bool { return served.Load() >= 20 })
	done := make(chan struct{})
	go func() {
		a.Config.Shutdown(context.Background())
		close(done)
	}()
	close(shut)
	wg.Wait()
	<-done
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A response whose upstream stream is reset part way reaches an
// HTTP/1.1 client cut, never as a whole one.
func TestH2ResetMidBody(t *testing.T) {
	url, _ := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part of it")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // RST_STREAM
	}))
	srv, _ := front(t, Options{Upstreams: []string{url}, Transport: TransportH2C})
	resp, err := sluicetest.Client.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("read %q whole, want it cut", body)
	}
}

// An h2 upstream whose response head does not come within
// response_header_timeout is answered 504, and its stream reset.
func TestH2HeaderTimeout(t *testing.T) {
	ended := make(chan error, 1)
	url, _ := h2cUpstream(t, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		ended <- r.Context().Err()
	}))
	srv, _ := front(t, Options{Upstreams: []string{url}, Transport: TransportH2C, ResponseHeaderTimeout: 50 * time.Millisecond})
	resp, body := sluicetest.Get(t, srv.URL+"/")
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(body, "upstream timed out") {
		t.Fatalf("got %d %q, want 504", resp.StatusCode, body)
	}
	if err := <-ended; err != context.Canceled {
		t.Fatalf("the upstream's request ended with %v, want it cancelled", err)
	}
}
