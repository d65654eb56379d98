package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// echoFields starts an upstream answering with the request line and the
// named fields, one per line.
func echoFields(t *testing.T, names ...string) string {
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s\nhost=%s\n", r.Method, r.RequestURI, r.Host)
			for _, n := range names {
				fmt.Fprintf(w, "%s=%s\n", n, strings.Join(r.Header.Values(n), " | "))
			}
		})
	})
	return urls[0]
}

// X-Forwarded-For (or Forwarded) is appended to only when the peer is a
// trusted proxy, whose forwarding fields all pass on; anyone else's are
// dropped and the proxy's own written. The same names with underscores
// for dashes, which a backend mapping names to CGI-style variables would
// read as the real ones, never pass while the proxy forwards.
func TestForwardingFields(t *testing.T) {
	up := echoFields(t, "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded", "X_Forwarded_For", "X-Forwarded_Host")
	spoof := []string{"X-Forwarded-For", "6.6.6.6", "X-Forwarded-Proto", "https", "X-Forwarded-Host", "evil", "Forwarded", "for=6.6.6.6",
		"X_Forwarded_For", "7.7.7.7", "X-Forwarded_Host", "evil2"}
	const noAliases = "X_Forwarded_For=\nX-Forwarded_Host=\n"
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"untrusted", Options{}, "X-Forwarded-For=127.0.0.1\nX-Forwarded-Proto=http\nX-Forwarded-Host=HOST\nForwarded=\n" + noAliases},
		{"trusted", Options{TrustedProxies: []string{"127.0.0.0/8"}},
			"X-Forwarded-For=6.6.6.6, 127.0.0.1\nX-Forwarded-Proto=https\nX-Forwarded-Host=evil\nForwarded=for=6.6.6.6\n" + noAliases},
		{"rfc7239 untrusted", Options{Forwarded: ForwardedRFC7239},
			"X-Forwarded-For=\nX-Forwarded-Proto=\nX-Forwarded-Host=\nForwarded=for=127.0.0.1;proto=http;host=\"HOST\"\n" + noAliases},
		{"rfc7239 trusted", Options{Forwarded: ForwardedRFC7239, TrustedProxies: []string{"127.0.0.1"}},
			"X-Forwarded-For=6.6.6.6\nX-Forwarded-Proto=https\nX-Forwarded-Host=evil\nForwarded=for=6.6.6.6, for=127.0.0.1;proto=http;host=\"HOST\"\n" + noAliases},
		{"none", Options{Forwarded: ForwardedNone},
			"X-Forwarded-For=6.6.6.6\nX-Forwarded-Proto=https\nX-Forwarded-Host=evil\nForwarded=for=6.6.6.6\nX_Forwarded_For=7.7.7.7\nX-Forwarded_Host=evil2\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Upstreams = []string{up}
			srv, _ := front(t, c.opts)
			_, body := sluicetest.Get(t, srv.URL+"/x", spoof...)
			host := strings.TrimPrefix(srv.URL, "http://")
			want := "GET /x\nhost=" + host + "\n" + strings.ReplaceAll(c.want, "HOST", host)
			if body != want {
				t.Fatalf("upstream saw\n%s\nwant\n%s", body, want)
			}
		})
	}
}

// The Host sent upstream is the client's, the upstream's or a fixed one;
// strip_prefix removes a prefix of the canonical path, keeping the query.
func TestHostAndStripPrefix(t *testing.T) {
	up := echoFields(t)
	upHost := strings.TrimPrefix(up, "http://")
	for _, c := range []struct {
		opts       Options
		path, want string
	}{
		{Options{Host: HostUpstream}, "/a?q=1", "GET /a?q=1\nhost=" + upHost + "\n"},
		{Options{Host: "app.internal"}, "/a", "GET /a\nhost=app.internal\n"},
		{Options{StripPrefix: "/api/"}, "/api/users?id=7", "GET /users?id=7\nhost=HOST\n"},
		{Options{StripPrefix: "/api"}, "/api", "GET /\nhost=HOST\n"},
		{Options{StripPrefix: "/api"}, "/api/a%20b", "GET /a%20b\nhost=HOST\n"},
		{Options{StripPrefix: "/api"}, "/other", "GET /other\nhost=HOST\n"},
		{Options{StripPrefix: "/api"}, "/apix/y", "GET /apix/y\nhost=HOST\n"},
		{Options{StripPrefix: "/api"}, "/api/../api/x", "GET /x\nhost=HOST\n"},
	} {
		c.opts.Upstreams = []string{up}
		srv, _ := front(t, c.opts)
		_, body := sluicetest.Get(t, srv.URL+c.path)
		want := strings.ReplaceAll(c.want, "HOST", strings.TrimPrefix(srv.URL, "http://"))
		if body != want {
			t.Errorf("%+v %s: upstream saw %q, want %q", c.opts, c.path, body, want)
		}
	}
}

// An upstream on a Unix socket is reached with unix:/path.
func TestUnixUpstream(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "up.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "via unix") })}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	srv, _ := front(t, Options{Upstreams: []string{"unix:" + sock}})
	if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 || body != "via unix" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
}

// Expect: 100-continue is honoured: the upstream is asked first, and a
// final answer from it (here 413) reaches the client without the body
// ever being read; a 100 from it lets the body through.
func TestExpectContinue(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/refuse" {
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				io.WriteString(w, "too big")
				return
			}
			b, _ := io.ReadAll(r.Body) // net/http sends 100 Continue here
			fmt.Fprintf(w, "got %q", b)
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	for _, c := range []struct{ path, interim, final string }{
		{"/refuse", "", "HTTP/1.1 413"},
		{"/accept", "HTTP/1.1 100 Continue", "HTTP/1.1 200"},
	} {
		conn, err := srv.Dial()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", c.path)
		br := bufio.NewReader(conn)
		status, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if c.interim != "" {
			if !strings.HasPrefix(status, c.interim) {
				t.Fatalf("%s: first line %q, want %q", c.path, status, c.interim)
			}
			br.ReadString('\n') // the empty line
			io.WriteString(conn, "hello")
			if status, err = br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		if !strings.HasPrefix(status, c.final) {
			t.Fatalf("%s: status %q, want %q", c.path, status, c.final)
		}
		conn.Close()
	}
}

// HEAD, 204 and 304 responses have no body, whatever length they state;
// a HEAD's Content-Length is passed on.
func TestNoBodyResponses(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/204":
				w.WriteHeader(204)
			case "/304":
				w.WriteHeader(304)
			default:
				w.Header().Set("Content-Length", "11")
				io.WriteString(w, "hello world")
			}
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	for i := range 2 { // twice: the pooled connection must still be in step
		for _, c := range []struct {
			method, path string
			status       int
			length       int64
		}{{"HEAD", "/", 200, 11}, {"GET", "/204", 204, -1}, {"GET", "/304", 304, -1}, {"GET", "/", 200, 11}} {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
			resp, body := sluicetest.Do(t, req)
			if resp.StatusCode != c.status || body != map[bool]string{true: "hello world"}[c.method == "GET" && c.status == 200] ||
				c.method == "HEAD" && resp.ContentLength != c.length {
				t.Fatalf("round %d %s %s: %d %q length %d", i, c.method, c.path, resp.StatusCode, body, resp.ContentLength)
			}
		}
	}
}

// Interim responses the proxy did not ask for reach the client as they
// come (RFC 9110 §15.2): a 103 Early Hints with its Link field, before
// the final response, which does not carry it.
func TestEarlyHintsPassedOn(t *testing.T) {
	up := newRawUpstream(t, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nConnection: X-Hop\r\nX-Hop: 1\r\n\r\n"+
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	srv, _ := front(t, Options{Upstreams: []string{up.URL}})
	conn, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	var interim []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
		interim = append(interim, strings.TrimSpace(line))
	}
	if len(interim) != 2 || interim[0] != "HTTP/1.1 103 Early Hints" || interim[1] != "Link: </a.css>; rel=preload" {
		t.Fatalf("interim response %q, want the 103 with its Link only", interim)
	}
	resp, body := sluicetest.ReadResponse(t, br, "GET")
	if resp.StatusCode != 200 || body != "ok" || resp.Header.Get("Link") != "" {
		t.Fatalf("final response %d %q, Link %q", resp.StatusCode, body, resp.Header.Get("Link"))
	}
}

// An upstream that answers before the request body is all sent (413,
// say) and closes has that answer passed on, not a 502.
func TestEarlyAnswerDuringUpload(t *testing.T) {
	up := newRawUpstream(t, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n")
	srv, _ := front(t, Options{Upstreams: []string{up.URL}})
	conn, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 8 << 20
	go func() {
		io.WriteString(conn, fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size))
		conn.Write(make([]byte, size)) // fails once the server stops reading
	}()
	resp, body := sluicetest.ReadResponse(t, bufio.NewReader(conn), "POST")
	if resp.StatusCode != http.StatusRequestEntityTooLarge || body != "too big\n" {
		t.Fatalf("got %d %q, want the upstream's 413", resp.StatusCode, body)
	}
}

// A request that came over TLS is named https to the upstream.
func TestForwardedProtoTLS(t *testing.T) {
	up := echoFields(t, "X-Forwarded-Proto", "Forwarded")
	for _, c := range []struct{ mode, want string }{
		{ForwardedXFF, "X-Forwarded-Proto=https\nForwarded=\n"},
		{ForwardedRFC7239, "X-Forwarded-Proto=\nForwarded=for=127.0.0.1;proto=https;host=\"127.0.0.1\"\n"},
	} {
		p := mustNew(t, Options{Upstreams: []string{up}, Forwarded: c.mode})
		t.Cleanup(func() { p.Close() })
		srv := sluicetest.NewTLSServer(t, pipe.Handler(p))
		resp, err := srv.Client().Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		host := srv.Addr // 127.0.0.1:port, the URL's host
		want := "GET /\nhost=" + host + "\n" + strings.ReplaceAll(c.want, `host="127.0.0.1"`, `host="`+host+`"`)
		if string(body) != want {
			t.Errorf("%s: upstream saw\n%s\nwant\n%s", c.mode, body, want)
		}
	}
}

// TE is hop-by-hop, yet a client's "trailers" in it reaches the
// upstream as "TE: trailers" (RFC 9110 §10.1.4), named in Connection, so
// that an upstream that sends trailers only when told (as gRPC servers
// do) sends them; TE's other codings stay behind.
func TestTETrailersUpstream(t *testing.T) {
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			te := strings.Join(r.Header.Values("Te"), " | ")
			if te == "trailers" {
				w.Header().Set("Trailer", "Grpc-Status")
			}
			fmt.Fprintf(w, "te=%s\nconnection=%s\n", te, strings.Join(r.Header.Values("Connection"), " | "))
			if te == "trailers" {
				w.Header().Set("Grpc-Status", "0")
			}
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	for _, c := range []struct {
		fields  []string
		want    string
		trailer string
	}{
		{[]string{"TE", "trailers", "Connection", "TE"}, "te=trailers\nconnection=TE\n", "0"},
		{[]string{"TE", "deflate;q=0.5, trailers"}, "te=trailers\nconnection=TE\n", "0"},
		{[]string{"TE", "gzip", "Connection", "TE"}, "te=\nconnection=\n", ""},
		{nil, "te=\nconnection=\n", ""},
	} {
		resp, body := sluicetest.Get(t, srv.URL+"/", c.fields...)
		if body != c.want || resp.Trailer.Get("Grpc-Status") != c.trailer {
			t.Errorf("client sent %q: upstream saw %q, trailer %q; want %q, trailer %q", c.fields, body, resp.Trailer, c.want, c.trailer)
		}
	}
}

// Each response's fields pass on as its upstream sent them, whatever the
// response before on the same connection had: one field the same, one
// changed, one more or one fewer (the proxy keeps the strings of the
// fields that repeat).
func TestResponseFieldsAfterAnother(t *testing.T) {
	heads := [][]string{
		{"X-A", "1", "X-B", "two"},
		{"X-A", "1", "X-B", "three"},
		{"X-A", "1", "X-B", "three", "X-C", "x"},
		{"X-B", "1"},
		{"X-A", "1", "X-B", "two"},
		{},
	}
	var n atomic.Int64
	_, urls := upstreams(t, 1, func(int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := heads[(n.Add(1)-1)%int64(len(heads))]
			for i := 0; i < len(h); i += 2 {
				w.Header().Set(h[i], h[i+1])
			}
			io.WriteString(w, "ok")
		})
	})
	srv, _ := front(t, Options{Upstreams: urls})
	for round := range 2 {
		for i, h := range heads {
			resp, body := sluicetest.Get(t, srv.URL+"/")
			for _, name := range []string{"X-A", "X-B", "X-C"} {
				want := ""
				for j := 0; j < len(h); j += 2 {
					if h[j] == name {
						want = h[j+1]
					}
				}
				if got := resp.Header.Get(name); got != want {
					t.Errorf("round %d, response %d: %s %q, want %q", round, i, name, got, want)
				}
			}
			if body != "ok" {
				t.Errorf("round %d, response %d: body %q", round, i, body)
			}
		}
	}
}
