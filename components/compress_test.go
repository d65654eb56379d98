package components

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// compressArticle is an 80 KB HTML page of news-article markup, the
// document of the compression benchmark (bench/compress.sh serves it too).
func compressArticle(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/compress/article.html")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compressBody is a test Source serving body with a Content-Type and,
// when withLength, its Content-Length. setup may adjust the response.
func compressBody(body []byte, ctype string, withLength bool, setup func(c *pipe.Conn)) pipe.Source {
	content := func(w pipe.Writer) error {
		_, err := w.Write(body)
		return err
	}
	if body == nil {
		content = nil
	}
	return func(c *pipe.Conn) pipe.Content {
		h := c.Header()
		if ctype != "" {
			h.Set("Content-Type", ctype)
		}
		if withLength {
			h.SetContentLength(int64(len(body)))
		}
		if setup != nil {
			setup(c)
		}
		return content
	}
}

// compressDecoder returns a reader decoding the content coding enc, as a
// client would.
func compressDecoder(t testing.TB, enc string, r io.Reader) io.Reader {
	t.Helper()
	var (
		d   io.Reader
		err error
	)
	switch enc {
	case "gzip":
		d, err = gzip.NewReader(r)
	case "deflate":
		d, err = zlib.NewReader(r) // the standard library's: an independent decoder
	case "br":
		d = brotli.NewReader(r)
	case "zstd":
		var zr *zstd.Decoder
		zr, err = zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if zr != nil {
			t.Cleanup(zr.Close)
		}
		d = zr
	default:
		t.Fatalf("no decoder for %q", enc)
	}
	if err != nil {
		t.Fatalf("%s decoder: %v", enc, err)
	}
	return d
}

func compressNew(t testing.TB, opts CompressOptions) pipe.Component {
	t.Helper()
	c, err := NewCompress(opts)
	return builtinComp(t, c, err)
}

var compressAll = []string{"zstd", "br", "gzip", "deflate"}

// Every coding, decoded by the client, gives back the original bytes, for
// a small page, the 80 KB article and a 1 MB body; with and without a
// Content-Length from the source.
func TestCompressRoundTrip(t *testing.T) {
	article := compressArticle(t)
	rng := rand.New(rand.NewSource(1))
	big := make([]byte, 0, 1<<20)
	for len(big) < 1<<20 { // 1 MiB: the article with random bytes sprinkled in
		big = append(big, article[:rng.Intn(len(article))]...)
		big = append(big, byte(rng.Intn(256)), byte(rng.Intn(256)))
	}
	big = big[:1<<20]
	small := []byte(strings.Repeat("<p>small but compressible</p>\n", 12))
	bodies := map[string][]byte{"small": small, "article": article, "1MB": big}
	for _, withLength := range []bool{true, false} {
		for name, body := range bodies {
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{
				compressBody(body, "text/html; charset=utf-8", withLength, nil),
				compressNew(t, CompressOptions{Encodings: compressAll}),
			})).URL

			for _, enc := range compressAll {
				t.Run(fmt.Sprintf("%s/%s/length=%v", enc, name, withLength), func(t *testing.T) {
					resp, wire := builtinDo(t, "GET", url+"/", nil, "Accept-Encoding", enc)
					if got := resp.Header.Get("Content-Encoding"); got != enc {
						t.Fatalf("Content-Encoding %q, want %q", got, enc)
					}
					if got := resp.Header.Get("Vary"); got != "Accept-Encoding" {
						t.Errorf("Vary %q", got)
					}
					if cl := resp.Header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(wire)) {
						t.Errorf("Content-Length %s for %d bytes on the wire", cl, len(wire))
					}
					if len(wire) >= len(body) {
						t.Errorf("%d bytes compressed to %d", len(body), len(wire))
					}
					got, err := io.ReadAll(compressDecoder(t, enc, bytes.NewReader(wire)))
					if err != nil {
						t.Fatalf("decoding: %v", err)
					}
					if !bytes.Equal(got, body) {
						t.Fatalf("decoded %d bytes differ from the %d sent", len(got), len(body))
					}
				})
			}
		}
	}
}

// A streamed body arrives part by part: Flush compresses what was
// written and pushes it to the client before the source writes more.
func TestCompressStreamingFlush(t *testing.T) {
	const parts = 3
	for _, enc := range compressAll {
		t.Run(enc, func(t *testing.T) {
			next := make(chan struct{})
			stream := pipe.Source(func(c *pipe.Conn) pipe.Content {
				c.Header().Set("Content-Type", "text/event-stream")
				return func(w pipe.Writer) error {
					for i := range parts {
						if i > 0 {
							<-next // the client saw the previous part
						}
						fmt.Fprintf(w, "data: part %d %s\n\n", i, strings.Repeat("x", 100))
						if err := w.Flush(); err != nil {
							return err
						}
					}
					return nil
				}
			})
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{stream, compressNew(t, CompressOptions{Encodings: compressAll})})).URL
			req, _ := http.NewRequest("GET", url+"/", nil)
			req.Header.Set("Accept-Encoding", enc)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ce := resp.Header.Get("Content-Encoding"); ce != enc {
				t.Fatalf("Content-Encoding %q", ce)
			}
			br := bufio.NewReader(compressDecoder(t, enc, resp.Body))
			for i := range parts {
				// Each part must decode while the source waits for us.
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("part %d: %v", i, err)
				}
				if want := fmt.Sprintf("data: part %d %s\n", i, strings.Repeat("x", 100)); line != want {
					t.Fatalf("part %d: %q", i, line)
				}
				if blank, _ := br.ReadString('\n'); blank != "\n" {
					t.Fatalf("part %d: no blank line: %q", i, blank)
				}
				if i < parts-1 {
					next <- struct{}{}
				}
			}
			if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
				t.Errorf("after the parts: %q, %v", rest, err)
			}
		})
	}
}

// Negotiation by Accept-Encoding (RFC 9110 §12.5.3) with the server
// preferring zstd, br, gzip.
func TestCompressNegotiation(t *testing.T) {
	article := compressArticle(t)
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{
		compressBody(article, "text/html", true, nil),
		compressNew(t, CompressOptions{}),
	})).URL

	tests := []struct {
		accept []string // Accept-Encoding field lines; nil: none
		want   string   // "" for identity
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"gzip"}, "gzip"},
		{[]string{"GZIP"}, "gzip"},
		{[]string{"x-gzip"}, "gzip"},
		{[]string{"gzip, br"}, "br"},                     // equal q: server order
		{[]string{"gzip, deflate, br, zstd"}, "zstd"},    // a browser's
		{[]string{"br;q=0.5, gzip"}, "gzip"},             // higher q wins
		{[]string{"gzip ; q=0.8 , br ; Q=0.9"}, "br"},    // whitespace, Q
		{[]string{"zstd;q=0.001, gzip;q=0.002"}, "gzip"}, // three decimals
		{[]string{"gzip;q=0"}, ""},                       // refused
		{[]string{"gzip;q=0.0, br;q=0."}, ""},            // refused, both spellings
		{[]string{"*"}, "zstd"},                          // anything: our first
		{[]string{"*;q=0"}, ""},                          // nothing (identity is what is left)
		{[]string{"*, zstd;q=0"}, "br"},                  // all but zstd
		{[]string{"br;q=0.2, *;q=0.5"}, "zstd"},          // * rates zstd above br
		{[]string{"identity"}, ""},                       // only identity
		{[]string{"identity;q=0, gzip;q=0.1"}, "gzip"},   // identity refused
		{[]string{"gzip;q=0.5, identity"}, ""},           // identity rated higher
		{[]string{"gzip;q=0.5, identity;q=0.5"}, "gzip"}, // tie: compress
		{[]string{"gzip;q=0.5, *;q=0.6"}, "zstd"},        // * rates zstd and identity: tie, compress
		{[]string{"lzma, compress"}, ""},                 // unknown codings
		{[]string{"deflate"}, ""},                        // not offered by default
		{[]string{"gzip;q=1.5"}, ""},                     // malformed q: ignored
		{[]string{"gzip;q=abc, br"}, "br"},               // malformed element ignored
		{[]string{"gzip;level=9"}, "gzip"},               // other parameters ignored
		{[]string{",, gzip ,"}, "gzip"},                  // empty elements
		{[]string{"gzip", "br"}, "br"},                   // two field lines: one list
		{[]string{"br;q=0", "gzip"}, "gzip"},             // two field lines
	}
	for _, tt := range tests {
		var hdr []string
		for _, v := range tt.accept {
			hdr = append(hdr, "Accept-Encoding", v)
		}
		resp, body := builtinDo(t, "GET", url+"/", nil, hdr...)
		got := resp.Header.Get("Content-Encoding")
		if got != tt.want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tt.accept, got, tt.want)
		}
		if got == "" && !bytes.Equal(body, article) {
			t.Errorf("Accept-Encoding %q: identity body differs", tt.accept)
		}
		if v := resp.Header.Get("Vary"); v != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q", tt.accept, v)
		}
	}
}

// What compress leaves alone, and the header fields it adjusts.
func TestCompressRules(t *testing.T) {
	page := bytes.Repeat([]byte("<p>compress me</p>\n"), 100)
	article := compressArticle(t)
	setStatus := func(code int) func(c *pipe.Conn) { return func(c *pipe.Conn) { c.SetStatus(code) } }
	setHeader := func(kv ...string) func(c *pipe.Conn) {
		return func(c *pipe.Conn) {
			for i := 0; i < len(kv); i += 2 {
				c.Header().Add(kv[i], kv[i+1])
			}
		}
	}
	tests := []struct {
		name       string
		body       []byte
		ctype      string
		withLength bool
		setup      func(c *pipe.Conn)
		opts       CompressOptions
		method     string
		wantCE     string // Content-Encoding expected
		wantVary   string
		want       map[string]string // other fields expected ("" absent)
	}{
		{name: "compresses", body: page, ctype: "text/html", withLength: true, wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "compresses long", body: article, ctype: "text/html", withLength: true, wantCE: "gzip",
			wantVary: "Accept-Encoding", want: map[string]string{"Content-Length": ""}}, // chunked
		{name: "already encoded", body: page, ctype: "text/html", withLength: true, setup: setHeader("Content-Encoding", "br"),
			wantCE: "br", want: map[string]string{"Content-Length": fmt.Sprint(len(page))}},
		{name: "identity encoding", body: page, ctype: "text/html", setup: setHeader("Content-Encoding", "identity"),
			wantCE: "gzip", wantVary: "Accept-Encoding"},
		// A 206 or 304 of what compress would encode varies with
		// Accept-Encoding too.
		{name: "206", body: page, ctype: "text/html", withLength: true, setup: setStatus(206), wantVary: "Accept-Encoding"},
		{name: "206 of a page", body: page[:100], ctype: "text/html", withLength: true,
			setup: func(c *pipe.Conn) { c.SetStatus(206); c.Header().Set("Content-Range", "bytes 0-99/1900") }, wantVary: "Accept-Encoding"},
		{name: "206 of a small page", body: page[:100], ctype: "text/html", withLength: true,
			setup: func(c *pipe.Conn) { c.SetStatus(206); c.Header().Set("Content-Range", "bytes 0-99/200") }},
		{name: "206 of an image", body: page[:100], ctype: "image/png", withLength: true,
			setup: func(c *pipe.Conn) { c.SetStatus(206); c.Header().Set("Content-Range", "bytes 0-99/1900") }},
		{name: "206 multipart", body: page, ctype: "multipart/byteranges; boundary=x", withLength: true, setup: setStatus(206),
			wantVary: "Accept-Encoding"},
		{name: "206 Vary merged", body: page[:100], ctype: "text/html", withLength: true,
			setup: func(c *pipe.Conn) {
				c.SetStatus(206)
				c.Header().Set("Content-Range", "bytes 0-99/1900")
				c.Header().Set("Vary", "Accept")
			}, wantVary: "Accept, Accept-Encoding"},
		{name: "304 without type", setup: setStatus(304), wantVary: "Accept-Encoding"},
		{name: "304 of an image", ctype: "image/png", setup: setStatus(304)},
		{name: "304 of a small page", ctype: "text/html", setup: func(c *pipe.Conn) { c.SetStatus(304); c.Header().SetContentLength(100) }},
		{name: "204", ctype: "text/html", setup: setStatus(204)},
		{name: "304", ctype: "text/html", setup: func(c *pipe.Conn) { c.SetStatus(304); c.Header().Set("ETag", `"v1"`) },
			wantVary: "Accept-Encoding", want: map[string]string{"ETag": `W/"v1"`}},
		{name: "404 page", body: page, ctype: "text/html", setup: setStatus(404), wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "image", body: page, ctype: "image/png", withLength: true},
		{name: "no type", body: page, withLength: true},
		{name: "type with parameters", body: page, ctype: "Text/Plain; charset=utf-8", wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "json", body: page, ctype: "application/json", wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "svg", body: page, ctype: "image/svg+xml", wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "custom types", body: page, ctype: "application/x-custom", opts: CompressOptions{Types: []string{"application/x-custom"}},
			wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "custom types exclude html", body: page, ctype: "text/html", opts: CompressOptions{Types: []string{"application/*"}}},
		{name: "below min size", body: page[:200], ctype: "text/html", withLength: true},
		{name: "min size set", body: page[:200], ctype: "text/html", withLength: true, opts: CompressOptions{MinSize: 100},
			wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "min size -1", body: page[:10], ctype: "text/html", withLength: true, opts: CompressOptions{MinSize: -1},
			wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "small, length unknown", body: page[:200], ctype: "text/html", wantCE: "gzip", wantVary: "Accept-Encoding"},
		{name: "strong ETag weakened", body: page, ctype: "text/html", setup: setHeader("ETag", `"abc"`), wantCE: "gzip",
			wantVary: "Accept-Encoding", want: map[string]string{"ETag": `W/"abc"`}},
		{name: "weak ETag kept", body: page, ctype: "text/html", setup: setHeader("ETag", `W/"abc"`), wantCE: "gzip",
			wantVary: "Accept-Encoding", want: map[string]string{"ETag": `W/"abc"`}},
		{name: "Vary merged", body: page, ctype: "text/html", setup: setHeader("Vary", "Origin"), wantCE: "gzip",
			wantVary: "Origin, Accept-Encoding"},
		{name: "Vary already", body: page, ctype: "text/html", setup: setHeader("Vary", "accept-encoding, Origin"), wantCE: "gzip",
			wantVary: "accept-encoding, Origin"},
		{name: "Vary star", body: page, ctype: "text/html", setup: setHeader("Vary", "*"), wantCE: "gzip", wantVary: "*"},
		{name: "Accept-Ranges dropped", body: page, ctype: "text/html", setup: setHeader("Accept-Ranges", "bytes"), wantCE: "gzip",
			wantVary: "Accept-Encoding", want: map[string]string{"Accept-Ranges": ""}},
		{name: "HEAD like GET", body: page, ctype: "text/html", withLength: true, setup: setHeader("ETag", `"h"`), method: "HEAD",
			wantCE: "gzip", wantVary: "Accept-Encoding", want: map[string]string{"Content-Length": "", "ETag": `W/"h"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Encodings = []string{"gzip"}
			url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{compressBody(tt.body, tt.ctype, tt.withLength, tt.setup), compressNew(t, opts)})).URL
			method := tt.method
			if method == "" {
				method = "GET"
			}
			resp, wire := builtinDo(t, method, url+"/", nil, "Accept-Encoding", "gzip")
			if got := resp.Header.Get("Content-Encoding"); got != tt.wantCE {
				t.Errorf("Content-Encoding %q, want %q", got, tt.wantCE)
			}
			if got := strings.Join(resp.Header.Values("Vary"), ", "); got != tt.wantVary {
				t.Errorf("Vary %q, want %q", got, tt.wantVary)
			}
			if cl := resp.Header.Get("Content-Length"); method == "GET" && cl != "" && cl != fmt.Sprint(len(wire)) {
				t.Errorf("Content-Length %s for %d bytes", cl, len(wire))
			}
			for name, want := range tt.want {
				if got := resp.Header.Get(name); got != want {
					t.Errorf("%s %q, want %q", name, got, want)
				}
			}
			switch {
			case method == "HEAD" || resp.StatusCode == 204 || resp.StatusCode == 304:
				if len(wire) != 0 {
					t.Errorf("%d body bytes", len(wire))
				}
			case tt.wantCE == "gzip":
				got, err := io.ReadAll(compressDecoder(t, "gzip", bytes.NewReader(wire)))
				if err != nil || !bytes.Equal(got, tt.body) {
					t.Errorf("decoded %d bytes (%v), want the %d sent", len(got), err, len(tt.body))
				}
			default:
				if !bytes.Equal(wire, tt.body) {
					t.Errorf("body changed: %d bytes, want %d", len(wire), len(tt.body))
				}
			}
		})
	}
}

// Behind files, every response whose content compress could have encoded
// for some Accept-Encoding says Vary: Accept-Encoding: ranges of a text
// file (206 lacked it), a listing's 304, the 200s;
// and none that it never encodes does.
func TestCompressVaryBehindFiles(t *testing.T) {
	page := strings.Repeat("<p>a page of text</p>\n", 100)
	dir := filesTree(t, map[string]string{
		"page.html": page, "tiny.html": "<p>tiny</p>", "photo.png": strings.Repeat("\x89PNG", 400), "list/a.txt": "a",
	})
	base := filesServe(t, pipe.Chain{filesNew(t, FilesOptions{Root: dir, Options: files.Options{Browse: true}}), compressNew(t, CompressOptions{Encodings: []string{"gzip"}})})
	tests := []struct {
		path   string
		hdr    []string
		status int
		vary   string
	}{
		{"/page.html", nil, 200, "Accept-Encoding"},
		{"/page.html", []string{"Accept-Encoding", "gzip"}, 200, "Accept-Encoding"},
		{"/page.html", []string{"Range", "bytes=0-9"}, 206, "Accept-Encoding"},
		{"/page.html", []string{"Range", "bytes=0-9", "Accept-Encoding", "gzip"}, 206, "Accept-Encoding"},
		{"/page.html", []string{"Range", "bytes=0-9,200-209"}, 206, "Accept-Encoding"},
		{"/page.html", []string{"If-None-Match", "*"}, 304, "Accept-Encoding"},
		{"/list/", nil, 200, "Accept, Accept-Encoding"},
		{"/list/", []string{"If-None-Match", "*"}, 304, "Accept, Accept-Encoding"},
		{"/tiny.html", []string{"Accept-Encoding", "gzip"}, 200, ""},
		{"/tiny.html", []string{"Range", "bytes=0-3"}, 206, ""},
		{"/photo.png", []string{"Range", "bytes=0-3"}, 206, ""},
		{"/photo.png", []string{"If-None-Match", "*"}, 304, ""},
		{"/missing", nil, 404, ""},
	}
	for _, tt := range tests {
		resp, _ := sluicetest.Get(t, base+tt.path, tt.hdr...)
		if got := strings.Join(resp.Header.Values("Vary"), ", "); resp.StatusCode != tt.status || got != tt.vary {
			t.Errorf("GET %s %q: %d with Vary %q, want %d with %q", tt.path, tt.hdr, resp.StatusCode, got, tt.status, tt.vary)
		}
	}
}

// An empty body still decodes for every coding.
func TestCompressEmptyBody(t *testing.T) {
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{compressBody(nil, "text/plain", false, nil), compressNew(t, CompressOptions{Encodings: compressAll})})).URL
	for _, enc := range compressAll {
		resp, wire := builtinDo(t, "GET", url+"/", nil, "Accept-Encoding", enc)
		if resp.Header.Get("Content-Encoding") != enc {
			t.Fatalf("%s: Content-Encoding %q", enc, resp.Header.Get("Content-Encoding"))
		}
		got, err := io.ReadAll(compressDecoder(t, enc, bytes.NewReader(wire)))
		if err != nil || len(got) != 0 {
			t.Errorf("%s: %q, %v", enc, got, err)
		}
	}
}

// Encoders go back to the pool and are reused: concurrent requests with
// every coding each get a correct, independent stream.
func TestCompressConcurrent(t *testing.T) {
	article := compressArticle(t)
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{compressBody(article, "text/html", true, nil), compressNew(t, CompressOptions{Encodings: compressAll})})).URL
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			enc := compressAll[i%len(compressAll)]
			for range 5 {
				req, _ := http.NewRequest("GET", url+"/", nil)
				req.Header.Set("Accept-Encoding", enc)
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(compressDecoder(t, enc, resp.Body))
				resp.Body.Close()
				if err != nil || !bytes.Equal(got, article) {
					errs <- fmt.Errorf("%s: %d bytes, %v", enc, len(got), err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestCompressOptionErrors(t *testing.T) {
	tests := []struct {
		opts CompressOptions
		want string
	}{
		{CompressOptions{Encodings: []string{"lzma"}}, `compress: unknown encoding "lzma"`},
		{CompressOptions{Encodings: []string{"gzip", "GZIP"}}, `compress: encoding "GZIP" listed twice`},
		{CompressOptions{Levels: map[string]int{"gzip": 0}}, "compress: gzip level 0 out of range 1..9"},
		{CompressOptions{Levels: map[string]int{"br": 12}}, "compress: br level 12 out of range 0..11"},
		{CompressOptions{Levels: map[string]int{"zstd": 23}}, "compress: zstd level 23 out of range 1..22"},
		{CompressOptions{Levels: map[string]int{"lzma": 1}}, `compress: level for unknown encoding "lzma"`},
		{CompressOptions{Types: []string{"text"}}, `compress: type "text" is not type/subtype or type/*`},
		{CompressOptions{Types: []string{"text/html; charset=utf-8"}}, "compress: type"},
	}
	for _, tt := range tests {
		_, err := NewCompress(tt.opts)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("NewCompress(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
	if _, err := NewCompress(CompressOptions{Encodings: compressAll, Levels: map[string]int{"gzip": 9, "deflate": 1, "br": 0, "zstd": 22}}); err != nil {
		t.Errorf("extreme levels: %v", err)
	}
}

// builtinSink is an engine.ResponseWriter that counts and drops the
// response, to measure a pipeline's own cost without a network.
type builtinSink struct {
	hdr    engine.Header
	status int
	n      int64
	names  []string
}

func (s *builtinSink) Header() *engine.Header { return &s.hdr }
func (s *builtinSink) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *builtinSink) Write(p []byte) (int, error)       { s.n += int64(len(p)); return len(p), nil }
func (s *builtinSink) WriteString(p string) (int, error) { s.n += int64(len(p)); return len(p), nil }
func (s *builtinSink) Flush() error                      { return nil }

func (s *builtinSink) reset() {
	s.names = s.names[:0]
	s.hdr.Values(func(name, _ string) bool { s.names = append(s.names, name); return true })
	for _, n := range s.names {
		s.hdr.Del(n)
	}
	s.hdr.SetContentLength(-1)
	s.status, s.n = 0, 0
}

// builtinBench runs comp as the engine would for a GET / with the given
// header fields, b.N times, reporting allocations and output bytes.
func builtinBench(b *testing.B, comp pipe.Component, fields ...engine.Field) {
	req := &engine.Request{Method: []byte("GET"), Target: []byte("/"), RawPath: []byte("/"), Path: []byte("/"),
		Host: []byte("bench"), ProtoMinor: 1, Fields: fields}
	h := pipe.Handler(comp)
	sink := &builtinSink{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sink.reset()
		h.Serve(sink, req)
	}
	b.ReportMetric(float64(sink.n), "out-bytes/op")
}

// The route of the nginx comparison: the 80 KB article from memory,
// compressed with gzip level 1 (nginx `gzip on`).
func BenchmarkCompressArticleGzip1(b *testing.B) {
	article := compressArticle(b)
	comp := pipe.Chain{
		compressBody(article, "text/html", true, nil),
		compressNew(b, CompressOptions{Encodings: []string{"gzip"}, Levels: map[string]int{"gzip": 1}}),
	}
	b.SetBytes(int64(len(article)))
	builtinBench(b, comp, engine.Field{Name: []byte("Accept-Encoding"), Value: []byte("gzip, deflate, br, zstd")})
}

// Each coding at its default level on the article.
func BenchmarkCompressArticle(b *testing.B) {
	article := compressArticle(b)
	for _, enc := range compressAll {
		b.Run(enc, func(b *testing.B) {
			comp := pipe.Chain{compressBody(article, "text/html", true, nil), compressNew(b, CompressOptions{Encodings: []string{enc}})}
			b.SetBytes(int64(len(article)))
			builtinBench(b, comp, engine.Field{Name: []byte("Accept-Encoding"), Value: []byte(enc)})
		})
	}
}

// Negotiation on a browser's Accept-Encoding allocates nothing.
func TestCompressNegotiateAllocs(t *testing.T) {
	f, _ := NewCompress(CompressOptions{Encodings: compressAll})
	_ = f
	offers := []string{"zstd", "br", "gzip", "identity"}
	req := &engine.Request{Fields: []engine.Field{
		{Name: []byte("Host"), Value: []byte("x")},
		{Name: []byte("Accept-Encoding"), Value: []byte("gzip, deflate, br;q=0.9, zstd;q=0.8, *;q=0.1")},
	}}
	if i := compressNegotiate(req, offers); i != 2 {
		t.Fatalf("chose %d, want 2 (gzip)", i)
	}
	if n := testing.AllocsPerRun(100, func() { compressNegotiate(req, offers) }); n != 0 {
		t.Errorf("%v allocations per negotiation", n)
	}
}

func ExampleNewCompress() {
	page := strings.Repeat("<p>Every route is a pipeline of small components.</p>\n", 100)
	text, _ := NewText(TextOptions{Body: page, ContentType: "text/html; charset=utf-8"})
	compress, err := NewCompress(CompressOptions{Encodings: []string{"br", "gzip"}})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{text, compress}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

	req, _ := http.NewRequest("GET", url+"/", nil)
	req.Header.Set("Accept-Encoding", "gzip, br")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(brotli.NewReader(resp.Body))
	fmt.Println(resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
	fmt.Println(len(page), "bytes sent compressed, decoded:", string(body) == page)
	// Output:
	// br Accept-Encoding
	// 5400 bytes sent compressed, decoded: true
}
