package httpgrammar

import (
	"slices"
	"strings"
	"testing"
)

func TestTrimOWS(t *testing.T) {
	for in, want := range map[string]string{
		"": "", " \t": "", "a": "a", " a\t": "a", "\ta b ": "a b", "\r a \n": "\r a \n",
	} {
		if got := TrimOWS(in); got != want {
			t.Errorf("TrimOWS(%q) = %q, want %q", in, got, want)
		}
	}
}

func elements[T ~string | ~[]byte](v T) []string {
	var out []string
	for elem, rest := NextElement(v); len(elem) > 0; elem, rest = NextElement(rest) {
		out = append(out, string(elem))
	}
	return out
}

func TestNextElement(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{",", nil},
		{" , ,\t,", nil},
		{"a", []string{"a"}},
		{"a,b", []string{"a", "b"}},
		{" a , b ;q=1 ,", []string{"a", "b ;q=1"}},
		{",,a,,", []string{"a"}},
		{"a b, c", []string{"a b", "c"}},
		{`a;p="x,y"`, []string{`a;p="x`, `y"`}}, // quoted commas split (documented)
	}
	for _, tt := range tests {
		if got := elements(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("elements(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := elements([]byte(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("elements([]byte(%q)) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHasToken(t *testing.T) {
	tests := []struct {
		v, tok string
		want   bool
	}{
		{"close", "close", true},
		{"Keep-Alive, CLOSE", "close", true},
		{" , close ,", "close", true},
		{"closed", "close", false},
		{"close;x=1", "close", false},
		{"", "close", false},
	}
	for _, tt := range tests {
		if got := HasToken([]byte(tt.v), tt.tok); got != tt.want {
			t.Errorf("HasToken(%q, %q) = %v", tt.v, tt.tok, got)
		}
	}
}

func TestEqualFold(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"", "", true}, {"Host", "host", true}, {"HOST", "hOsT", true}, {"host", "hosts", false},
		{"a-b", "A-B", true}, {"@", "`", false}, {"[", "{", false}, {"\u212a", "k", false},
		{"x", "y", false},
	}
	for _, tt := range tests {
		if got := EqualFold([]byte(tt.a), tt.b); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v", tt.a, tt.b, got)
		}
		if got := EqualFold(tt.b, []byte(tt.a)); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v", tt.b, tt.a, got)
		}
	}
}

func FuzzNextElement(f *testing.F) {
	for _, s := range []string{"a, b", " , ,", "gzip;q=0.5,\tbr", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := elements(v)
		var want []string // the definition: split, trim, drop the empty
		for _, e := range strings.Split(v, ",") {
			if e = strings.Trim(e, " \t"); e != "" {
				want = append(want, e)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("elements(%q) = %q, want %q", v, got, want)
		}
	})
}

func FuzzEqualFold(f *testing.F) {
	f.Add("Content-Length", "content-length")
	f.Add("\u212a", "k")
	f.Add("\xffA", "\xffa")
	f.Fuzz(func(t *testing.T, a, b string) {
		lower := func(s string) string { // A-Z only, byte by byte
			b := []byte(s)
			for i, c := range b {
				if 'A' <= c && c <= 'Z' {
					b[i] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
		want := lower(a) == lower(b)
		if got := EqualFold(a, b); got != want {
			t.Fatalf("EqualFold(%q, %q) = %v, want %v", a, b, got, want)
		}
	})
}
