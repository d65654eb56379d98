package cache_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/cache"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// observer is a filter placed before the cache: it records, per
// response, the bytes and the Content-Encoding it sees.
type observer struct {
	mu   sync.Mutex
	seen []string
}

func (o *observer) filter(c *pipe.Conn) pipe.Wrap {
	ce := c.Header().Get("Content-Encoding")
	return func(next pipe.Writer) pipe.Writer { return &observed{o: o, next: next, ce: ce} }
}

type observed struct {
	o    *observer
	next pipe.Writer
	ce   string
	b    strings.Builder
}

func (w *observed) Write(p []byte) (int, error) { w.b.Write(p); return w.next.Write(p) }
func (w *observed) Flush() error                { return w.next.Flush() }
func (w *observed) Close() error {
	w.o.mu.Lock()
	w.o.seen = append(w.o.seen, w.ce+":"+w.b.String())
	w.o.mu.Unlock()
	return nil
}

// rawGet gets url with fields, no decompression, and returns the status,
// the header and the raw body.
func rawGet(t *testing.T, url string, fields ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for _, f := range fields {
		n, v, _ := strings.Cut(f, ": ")
		req.Header.Set(n, v)
	}
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// A hit and a miss give the client the same bytes; a filter before the
// cache sees the same bytes and header on both; compress after the cache
// is stored (the hit is gzip without compressing again).
func TestPlacementSameBytes(t *testing.T) {
	obs := &observer{}
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Repeat("a page from the text source ", 40)
	text, err := components.NewText(components.TextOptions{Body: page})
	if err != nil {
		t.Fatal(err)
	}
	headers, err := components.NewHeaders(components.HeadersOptions{Set: map[string]string{"Cache-Control": "max-age=60"}})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := components.NewCompress(components.CompressOptions{Encodings: []string{"gzip"}})
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Filter(obs.filter), c, headers, comp, text})).URL
	r1, miss := rawGet(t, url+"/", "Accept-Encoding: gzip")
	r2, hit := rawGet(t, url+"/", "Accept-Encoding: gzip")
	if miss != hit || r1.Header.Get("Content-Encoding") != "gzip" || r2.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("miss and hit differ: %d and %d bytes, %q and %q", len(miss), len(hit), r1.Header.Get("Content-Encoding"), r2.Header.Get("Content-Encoding"))
	}
	if !strings.HasPrefix(r2.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("second answer %q", r2.Header.Get("Cache-Status"))
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.seen) != 2 || obs.seen[0] != obs.seen[1] || !strings.HasPrefix(obs.seen[0], "gzip:") || obs.seen[0] != "gzip:"+miss {
		t.Errorf("the filter before the cache saw %d responses, differing or not what was sent", len(obs.seen))
	}
}

// The cache works before a template source as before a proxy.
func TestBeforeTemplate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "page.html")
	if err := os.WriteFile(file, []byte(`<p>{{"templated"}}</p>`), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl, err := components.NewTemplate(components.TemplateOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	headers, err := components.NewHeaders(components.HeadersOptions{Set: map[string]string{"Cache-Control": "max-age=60"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{c, headers, tpl})).URL
	_, first := rawGet(t, url+"/x")
	r2, second := rawGet(t, url+"/x")
	if first != second || !strings.Contains(first, "templated") || !strings.HasPrefix(r2.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("first %q, second %q (%s)", first, second, r2.Header.Get("Cache-Status"))
	}
}
