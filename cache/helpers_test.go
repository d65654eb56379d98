package cache

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/sluicetest"
)

// clock is a settable time for the cache under test, so that freshness
// runs out without the test sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// origin is a net/http server on loopback whose handler a test sets; it
// counts the requests it gets and keeps the last one's header.
type origin struct {
	srv     *httptest.Server
	n       atomic.Int64
	mu      sync.Mutex
	handler http.HandlerFunc
	last    http.Header
	lastURL string
}

func (o *origin) set(h http.HandlerFunc) {
	o.mu.Lock()
	o.handler = h
	o.mu.Unlock()
}

func (o *origin) lastHeader() http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// harness is Sluice serving [cache, proxy to origin] on loopback.
type harness struct {
	url   string
	x     *Cache
	o     *origin
	clock *clock
}

func newHarness(t *testing.T, opts Options, h http.HandlerFunc, extra ...pipe.Component) *harness {
	t.Helper()
	o := &origin{handler: h}
	cl := &clock{t: time.Now()}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.n.Add(1)
		o.mu.Lock()
		o.last, o.lastURL = r.Header.Clone(), r.URL.String()
		h := o.handler
		o.mu.Unlock()
		// The origin's clock is the cache's.
		w.Header().Set("Date", cl.now().UTC().Format(http.TimeFormat))
		h(w, r)
	}))
	t.Cleanup(o.srv.Close)
	p, err := proxy.New(proxy.Options{Upstreams: []string{o.srv.URL}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	hr := newHarnessWith(t, opts, o, append(extra, p)...)
	hr.clock = cl
	hr.x.now = cl.now
	return hr
}

// quiet is a logger for components whose warnings a test provokes.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newHarnessWith serves [cache, rest...]; o may be nil.
func newHarnessWith(t *testing.T, opts Options, o *origin, rest ...pipe.Component) *harness {
	t.Helper()
	opts, closeLater := onDisk(t, opts)
	x, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(x)
	cl := &clock{t: time.Now()}
	x.now = cl.now
	chain := append(pipe.Chain{x}, rest...)
	srv := sluicetest.NewServer(t, pipe.Handler(chain))
	return &harness{url: srv.URL, x: x, o: o, clock: cl}
}

// do sends method path with fields ("Name: value") and returns the
// response with its body read; it fails the test on an error, so it is
// for the test's own goroutine (others use try).
func (h *harness) do(t *testing.T, method, path string, fields ...string) (*http.Response, string) {
	t.Helper()
	resp, body, err := h.try(method, path, fields...)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// try is do returning the error, for any goroutine.
func (h *harness) try(method, path string, fields ...string) (*http.Response, string, error) {
	req, err := http.NewRequest(method, h.url+path, nil)
	if err != nil {
		return nil, "", err
	}
	for _, f := range fields {
		name, value, _ := strings.Cut(f, ":")
		if strings.EqualFold(name, "Host") {
			req.Host = strings.TrimSpace(value)
			continue
		}
		req.Header.Add(name, strings.TrimSpace(value))
	}
	resp, err := sluicetest.Client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, string(b), fmt.Errorf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, string(b), nil
}

func (h *harness) get(t *testing.T, path string, fields ...string) (*http.Response, string) {
	t.Helper()
	return h.do(t, "GET", path, fields...)
}

// respond returns an origin handler answering with status, the fields
// ("Name: value") and body, the body suffixed with the request count so
// that a test tells a stored answer from a new one. A request whose
// If-None-Match holds the ETag among fields gets a 304 with the fields.
func respond(o **origin, status int, body string, fields ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		etag := ""
		for _, f := range fields {
			name, value, _ := strings.Cut(f, ":")
			if strings.EqualFold(name, "Date") {
				w.Header().Set(name, strings.TrimSpace(value))
			} else {
				w.Header().Add(name, strings.TrimSpace(value))
			}
			if strings.EqualFold(name, "ETag") {
				etag = strings.TrimSpace(value)
			}
		}
		if inm := r.Header.Get("If-None-Match"); etag != "" && inm == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.WriteHeader(status)
		if r.Method != "HEAD" {
			io.WriteString(w, body+strconv.FormatInt((*o).n.Load(), 10))
		}
	}
}

// waiting returns how many requests joined the fetch in flight for ck.
func (x *Cache) waiting(ck string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.inflight[ck]; ok {
		return e.readers
	}
	return 0
}

// sharing returns how many requests joined a revalidation in flight
// besides the one that started it.
func (x *Cache) sharing() int {
	n := 0
	x.store.Range(func(_ string, e *entry) bool {
		if f := e.pending.Load(); f != nil {
			n += int(f.joined.Load())
		}
		return true
	})
	return n
}

// joined returns how many requests joined the fetches in flight.
func (x *Cache) joined() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, e := range x.inflight {
		n += e.readers
	}
	return n
}

// inflightHeld returns the bytes the bodies of the fetches in flight
// hold in memory.
func (x *Cache) inflightHeld() int64 {
	x.mu.Lock()
	es := make([]*entry, 0, len(x.inflight))
	for _, e := range x.inflight {
		es = append(es, e)
	}
	x.mu.Unlock()
	var n int64
	for _, e := range es {
		if e.isReady.Load() && e.body != nil {
			n += e.body.capacity()
		}
	}
	return n
}
