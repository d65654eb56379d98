package cache

import (
	"testing"

	"github.com/sluice-server/sluice/httpgrammar"
)

func TestSingleRange(t *testing.T) {
	tests := []struct {
		in          string
		n           int64
		start, stop int64
		ok          bool
	}{
		{"bytes=0-0", 10, 0, 1, true}, {"bytes=2-5", 10, 2, 6, true}, {"bytes=5-", 10, 5, 10, true},
		{"bytes=-3", 10, 7, 10, true}, {"bytes=-30", 10, 0, 10, true}, {"bytes=5-100", 10, 5, 10, true},
		{"bytes=10-", 10, -1, 0, false}, {"bytes=-0", 10, -1, 0, false}, {"bytes=0-0", 0, -1, 0, false},
		{"bytes=5-2", 10, 0, 0, false}, {"bytes=1-2,4-5", 10, 0, 0, false}, {"items=1-2", 10, 0, 0, false},
		{"bytes=+1-2", 10, 0, 0, false}, {"bytes=1-+2", 10, 0, 0, false}, {"bytes=-+2", 10, 0, 0, false},
		{"bytes=a-b", 10, 0, 0, false}, {"bytes=", 10, 0, 0, false}, {"bytes=-", 10, 0, 0, false},
		{" bytes=1-2 ", 10, 1, 3, true}, {"bytes= 1-2", 10, 1, 3, true},
	}
	for _, tt := range tests {
		start, stop, ok := singleRange([]byte(tt.in), tt.n)
		if start != tt.start || stop != tt.stop || ok != tt.ok {
			t.Errorf("singleRange(%q, %d) = %d, %d, %v; want %d, %d, %v", tt.in, tt.n, start, stop, ok, tt.start, tt.stop, tt.ok)
		}
	}
}

// A satisfiable range lies within the body and is not empty.
func FuzzSingleRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-5", "bytes=3-", "bytes=1-2,3-4", "bytes=99999999999999999999-"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if n < 0 {
			n = -n
		}
		start, stop, ok := singleRange([]byte(s), n)
		if ok && (start < 0 || start >= stop || stop > n) {
			t.Fatalf("singleRange(%q, %d) = [%d, %d)", s, n, start, stop)
		}
	})
}

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
