package config

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A route's local condition on the wire: the address and port a request
// arrived on choose among the routes of one pattern, over HTTP/1.1 and
// HTTP/2 (with TLS), on two servers of the loopback, and a request that
// no local condition takes falls through to the fallback.
func TestConfigLocal(t *testing.T) {
	var h atomic.Pointer[engine.Handler]
	handler := engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) { (*h.Load()).Serve(w, r) })
	one := sluicetest.NewServer(t, handler)                                                                 // 127.0.0.1
	two := sluicetest.NewTLSServer(t, handler, sluicetest.Listen("tcp", "127.0.0.2:0"), sluicetest.HTTP2()) // 127.0.0.2
	_, onePort, _ := net.SplitHostPort(one.Addr)
	cfg, err := parseString(t, t.TempDir(), fmt.Sprintf(`
routes:
  - match: /port
    local: ":%s"
    pipeline: [{text: one-port}]
  - match: /port
    pipeline: [{text: fallback}]
  - match: /addr-port
    local: ["127.0.0.9:1", %q]
    pipeline: [{text: two-addr-port}]
  - match: /addr-port
    pipeline: [{text: fallback}]
  - match: /addr
    local: 127.0.0.2
    pipeline: [{text: two-addr}]
  - match: /addr
    local: ["::1"]
    pipeline: [{text: v6}]
  - match: /addr
    pipeline: [{text: fallback}]
  - match: /cidr
    local: [127.0.0.0/31]
    pipeline: [{text: one-cidr}]
  - match: /cidr
    local: [10.0.0.0/8, "[::ffff:127.0.0.2]:%s"]
    pipeline: [{text: never}]
  - match: /none
    local: ["192.0.2.1:80"]
    pipeline: [{text: never}]
`, onePort, two.Addr, onePort))
	if err != nil {
		t.Fatal(err)
	}
	hd := cfg.Handler()
	h.Store(&hd)
	for _, tt := range []struct {
		path     string
		one, two string // the body each server answers; "404" for that status
	}{
		{"/port", "one-port", "fallback"},
		{"/addr-port", "fallback", "two-addr-port"},
		{"/addr", "fallback", "two-addr"},
		{"/cidr", "one-cidr", "404"},
		{"/none", "404", "404"},
	} {
		for _, srv := range []struct {
			name string
			s    *sluicetest.Server
			want string
		}{{"127.0.0.1 over HTTP/1.1", one, tt.one}, {"127.0.0.2 over HTTP/1.1 with TLS", two, tt.two}} {
			resp, body := srv.s.RoundTrip(t, "GET "+tt.path+" HTTP/1.1\r\nHost: h\r\n\r\n")
			if got := localAnswer(resp.StatusCode, body); got != srv.want {
				t.Errorf("%s, %s: %s, want %s", srv.name, tt.path, got, srv.want)
			}
		}
		resp, err := two.Client().Get(two.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := localAnswer(resp.StatusCode, string(b)); resp.ProtoMajor != 2 || got != tt.two {
			t.Errorf("127.0.0.2 over %s, %s: %s, want HTTP/2 and %s", resp.Proto, tt.path, got, tt.two)
		}
	}
}

func localAnswer(status int, body string) string {
	if status != 200 {
		return fmt.Sprint(status)
	}
	return body
}

// The local entries parse to what they say, and print as they parse.
func TestParseLocalAddr(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{":8080", ":8080", ""},
		{"10.246.0.3:80", "10.246.0.3:80", ""},
		{"[2001:db8::1]:443", "[2001:db8::1]:443", ""},
		{"[::ffff:10.0.0.1]:443", "10.0.0.1:443", ""},
		{"10.0.0.1", "10.0.0.1", ""},
		{"::1", "::1", ""},
		{"10.246.0.0/24", "10.246.0.0/24", ""},
		{"10.246.0.9/24", "10.246.0.0/24", ""},
		{"2001:db8::/32", "2001:db8::/32", ""},
		{":0", "", `":0": port "0" is not a number from 1 to 65535`},
		{":65536", "", "is not a number from 1 to 65535"},
		{":+80", "", "is not a number from 1 to 65535"},
		{":http", "", "is not a number from 1 to 65535"},
		{"localhost:80", "", `"localhost" is not an IP address`},
		{"[fe80::1%eth0]:80", "", "is not an IP address"},
		{"10.0.0.0/33", "", "is not an IP address or CIDR"},
		{"10.0.0.0/8:80", "", "is not an IP address"},
		{"", "", "is not an IP address or CIDR"},
		{"::", "::", ""},
	} {
		a, err := parseLocalAddr(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want one with %q", tt.in, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.err == "" && a.String() != tt.want:
			t.Errorf("%q: %s, want %s", tt.in, a, tt.want)
		}
	}
}

// FuzzLocalAddr: an entry that parses prints as an entry that parses to
// itself, and its matcher takes an address and port only as the entry's
// parts say.
func FuzzLocalAddr(f *testing.F) {
	for _, s := range []string{":8080", "10.0.0.1:80", "[::1]:443", "10.0.0.0/8", "::1", "[::ffff:1.2.3.4]:1", ":0", "1.2.3.4:99999"} {
		f.Add(s, "10.0.0.1:80")
	}
	f.Fuzz(func(t *testing.T, s, local string) {
		a, err := parseLocalAddr(s)
		if err != nil {
			return
		}
		b, err := parseLocalAddr(a.String())
		if err != nil || b != a {
			t.Fatalf("%q parses to %v, which prints as %q, which parses to %v, %v", s, a, a.String(), b, err)
		}
		ap, err := netip.ParseAddrPort(local)
		if err != nil {
			return
		}
		got := (&localMatcher{addrs: []localAddr{a}}).Match(&engine.Request{LocalAddr: net.TCPAddrFromAddrPort(ap)})
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		want := (a.port == 0 || a.port == ap.Port()) && (!a.prefix.IsValid() || a.prefix.Contains(ap.Addr()))
		if got != want {
			t.Fatalf("%q against %s: %v, want %v", s, local, got, want)
		}
	})
}

// A route's method condition is exact (HEAD is not GET) and falls
// through to the pattern's next route, where methods answers 405.
func TestConfigMethodCondition(t *testing.T) {
	cfg, err := parseString(t, t.TempDir(), `
routes:
  - match: /m
    method: GET
    pipeline: [{text: get}]
  - match: /m
    method: [POST, PUT]
    header: {X-Put: "*"}
    pipeline: [{text: post-put}]
  - match: /m
    pipeline: [{text: fallback}]
  - match: /only
    method: [GET]
    pipeline: [{text: get}]
  - match: /methods
    methods: [GET]
    pipeline: [{text: get}]
`)
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, cfg.Handler())
	for _, tt := range []struct {
		method, path, fields string
		want                 string // the body, or the status when not 200
	}{
		{"GET", "/m", "", "get"},
		{"HEAD", "/m", "", "200"}, // the fallback: no body
		{"POST", "/m", "", "fallback"},
		{"POST", "/m", "X-Put: 1\r\n", "post-put"},
		{"PUT", "/m", "X-Put: 1\r\n", "post-put"},
		{"DELETE", "/m", "X-Put: 1\r\n", "fallback"},
		{"GET", "/only", "", "get"},
		{"HEAD", "/only", "", "404"},
		{"POST", "/only", "", "404"},
		{"HEAD", "/methods", "", "200"},
		{"POST", "/methods", "", "405"},
	} {
		resp, body := srv.RoundTrip(t, tt.method+" "+tt.path+" HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"+tt.fields+"\r\n")
		got := localAnswer(resp.StatusCode, body)
		if tt.method == "HEAD" {
			got = fmt.Sprint(resp.StatusCode)
		}
		if got != tt.want {
			t.Errorf("%s %s %q: %s, want %s", tt.method, tt.path, tt.fields, got, tt.want)
		}
	}
}
