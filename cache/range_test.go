package cache

import (
	"testing"

	"github.com/sluice-server/sluice/httpgrammar"
)

func TestVaryNames(t *testing.T) {
	tests := []struct {
		in   string
		want string
		star bool
	}{
		{"Accept-Encoding", "accept-encoding", false},
		{"X-B, x-a ,X-B", "x-a,x-b", false},
		{"", "", false},
		{", ,", "", false},
		{"X-A, *", "", true},
	}
	for _, tt := range tests {
		names, star := varyNames(tt.in)
		got := ""
		for i, n := range names {
			if i > 0 {
				got += ","
			}
			got += n
		}
		if got != tt.want || star != tt.star {
			t.Errorf("varyNames(%q) = %q, %v; want %q, %v", tt.in, got, star, tt.want, tt.star)
		}
	}
}

// Vary's names are lower case, sorted, without repeats, whatever the
// field holds.
func FuzzVaryNames(f *testing.F) {
	f.Add("Accept-Encoding, X-A")
	f.Add("*")
	f.Fuzz(func(t *testing.T, v string) {
		names, star := varyNames(v)
		if star && names != nil {
			t.Fatalf("star with names")
		}
		for i := 1; i < len(names); i++ {
			if names[i-1] >= names[i] {
				t.Fatalf("varyNames(%q) = %q: not sorted and unique", v, names)
			}
		}
	})
}

func TestValidCDN(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"max-age=60", true}, {"no-store", true}, {"private, max-age=0", true}, {"foobar, max-age=3600", true},
		{"max-age=60;x=1, a=?1, b=:aGk=:, c=\"s\", d=tok/en, e=1.5", true},
		{"max-age=10000, &&&&&", false}, {`max-age="10000"`, false}, {"max-age =100", false}, {"max-age= 100", false},
		{"MaX-aGe=3600", false}, {"", false}, {"max-age=60,", false}, {"max-age=1.5", false}, {"a=\"unterminated", false},
		{"a=?2", false}, {"a=:bad!:", false}, {"a=1234567890123456", false},
	}
	for _, tt := range tests {
		if got := validCDN(tt.in); got != tt.ok {
			t.Errorf("validCDN(%q) = %v, want %v", tt.in, got, tt.ok)
		}
	}
}

// validCDN never panics, and a field it accepts gives the cache
// directives whose numbers are in range.
func FuzzValidCDN(f *testing.F) {
	for _, s := range []string{"max-age=60", `a="x\"y"`, "a;b=1, c", "x=:YQ==:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !validCDN(s) {
			return
		}
		if cc := httpgrammar.ParseCacheControl(s); cc.MaxAge < -1 || cc.MaxAge > httpgrammar.DeltaInfinity {
			t.Fatalf("max-age %d", cc.MaxAge)
		}
	})
}

// parseExpires agrees with httpgrammar.ParseDate on every HTTP-date and
// never panics on anything else.
func FuzzParseExpires(f *testing.F) {
	for _, s := range []string{"Thu, 18 Aug 2050 02:01:18 GMT", "THU, 18 AUG 2050 02:01:18 gmt", "0", "Sunday, 06-Nov-94 08:49:37 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseExpires(s)
		if want, wok := httpgrammar.ParseDate(s); wok && (!ok || !got.Equal(want)) {
			t.Fatalf("parseExpires(%q) = %v, %v; ParseDate gives %v", s, got, ok, want)
		}
	})
}
