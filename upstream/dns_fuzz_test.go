package upstream

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// FuzzParseDNSTarget: parseDNSTarget never panics; what it accepts is a
// fully qualified DNS name, with a port from 1 to 65535 for dns+, whose
// hosts (SCHEME://ADDR:PORT) the transport accepts.
func FuzzParseDNSTarget(f *testing.F) {
	for _, s := range []string{"dns+http://app.test:8080", "dns+https://app.test", "srv+http://_http._tcp.app.test",
		"dns+http://10.0.0.1:80", "srv+http://_x._tcp.a:1", "dns+tcp://php:9000", "dns+http://", "srv+", "dns+http://a..b"} {
		f.Add(s)
	}
	check := func(name string) error { _, err := parseHost[*fakeConn](name); return err }
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDNSTarget(s, check)
		if err != nil {
			return
		}
		if !strings.HasSuffix(d.name, ".") || !validDNSName(d.name) {
			t.Fatalf("%q: accepted name %q", s, d.name)
		}
		port := d.port
		if d.srv {
			port = "1"
		}
		if _, err := parseHost[*fakeConn](d.scheme + "://" + net.JoinHostPort("127.0.0.1", port)); err != nil {
			t.Fatalf("%q: accepted, but its hosts are refused: %v", s, err)
		}
		if _, err := dnsmessage.NewName(d.name); err != nil {
			t.Fatalf("%q: accepted name %q is no DNS name: %v", s, d.name, err)
		}
	})
}

// FuzzParseResolvConf: every nameserver it returns is an address and
// port.
func FuzzParseResolvConf(f *testing.F) {
	f.Add("nameserver 10.0.0.2\nnameserver ::1\nsearch a\n")
	f.Add("nameserver fe80::1%eth0")
	f.Fuzz(func(t *testing.T, s string) {
		for _, ns := range parseResolvConf(strings.NewReader(s)) {
			if _, err := netip.ParseAddrPort(ns); err != nil {
				t.Fatalf("%q: nameserver %q: %v", s, ns, err)
			}
		}
	})
}

// FuzzParseAnswer: parseAnswer never panics on what a server (or anyone
// on the path) sends, and accepts only an answer to the query asked.
func FuzzParseAnswer(f *testing.F) {
	q := dnsmessage.Question{Name: dnsmessage.MustNewName("app.test."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}
	good, _ := (&dnsmessage.Message{Header: dnsmessage.Header{ID: 7, Response: true}, Questions: []dnsmessage.Question{q},
		Answers: []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
			Body: &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}}}}}).Pack()
	f.Add(good)
	f.Add([]byte{0, 7, 0x80, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, m, err := parseAnswer(b, 7, q)
		if err == nil && (m.Header.ID != 7 || !m.Header.Response || len(m.Questions) != 1 || m.Questions[0].Type != q.Type) {
			t.Fatalf("accepted an answer to another query: %+v", m.Header)
		}
	})
}

// FuzzParseSpec: parseSpec never panics; a spec it accepts has a name
// without white space (or the input unchanged), a weight of 0 (none)
// or 1 to 100.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"http://a:1", "http://a:1 weight=3 drain", "x weight=", " ", "a\tdrain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := parseSpec(s)
		if err != nil {
			return
		}
		if spec.Weight < 0 || spec.Weight > MaxWeight || spec.Name != s && strings.ContainsAny(spec.Name, " \t\n") {
			t.Fatalf("%q: %+v", s, spec)
		}
	})
}
