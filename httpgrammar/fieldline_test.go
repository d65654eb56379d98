package httpgrammar

import (
	"bytes"
	"strings"
	"testing"
)

// splitFieldLineOracle and isFieldValueOracle are SplitFieldLine and
// IsFieldValue as they were written before they took the name in one
// pass and the value a word at a time: the oracles the fast versions
// must agree with.
func splitFieldLineOracle(line []byte) (name, value []byte, err error) {
	colon := -1
	for i, c := range line {
		if c == ':' {
			colon = i
			break
		}
	}
	if colon < 0 {
		for _, c := range line {
			if c == '\r' {
				return nil, nil, ErrBareCR
			}
		}
		return nil, nil, ErrNoColon
	}
	name = line[:colon]
	if !IsToken(name) {
		if len(name) > 0 && (name[len(name)-1] == ' ' || name[len(name)-1] == '\t') {
			return nil, nil, ErrSpaceBeforeColon
		}
		return nil, nil, ErrFieldName
	}
	value = TrimOWS(line[colon+1:])
	if !isFieldValueOracle(value) {
		for _, c := range value {
			if !valueChars[c] {
				if c == '\r' {
					return nil, nil, ErrBareCR
				}
				break
			}
		}
		return nil, nil, ErrFieldValue
	}
	return name, value, nil
}

func isFieldValueOracle(v []byte) bool {
	if len(v) == 0 {
		return true
	}
	if c := v[0]; c == ' ' || c == '\t' {
		return false
	}
	if c := v[len(v)-1]; c == ' ' || c == '\t' {
		return false
	}
	for _, c := range v {
		if !valueChars[c] {
			return false
		}
	}
	return true
}

func sameFieldLine(t *testing.T, line []byte) {
	t.Helper()
	n1, v1, e1 := SplitFieldLine(line)
	n2, v2, e2 := splitFieldLineOracle(line)
	if e1 != e2 || !bytes.Equal(n1, n2) || !bytes.Equal(v1, v2) {
		t.Fatalf("SplitFieldLine(%q) = %q %q %v, want %q %q %v", line, n1, v1, e1, n2, v2, e2)
	}
	if got, want := IsFieldValue(line), isFieldValueOracle(line); got != want {
		t.Fatalf("IsFieldValue(%q) = %v, want %v", line, got, want)
	}
	if got, want := IsFieldValue(string(line)), isFieldValueOracle(line); got != want {
		t.Fatalf("IsFieldValue(string %q) = %v, want %v", line, got, want)
	}
}

// SplitFieldLine and IsFieldValue agree with their oracles for every
// byte value at every place of a few field lines.
func TestFieldLineAgainstOracle(t *testing.T) {
	for _, l := range []string{"", ":", "a:", ":b", "Host: 127.0.0.1:18090", "a : b", "a:\tb\t", "a: b\r",
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) \x80\xff", "X:" + strings.Repeat("v\t", 20)} {
		sameFieldLine(t, []byte(l))
	}
	for _, base := range []string{"Host: 127.0.0.1:18090", "Accept: text/html,application/xhtml+xml;q=0.9"} {
		for i := range len(base) {
			for c := range 256 {
				b := []byte(base)
				b[i] = byte(c)
				sameFieldLine(t, b)
			}
		}
	}
}

func FuzzFieldLine(f *testing.F) {
	f.Add([]byte("Host: 127.0.0.1:18090"))
	f.Add([]byte("a : b\x7f\tc"))
	f.Fuzz(func(t *testing.T, line []byte) { sameFieldLine(t, line) })
}

// BenchmarkSplitFieldLine splits the field lines of a browser's request.
func BenchmarkSplitFieldLine(b *testing.B) {
	lines := [][]byte{[]byte("Host: 127.0.0.1:18090"), []byte("User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"),
		[]byte("Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), []byte("Accept-Encoding: gzip, deflate, br")}
	for b.Loop() {
		for _, l := range lines {
			if _, _, err := SplitFieldLine(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSplitFieldLineHost splits a benchmark client's one field.
func BenchmarkSplitFieldLineHost(b *testing.B) {
	l := []byte("Host: 127.0.0.1:18090")
	for b.Loop() {
		if _, _, err := SplitFieldLine(l); err != nil {
			b.Fatal(err)
		}
	}
}
