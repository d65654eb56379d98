//lint:file-ignore SA1019 the test drives x/net/http2's client on purpose.

package daemon

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
)

// h3Site is a TLS site served with http3: true, with routes for the
// components the HTTP/3 tests ask: files (a 100 KB file and a 4 MiB
// one), compress, cgi, proxy (an upstream that streams, sends trailers
// and hashes what it is sent) and an error page.
type h3Site struct {
	*tlsSite
	big, huge []byte
	mu        sync.Mutex
	release   chan struct{} // closed to let the streaming upstream finish
	once      *sync.Once
	srv       *Server
	tcp       net.Addr
}

func newH3Site(t *testing.T, listenExtra string) *h3Site {
	t.Helper()
	site := &h3Site{tlsSite: newTLSSite(t), release: make(chan struct{}), once: new(sync.Once)}
	pub := filepath.Join(site.dir, "public")
	os.MkdirAll(pub, 0o755)
	site.big = bytes.Repeat([]byte("0123456789"), 10000)
	site.huge = bytes.Repeat([]byte("abcdefghijklmnop"), 256<<10)
	writeFile(t, filepath.Join(pub, "big.txt"), string(site.big))
	writeFile(t, filepath.Join(pub, "huge.bin"), string(site.huge))
	writeFile(t, filepath.Join(site.dir, "404.html"), "<p>no such page</p>\n")
	script := filepath.Join(site.dir, "env.cgi")
	writeFile(t, script, "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\necho \"$SERVER_PROTOCOL $REQUEST_METHOD $QUERY_STRING\"\ncat\n")
	os.Chmod(script, 0o755)
	addr := filepath.Join(site.dir, "addr.cgi")
	writeFile(t, addr, "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nprintf '%s' \"$REMOTE_ADDR:$REMOTE_PORT\"\n")
	os.Chmod(addr, 0o755)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/up/stream":
			io.WriteString(w, "first;")
			w.(http.Flusher).Flush()
			site.mu.Lock()
			release := site.release
			site.mu.Unlock()
			<-release
			io.WriteString(w, "second")
		case "/up/trailers":
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "body")
			w.(http.Flusher).Flush()
			w.Header().Set("X-Sum", "abc")
		case "/up/untyped":
			w.Header()["Content-Type"] = nil // no type, and no sniffing here
			io.WriteString(w, "<html><script>alert(1)</script>")
		case "/up/sha":
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%d %s %v", n, hex.EncodeToString(h.Sum(nil)), err)
		default:
			w.Header().Set("Keep-Alive", "timeout=5") // hop-by-hop: not passed on
			fmt.Fprintf(w, "upstream %s %s early=%q", r.Proto, r.URL.Path, r.Header.Get("Early-Data"))
		}
	}))
	t.Cleanup(func() {
		site.finishStream()
		up.Close()
	})
	writeFile(t, site.file, `listen:
  - {address: "127.0.0.1:0", tls: {cert: a.example.crt, key: a.example.key}, http3: `+listenExtra+`}
limits: {max_body: 64MiB}
error_pages:
  404: ./404.html
routes:
  - match: /up/
    pipeline:
      - proxy: `+up.URL+`
  - match: /cgi
    pipeline:
      - cgi: ./env.cgi
  - match: /addr
    pipeline:
      - cgi: ./addr.cgi
  - match: /proto
    protocol: http/3
    pipeline: [{text: h3}]
  - match: /proto
    pipeline: [{text: other}]
  - match: /
    pipeline:
      - files: ./public
      - compress: [gzip]
`)
	site.srv, _ = newServer(t, fileLoad(site.file))
	start(t, site.srv)
	site.tcp = onlyAddr(t, site.srv)
	return site
}

// finishStream lets the streaming upstream send the rest of its answer.
func (s *h3Site) finishStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.once.Do(func() { close(s.release) })
}

// newStream makes the streaming upstream hold its answer again, until
// the next finishStream.
func (s *h3Site) newStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release, s.once = make(chan struct{}), new(sync.Once)
}

// base is the site's URL: the TCP listener's port, which HTTP/3 shares.
func (s *h3Site) base() string { return "https://" + s.tcp.String() }

// h3Transport returns an HTTP/3 client for the site.
func (s *h3Site) h3Transport(t *testing.T) *http3.Transport {
	tr := &http3.Transport{TLSClientConfig: s.ca.ClientConfig("a.example"), DisableCompression: true}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// clients returns a client per protocol, by name: HTTP/1.1, HTTP/2 and
// HTTP/3.
func (s *h3Site) clients(t *testing.T) []struct {
	proto  string
	client *http.Client
} {
	h1 := &http.Transport{TLSClientConfig: s.ca.ClientConfig("a.example"), DisableCompression: true, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	h2 := &http2.Transport{TLSClientConfig: s.ca.ClientConfig("a.example"), DisableCompression: true}
	t.Cleanup(func() {
		h1.CloseIdleConnections()
		h2.CloseIdleConnections()
	})
	return []struct {
		proto  string
		client *http.Client
	}{
		{"HTTP/1.1", &http.Client{Transport: h1}},
		{"HTTP/2.0", &http.Client{Transport: h2}},
		{"HTTP/3.0", &http.Client{Transport: s.h3Transport(t)}},
	}
}

// One table of components, asked over HTTP/1.1, HTTP/2 and HTTP/3 with
// the same assertions: files with a range and conditionals, compress,
// cgi, proxy (streaming and trailers), an error page, and large bodies
// both ways. HTTP/1.1 and HTTP/2 answers announce HTTP/3 with Alt-Svc on
// the same port; HTTP/3 answers do not.
func TestHTTP3Components(t *testing.T) {
	site := newH3Site(t, "true")
	altSvc := `h3=":` + strconv.Itoa(site.tcp.(*net.TCPAddr).Port) + `"; ma=86400`
	etag := ""
	cases := []struct {
		name, method, path, body string
		fields                   []string
		check                    func(proto string, resp *http.Response, b []byte) string // what is wrong, or ""
	}{
		{"range", "GET", "/big.txt", "", []string{"Range", "bytes=1000-1009"}, func(_ string, resp *http.Response, b []byte) string {
			etag = resp.Header.Get("ETag")
			if resp.StatusCode != 206 || string(b) != "0123456789" || resp.Header.Get("Content-Range") != "bytes 1000-1009/100000" || etag == "" {
				return fmt.Sprintf("%d %q %q, ETag %q", resp.StatusCode, b, resp.Header.Get("Content-Range"), etag)
			}
			return ""
		}},
		{"if-none-match", "GET", "/big.txt", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if resp.StatusCode != 304 || len(b) != 0 {
				return fmt.Sprintf("%d, %d bytes", resp.StatusCode, len(b))
			}
			return ""
		}},
		{"compress", "GET", "/big.txt", "", []string{"Accept-Encoding", "gzip"}, func(_ string, resp *http.Response, b []byte) string {
			if resp.Header.Get("Content-Encoding") != "gzip" {
				return "Content-Encoding " + resp.Header.Get("Content-Encoding")
			}
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return err.Error()
			}
			if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, site.big) {
				return fmt.Sprintf("%d bytes after gunzip, want %d", len(plain), len(site.big))
			}
			return ""
		}},
		{"cgi", "POST", "/cgi?x=1", "posted", nil, func(proto string, resp *http.Response, b []byte) string {
			if want := proto + " POST x=1\nposted"; resp.StatusCode != 200 || string(b) != want {
				return fmt.Sprintf("%d %q, want %q", resp.StatusCode, b, want)
			}
			return ""
		}},
		{"proxy", "GET", "/up/x", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if resp.StatusCode != 200 || string(b) != `upstream HTTP/1.1 /up/x early=""` || resp.Header.Get("Keep-Alive") != "" {
				return fmt.Sprintf("%d %q, Keep-Alive %q", resp.StatusCode, b, resp.Header.Get("Keep-Alive"))
			}
			return ""
		}},
		{"trailers", "GET", "/up/trailers", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if string(b) != "body" || resp.Trailer.Get("X-Sum") != "abc" {
				return fmt.Sprintf("%q, trailer %q", b, resp.Trailer)
			}
			return ""
		}},
		{"protocol matcher", "GET", "/proto", "", nil, func(proto string, resp *http.Response, b []byte) string {
			want := "other"
			if proto == "HTTP/3.0" {
				want = "h3"
			}
			if string(b) != want {
				return fmt.Sprintf("%q, want %q", b, want)
			}
			return ""
		}},
		{"no content type", "GET", "/up/untyped", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if ct, ok := resp.Header["Content-Type"]; ok || !strings.HasPrefix(string(b), "<html>") {
				return fmt.Sprintf("Content-Type %q (sniffed?), %q", ct, b)
			}
			return ""
		}},
		{"head", "HEAD", "/big.txt", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if resp.StatusCode != 200 || resp.ContentLength != int64(len(site.big)) || len(b) != 0 {
				return fmt.Sprintf("%d, Content-Length %d, %d bytes", resp.StatusCode, resp.ContentLength, len(b))
			}
			return ""
		}},
		{"upload of unknown length", "POST", "/up/sha", string(site.big), nil, func(_ string, resp *http.Response, b []byte) string {
			sum := sha256.Sum256(site.big)
			if want := fmt.Sprintf("%d %x <nil>", len(site.big), sum); resp.StatusCode != 200 || string(b) != want {
				return fmt.Sprintf("%d %q, want %q", resp.StatusCode, b, want)
			}
			return ""
		}},
		{"dot segments", "GET", "/a/../big.txt", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if resp.StatusCode != 200 || len(b) != len(site.big) {
				return fmt.Sprintf("%d, %d bytes: /a/../big.txt is /big.txt", resp.StatusCode, len(b))
			}
			return ""
		}},
		{"above the root", "GET", "/../public/big.txt", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if resp.StatusCode != 400 {
				return fmt.Sprintf("%d, want 400", resp.StatusCode)
			}
			return ""
		}},
		{"error page", "GET", "/missing", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if resp.StatusCode != 404 || !strings.Contains(string(b), "no such page") {
				return fmt.Sprintf("%d %q", resp.StatusCode, b)
			}
			return ""
		}},
		{"large download", "GET", "/huge.bin", "", nil, func(_ string, resp *http.Response, b []byte) string {
			if resp.StatusCode != 200 || !bytes.Equal(b, site.huge) {
				return fmt.Sprintf("%d, %d bytes, want %d", resp.StatusCode, len(b), len(site.huge))
			}
			return ""
		}},
		{"large upload", "POST", "/up/sha", string(site.huge), nil, func(_ string, resp *http.Response, b []byte) string {
			sum := sha256.Sum256(site.huge)
			if want := fmt.Sprintf("%d %x <nil>", len(site.huge), sum); resp.StatusCode != 200 || string(b) != want {
				return fmt.Sprintf("%d %q, want %q", resp.StatusCode, b, want)
			}
			return ""
		}},
	}
	for _, c := range site.clients(t) {
		t.Run(c.proto, func(t *testing.T) {
			for _, tc := range cases {
				var body io.Reader = strings.NewReader(tc.body)
				if tc.name == "upload of unknown length" {
					body = io.MultiReader(body) // a length the client cannot tell: chunked, or DATA frames to the end
				}
				req, _ := http.NewRequest(tc.method, site.base()+tc.path, body)
				for i := 0; i+1 < len(tc.fields); i += 2 {
					req.Header.Set(tc.fields[i], tc.fields[i+1])
				}
				if tc.name == "if-none-match" {
					req.Header.Set("If-None-Match", etag)
				}
				resp, err := c.client.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if resp.Proto != c.proto {
					t.Fatalf("%s: answered over %s", tc.name, resp.Proto)
				}
				if msg := tc.check(c.proto, resp, b); msg != "" {
					t.Errorf("%s: %s", tc.name, msg)
				}
				want := altSvc
				if c.proto == "HTTP/3.0" || tc.name == "above the root" { // the engine's refusal, before the routes
					want = ""
				}
				if got := resp.Header.Get("Alt-Svc"); got != want {
					t.Errorf("%s: Alt-Svc %q, want %q", tc.name, got, want)
				}
			}
		})
	}

	// Streaming: the upstream's first part reaches the HTTP/3 client
	// while the upstream still holds the rest.
	resp, err := (&http.Client{Transport: site.h3Transport(t)}).Get(site.base() + "/up/stream")
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("first;"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first;" {
		t.Fatalf("streaming: first part %q, %v", first, err)
	}
	site.finishStream()
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(rest) != "second" {
		t.Errorf("streaming: the rest is %q", rest)
	}

	// A header section past max_header (16 KiB) is answered 431, as over
	// HTTP/1.1 (Go's HTTP/2 client will not send it).
	req, _ := http.NewRequest("GET", site.base()+"/big.txt", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 20<<10))
	resp, err = (&http.Client{Transport: site.h3Transport(t)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 431 {
		t.Errorf("a 20 KiB header over HTTP/3: %d, want 431", resp.StatusCode)
	}
}

// Large bodies both ways over HTTP/3 stream through in bounded memory:
// a 60 MiB upload through proxy (its upstream hashes it) and a 60 MiB
// file downloaded, each on a client whose windows are 1 MiB a stream
// and 4 MiB a connection, while the process's live heap (the server's
// and the client's, sampled after a collection every 20 ms) grows by
// less than 24 MiB: nothing holds a body whole.
func TestHTTP3LargeBodiesBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 120 MiB")
	}
	site := newH3Site(t, "true")
	const size = 60 << 20
	pattern := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	f, err := os.Create(filepath.Join(site.dir, "public", "large.bin"))
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.New()
	for off := 0; off < size; off += len(pattern) {
		f.Write(pattern)
		want.Write(pattern)
	}
	f.Close()
	sum := hex.EncodeToString(want.Sum(nil))

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: pc}
	t.Cleanup(func() { qt.Close(); pc.Close() })
	ua, _ := net.ResolveUDPAddr("udp", site.tcp.String())
	tlsConf := site.ca.ClientConfig("a.example")
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	conn, err := qt.Dial(context.Background(), ua, tlsConf, &quic.Config{
		InitialStreamReceiveWindow: 1 << 20, MaxStreamReceiveWindow: 1 << 20,
		InitialConnectionReceiveWindow: 4 << 20, MaxConnectionReceiveWindow: 4 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	cc := (&http3.Transport{}).NewClientConn(conn)

	liveHeap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base := liveHeap()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if h := liveHeap(); h > peak.Load() {
				peak.Store(h)
			}
		}
	}()

	// The upload, from a reader that holds 64 KiB.
	up := io.LimitReader(&repeatReader{p: pattern}, size)
	req, _ := http.NewRequest("POST", site.base()+"/up/sha", up)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if w := fmt.Sprintf("%d %s <nil>", size, sum); resp.StatusCode != 200 || string(got) != w {
		t.Errorf("upload: %d %q, want %q", resp.StatusCode, got, w)
	}
	// The download, hashed as it comes.
	req, _ = http.NewRequest("GET", site.base()+"/large.bin", nil)
	resp, err = cc.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || n != size || hex.EncodeToString(h.Sum(nil)) != sum {
		t.Errorf("download: %d bytes, %v, sum match %v", n, err, hex.EncodeToString(h.Sum(nil)) == sum)
	}
	close(stop)
	<-sampled
	growth := int64(peak.Load()) - int64(base)
	t.Logf("live heap %d KiB at the start, peak growth %d KiB over 2 × %d MiB", base>>10, growth>>10, size>>20)
	if growth > 24<<20 {
		t.Errorf("the live heap grew by %d MiB moving 60 MiB each way, want under 24", growth>>20)
	}
}

// repeatReader reads p over and over.
type repeatReader struct {
	p   []byte
	off int
}

func (r *repeatReader) Read(b []byte) (int, error) {
	n := copy(b, r.p[r.off:])
	r.off = (r.off + n) % len(r.p)
	return n, nil
}
