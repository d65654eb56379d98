package httpgrammar

import (
	"strings"
	"testing"
)

// TestChars checks the tables against the RFCs' ABNF, written out again.
func TestChars(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		tchar := strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0 && b != 0 ||
			'0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
		if IsTokenChar(b) != tchar {
			t.Errorf("IsTokenChar(%#x) = %v", b, !tchar)
		}
		vchar := b == ' ' || b == '\t' || 0x21 <= b && b <= 0x7e || b >= 0x80
		if IsFieldValueChar(b) != vchar {
			t.Errorf("IsFieldValueChar(%#x) = %v", b, !vchar)
		}
		target := 0x21 <= b && b <= 0x7e && b != '#'
		if IsTargetChar(b) != target {
			t.Errorf("IsTargetChar(%#x) = %v", b, !target)
		}
		v, ok := Unhex(b)
		want := strings.IndexByte("0123456789abcdefABCDEF", b)
		if want >= 16 {
			want -= 6
		}
		if ok != (want >= 0) || ok && int(v) != want {
			t.Errorf("Unhex(%#x) = %d, %v", b, v, ok)
		}
	}
	for s, want := range map[string]bool{"": false, "GET": true, "x-gzip": true, "a b": false, "a/b": false, "*": true, "é": false} {
		if IsToken(s) != want || IsToken([]byte(s)) != want {
			t.Errorf("IsToken(%q) != %v", s, want)
		}
	}
}

func TestIsHopByHop(t *testing.T) {
	tests := []struct {
		name string
		conn []string
		want bool
	}{
		{"Connection", nil, true},
		{"proxy-connection", nil, true},
		{"KEEP-ALIVE", nil, true},
		{"te", nil, true},
		{"Transfer-Encoding", nil, true},
		{"Upgrade", nil, true},
		{"Trailer", nil, false}, // §7.6.1 does not name it: it describes the message
		{"Accept", nil, false},
		{"Keep-Alivf", nil, false}, // the length of two of them, neither
		{"tf", nil, false},
		{"X-Trace", []string{"close, x-trace"}, true},
		{"X-Trace", []string{"close", " , X-TRACE "}, true},
		{"X-Trace", []string{"x-trace2"}, false},
	}
	for _, tt := range tests {
		if got := IsHopByHop(tt.name, tt.conn...); got != tt.want {
			t.Errorf("IsHopByHop(%q, %q) = %v", tt.name, tt.conn, got)
		}
	}
}

// IsFieldValue is field-value of RFC 9110 §5.5, for string and []byte
// alike: every control byte but HTAB refused wherever it is, SP and HTAB
// refused first or last, obs-text allowed.
func TestIsFieldValue(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		inner := string([]byte{'a', b, 'b'})
		want := b == '\t' || b >= 0x20 && b != 0x7f
		if IsFieldValue(inner) != want || IsFieldValue([]byte(inner)) != want {
			t.Errorf("IsFieldValue(%q) != %v", inner, want)
		}
		alone := string([]byte{b})
		want = b > 0x20 && b != 0x7f
		if IsFieldValue(alone) != want {
			t.Errorf("IsFieldValue(%q) != %v", alone, want)
		}
	}
	for s, want := range map[string]bool{"": true, "a b": true, "a\tb": true, " a": false, "a ": false, "\ta": false, "a\t": false, " ": false, "\x80\xff": true} {
		if IsFieldValue(s) != want || IsFieldValue([]byte(s)) != want {
			t.Errorf("IsFieldValue(%q) != %v", s, want)
		}
	}
}
