package clientaddr

import (
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// echoClient is a Source answering with the client address that ci
// resolves.
func echoClient(ci *Resolver) pipe.Source {
	return func(c *pipe.Conn) pipe.Content {
		a := ci.Addr(c.Request)
		return func(w pipe.Writer) error {
			_, err := io.WriteString(w, a.String())
			return err
		}
	}
}

func TestResolve(t *testing.T) {
	trusted := []string{"127.0.0.0/8", "10.0.0.0/8", "2001:db8:ffff::/48"}
	tests := []struct {
		name    string
		trusted []string
		header  string
		peer    net.Addr
		fields  [][2]string
		want    string
	}{
		{"no proxies trusted: header ignored", nil, "", tcpAddr("127.0.0.1"), xff("1.2.3.4"), "127.0.0.1"},
		{"untrusted peer: header ignored", trusted, "", tcpAddr("192.0.2.9"), xff("1.2.3.4"), "192.0.2.9"},
		{"trusted peer, no header", trusted, "", tcpAddr("127.0.0.1"), nil, "127.0.0.1"},
		{"one hop", trusted, "", tcpAddr("127.0.0.1"), xff("1.2.3.4"), "1.2.3.4"},
		{"skips trusted hops", trusted, "", tcpAddr("127.0.0.1"), xff("1.2.3.4, 10.0.0.1, 10.0.0.2"), "1.2.3.4"},
		{"spoofed left part ignored", trusted, "", tcpAddr("127.0.0.1"), xff("6.6.6.6, 1.2.3.4"), "1.2.3.4"},
		{"fields joined in order", trusted, "", tcpAddr("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "6.6.6.6"}, {"x-forwarded-for", "1.2.3.4, 10.0.0.1"}}, "1.2.3.4"},
		{"left field reached through trusted", trusted, "", tcpAddr("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "5.5.5.5"}, {"X-Forwarded-For", "10.0.0.1"}}, "5.5.5.5"},
		{"all trusted: leftmost", trusted, "", tcpAddr("127.0.0.1"), xff("10.0.0.2, 10.0.0.1"), "10.0.0.2"},
		{"junk ends the walk", trusted, "", tcpAddr("127.0.0.1"), xff("1.2.3.4, junk, 10.0.0.1"), "10.0.0.1"},
		{"junk at the right: the peer", trusted, "", tcpAddr("127.0.0.1"), xff("1.2.3.4, unknown"), "127.0.0.1"},
		{"empty elements", trusted, "", tcpAddr("127.0.0.1"), xff(" 1.2.3.4 ,, "), "1.2.3.4"},
		{"IPv4 with port", trusted, "", tcpAddr("127.0.0.1"), xff("1.2.3.4:5678"), "1.2.3.4"},
		{"IPv6 bracketed with port", trusted, "", tcpAddr("127.0.0.1"), xff("[2001:db8::1]:443"), "2001:db8::1"},
		{"IPv6 bare", trusted, "", tcpAddr("127.0.0.1"), xff("2001:db8::1, 2001:db8:ffff::9"), "2001:db8::1"},
		{"IPv4-mapped unmapped", trusted, "", tcpAddr("127.0.0.1"), xff("::ffff:1.2.3.4"), "1.2.3.4"},
		{"mapped peer is IPv4", trusted, "", tcpAddr("::ffff:127.0.0.1"), xff("1.2.3.4"), "1.2.3.4"},
		{"zone refused", trusted, "", tcpAddr("127.0.0.1"), xff("fe80::1%eth0"), "127.0.0.1"},
		{"Forwarded not read by default", trusted, "", tcpAddr("127.0.0.1"),
			[][2]string{{"Forwarded", "for=1.2.3.4"}}, "127.0.0.1"},
		{"X-Real-IP", trusted, "X-Real-IP", tcpAddr("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "6.6.6.6"}, {"X-Real-IP", "1.2.3.4"}}, "1.2.3.4"},
		{"Forwarded", trusted, "Forwarded", tcpAddr("127.0.0.1"),
			[][2]string{{"Forwarded", "for=192.0.2.60;proto=http;by=203.0.113.43"}}, "192.0.2.60"},
		{"Forwarded quoted IPv6 with port", trusted, "forwarded", tcpAddr("127.0.0.1"),
			[][2]string{{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded elements from the right", trusted, "Forwarded", tcpAddr("127.0.0.1"),
			[][2]string{{"Forwarded", "for=6.6.6.6"}, {"Forwarded", `For=1.2.3.4;proto=https, for="10.0.0.1:80";by=x`}}, "1.2.3.4"},
		{"Forwarded unknown", trusted, "Forwarded", tcpAddr("127.0.0.1"),
			[][2]string{{"Forwarded", "for=1.2.3.4, for=unknown"}}, "127.0.0.1"},
		{"Forwarded element without for", trusted, "Forwarded", tcpAddr("127.0.0.1"),
			[][2]string{{"Forwarded", "for=1.2.3.4, proto=http"}}, "127.0.0.1"},
		{"Forwarded ignores X-Forwarded-For", trusted, "Forwarded", tcpAddr("127.0.0.1"),
			[][2]string{{"X-Forwarded-For", "6.6.6.6"}}, "127.0.0.1"},
		{"Unix socket peer", trusted, "", &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, xff("1.2.3.4"), "invalid IP"},
		{"trusted Unix socket peer", []string{"unix:", "10.0.0.0/8"}, "", &net.UnixAddr{Name: "@", Net: "unix"}, xff("1.2.3.4, 10.0.0.1"), "1.2.3.4"},
		{"trusted Unix socket peer, no header", []string{"unix:"}, "", &net.UnixAddr{Name: "@", Net: "unix"}, nil, "invalid IP"},
		{"unix: trusts no TCP peer", []string{"unix:"}, "", tcpAddr("127.0.0.1"), xff("1.2.3.4"), "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ci, err := New(tt.trusted, tt.header)
			if err != nil {
				t.Fatal(err)
			}
			r := &engine.Request{RemoteAddr: tt.peer}
			for _, f := range tt.fields {
				r.Fields = append(r.Fields, engine.Field{Name: []byte(f[0]), Value: []byte(f[1])})
			}
			if got := ci.Addr(r).String(); got != tt.want {
				t.Errorf("addr = %s, want %s", got, tt.want)
			}
		})
	}
}

func tcpAddr(ip string) net.Addr {
	return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}
}

func xff(v string) [][2]string { return [][2]string{{"X-Forwarded-For", v}} }

func TestNewErrors(t *testing.T) {
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
		if _, err := New(tt.trusted, tt.header); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("New(%q, %q) = %v, want %q", tt.trusted, tt.header, err, tt.err)
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
		p, err := ParsePrefix(in)
		if err != nil || p != netip.MustParsePrefix(want) {
			t.Errorf("ParsePrefix(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
}

// Over a real socket, the address the server sees is the loopback peer,
// and a trusted peer's X-Forwarded-For is believed.
func TestOverSocket(t *testing.T) {
	plain, _ := New(nil, "")
	behind, _ := New([]string{"127.0.0.0/8"}, "")
	url := sluicetest.NewServer(t, pipe.Handler(echoClient(plain))).URL
	if _, body := sluicetest.Get(t, url+"/", "X-Forwarded-For", "1.2.3.4"); body != "127.0.0.1" {
		t.Errorf("untrusted: %q", body)
	}
	url = sluicetest.NewServer(t, pipe.Handler(echoClient(behind))).URL
	if _, body := sluicetest.Get(t, url+"/", "X-Forwarded-For", "6.6.6.6, 1.2.3.4"); body != "1.2.3.4" {
		t.Errorf("trusted: %q", body)
	}
}

func BenchmarkAddr(b *testing.B) {
	for _, bc := range []struct {
		name, header string
		fields       [][2]string
	}{
		{"peer", "", nil},
		{"x-forwarded-for", "", xff("203.0.113.9, 10.0.0.2, 10.0.0.1")},
		{"forwarded", "Forwarded", [][2]string{{"Forwarded", `for=203.0.113.9;proto=https, for="10.0.0.1:80"`}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ci, _ := New([]string{"127.0.0.0/8", "10.0.0.0/8"}, bc.header)
			r := &engine.Request{RemoteAddr: tcpAddr("127.0.0.1")}
			for _, f := range bc.fields {
				r.Fields = append(r.Fields, engine.Field{Name: []byte(f[0]), Value: []byte(f[1])})
			}
			b.ReportAllocs()
			for b.Loop() {
				ci.Addr(r)
			}
		})
	}
}

// The allocation-free IPv4 parser agrees with netip.
func TestParseIPv4(t *testing.T) {
	for _, s := range []string{
		"1.2.3.4", "0.0.0.0", "255.255.255.255", "10.0.0.1", "256.1.1.1", "1.2.3", "1.2.3.4.5",
		"01.2.3.4", "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.-4", "a.b.c.d", "", "1.2.3.4 ", "::1", "0.00.0.0",
	} {
		want, werr := netip.ParseAddr(s)
		got, ok := parseIPv4([]byte(s))
		if ok != (werr == nil && want.Is4()) || ok && got != want {
			t.Errorf("parseIPv4(%q) = %v, %v; netip: %v, %v", s, got, ok, want, werr)
		}
	}
}
