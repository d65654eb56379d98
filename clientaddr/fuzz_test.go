package clientaddr

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
)

// FuzzParseIPv4 checks the allocation-free dotted-quad parser against
// net/netip: both accept the same IPv4 addresses, with the same value.
func FuzzParseIPv4(f *testing.F) {
	for _, s := range []string{"1.2.3.4", "255.255.255.255", "0.0.0.0", "01.2.3.4", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, ':') {
			return // IPv6 and ports are parseNode's, not parseIPv4's
		}
		got, ok := parseIPv4([]byte(s))
		want, err := netip.ParseAddr(s)
		wantOK := err == nil && want.Is4()
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("parseIPv4(%q) = %v, %v; netip says %v, %v", s, got, ok, want, err)
		}
	})
}

// FuzzResolve sends arbitrary proxy headers through a Resolver that
// trusts the peer. Whatever the header holds, the client it names is the
// peer or an address written in the header: the walk never makes one up.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"1.2.3.4", "1.2.3.4, 10.0.0.1", "[2001:db8::1]:443, junk", "for=1.2.3.4;proto=http, for=\"[::1]:80\"",
		"for=\"\\", "for=\"1.2.3.4", ";;,,", "::ffff:1.2.3.4", "fe80::1%eth0", "for=unknown, for=_hidden",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	xffResolver, err := New([]string{"127.0.0.0/8", "10.0.0.0/8"}, "")
	if err != nil {
		f.Fatal(err)
	}
	fwdResolver, err := New([]string{"127.0.0.0/8", "10.0.0.0/8"}, "Forwarded")
	if err != nil {
		f.Fatal(err)
	}
	peer := netip.MustParseAddr("127.0.0.1")
	f.Fuzz(func(t *testing.T, v string, forwarded bool) {
		ci, name := xffResolver, "X-Forwarded-For"
		if forwarded {
			ci, name = fwdResolver, "Forwarded"
		}
		r := &engine.Request{RemoteAddr: tcpAddr("127.0.0.1")}
		r.Fields = append(r.Fields, engine.Field{Name: []byte(name), Value: []byte(v)})
		got := ci.Addr(r)
		if !got.IsValid() {
			t.Fatalf("%s: %q: no address", name, v)
		}
		if got == peer || written(v, got) {
			return
		}
		t.Fatalf("%s: %q: client %v is neither the peer nor in the header", name, v, got)
	})
}

// written reports whether a parses from some run of v's address
// characters, as a proxy may write it (bare, bracketed, with a port).
func written(v string, a netip.Addr) bool {
	isAddrByte := func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '.' || r == ':' || r == '[' || r == ']')
	}
	for _, w := range strings.FieldsFunc(v, isAddrByte) {
		for i := range len(w) {
			for j := i + 1; j <= len(w); j++ {
				if b, ok := parseNode([]byte(w[i:j])); ok && b == a {
					return true
				}
			}
		}
	}
	return bytes.Contains([]byte(v), []byte(a.String()))
}
