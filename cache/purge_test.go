package cache

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/sluicetest"
)

// taggedOrigin answers every path with max-age=600, the request count in
// the body, and the fields the test's table gives the path (tags).
func taggedOrigin(h **harness, fields map[string][]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=600")
		for _, f := range fields[r.URL.Path] {
			name, value, _ := strings.Cut(f, ":")
			w.Header().Add(name, strings.TrimSpace(value))
		}
		if r.URL.Path == "/v" {
			w.Header().Set("Vary", "X-Vary")
		}
		fmt.Fprintf(w, "%s #%d", r.URL.RequestURI(), (*h).o.n.Load())
	}
}

// hitOrMiss gets path and reports whether the origin was asked.
func (h *harness) fetched(t *testing.T, path string, fields ...string) bool {
	t.Helper()
	before := h.o.n.Load()
	resp, _ := h.get(t, path, fields...)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	return h.o.n.Load() != before
}

// PurgeURL removes every variant of one URL, GET and HEAD alike, and
// nothing else: the next request for it reaches the origin, while the
// same path with a query and a longer path stay stored.
func TestPurgeURL(t *testing.T) {
	var h *harness
	h = newHarness(t, Options{}, taggedOrigin(&h, nil))
	host := strings.TrimPrefix(h.url, "http://")
	paths := [][]string{{"/v"}, {"/v", "X-Vary: 1"}, {"/v", "X-Vary: 2"}, {"/v?q=1"}, {"/vb"}, {"/b/v"}}
	for _, p := range paths {
		if !h.fetched(t, p[0], p[1:]...) {
			t.Fatalf("first GET %v was not a miss", p)
		}
	}
	for _, p := range paths {
		if h.fetched(t, p[0], p[1:]...) {
			t.Fatalf("second GET %v was not a hit", p)
		}
	}
	n, err := h.x.PurgeURL(host, "/v")
	if err != nil || n != 3 {
		t.Fatalf("PurgeURL = %d, %v; want 3 (the variants)", n, err)
	}
	if !h.fetched(t, "/v") || !h.fetched(t, "/v", "X-Vary: 1") || !h.fetched(t, "/v", "X-Vary: 2") {
		t.Fatal("a purged variant was still a hit")
	}
	for _, p := range []string{"/v?q=1", "/vb", "/b/v"} {
		if h.fetched(t, p) {
			t.Fatalf("GET %s reached the origin after purging /v", p)
		}
	}
	if n, _ := h.x.PurgeURL(host, "http://"+strings.ToUpper(host)+"/v?q=1"); n != 1 {
		t.Fatalf("purge of an absolute URL with a query removed %d, want 1", n)
	}
	resp, _ := h.do(t, "HEAD", "/v?q=1")
	if got := resp.Header.Get("Cache-Status"); !strings.Contains(got, "fwd=") {
		t.Fatalf("HEAD after purge: Cache-Status %q, want a forward", got)
	}
	if st := h.x.Stats(); st.Purged != 4 {
		t.Fatalf("Purged = %d, want 4", st.Purged)
	}
}

// With extra key parts, PurgeURL removes the URL's responses for every
// value of them.
func TestPurgeURLKeyParts(t *testing.T) {
	var h *harness
	h = newHarness(t, Options{Key: []string{"header:X-Tenant"}}, taggedOrigin(&h, nil))
	host := strings.TrimPrefix(h.url, "http://")
	for _, tenant := range []string{"a", "b", ""} {
		var f []string
		if tenant != "" {
			f = []string{"X-Tenant: " + tenant}
		}
		h.fetched(t, "/k", f...)
		h.fetched(t, "/other", f...)
	}
	if n, err := h.x.PurgeURL(host, "/k"); n != 3 || err != nil {
		t.Fatalf("PurgeURL = %d, %v; want 3", n, err)
	}
	if !h.fetched(t, "/k", "X-Tenant: a") || h.fetched(t, "/other", "X-Tenant: a") {
		t.Fatal("purge by URL with key parts missed or overreached")
	}
}

// PurgeTag removes exactly the responses whose Cache-Tag or
// Surrogate-Key names the tag (under -cache.disk, from the disk store).
func TestPurgeTag(t *testing.T) {
	var h *harness
	fields := map[string][]string{
		"/1": {"Cache-Tag: product-1, all"},
		"/2": {"Surrogate-Key: product-2 all"},
		"/3": {"Cache-Tag: Product-1"}, // tags are compared exactly
		"/4": nil,
		"/5": {"Surrogate-Key: all", "Cache-Tag: product-1"},
	}
	h = newHarness(t, Options{}, taggedOrigin(&h, fields))
	all := []string{"/1", "/2", "/3", "/4", "/5"}
	for _, p := range all {
		h.fetched(t, p)
	}
	check := func(tag string, want int, purged ...string) {
		t.Helper()
		if n := h.x.PurgeTag(tag); n != want {
			t.Fatalf("PurgeTag(%q) = %d, want %d", tag, n, want)
		}
		for _, p := range all {
			if got, want := h.fetched(t, p), slices.Contains(purged, p); got != want {
				t.Fatalf("after PurgeTag(%q): GET %s reached the origin: %v, want %v", tag, p, got, want)
			}
		}
	}
	check("product-1", 2, "/1", "/5")
	check("all", 3, "/1", "/2", "/5")
	check("nothing", 0)
	check("Product-1", 1, "/3")
}

// The tag index holds only stored responses: entries evicted by the
// budget leave it.
func TestTagIndexFollowsEvictions(t *testing.T) {
	if *everyOnDisk {
		t.Skip("the memory budget")
	}
	var h *harness
	fields := map[string][]string{}
	for i := range 200 {
		fields[fmt.Sprintf("/t%d", i)] = []string{fmt.Sprintf("Surrogate-Key: t%d shared", i)}
	}
	h = newHarness(t, Options{Size: 64 << 10}, taggedOrigin(&h, fields))
	for i := range 200 {
		h.fetched(t, fmt.Sprintf("/t%d", i))
	}
	st := h.x.Stats()
	if st.Evictions == 0 {
		t.Fatal("no evictions: the test needs a budget that overflows")
	}
	tags, entries := h.x.tags.size()
	if uint64(entries) != st.Objects || tags != entries+1 {
		t.Fatalf("index: %d tags, %d entries; store: %d objects", tags, entries, st.Objects)
	}
	if n := h.x.PurgeTag("shared"); uint64(n) != st.Objects {
		t.Fatalf("PurgeTag(shared) = %d, want %d", n, st.Objects)
	}
	if tags, entries := h.x.tags.size(); tags != 0 || entries != 0 {
		t.Fatalf("index after purging everything: %d tags, %d entries", tags, entries)
	}
	if st := h.x.Stats(); st.Objects != 0 {
		t.Fatalf("Objects = %d after purging everything", st.Objects)
	}
}

// BanPrefix removes the responses under a path prefix on one host.
func TestBanPrefix(t *testing.T) {
	var h *harness
	h = newHarness(t, Options{}, taggedOrigin(&h, nil))
	host := strings.TrimPrefix(h.url, "http://")
	all := []string{"/img/a.png", "/img/b/c.png", "/img?x", "/imgx", "/other/img/a"}
	for _, p := range all {
		h.fetched(t, p)
	}
	h.fetched(t, "/img/a.png", "Host: other.example")
	if n, err := h.x.BanPrefix(host, "/img/"); n != 2 || err != nil {
		t.Fatalf("BanPrefix(/img/) = %d, %v; want 2", n, err)
	}
	for _, p := range all {
		want := strings.HasPrefix(p, "/img/")
		if got := h.fetched(t, p); got != want {
			t.Fatalf("GET %s after the ban reached the origin: %v, want %v", p, got, want)
		}
	}
	if h.fetched(t, "/img/a.png", "Host: other.example") {
		t.Fatal("the ban reached another host")
	}
	if n, _ := h.x.BanPrefix(host, "/img"); n != 4 {
		t.Fatalf("BanPrefix(/img) = %d, want 4", n)
	}
}

// Bad targets are errors, never a panic or a purge of everything.
func TestPurgeBadTargets(t *testing.T) {
	var h *harness
	h = newHarness(t, Options{}, taggedOrigin(&h, nil))
	h.fetched(t, "/a")
	for _, tc := range []struct{ host, target string }{
		{"h", ""}, {"h", "a"}, {"h", "ftp://h/a"}, {"", "/a"}, {"h/x", "/a"}, {"h", "/a\x00"},
		{"h", "/../a"}, {"h", "http:///a"}, {"h", "//h/a"}, {"h", "/a#f"}, {"h", "http://u@h/a"},
	} {
		if n, err := h.x.PurgeURL(tc.host, tc.target); err == nil || n != 0 {
			t.Errorf("PurgeURL(%q, %q) = %d, %v; want an error", tc.host, tc.target, n, err)
		}
		if n, err := h.x.BanPrefix(tc.host, tc.target); err == nil || n != 0 {
			t.Errorf("BanPrefix(%q, %q) = %d, %v; want an error", tc.host, tc.target, n, err)
		}
	}
	if h.fetched(t, "/a") {
		t.Fatal("a bad purge removed /a")
	}
}

// The tags of a response, from raw field values.
func TestResponseTags(t *testing.T) {
	long := strings.Repeat("x", MaxTagLength+1)
	many := make([]string, MaxTags+5)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	for _, tc := range []struct {
		fields []field
		want   []string
	}{
		{[]field{{"Cache-Tag", "a,b , c"}}, []string{"a", "b", "c"}},
		{[]field{{"cache-tag", "a b"}}, nil}, // a space inside a tag: not a tag
		{[]field{{"Surrogate-Key", " a  b\tc "}}, []string{"a", "b", "c"}},
		{[]field{{"Surrogate-Key", "a,b"}}, nil},
		{[]field{{"Cache-Tag", "a"}, {"Surrogate-Key", "a b"}, {"Cache-Tag", "c"}}, []string{"a", "b", "c"}},
		{[]field{{"Cache-Tag", ",,"}, {"X-Tag", "a"}}, nil},
		{[]field{{"Cache-Tag", long + ",ok,caf\xc3\xa9"}}, []string{"ok"}},
		{[]field{{"Surrogate-Key", strings.Join(many, " ")}}, many[:MaxTags]},
	} {
		got := responseTags(&meta{fields: tc.fields})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: tags %q, want %q", tc.fields, got, tc.want)
		}
	}
}

func FuzzResponseTags(f *testing.F) {
	f.Add("a, b,c", "x y\tz")
	f.Add(",,,", "   ")
	f.Add("\xff,\x00", "a\x7fb")
	f.Fuzz(func(t *testing.T, tag, key string) {
		tags := responseTags(&meta{fields: []field{{"Cache-Tag", tag}, {"Surrogate-Key", key}}})
		if len(tags) > MaxTags {
			t.Fatalf("%d tags", len(tags))
		}
		for i, x := range tags {
			if !ValidTag(x) || slices.Contains(tags[:i], x) {
				t.Fatalf("tag %q", x)
			}
		}
	})
}

// The counters follow what the cache does: a miss, hits with the bytes
// they served, a stale answer, a revalidation, passes, and the
// objects, bytes and evictions of the store.
func TestStats(t *testing.T) {
	h := newHarness(t, Options{}, nil)
	h.o.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		switch r.URL.Path {
		case "/swr":
			w.Header().Set("Cache-Control", "max-age=1, stale-while-revalidate=600")
		default:
			w.Header().Set("Cache-Control", "max-age=600")
		}
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		io.WriteString(w, "0123456789")
	})
	h.get(t, "/a")
	h.get(t, "/a")
	h.get(t, "/a")
	h.get(t, "/a", "Cache-Control: no-cache") // revalidated with a 304
	h.do(t, "POST", "/form")
	h.get(t, "/swr")
	h.clock.advance(5e9)
	h.get(t, "/swr") // stale, revalidated in the background
	st := h.x.Stats()
	want := Stats{Hits: 2, Misses: 2, Stale: 1, Passes: 1, Stored: 2, Objects: 2, BytesServed: 40}
	if st.Hits != want.Hits || st.Misses != want.Misses || st.Stale != want.Stale || st.Passes != want.Passes ||
		st.Stored != want.Stored || st.Objects != want.Objects || st.BytesServed != want.BytesServed {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	if st.Revalidated < 1 || st.Bytes <= 0 || st.Bytes != h.x.Size() || st.Evictions != 0 {
		t.Fatalf("stats %+v: Revalidated, Bytes or Evictions wrong", st)
	}
}

// A response whose fetch was under way when a purge (by URL, tag or
// prefix) ran is delivered but not stored: it may predate what the purge
// was for.
func TestPurgeDuringFetch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		purge func(h *harness, host string) error
	}{
		{"url", func(h *harness, host string) error { _, err := h.x.PurgeURL(host, "/slow"); return err }},
		{"tag", func(h *harness, _ string) error { h.x.PurgeTag("slow"); return nil }},
		{"prefix", func(h *harness, host string) error { _, err := h.x.BanPrefix(host, "/sl"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 4)
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			h := newHarness(t, Options{}, nil)
			t.Cleanup(free) // before the origin's Close waits for its handler
			h.o.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "max-age=600")
				w.Header().Set("Cache-Tag", "slow")
				w.Header().Set("Content-Length", "4")
				w.WriteHeader(200)
				io.WriteString(w, "bo")
				w.(http.Flusher).Flush()
				started <- struct{}{}
				<-release
				io.WriteString(w, "dy")
			})
			host := strings.TrimPrefix(h.url, "http://")
			done := make(chan error, 1)
			go func() {
				_, body, err := h.try("GET", "/slow")
				if err == nil && body != "body" {
					err = fmt.Errorf("body %q", body)
				}
				done <- err
			}()
			<-started
			// The header has reached the cache once the entry in flight
			// has its response.
			waitPublished(t, h.x)
			if err := tc.purge(h, host); err != nil {
				t.Fatal(err)
			}
			free()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			started <- struct{}{} // the next fetch does not wait
			if !h.fetched(t, "/slow") {
				t.Fatal("the response fetched during the purge was stored")
			}
			if h.fetched(t, "/slow") {
				t.Fatal("the next response was not stored")
			}
		})
	}
}

// waitPublished waits until a fetch in flight has its response header.
func waitPublished(t *testing.T, x *Cache) {
	t.Helper()
	sluicetest.WaitFor(t, "the response header in flight", func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		for _, e := range x.inflight {
			if e.meta.Load() != nil {
				return true
			}
		}
		return false
	})
}

// The cache records each request's outcome under StatusKey, where a
// component before it (an access log) reads it once the response is
// committed.
func TestStatusValue(t *testing.T) {
	var mu sync.Mutex
	var got []string
	recorder := pipe.Pipe(func(c *pipe.Conn) bool {
		c.AddFilter(func(c *pipe.Conn) pipe.Wrap {
			mu.Lock()
			got = append(got, string(c.Request.Method)+" "+string(c.Request.Target)+" "+c.Value(StatusKey))
			mu.Unlock()
			return nil
		})
		return true
	})
	var h *harness
	h = newHarness(t, Options{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"1"`)
		w.Header().Set("Cache-Control", "max-age=10, stale-while-revalidate=600")
		if r.Header.Get("If-None-Match") == `"1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprintf(w, "n=%d", h.o.n.Load())
	})
	// A second server with the recorder before the same cache.
	p, err := proxy.New(proxy.Options{Upstreams: []string{h.o.srv.URL}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	h.url = sluicetest.NewServer(t, pipe.Handler(pipe.Chain{recorder, h.x, p})).URL
	h.get(t, "/a")
	h.get(t, "/a")
	h.get(t, "/a", "Cache-Control: no-cache")
	h.do(t, "POST", "/a")
	h.get(t, "/a") // the POST invalidated it
	h.clock.advance(60e9)
	h.get(t, "/a")
	h.get(t, "/a", "Cache-Control: only-if-cached, max-age=0")
	want := []string{"GET /a MISS", "GET /a HIT", "GET /a REVALIDATED", "POST /a PASS", "GET /a MISS", "GET /a STALE", "GET /a MISS"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("statuses\n%q\nwant\n%q", got, want)
	}
}
