package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/httpgrammar"
)

// splitHostPortBytewise is splitHostPort as it was written before its
// byte classes went into a table, kept as the oracle the table version
// must agree with.
func splitHostPortBytewise(v []byte) (host, port []byte, ok bool) {
	host = v
	if len(v) > 0 && v[0] == '[' {
		end := bytes.IndexByte(v, ']')
		if end < 0 || !validIPLiteral(v[1:end]) {
			return nil, nil, false
		}
		host = v[:end+1]
		if rest := v[end+1:]; len(rest) > 0 {
			if rest[0] != ':' {
				return nil, nil, false
			}
			port = rest[1:]
		}
	} else {
		if i := bytes.IndexByte(v, ':'); i >= 0 {
			host, port = v[:i], v[i+1:]
		}
		for i := 0; i < len(host); i++ {
			switch c := host[i]; {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			case c == '.':
				// No empty label: not ".a", "a..b" or "." (a name's
				// one trailing dot, "a.", is its absolute form). Some
				// backend could trim dots that routing did not, and read
				// another host than the one the request was routed by.
				if i == 0 || host[i-1] == '.' {
					return nil, nil, false
				}
			case strings.IndexByte("-_~!$&'()*+,;=", c) >= 0:
			case c == '%':
				// pct-encoded, and only for the octets of a UTF-8
				// character (RFC 3986 §3.2.2): never "%00" or "%2F".
				if i+2 >= len(host) {
					return nil, nil, false
				}
				if hi, ok := httpgrammar.Unhex(host[i+1]); !ok || hi < 8 {
					return nil, nil, false
				}
				if _, ok := httpgrammar.Unhex(host[i+2]); !ok {
					return nil, nil, false
				}
				i += 2
			default:
				return nil, nil, false
			}
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return nil, nil, false
		}
	}
	return host, port, true
}

func sameSplit(t *testing.T, v []byte) {
	t.Helper()
	h1, p1, ok1 := splitHostPort(v)
	h2, p2, ok2 := splitHostPortBytewise(v)
	if ok1 != ok2 || !bytes.Equal(h1, h2) || !bytes.Equal(p1, p2) || (p1 == nil) != (p2 == nil) {
		t.Fatalf("splitHostPort(%q) = %q %q %v, want %q %q %v", v, h1, p1, ok1, h2, p2, ok2)
	}
}

// splitHostPort agrees with the byte-by-byte version for every byte at
// every place of a few hosts, and for the usual forms.
func TestSplitHostPortTable(t *testing.T) {
	for _, v := range []string{"", "a", "127.0.0.1:18090", "example.com", "a.", ".a", "a..b", "a:", ":80", "a:8x",
		"%c3%a9.fr", "%2f", "%c3", "[::1]:443", "[::1]x", "a_b~c-d!$&'()*+,;=", "a b", "a@b"} {
		sameSplit(t, []byte(v))
	}
	for _, base := range []string{"www.example.com:8080", "%c3%a9a.b"} {
		for i := range len(base) {
			for c := range 256 {
				b := []byte(base)
				b[i] = byte(c)
				sameSplit(t, b)
			}
		}
	}
}

func FuzzSplitHostPort(f *testing.F) {
	for _, s := range []string{"127.0.0.1:18090", "%c3%a9.fr", "[::1]:443", "a..b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) { sameSplit(t, v) })
}

// BenchmarkSplitHostPort splits a Host field such as a benchmark client
// sends.
func BenchmarkSplitHostPort(b *testing.B) {
	v := []byte("127.0.0.1:18090")
	for b.Loop() {
		if _, _, ok := splitHostPort(v); !ok {
			b.Fatal("refused")
		}
	}
}

// BenchmarkSplitHostPortBytewise is the same with the oracle.
func BenchmarkSplitHostPortBytewise(b *testing.B) {
	v := []byte("127.0.0.1:18090")
	for b.Loop() {
		if _, _, ok := splitHostPortBytewise(v); !ok {
			b.Fatal("refused")
		}
	}
}
