package cache

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// A request that shares another's revalidation never gets a response
// meant for that request only: here the revalidating request sends a
// Cookie the key does not cover, and the origin answers with a page for
// that cookie (stored, Vary: Cookie); a request without the cookie that
// joined the revalidation fetches its own.
func TestSharedRevalidationKeepsPrivateAnswer(t *testing.T) {
	tests := []struct {
		name   string
		fields []string // of the origin's answer to the cookie
		join   []string // fields of the joining request
	}{
		{name: "vary cookie", fields: []string{"Cache-Control: max-age=60", "Vary: Cookie"}},
		{name: "private", fields: []string{"Cache-Control: private, max-age=60"}},
		{name: "no-store with set-cookie", fields: []string{"Cache-Control: no-store", "Set-Cookie: session=ALICE"}},
		{name: "vary accept-language", fields: []string{"Cache-Control: max-age=60", "Vary: Accept-Language"}, join: []string{"Accept-Language: fr"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, Options{}, nil)
			o = h.o
			o.set(respond(&o, 200, "public", "Cache-Control: max-age=10", `ETag: "1"`))
			h.get(t, "/p")
			release := make(chan struct{})
			o.set(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Cookie") == "" {
					w.Header().Set("Cache-Control", "max-age=60")
					io.WriteString(w, "anonymous")
					return
				}
				<-release
				for _, f := range tt.fields {
					name, value, _ := strings.Cut(f, ":")
					w.Header().Add(name, strings.TrimSpace(value))
				}
				io.WriteString(w, "alice's page")
			})
			h.clock.advance(time.Minute)
			alice := make(chan string, 1)
			go func() {
				_, body, err := h.try("GET", "/p", "Cookie: user=alice", "Accept-Language: en")
				if err != nil {
					body = err.Error()
				}
				alice <- body
			}()
			sluicetest.WaitFor(t, "alice's revalidation at the origin", func() bool { return o.n.Load() == 2 })
			bob := make(chan string, 1)
			go func() {
				resp, body, err := h.try("GET", "/p", tt.join...)
				if err != nil {
					body = err.Error()
				} else {
					body += " " + resp.Header.Get("Set-Cookie")
				}
				bob <- body
			}()
			sluicetest.WaitFor(t, "bob to join the revalidation", func() bool { return h.x.sharing() == 1 })
			close(release)
			if got := <-alice; got != "alice's page" {
				t.Errorf("alice got %q", got)
			}
			if got := <-bob; strings.Contains(got, "alice") || strings.Contains(got, "ALICE") {
				t.Errorf("bob got alice's answer: %q", got)
			}
		})
	}
}

// A revalidation, in the foreground or in the background, runs the rest
// of the pipeline with the route's path parameters and the values set
// before the cache, as a miss does.
func TestRevalidationKeepsParamsAndValues(t *testing.T) {
	tests := []struct {
		name string
		cc   string
	}{
		{name: "foreground", cc: "max-age=10"},
		{name: "stale-while-revalidate", cc: "max-age=10, stale-while-revalidate=600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			src := pipe.Source(func(c *pipe.Conn) pipe.Content {
				n := calls.Add(1)
				c.Header().Set("Cache-Control", tt.cc)
				body := "article=" + c.Param("id") + " user=" + c.Value("user") + " #" + string(rune('0'+n))
				return func(w pipe.Writer) error {
					_, err := io.WriteString(w, body)
					return err
				}
			})
			user := pipe.Pipe(func(c *pipe.Conn) bool {
				c.SetValue("user", "ann")
				return true
			})
			x, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			cl := &clock{t: time.Now()}
			x.now = cl.now
			rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/article/{id}"}, Pipeline: pipe.Chain{user, x, src}})
			if err != nil {
				t.Fatal(err)
			}
			srv := sluicetest.NewServer(t, pipe.Handler(rt))
			_, body := sluicetest.Get(t, srv.URL+"/article/42")
			if body != "article=42 user=ann #1" {
				t.Fatalf("miss: %q", body)
			}
			cl.advance(time.Minute)
			sluicetest.Get(t, srv.URL+"/article/42")
			sluicetest.WaitFor(t, "the revalidation", func() bool { return calls.Load() == 2 })
			sluicetest.WaitFor(t, "the revalidated response", func() bool {
				_, body = sluicetest.Get(t, srv.URL+"/article/42", "Cache-Control: only-if-cached")
				return strings.HasSuffix(body, "#2")
			})
			if body != "article=42 user=ann #2" {
				t.Errorf("revalidated: %q", body)
			}
		})
	}
}

// A collapse leader whose content panics mid-body breaks the entry off:
// the request that joined it gets a cut response instead of hanging, and
// the next request fetches the key anew.
func TestLeaderPanicReleasesKey(t *testing.T) {
	var calls atomic.Int64
	boom := make(chan struct{})
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		n := calls.Add(1)
		c.Header().Set("Cache-Control", "max-age=60")
		c.Header().SetContentLength(10)
		return func(w pipe.Writer) error {
			if _, err := io.WriteString(w, "abc"); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if n == 1 {
				<-boom
				panic("boom")
			}
			_, err := io.WriteString(w, "defghij")
			return err
		}
	})
	x, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{x, src}),
		sluicetest.Configure(func(s *engine.Server) { s.Logger = quiet }))
	h := &harness{url: srv.URL, x: x}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, _, err := h.try("GET", "/k")
			errs <- err
		}()
	}
	sluicetest.WaitFor(t, "a request to join the leader", func() bool { return x.joined() == 1 })
	close(boom)
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a request read a whole body from the leader that panicked")
		}
	}
	resp, body := h.get(t, "/k")
	if body != "abcdefghij" || calls.Load() != 2 {
		t.Errorf("after the panic: %q (%s), source called %d times", body, resp.Header.Get("Cache-Status"), calls.Load())
	}
	if _, body := h.get(t, "/k"); body != "abcdefghij" {
		t.Errorf("stored: %q", body)
	}
}

// A GET or HEAD with a body passes through: the body is no part of the
// key, so what the origin makes of it is neither stored nor served from
// the store, and does not join or lead a collapse.
func TestRequestBodyNotStored(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		chunked bool
	}{
		{name: "GET content-length", method: "GET"},
		{name: "GET chunked", method: "GET", chunked: true},
		{name: "HEAD content-length", method: "HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Header().Set("Cache-Control", "max-age=60")
				io.WriteString(w, "q="+string(b)+" #"+string(rune('0'+o.n.Load())))
			})
			o = h.o
			var body io.Reader = strings.NewReader("<script>evil</script>")
			if tt.chunked {
				body = io.MultiReader(body) // no length known: chunked
			}
			req, err := http.NewRequest(tt.method, h.url+"/search", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := sluicetest.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if cs := resp.Header.Get("Cache-Status"); cs != "Sluice; fwd=request; detail=request-body" {
				t.Errorf("with a body: Cache-Status %q", cs)
			}
			resp, got := h.get(t, "/search")
			if got != "q= #2" {
				t.Errorf("a GET without a body got %q (%s)", got, resp.Header.Get("Cache-Status"))
			}
		})
	}
}

// A request that joined a revalidation the origin does not answer waits
// at most LockTimeout, then fetches on its own.
func TestSharedRevalidationLockTimeout(t *testing.T) {
	var o *origin
	h := newHarness(t, Options{LockTimeout: 50 * time.Millisecond}, nil)
	o = h.o
	o.set(respond(&o, 200, "v", "Cache-Control: max-age=10", `ETag: "1"`))
	h.get(t, "/t")
	release := make(chan struct{})
	defer close(release)
	next := respond(&o, 200, "v", "Cache-Control: max-age=10")
	o.set(func(w http.ResponseWriter, r *http.Request) {
		if o.n.Load() == 2 {
			<-release // the revalidation hangs
		}
		next(w, r)
	})
	h.clock.advance(time.Minute)
	go h.try("GET", "/t")
	sluicetest.WaitFor(t, "the revalidation at the origin", func() bool { return o.n.Load() == 2 })
	if _, body, err := h.try("GET", "/t"); err != nil || body != "v3" {
		t.Errorf("the request that joined: %q %v", body, err)
	}
}

// A 304 that brings a Set-Cookie, or makes the response private,
// answers the request that sent it but does not update the stored
// response for everyone: another client never gets that cookie.
func TestNotModifiedCookieNotStored(t *testing.T) {
	tests := []struct {
		name   string
		fields []string // of the 304
		stored bool     // the stored response stays for others
	}{
		{name: "set-cookie", fields: []string{"Set-Cookie: session=ALICE", "Cache-Control: max-age=60"}, stored: true},
		{name: "private", fields: []string{"Cache-Control: private, max-age=60", "Set-Cookie: session=ALICE"}},
		{name: "no-store", fields: []string{"Cache-Control: no-store", "Set-Cookie: session=ALICE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o *origin
			h := newHarness(t, Options{}, nil)
			o = h.o
			o.set(respond(&o, 200, "page", "Cache-Control: max-age=10", `ETag: "1"`))
			_, stored := h.get(t, "/c")
			o.set(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("If-None-Match") == "" {
					w.Header().Set("Cache-Control", "max-age=60")
					io.WriteString(w, "anew")
					return
				}
				if r.Header.Get("Authorization") == "" {
					w.Header().Set("Cache-Control", "max-age=60")
				}
				for _, f := range tt.fields {
					if name, value, _ := strings.Cut(f, ":"); r.Header.Get("Authorization") != "" {
						w.Header().Add(name, strings.TrimSpace(value))
					}
				}
				w.WriteHeader(http.StatusNotModified)
			})
			h.clock.advance(time.Minute)
			resp, body := h.get(t, "/c", "Authorization: Bearer alice")
			if body != stored || resp.Header.Get("Set-Cookie") != "session=ALICE" {
				t.Errorf("alice: %q Set-Cookie %q", body, resp.Header.Get("Set-Cookie"))
			}
			resp, body = h.get(t, "/c")
			if resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("bob got Set-Cookie %q (%s)", resp.Header.Get("Set-Cookie"), resp.Header.Get("Cache-Status"))
			}
			if tt.stored && body != stored || !tt.stored && body != "anew" {
				t.Errorf("bob: %q (%s)", body, resp.Header.Get("Cache-Status"))
			}
		})
	}
}
