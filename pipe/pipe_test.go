package pipe

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// text is a test Source.
func text(s string) Source {
	return func(c *Conn) Content {
		c.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return func(w Writer) error {
			_, err := io.WriteString(w, s)
			return err
		}
	}
}

// mapBytes is a test Filter applying f to every byte and tagging the header.
func mapBytes(tag string, f func(byte) byte) Filter {
	return func(c *Conn) Wrap {
		c.Header().Add("X-Filters", tag)
		c.Header().SetContentLength(-1)
		return func(next Writer) Writer { return &mapWriter{next: next, f: f} }
	}
}

type mapWriter struct {
	next Writer
	f    func(byte) byte
}

func (m *mapWriter) Write(p []byte) (int, error) {
	q := make([]byte, len(p))
	for i, b := range p {
		q[i] = m.f(b)
	}
	return m.next.Write(q)
}
func (m *mapWriter) Flush() error { return m.next.Flush() }
func (m *mapWriter) Close() error { return nil }

var (
	upper = mapBytes("upper", func(b byte) byte {
		if 'a' <= b && b <= 'z' {
			return b - 32
		}
		return b
	})
	shift = mapBytes("shift", func(b byte) byte {
		if 'A' <= b && b < 'Z' {
			return b + 1
		}
		return b
	})
)

// Content passes the filters in the order the pipeline lists them.
func TestChainRunsFiltersInOrder(t *testing.T) {
	url := sluicetest.NewServer(t, Handler(Chain{text("hal"), upper, shift})).URL
	resp, body := sluicetest.Get(t, url+"/")
	if body != "IBM" {
		t.Errorf("body = %q, want IBM (upper, then shift)", body)
	}
	if got := resp.Header.Values("X-Filters"); strings.Join(got, ",") != "upper,shift" {
		t.Errorf("X-Filters = %v", got)
	}
}

// A Chain and a ProcNetwork of the same components answer identically.
func TestProcNetworkMatchesChain(t *testing.T) {
	comps := []Component{logHeader("a"), text("network"), upper, logHeader("b")}
	pn := NewProcNetwork(comps...)
	defer pn.Stop()
	chainURL, netURL := sluicetest.NewServer(t, Handler(Chain(comps))).URL, sluicetest.NewServer(t, Handler(pn)).URL
	r1, b1 := sluicetest.Get(t, chainURL+"/x")
	r2, b2 := sluicetest.Get(t, netURL+"/x")
	if b1 != b2 || b1 != "NETWORK" {
		t.Errorf("chain %q, network %q", b1, b2)
	}
	if r1.Header.Get("X-Seen") != r2.Header.Get("X-Seen") || r1.Header.Get("X-Seen") != "a,b" {
		t.Errorf("X-Seen chain %q, network %q", r1.Header.Get("X-Seen"), r2.Header.Get("X-Seen"))
	}
}

func logHeader(tag string) Pipe {
	return func(c *Conn) bool {
		seen := tag
		if prev := c.Header().Get("X-Seen"); prev != "" {
			seen = prev + "," + tag
		}
		c.Header().Set("X-Seen", seen)
		return true
	}
}

// A pipe that answers stops the pipeline: later components never run.
func TestPipeAnswersAndStops(t *testing.T) {
	ran := false
	deny := Pipe(func(c *Conn) bool {
		if c.Request.Header("Authorization") == nil {
			c.Header().Set("WWW-Authenticate", `Basic realm="x"`)
			return c.Error(401, "credentials required")
		}
		return true
	})
	after := Pipe(func(c *Conn) bool { ran = true; return true })
	url := sluicetest.NewServer(t, Handler(Chain{deny, after, text("secret")})).URL
	resp, body := sluicetest.Get(t, url+"/")
	if resp.StatusCode != 401 || !strings.Contains(body, "credentials required") || ran {
		t.Errorf("status %d body %q after-ran %v", resp.StatusCode, body, ran)
	}
	if resp, body = sluicetest.Get(t, url+"/", "Authorization", "Basic eDp5"); resp.StatusCode != 200 || body != "secret" {
		t.Errorf("authorized: %d %q", resp.StatusCode, body)
	}
}

// Flush reaches the client through any stack of filters.
func TestFlushThroughFilters(t *testing.T) {
	release := make(chan struct{})
	stream := Source(func(c *Conn) Content {
		return func(w Writer) error {
			io.WriteString(w, "first;")
			if err := w.Flush(); err != nil {
				return err
			}
			<-release
			_, err := io.WriteString(w, "second")
			return err
		}
	})
	url := sluicetest.NewServer(t, Handler(Chain{stream, upper, shift})).URL
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString(';')
	if err != nil || first != "GJSTU;" {
		t.Fatalf("first part %q, %v", first, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	if string(rest) != "TFDPOE" {
		t.Errorf("rest %q", rest)
	}
}

func TestRouter(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/index"}, Pipeline: text("index-exact")},
		Route{Match: []string{"/a/"}, Pipeline: text("prefix-a")},
		Route{Match: []string{"/a/b/"}, Pipeline: text("prefix-ab")},
		Route{Match: []string{"/a/b/c"}, Pipeline: text("exact-abc")},
		Route{Match: []string{"/h/"}, Host: "*.example.com", Pipeline: text("host-wild")},
		Route{Match: []string{"/h/"}, Host: "example.com", Pipeline: text("host-exact")},
		Route{Match: []string{"/h/"}, Pipeline: text("host-any")},
		Route{Match: []string{"/form"}, Methods: []string{"POST"}, Pipeline: text("posted")},
		Route{Match: []string{"/form"}, Methods: []string{"PUT"}, Pipeline: text("put")},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, Handler(rt)).URL
	tests := []struct {
		path, host, want string
		status           int
	}{
		{"/index", "", "index-exact", 200},
		{"/index/", "", "no route", 404},
		{"/a/x", "", "prefix-a", 200},
		{"/a/b/x", "", "prefix-ab", 200},
		{"/a/b/c", "", "exact-abc", 200},
		{"/a/b/cd", "", "prefix-ab", 200},
		{"/nothing", "", "no route", 404},
		{"/h/1", "www.Example.com:8080", "host-wild", 200},
		{"/h/1", "EXAMPLE.COM", "host-exact", 200},
		{"/h/1", "other.org", "host-any", 200},
		{"/form", "", "method not allowed", 405},
		{"/%61/b/%63", "", "exact-abc", 200}, // routing uses the decoded path
		// ... and the canonical one (issue 14, finding 1): every spelling
		// takes the route of its canonical form.
		{"//a/./b//c", "", "exact-abc", 200},
		{"/index/x/%2E%2e/.", "", "no route", 404},
		{"/a/b/%2e%2e/b/c", "", "exact-abc", 200},
		{"/a/b/../x", "", "prefix-a", 200},
		{"/a%2Fb/c", "", "encoded slash", 400},
		{"/a/../../a/b/c", "", "climbs above the root", 400},
		// A fully qualified host name is the same host (issue 14, finding 8).
		{"/h/1", "example.com.", "host-exact", 200},
		{"/h/1", "Example.COM.:8080", "host-exact", 200},
		{"/h/1", "www.example.com.", "host-wild", 200},
		{"/h/1", "[::1]:8080", "host-any", 200},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", url+tt.path, nil)
		if tt.host != "" {
			req.Host = tt.host
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s (host %q): %d %q, want %d %q", tt.path, tt.host, resp.StatusCode, b, tt.status, tt.want)
		}
		if tt.status == 405 && resp.Header.Get("Allow") != "POST, PUT" {
			t.Errorf("Allow = %q", resp.Header.Get("Allow"))
		}
	}
	// OPTIONS * is about the server, not a route (RFC 9110 §9.3.7).
	req, _ := http.NewRequest("OPTIONS", url, nil)
	req.URL.Opaque = "*"
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Errorf("OPTIONS *: %d, want 204", resp.StatusCode)
	}
	// CONNECT names an authority, not a path: no tunnels here.
	req, _ = http.NewRequest("CONNECT", url, nil)
	req.URL.Opaque, req.Host = "example.com:443", "example.com:443"
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 501 {
		t.Errorf("CONNECT: %d, want 501", resp.StatusCode)
	}
	if _, err := NewRouter(Route{Match: []string{"/x"}, Pipeline: text("1")}, Route{Match: []string{"/x"}, Pipeline: text("2")}); err == nil {
		t.Error("duplicate route accepted")
	}
	// A pattern no canonical path can match is refused.
	// So is one with a percent-escape: request paths are decoded, so
	// "/caf%C3%A9/" would match only "/caf%25C3%25A9/", and the route it
	// was written to guard would be walked around by "/caf%C3%A9/".
	for _, p := range []string{"//x", "/a/./b", "/a/../b/", "/a/.", "/a//", "/caf%C3%A9/", "/%61dmin/", "/a%2Fb", "/100%25"} {
		if _, err := NewRouter(Route{Match: []string{p}, Pipeline: text("1")}); err == nil || !strings.Contains(err.Error(), "never matches") {
			t.Errorf("pattern %q: %v, want refused as never matching", p, err)
		}
	}
	// A '%' that starts no escape is a character of the decoded path.
	for _, p := range []string{"/100%/", "/a%zz", "/%"} {
		if _, err := NewRouter(Route{Match: []string{p}, Pipeline: text("1")}); err != nil {
			t.Errorf("pattern %q: %v", p, err)
		}
	}
}

// A route's Host with a trailing dot is the same host as without.
func TestRouterHostTrailingDot(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/"}, Host: "Example.com.", Pipeline: text("fqdn")},
		Route{Match: []string{"/"}, Pipeline: text("any")},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, Handler(rt)).URL
	for host, want := range map[string]string{"example.com": "fqdn", "example.com.:80": "fqdn", "example.org.": "any"} {
		req, _ := http.NewRequest("GET", url+"/", nil)
		req.Host = host
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("Host %q: %q, want %q", host, b, want)
		}
	}
}

func TestIfAndBranch(t *testing.T) {
	isHead := func(c *Conn) bool { return c.Request.IsMethod("HEAD") }
	hasQ := func(c *Conn) bool { return len(c.Request.Query) > 0 }
	url := sluicetest.NewServer(t, Handler(Chain{
		Branch(text("plain"), Case{When: hasQ, Then: text("query")}),
		If(func(c *Conn) bool { return strings.HasSuffix(string(c.Request.Path), "/loud") }, upper),
		If(isHead, Pipe(func(c *Conn) bool { return c.Error(405, "no HEAD") })),
	})).URL

	for path, want := range map[string]string{"/": "plain", "/?q": "query", "/loud?q": "QUERY"} {
		if _, body := sluicetest.Get(t, url+path); body != want {
			t.Errorf("%s: %q, want %q", path, body, want)
		}
	}
}

// net/http handlers are sources, and filters apply to what they write;
// files they serve with io.Copy go out with sendfile when nothing filters.
func TestFromHTTP(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), bytes.Repeat([]byte("abc"), 50000), 0o644)
	fs := FromHTTP(http.FileServer(http.Dir(dir)))
	plain := sluicetest.NewServer(t, Handler(fs)).URL
	resp, body := sluicetest.Get(t, plain+"/f.txt")
	if resp.StatusCode != 200 || len(body) != 150000 || resp.Header.Get("Content-Length") != "150000" {
		t.Errorf("plain: %d, %d bytes, CL %q", resp.StatusCode, len(body), resp.Header.Get("Content-Length"))
	}
	filtered := sluicetest.NewServer(t, Handler(Chain{fs, upper})).URL
	resp, body = sluicetest.Get(t, filtered+"/f.txt")
	if body != strings.Repeat("ABC", 50000) || resp.Header.Get("Content-Length") != "" {
		t.Errorf("filtered: %.20q… CL %q", body, resp.Header.Get("Content-Length"))
	}
	resp, _ = sluicetest.Get(t, plain+"/missing")
	if resp.StatusCode != 404 {
		t.Errorf("missing: %d", resp.StatusCode)
	}
}

// net/http middleware wraps the rest of the pipeline.
func TestMiddleware(t *testing.T) {
	tag := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Middleware", "yes")
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/rewritten" + r.URL.Path
			next.ServeHTTP(w, r2)
		})
	}
	gate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("key") != "k" {
				http.Error(w, "gated", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	echoPath := Source(func(c *Conn) Content {
		path := string(c.Request.Path)
		return func(w Writer) error { _, err := io.WriteString(w, path); return err }
	})
	// Both strategies, with the middleware first and after another stage
	// (a ProcNetwork once answered 200 with an empty body: the middleware
	// ran as a stage with nothing after it).
	for _, network := range []bool{false, true} {
		for _, lead := range [][]Component{nil, {logHeader("a")}} {
			b := &Builder{Network: network}
			comps := append(append([]Component(nil), lead...), Middleware(gate), Middleware(tag), echoPath, upper)
			url := sluicetest.NewServer(t, Handler(b.Pipeline(comps...))).URL
			resp, body := sluicetest.Get(t, url+"/p?key=k")
			if resp.StatusCode != 200 || body != "/REWRITTEN/P" || resp.Header.Get("X-Middleware") != "yes" {
				t.Errorf("network=%v lead=%d: through: %d %q %q", network, len(lead), resp.StatusCode, body, resp.Header.Get("X-Middleware"))
			}
			resp, body = sluicetest.Get(t, url+"/p")
			if resp.StatusCode != 403 || !strings.Contains(body, "gated") {
				t.Errorf("network=%v lead=%d: gated: %d %q", network, len(lead), resp.StatusCode, body)
			}
			b.Stop()
		}
	}
}

// In a ProcNetwork, net/http middleware serves its response on the
// request's own goroutine: a response held up in its content phase does
// not stop the network's stages from serving other requests.
func TestMiddlewareInNetworkDoesNotBlockStages(t *testing.T) {
	pass := func(next http.Handler) http.Handler { return next }
	release, started := make(chan struct{}), make(chan struct{})
	slow := Source(func(c *Conn) Content {
		if string(c.Request.Path) != "/slow" {
			return func(w Writer) error { _, err := io.WriteString(w, "fast"); return err }
		}
		return func(w Writer) error {
			close(started)
			<-release
			_, err := io.WriteString(w, "slow")
			return err
		}
	})
	n := NewProcNetwork(logHeader("a"), Middleware(pass), logHeader("b"), slow)
	defer n.Stop()
	url := sluicetest.NewServer(t, Handler(n)).URL
	slowBody := make(chan string, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err != nil {
			slowBody <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slowBody <- string(b)
	}()
	select {
	case <-started:
	case got := <-slowBody:
		t.Fatalf("the held request never reached its source: %q", got)
	}
	// Bounded so that a blocked network fails the test instead of hanging it.
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url + "/fast")
	if err != nil {
		t.Fatalf("a second request while the first is held: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if seen := strings.Join(resp.Header.Values("X-Seen"), ","); string(b) != "fast" || seen != "a,b" {
		t.Errorf("second request: %q, X-Seen %q", b, seen)
	}
	close(release)
	if got := <-slowBody; got != "slow" {
		t.Errorf("held request: %q", got)
	}
}

func TestHTTPHandler(t *testing.T) {
	ts := httptest.NewServer(HTTPHandler(Chain{text("via net/http"), upper}))
	defer ts.Close()
	_, body := sluicetest.Get(t, ts.URL+"/")
	if body != "VIA NET/HTTP" {
		t.Errorf("body %q", body)
	}
}

// A source that fails before writing answers 500.
func TestContentErrorBeforeWriting(t *testing.T) {
	fail := Source(func(c *Conn) Content {
		return func(w Writer) error { return fmt.Errorf("disk on fire") }
	})
	resp, body := sluicetest.Get(t, sluicetest.NewServer(t, Handler(Chain{fail, upper})).URL+"/")
	if resp.StatusCode != 500 || !strings.Contains(strings.ToLower(body), "content failed") { // the filters apply to the error too
		t.Errorf("%d %q", resp.StatusCode, body)
	}
}

// countWriter observes bytes and forwards SendFile, so sendfile survives it.
type countWriter struct {
	next     Writer
	n        *atomic.Int64
	sendfile *atomic.Bool
}

func (cw countWriter) Write(p []byte) (int, error) { cw.n.Add(int64(len(p))); return cw.next.Write(p) }
func (cw countWriter) Flush() error                { return cw.next.Flush() }
func (cw countWriter) Close() error                { return nil }
func (cw countWriter) SendFile(f *os.File, off, n int64) error {
	cw.n.Add(n)
	cw.sendfile.Store(true)
	return SendFile(cw.next, f, off, n)
}

// buffersWriter observes bytes and forwards WriteBuffers, so the buffers
// go on together.
type buffersWriter struct {
	Through
	n        *atomic.Int64
	together *atomic.Bool
}

func (bw *buffersWriter) Write(p []byte) (int, error) {
	bw.n.Add(int64(len(p)))
	return bw.Next.Write(p)
}
func (bw *buffersWriter) Close() error { return nil }
func (bw *buffersWriter) WriteBuffers(p [][]byte) (int64, error) {
	n, err := WriteBuffers(bw.Next, p)
	bw.n.Add(n)
	bw.together.Store(true)
	return n, err
}

// WriteBuffers hands the buffers on together through filters that
// observe them (Through and one of its own), and as Writes through one
// that transforms the content.
func TestWriteBuffersThroughFilters(t *testing.T) {
	parts := [][]byte{bytes.Repeat([]byte("a"), 40000), nil, bytes.Repeat([]byte("b"), 50000), []byte("c")}
	want := strings.Repeat("a", 40000) + strings.Repeat("b", 50000) + "c"
	for _, transform := range []bool{false, true} {
		var counted atomic.Int64
		var together, closed atomic.Bool
		src := Source(func(c *Conn) Content {
			c.Header().SetContentLength(int64(len(want)))
			return func(w Writer) error {
				n, err := WriteBuffers(w, parts)
				if err == nil && n != int64(len(want)) {
					err = fmt.Errorf("WriteBuffers wrote %d bytes, want %d", n, len(want))
				}
				return err
			}
		})
		through := Filter(func(c *Conn) Wrap {
			return func(next Writer) Writer { return &timed{Through{next}, &closed} }
		})
		observe := Filter(func(c *Conn) Wrap {
			return func(next Writer) Writer { return &buffersWriter{Through{next}, &counted, &together} }
		})
		chain := Chain{src, through, observe}
		wantBody := want
		if transform { // at the head of the stack, above the observers
			chain = Chain{src, upper, through, observe}
			wantBody = strings.ToUpper(want)
		}
		resp, body := sluicetest.Get(t, sluicetest.NewServer(t, Handler(chain)).URL+"/")
		if resp.StatusCode != 200 || body != wantBody || counted.Load() != int64(len(want)) || together.Load() == transform {
			t.Errorf("transformed %v: %d, body %d bytes (right: %v), counted %d, together %v",
				transform, resp.StatusCode, len(body), body == wantBody, counted.Load(), together.Load())
		}
	}
}

func TestSendFileThroughObservingFilter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, bytes.Repeat([]byte("z"), 100000), 0o644)
	var counted atomic.Int64
	var usedSendfile atomic.Bool
	src := Source(func(c *Conn) Content {
		c.Header().SetContentLength(100000)
		return func(w Writer) error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			return SendFile(w, f, 0, 100000)
		}
	})
	observe := Filter(func(c *Conn) Wrap {
		return func(next Writer) Writer { return countWriter{next, &counted, &usedSendfile} }
	})
	_, body := sluicetest.Get(t, sluicetest.NewServer(t, Handler(Chain{src, observe})).URL+"/")
	if len(body) != 100000 || counted.Load() != 100000 || !usedSendfile.Load() {
		t.Errorf("body %d bytes, counted %d, by reference %v", len(body), counted.Load(), usedSendfile.Load())
	}
}

// timed observes the response through a Through: its SendFile goes on by
// reference.
type timed struct {
	Through
	closed *atomic.Bool
}

func (tw *timed) Close() error { tw.closed.Store(true); return nil }

// A filter built on Through, at the head of the stack, passes the bytes
// on and a file by reference to the filter beneath it.
func TestThrough(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	os.WriteFile(path, bytes.Repeat([]byte("z"), 100000), 0o644)
	for _, bySendfile := range []bool{false, true} {
		var counted atomic.Int64
		var usedSendfile, closed atomic.Bool
		src := Source(func(c *Conn) Content {
			c.Header().SetContentLength(100000)
			return func(w Writer) error {
				if !bySendfile {
					_, err := w.Write(bytes.Repeat([]byte("z"), 100000))
					return err
				}
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				defer f.Close()
				return SendFile(w, f, 0, 100000)
			}
		})
		through := Filter(func(c *Conn) Wrap {
			return func(next Writer) Writer { return &timed{Through{next}, &closed} }
		})
		observe := Filter(func(c *Conn) Wrap {
			return func(next Writer) Writer { return countWriter{next, &counted, &usedSendfile} }
		})
		_, body := sluicetest.Get(t, sluicetest.NewServer(t, Handler(Chain{src, through, observe})).URL+"/")
		// The writers are closed as the handler returns, which may be
		// just after the client has read the whole body.
		sluicetest.WaitFor(t, "the filter's writer to be closed", closed.Load)
		if len(body) != 100000 || counted.Load() != 100000 || usedSendfile.Load() != bySendfile || !closed.Load() {
			t.Errorf("sendfile %v: body %d bytes, counted %d, by reference %v, closed %v", bySendfile, len(body), counted.Load(), usedSendfile.Load(), closed.Load())
		}
	}
}

func TestValues(t *testing.T) {
	url := sluicetest.NewServer(t, Handler(Chain{
		Pipe(func(c *Conn) bool { c.SetValue("user", "ada"); c.SetValue("user", "grace"); return true }),
		Source(func(c *Conn) Content {
			u := c.Value("user") + "/" + c.Value("missing")
			return func(w Writer) error { _, err := io.WriteString(w, u); return err }
		}),
	})).URL

	if _, body := sluicetest.Get(t, url+"/"); body != "grace/" {
		t.Errorf("body %q", body)
	}
}

// A Builder's pipelines answer the same whether they are chains or networks.
func TestBuilder(t *testing.T) {
	for _, network := range []bool{false, true} {
		b := &Builder{Network: network}
		comp := b.Pipeline(text("built"), upper)
		if _, isNet := comp.(*ProcNetwork); isNet != network {
			t.Errorf("Network=%v built a %T", network, comp)
		}
		if _, body := sluicetest.Get(t, sluicetest.NewServer(t, Handler(comp)).URL+"/"); body != "BUILT" {
			t.Errorf("Network=%v: body %q", network, body)
		}
		b.Stop()
	}
}

// A route for GET takes HEAD too (RFC 9110 §9.3.2: HEAD is GET without
// the content), and no method falls through from the most specific
// pattern to a less specific route: a HEAD would learn the size, dates
// and ETag of what the guarded route protects, a POST reach a handler
// that serves it.
func TestRouterGetCoversHead(t *testing.T) {
	guard := Pipe(func(c *Conn) bool { return c.Error(http.StatusUnauthorized, "guarded") })
	rt, err := NewRouter(
		Route{Match: []string{"/admin/"}, Methods: []string{"GET"}, Pipeline: Chain{guard, text("secret")}},
		Route{Match: []string{"/form"}, Methods: []string{"GET", "POST"}, Pipeline: text("form")},
		Route{Match: []string{"/"}, Pipeline: Chain{logHeader("open"), text("open")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, Handler(rt)).URL
	for _, tt := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/admin/x", 401, ""},
		{"HEAD", "/admin/x", 401, ""},
		// A method the most specific pattern does not take is 405 there;
		// it never goes on to the catch-all, whose handler could serve
		// what /admin/ guards.
		{"POST", "/admin/x", 405, "GET, HEAD"},
		{"HEAD", "/form", 200, ""},
		{"PUT", "/form", 405, "GET, HEAD, POST"},
		{"PUT", "/other", 200, ""},
	} {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status || resp.Header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d Allow %q (X-Seen %q), want %d Allow %q", tt.method, tt.path,
				resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("X-Seen"), tt.status, tt.allow)
		}
	}
	// Without a catch-all, a method the route does not name is 405, and
	// Allow lists HEAD with GET.
	rt, err = NewRouter(Route{Match: []string{"/admin/"}, Methods: []string{"GET"}, Pipeline: text("secret")})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", sluicetest.NewServer(t, Handler(rt)).URL+"/admin/x", nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q, want 405 Allow \"GET, HEAD\"", resp.StatusCode, resp.Header.Get("Allow"))
	}
	// A GET route and a HEAD route for one pattern overlap.
	if _, err := NewRouter(
		Route{Match: []string{"/x"}, Methods: []string{"GET"}, Pipeline: text("1")},
		Route{Match: []string{"/x"}, Methods: []string{"HEAD"}, Pipeline: text("2")},
	); err == nil {
		t.Error("GET and HEAD routes for one pattern accepted")
	}
}

// The routes of one pattern are one place: a host-specific route whose
// methods do not fit leaves the request to the same pattern's route for
// any host, not to a shorter pattern, even when patterns of the same
// length sort between them.
func TestRouterMethodsStayOnPattern(t *testing.T) {
	rt, err := NewRouter(
		Route{Match: []string{"/ab/"}, Host: "a.example", Methods: []string{"GET"}, Pipeline: text("ab-host-get")},
		Route{Match: []string{"/cd/"}, Host: "a.example", Pipeline: text("cd-host")},
		Route{Match: []string{"/ab/"}, Pipeline: text("ab-any")},
		Route{Match: []string{"/"}, Pipeline: text("root")},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, Handler(rt)).URL
	for _, tt := range []struct{ method, path, host, want string }{
		{"GET", "/ab/x", "a.example", "ab-host-get"},
		{"POST", "/ab/x", "a.example", "ab-any"},
		{"POST", "/ab/x", "b.example", "ab-any"},
		{"POST", "/cd/x", "b.example", "root"},
	} {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		req.Host = tt.host
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != tt.want {
			t.Errorf("%s %s (Host %s): %d %q, want %q", tt.method, tt.path, tt.host, resp.StatusCode, body, tt.want)
		}
	}
}
