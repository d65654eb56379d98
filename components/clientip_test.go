package components

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// Helpers shared by the tests of the access components (clientip,
// ipfilter, ratelimit, htaccess, basic_auth, log).

// guardQuiet is a logger for components whose errors a test provokes.
var guardQuiet = slog.New(slog.DiscardHandler)

// guardLog is a log that tests read while the server writes to it.
type guardLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// guardLogger returns a text logger writing to a new guardLog.
func guardLogger() (*slog.Logger, *guardLog) {
	l := &guardLog{}
	return slog.New(slog.NewTextHandler(l, nil)), l
}

func (l *guardLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was logged so far.
func (l *guardLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// guardGet sends GET url with header pairs and returns the response and
// its body.
func guardGet(t testing.TB, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
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

// guardRaw sends raw request bytes to the server at base URL (or
// "unix:PATH") and returns the response, read with net/http.
func guardRaw(t testing.TB, url, raw string) (*http.Response, string) {
	t.Helper()
	network, addr := "tcp", strings.TrimPrefix(url, "http://")
	if path, ok := strings.CutPrefix(url, "unix:"); ok {
		network, addr = "unix", path
	}
	conn, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// guardText is a Source answering 200 with body s.
func guardText(s string) pipe.Source {
	return func(c *pipe.Conn) pipe.Content {
		c.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return func(w pipe.Writer) error {
			_, err := io.WriteString(w, s)
			return err
		}
	}
}

// guardEchoClient is a Source answering with the client address that ci
// resolves.
func guardEchoClient(ci *clientIP) pipe.Source {
	return func(c *pipe.Conn) pipe.Content {
		a := ci.addr(c.Request)
		return func(w pipe.Writer) error {
			_, err := io.WriteString(w, a.String())
			return err
		}
	}
}

func TestClientIPResolve(t *testing.T) {
	trusted := []string{"127.0.0.0/8", "10.0.0.0/8", "2001:db8:ffff::/48"}
	tests := []struct {
		name    string
		trusted []string
		header  string
		peer    net.Addr
		fields  [][2]string
		want    string
	}{
		{"no proxies trusted: header ignored", nil, "", guardTCP("127.0.0.1"), guardXFF("1.2.3.4"), "127.0.0.1"},
		{"untrusted peer: header ignored", trusted, "", guardTCP("192.0.2.9"), guardXFF("1.2.3.4"), "192.0.2.9"},
		{"trusted peer, no header", trusted, "", guardTCP("127.0.0.1"), nil, "127.0.0.1"},
		{"one hop", trusted, "", guardTCP("127.0.0.1"), guardXFF("1.2.3.4"), "1.2.3.4"},
		{"skips trusted hops", trusted, "", guardTCP("127.0.0.1"), guardXFF("1.2.3.4, 10.0.0.1, 10.0.0.2"), "1.2.3.4"},
		{"spoofed left part ignored", trusted, "", guardTCP("127.0.0.1"), guardXFF("6.6.6.6, 1.2.3.4"), "1.2.3.4"},
		{"fields joined in order", trusted, "", guardTCP("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "6.6.6.6"}, {"x-forwarded-for", "1.2.3.4, 10.0.0.1"}}, "1.2.3.4"},
		{"left field reached through trusted", trusted, "", guardTCP("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "5.5.5.5"}, {"X-Forwarded-For", "10.0.0.1"}}, "5.5.5.5"},
		{"all trusted: leftmost", trusted, "", guardTCP("127.0.0.1"), guardXFF("10.0.0.2, 10.0.0.1"), "10.0.0.2"},
		{"junk ends the walk", trusted, "", guardTCP("127.0.0.1"), guardXFF("1.2.3.4, junk, 10.0.0.1"), "10.0.0.1"},
		{"junk at the right: the peer", trusted, "", guardTCP("127.0.0.1"), guardXFF("1.2.3.4, unknown"), "127.0.0.1"},
		{"empty elements", trusted, "", guardTCP("127.0.0.1"), guardXFF(" 1.2.3.4 ,, "), "1.2.3.4"},
		{"IPv4 with port", trusted, "", guardTCP("127.0.0.1"), guardXFF("1.2.3.4:5678"), "1.2.3.4"},
		{"IPv6 bracketed with port", trusted, "", guardTCP("127.0.0.1"), guardXFF("[2001:db8::1]:443"), "2001:db8::1"},
		{"IPv6 bare", trusted, "", guardTCP("127.0.0.1"), guardXFF("2001:db8::1, 2001:db8:ffff::9"), "2001:db8::1"},
		{"IPv4-mapped unmapped", trusted, "", guardTCP("127.0.0.1"), guardXFF("::ffff:1.2.3.4"), "1.2.3.4"},
		{"mapped peer is IPv4", trusted, "", guardTCP("::ffff:127.0.0.1"), guardXFF("1.2.3.4"), "1.2.3.4"},
		{"zone refused", trusted, "", guardTCP("127.0.0.1"), guardXFF("fe80::1%eth0"), "127.0.0.1"},
		{"Forwarded not read by default", trusted, "", guardTCP("127.0.0.1"),
			[][2]string{{"Forwarded", "for=1.2.3.4"}}, "127.0.0.1"},
		{"X-Real-IP", trusted, "X-Real-IP", guardTCP("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "6.6.6.6"}, {"X-Real-IP", "1.2.3.4"}}, "1.2.3.4"},
		{"Forwarded", trusted, "Forwarded", guardTCP("127.0.0.1"),
			[][2]string{{"Forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43"}}, "192.0.2.60"},
		{"Forwarded quoted IPv6 with port", trusted, "forwarded", guardTCP("127.0.0.1"),
			[][2]string{{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded elements from the right", trusted, "Forwarded", guardTCP("127.0.0.1"),
			[][2]string{{"Forwarded", "for=6.6.6.6"}, {"Forwarded", `For=1.2.3.4;proto=https, for="10.0.0.1:80";by=x`}}, "1.2.3.4"},
		{"Forwarded unknown", trusted, "Forwarded", guardTCP("127.0.0.1"),
			[][2]string{{"Forwarded", "for=1.2.3.4, for=unknown"}}, "127.0.0.1"},
		{"Forwarded element without for", trusted, "Forwarded", guardTCP("127.0.0.1"),
			[][2]string{{"Forwarded", "for=1.2.3.4, proto=http"}}, "127.0.0.1"},
		{"Forwarded ignores X-Forwarded-For", trusted, "Forwarded", guardTCP("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "6.6.6.6"}}, "127.0.0.1"},
		{"Unix socket peer", trusted, "", &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, guardXFF("1.2.3.4"), "invalid IP"},
		{"trusted Unix socket peer", []string{"unix:", "10.0.0.0/8"}, "", &net.UnixAddr{Name: "@", Net: "unix"}, guardXFF("1.2.3.4, 10.0.0.1"), "1.2.3.4"},
		{"trusted Unix socket peer, no header", []string{"unix:"}, "", &net.UnixAddr{Name: "@", Net: "unix"}, nil, "invalid IP"},
		{"unix: trusts no TCP peer", []string{"unix:"}, "", guardTCP("127.0.0.1"), guardXFF("1.2.3.4"), "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ci, err := newClientIP(tt.trusted, tt.header)
			if err != nil {
				t.Fatal(err)
			}
			r := &engine.Request{RemoteAddr: tt.peer}
			for _, f := range tt.fields {
				r.Fields = append(r.Fields, engine.Field{Name: []byte(f[0]), Value: []byte(f[1])})
			}
			if got := ci.addr(r).String(); got != tt.want {
				t.Errorf("addr = %s, want %s", got, tt.want)
			}
		})
	}
}

// A client over a Unix socket has no IP address: "all" still matches
// it, so deny: [all] and "Deny from all" refuse it, while a proxy on the
// socket, trusted with "unix:", names the client in its header. Before,
// every rule missed such a client: ipfilter {deny: [all]} and htaccess
// "Deny from all" let it through.
func TestClientIPUnixSocket(t *testing.T) {
	root := htaTree(t, map[string]string{
		"closed/.htaccess": "Order Deny,Allow\nDeny from all\n",
		"open/.htaccess":   "Order Allow,Deny\nAllow from all\nDeny from 10.0.0.0/8\n",
	})
	mustFilter := func(o IPFilterOptions) pipe.Component {
		f, err := NewIPFilter(o)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	hta, err := NewHtaccess(HtaccessOptions{Root: root, TrustedProxies: []string{"unix:"}, Logger: guardQuiet})
	if err != nil {
		t.Fatal(err)
	}
	rl, err := NewRateLimit(RateLimitOptions{Rate: 0.001, Burst: 1, TrustedProxies: []string{"unix:"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		comp pipe.Component
		path string
		xff  string
		want int
	}{
		{"ipfilter deny all", mustFilter(IPFilterOptions{Deny: []string{"all"}}), "/", "", 403},
		{"ipfilter allow all", mustFilter(IPFilterOptions{Allow: []string{"all"}, Deny: []string{"10.0.0.0/8"}}), "/", "", 200},
		{"ipfilter allow and deny all", mustFilter(IPFilterOptions{Allow: []string{"all"}, Deny: []string{"all"}}), "/", "", 403},
		{"ipfilter allow list", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}}), "/", "10.1.2.3", 403},
		{"ipfilter block list", mustFilter(IPFilterOptions{Deny: []string{"10.0.0.0/8"}}), "/", "", 200},
		{"ipfilter untrusted header", mustFilter(IPFilterOptions{Deny: []string{"10.0.0.0/8", "::/0", "0.0.0.0/0"}}), "/", "10.1.2.3", 200},
		{"ipfilter trusted proxy", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}, TrustedProxies: []string{"unix:"}}), "/", "10.1.2.3", 200},
		{"ipfilter trusted proxy refuses", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}, TrustedProxies: []string{"unix:"}}), "/", "192.0.2.1", 403},
		{"ipfilter trusted proxy, no header", mustFilter(IPFilterOptions{Allow: []string{"10.0.0.0/8"}, TrustedProxies: []string{"unix:"}}), "/", "", 403},
		{"htaccess deny from all", hta, "/closed/x", "", 403},
		{"htaccess allow from all", hta, "/open/x", "", 200},
		{"htaccess through a trusted proxy", hta, "/open/x", "10.1.2.3", 403},
		{"ratelimit by header", rl, "/", "192.0.2.1", 200},
		{"ratelimit by header, again", rl, "/", "192.0.2.1", 429},
		{"ratelimit by header, another client", rl, "/", "192.0.2.2", 200},
	} {
		sock := filepath.Join(t.TempDir(), "s")
		url := "unix:" + sluicetest.NewServer(t, pipe.Handler(pipe.Chain{tt.comp, guardText("in")}),
			sluicetest.Listen("unix", sock)).Addr
		hdr := ""
		if tt.xff != "" {
			hdr = "X-Forwarded-For: " + tt.xff + "\r\n"
		}
		resp, _ := guardRaw(t, url, "GET "+tt.path+" HTTP/1.1\r\nHost: x\r\n"+hdr+"Connection: close\r\n\r\n")
		if resp.StatusCode != tt.want {
			t.Errorf("%s: GET %s over a Unix socket: %d, want %d", tt.name, tt.path, resp.StatusCode, tt.want)
		}
	}
}

func guardTCP(ip string) net.Addr {
	return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}
}

func guardXFF(v string) [][2]string { return [][2]string{{"X-Forwarded-For", v}} }

func TestClientIPOptions(t *testing.T) {
	for _, tt := range []struct {
		trusted []string
		header  string
		err     string
	}{
		{[]string{"10.0.0.0/33"}, "", `trusted_proxies: "10.0.0.0/33" is not an IP address or CIDR`},
		{[]string{"proxy.example"}, "", `trusted_proxies: "proxy.example" is not an IP address or CIDR`},
		{[]string{"::ffff:10.0.0.0/90"}, "", "IPv4-mapped prefix needs at least 96 bits"},
		{nil, "X Forwarded", `client_ip_header: "X Forwarded" is not a header name`},
	} {
		if _, err := newClientIP(tt.trusted, tt.header); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("newClientIP(%q, %q) = %v, want %q", tt.trusted, tt.header, err, tt.err)
		}
	}
	for in, want := range map[string]string{
		"10.1.2.3/8":           "10.0.0.0/8",
		" 192.0.2.1 ":          "192.0.2.1/32",
		"::1":                  "::1/128",
		"::ffff:10.0.0.0/104":  "10.0.0.0/8",
		"::ffff:192.0.2.7":     "192.0.2.7/32",
		"2001:db8::1234/32":    "2001:db8::/32",
		"2001:DB8:0:0:0:0:0:1": "2001:db8::1/128",
	} {
		p, err := cipParsePrefix(in)
		if err != nil || p != netip.MustParsePrefix(want) {
			t.Errorf("cipParsePrefix(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
}

// Over a real socket, the address the server sees is the loopback peer,
// and a trusted peer's X-Forwarded-For is believed.
func TestClientIPOverSocket(t *testing.T) {
	plain, _ := newClientIP(nil, "")
	behind, _ := newClientIP([]string{"127.0.0.0/8"}, "")
	url := sluicetest.NewServer(t, pipe.Handler(guardEchoClient(plain))).URL
	if _, body := guardGet(t, url+"/", "X-Forwarded-For", "1.2.3.4"); body != "127.0.0.1" {
		t.Errorf("untrusted: %q", body)
	}
	url = sluicetest.NewServer(t, pipe.Handler(guardEchoClient(behind))).URL
	if _, body := guardGet(t, url+"/", "X-Forwarded-For", "6.6.6.6, 1.2.3.4"); body != "1.2.3.4" {
		t.Errorf("trusted: %q", body)
	}
}

// guardExampleGet is guardGet for examples.
func guardExampleGet(url string, hdr ...string) (*http.Response, string) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		panic(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(err)
	}
	return resp, string(b)
}

func BenchmarkClientIP(b *testing.B) {
	for _, bc := range []struct {
		name, header string
		fields       [][2]string
	}{
		{"peer", "", nil},
		{"x-forwarded-for", "", guardXFF("203.0.113.9, 10.0.0.2, 10.0.0.1")},
		{"forwarded", "Forwarded", [][2]string{{"Forwarded", `for=203.0.113.9;proto=https, for="10.0.0.1:80"`}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ci, _ := newClientIP([]string{"127.0.0.0/8", "10.0.0.0/8"}, bc.header)
			r := &engine.Request{RemoteAddr: guardTCP("127.0.0.1")}
			for _, f := range bc.fields {
				r.Fields = append(r.Fields, engine.Field{Name: []byte(f[0]), Value: []byte(f[1])})
			}
			b.ReportAllocs()
			for b.Loop() {
				ci.addr(r)
			}
		})
	}
}

// The allocation-free IPv4 parser agrees with netip.
func TestClientIPParseIPv4(t *testing.T) {
	for _, s := range []string{
		"1.2.3.4", "0.0.0.0", "255.255.255.255", "10.0.0.1", "256.1.1.1", "1.2.3", "1.2.3.4.5",
		"01.2.3.4", "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.-4", "a.b.c.d", "", "1.2.3.4 ", "::1", "0.00.0.0",
	} {
		want, werr := netip.ParseAddr(s)
		got, ok := cipParseIPv4([]byte(s))
		if ok != (werr == nil && want.Is4()) || ok && got != want {
			t.Errorf("cipParseIPv4(%q) = %v, %v; netip: %v, %v", s, got, ok, want, werr)
		}
	}
}
