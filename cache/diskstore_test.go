package cache

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/sluicetest"
)

var everyOnDisk = flag.Bool("cache.disk", false, "run every test harness's cache on a disk store")

// onDisk gives opts a disk store in a temporary directory under
// -cache.disk; the function it returns has the cache closed after the
// test's servers stop.
func onDisk(t *testing.T, opts Options) (Options, func(*Cache)) {
	if !*everyOnDisk || opts.Path != "" {
		return opts, func(*Cache) {}
	}
	opts.Path = t.TempDir()
	var x *Cache
	t.Cleanup(func() {
		if x != nil {
			x.Close()
		}
	})
	return opts, func(c *Cache) { x = c }
}

// diskHarness is newHarness with a disk store in dir.
func diskHarness(t *testing.T, opts Options, h http.HandlerFunc) *harness {
	t.Helper()
	var hr *harness
	// Registered first, so run last: after the servers stop.
	t.Cleanup(func() {
		if hr != nil {
			hr.x.Close()
		}
	})
	hr = newHarness(t, opts, h)
	return hr
}

// host is the Host field of requests to h, for requests to another
// harness that must share h's keys.
func (h *harness) host() string { return "Host: " + strings.TrimPrefix(h.url, "http://") }

// reopen serves a new Cache on the same directory before a proxy to the
// harness's origin: a restart, or another process's cache.
func (h *harness) reopen(t *testing.T, dir string) *harness {
	t.Helper()
	p, err := proxy.New(proxy.Options{Upstreams: []string{h.o.srv.URL}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var n *harness
	t.Cleanup(func() {
		if n != nil {
			n.x.Close()
		}
	})
	n = newHarnessWith(t, Options{Path: dir}, h.o, p)
	n.clock = h.clock
	n.x.now = h.clock.now
	return n
}

// objectFiles counts the object files under dir.
func objectFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "tmp" {
			return filepath.SkipDir
		}
		if !d.IsDir() && len(d.Name()) == 32 {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A response is stored on disk, answered from there with the stored
// fields, survives closing the cache and its store, and a new cache on
// the same directory answers it without reaching the origin.
func TestDiskStoreAndRestart(t *testing.T) {
	dir := t.TempDir()
	var o *origin
	h := diskHarness(t, Options{Path: dir}, nil)
	o = h.o
	o.set(respond(&o, 200, "stored on disk ", "Cache-Control: max-age=600", "ETag: \"d1\"", "Content-Type: text/plain", "X-Origin: yes"))
	resp, first := h.get(t, "/d")
	if !strings.Contains(resp.Header.Get("Cache-Status"), "stored") {
		t.Fatalf("first: Cache-Status %q", resp.Header.Get("Cache-Status"))
	}
	if objectFiles(t, dir) != 1 {
		t.Fatalf("%d object files, want 1", objectFiles(t, dir))
	}
	resp, second := h.get(t, "/d")
	if second != first || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") ||
		resp.Header.Get("X-Origin") != "yes" || resp.Header.Get("ETag") != `"d1"` {
		t.Fatalf("hit: %q %v, want %q", second, resp.Header, first)
	}
	resp, _ = h.get(t, "/d", `If-None-Match: "d1"`)
	if resp.StatusCode != 304 {
		t.Fatalf("conditional hit: %d", resp.StatusCode)
	}
	resp, part := h.get(t, "/d", "Range: bytes=0-5")
	if resp.StatusCode != 206 || part != first[:6] {
		t.Fatalf("range hit: %d %q", resp.StatusCode, part)
	}
	if err := h.x.Close(); err != nil {
		t.Fatal(err)
	}
	n := h.reopen(t, dir)
	resp, third := n.get(t, "/d", h.host())
	if third != first || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Fatalf("after restart: %q %q", third, resp.Header.Get("Cache-Status"))
	}
	if got := o.n.Load(); got != 1 {
		t.Fatalf("origin got %d requests, want 1", got)
	}
}

// A 304 freshens the stored head on disk: another cache on the
// directory sees the new freshness and the new fields.
func TestDiskRevalidationSetsHead(t *testing.T) {
	dir := t.TempDir()
	var o *origin
	h := diskHarness(t, Options{Path: dir}, nil)
	o = h.o
	o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v"`)
		if r.Header.Get("If-None-Match") == `"v"` {
			w.Header().Set("Cache-Control", "max-age=3600")
			w.Header().Set("X-Fresh", "again")
			w.WriteHeader(304)
			return
		}
		w.Header().Set("Cache-Control", "max-age=10")
		io.WriteString(w, "validated body")
	})
	_, first := h.get(t, "/v")
	h.clock.advance(20 * time.Second)
	resp, body := h.get(t, "/v")
	if body != first || !strings.Contains(resp.Header.Get("Cache-Status"), "fwd-status=304") {
		t.Fatalf("revalidated: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	h.x.fetches.Wait() // the new head is written behind the answer
	h.clock.advance(20 * time.Second)
	n := h.reopen(t, dir)
	resp, body = n.get(t, "/v", h.host())
	if body != first || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") || resp.Header.Get("X-Fresh") != "again" {
		t.Fatalf("other cache after 304: %q %v", body, resp.Header)
	}
	if got := o.n.Load(); got != 2 {
		t.Fatalf("origin got %d requests, want 2", got)
	}
}

// Variants are stored under a Vary marker object; an unsafe request
// through one cache invalidates them for another on the directory.
func TestDiskVaryAndInvalidation(t *testing.T) {
	dir := t.TempDir()
	var o *origin
	h := diskHarness(t, Options{Path: dir}, nil)
	o = h.o
	o.set(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			w.WriteHeader(204)
			return
		}
		w.Header().Set("Cache-Control", "max-age=600")
		w.Header().Set("Vary", "X-Lang")
		io.WriteString(w, "lang "+r.Header.Get("X-Lang"))
	})
	for _, lang := range []string{"en", "fr", "en", "fr"} {
		_, body := h.get(t, "/v", "X-Lang: "+lang)
		if body != "lang "+lang {
			t.Fatalf("%s: %q", lang, body)
		}
	}
	if got := o.n.Load(); got != 2 {
		t.Fatalf("origin got %d requests, want 2", got)
	}
	n := h.reopen(t, dir)
	resp, body := n.get(t, "/v", "X-Lang: fr", h.host())
	if body != "lang fr" || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Fatalf("other cache: %q %q", body, resp.Header.Get("Cache-Status"))
	}
	if resp, _ := n.do(t, "POST", "/v", h.host()); resp.StatusCode != 204 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	resp, _ = h.get(t, "/v", "X-Lang: en")
	if cs := resp.Header.Get("Cache-Status"); !strings.Contains(cs, "fwd=uri-miss") {
		t.Fatalf("after invalidation: %q", cs)
	}
}

// Clients collapsed onto a fetch read the body from the object being
// written, and get all of it.
func TestDiskCollapsedReadAlong(t *testing.T) {
	dir := t.TempDir()
	release, started := make(chan struct{}), make(chan struct{})
	h := diskHarness(t, Options{Path: dir}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "first half, ")
		w.(http.Flusher).Flush()
		close(started)
		<-release
		io.WriteString(w, "second half")
	})
	type result struct {
		body string
		err  error
	}
	results := make(chan result, 2)
	get := func() {
		_, b, err := h.try("GET", "/c")
		results <- result{b, err}
	}
	go get()
	<-started
	go get()
	sluicetest.WaitFor(t, "a second client on the fetch", func() bool { return h.x.waiting("G\x00"+h.url+"/c") == 1 })
	close(release)
	for range 2 {
		r := <-results
		if r.err != nil || r.body != "first half, second half" {
			t.Fatalf("%q %v", r.body, r.err)
		}
	}
	if h.o.n.Load() != 1 {
		t.Fatalf("origin got %d requests", h.o.n.Load())
	}
	resp, body := h.get(t, "/c")
	if body != "first half, second half" || !strings.Contains(resp.Header.Get("Cache-Status"), "hit") {
		t.Fatalf("hit: %q %q", body, resp.Header.Get("Cache-Status"))
	}
}

// A body over max_object_size passes through and leaves no object.
func TestDiskTooLarge(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 100<<10)
	h := diskHarness(t, Options{Path: dir, MaxObjectSize: 64 << 10}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		w.(http.Flusher).Flush() // no Content-Length: found while streaming
		io.WriteString(w, big)
	})
	for range 2 {
		if _, body := h.get(t, "/big"); body != big {
			t.Fatalf("body of %d bytes", len(body))
		}
	}
	if h.o.n.Load() != 2 || objectFiles(t, dir) != 0 {
		t.Fatalf("origin %d requests, %d files", h.o.n.Load(), objectFiles(t, dir))
	}
}

// Sync needs a path; a path that cannot be a directory is an error
// naming the option.
func TestDiskOptions(t *testing.T) {
	if _, err := New(Options{Sync: true}); err == nil || !strings.Contains(err.Error(), "path") {
		t.Fatalf("sync without path: %v", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Path: f}); err == nil || !strings.Contains(err.Error(), "path") {
		t.Fatalf("path on a file: %v", err)
	}
}

var _ pipe.Writer = fileWriter{}

// sendRecorder is a pipe.Writer and pipe.FileWriter that records the
// SendFile calls made to it.
type sendRecorder struct {
	strings.Builder
	files []string
	off   []int64
}

func (s *sendRecorder) Flush() error { return nil }
func (s *sendRecorder) Close() error { return nil }
func (s *sendRecorder) SendFile(f *os.File, offset, n int64) error {
	s.files = append(s.files, f.Name())
	s.off = append(s.off, offset)
	_, err := io.Copy(s, io.NewSectionReader(f, offset, n))
	return err
}

// A hit hands the stored object's file, at the body's offset, to
// pipe.SendFile.
func TestDiskHitSendsFile(t *testing.T) {
	dir := t.TempDir()
	h := diskHarness(t, Options{Path: dir}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "sent from the file")
	})
	h.get(t, "/s")
	r := &engine.Request{Method: []byte("GET"), Path: []byte("/s"), Host: []byte(strings.TrimPrefix(h.url, "http://"))}
	e, _, fwd := h.x.lookup(h.x.primaryKey(r), r)
	if e == nil {
		t.Fatalf("not stored: %s", fwd)
	}
	var rec sendRecorder
	if err := e.body.writeTo(&rec, 5, -1, nil); err != nil {
		t.Fatal(err)
	}
	if rec.String() != "from the file" || len(rec.files) != 1 || !strings.HasPrefix(rec.files[0], dir) || rec.off[0] <= 5 {
		t.Fatalf("sent %q with SendFile calls %q at %v", rec.String(), rec.files, rec.off)
	}
}

// Requests that look one disk object up at once share one entry, and
// with it one revalidation when it is stale: the entry kept in memory
// for the object is made once.
func TestDiskLookupsShareOneEntry(t *testing.T) {
	h := diskHarness(t, Options{Path: t.TempDir()}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "shared")
	})
	h.get(t, "/one")
	r := &engine.Request{Method: []byte("GET"), Path: []byte("/one"), Host: []byte(strings.TrimPrefix(h.url, "http://"))}
	pk := h.x.primaryKey(r)
	for round := range 300 {
		// The object's entry, let go of, to be made again below.
		if e, ok := h.x.store.Delete("d\x00" + pk); ok {
			h.x.diskEvicted("", e)
		}
		const n = 8
		got := make([]*entry, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[i], _, _ = h.x.lookup(pk, r)
			}()
		}
		close(start)
		wg.Wait()
		for i, e := range got {
			if e == nil || e != got[0] {
				t.Fatalf("round %d: lookup %d found %p, lookup 0 %p", round, i, e, got[0])
			}
		}
	}
}

// A disk store that fails names the request it failed for: the cache's
// error line carries the request's ID, as every line about a request does.
func TestDiskErrorNamesRequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	logger, logged := sluicetest.Logger()
	x, err := New(Options{Path: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	origin := sluicetest.NewServer(t, pipe.Handler(pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().Set("Cache-Control", "max-age=600")
		c.Header().SetContentLength(15)
		return func(w pipe.Writer) error { _, err := io.WriteString(w, "from the origin"); return err }
	})))
	p, err := proxy.New(proxy.Options{Upstreams: []string{origin.URL}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	id := pipe.Pipe(func(c *pipe.Conn) bool {
		c.SetRequestID([]byte("r-7"))
		return true
	})
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{id, x, p}))
	// The store's directory becomes a file: no object can be created,
	// not even by root.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	resp, body := sluicetest.Get(t, srv.URL+"/a")
	if resp.StatusCode != 200 || body != "from the origin" {
		t.Fatalf("GET = %d %q, want the origin's answer", resp.StatusCode, body)
	}
	line := logged.String()
	if !strings.Contains(line, `msg="cache: disk store"`) || !strings.Contains(line, "request_id=r-7") {
		t.Fatalf("log %q, want the disk store's error with request_id=r-7", line)
	}
}
