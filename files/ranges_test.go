package files

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
)

func TestParseRange(t *testing.T) {
	const size = 1000
	tests := []struct {
		field string
		what  int
		want  string
	}{
		{"bytes=0-9", rangeOK, "[{0 10}]"},
		{"bytes=990-", rangeOK, "[{990 10}]"},
		{"bytes=-10", rangeOK, "[{990 10}]"},
		{"bytes=-2000", rangeOK, "[{0 1000}]"},
		{"bytes=0-0,999-999", rangeOK, "[{0 1} {999 1}]"},
		{"bytes=500-599,0-99", rangeOK, "[{500 100} {0 100}]"},            // in the order asked (RFC 9110 §15.3.7.2)
		{"bytes=900-901,0-1,450-451", rangeOK, "[{900 2} {0 2} {450 2}]"}, // in the order asked
		{"bytes=500-599,0-99,550-", rangeOK, "[{500 500} {0 100}]"},       // merged where its first member was
		{"bytes=0-99,150-199", rangeOK, "[{0 200}]"},                      // a gap under rangeGap is merged
		{"bytes=0-99,50-149,100-", rangeOK, "[{0 1000}]"},                 // overlapping
		{"bytes=0-,0-,0-", rangeOK, "[{0 1000}]"},                         // repeated
		{"bytes=1000-", rangeUnsatisfiable, "[]"},
		{"bytes=-0", rangeUnsatisfiable, "[]"},
		{"bytes=1000-1001,2000-", rangeUnsatisfiable, "[]"},
		{"bytes=1000-,0-0", rangeOK, "[{0 1}]"}, // unsatisfiable specs are dropped
		{"bytes=9-0", rangeIgnore, "[]"},
		{"bytes=", rangeIgnore, "[]"},
		{"bytes=,", rangeIgnore, "[]"},
		{"bytes=x", rangeIgnore, "[]"},
		{"bytes=1", rangeIgnore, "[]"},
		{"bytes=--1", rangeIgnore, "[]"},
		{"bytes=1-2-3", rangeIgnore, "[]"},
		{"pages=1-2", rangeIgnore, "[]"},
		{"bytes=99999999999999999999999-", rangeUnsatisfiable, "[]"},
		{"bytes=0-99999999999999999999999", rangeOK, "[{0 1000}]"},
	}
	for _, tt := range tests {
		rs, what := parseRange([]byte(tt.field), size, DefaultMaxRanges)
		got := fmt.Sprint(rs)
		if rs == nil {
			got = "[]"
		}
		if what != tt.what || got != tt.want {
			t.Errorf("parseRange(%q) = %s, %d; want %s, %d", tt.field, got, what, tt.want, tt.what)
		}
	}
	// A zero-length file: a suffix is the whole (empty) file; other ranges
	// are unsatisfiable.
	if _, what := parseRange([]byte("bytes=-5"), 0, 16); what != rangeIgnore {
		t.Errorf("suffix of an empty file: %d, want rangeIgnore", what)
	}
	if _, what := parseRange([]byte("bytes=0-5"), 0, 16); what != rangeUnsatisfiable {
		t.Errorf("range of an empty file: %d, want rangeUnsatisfiable", what)
	}
}

func FuzzParseRange(f *testing.F) {
	f.Add("bytes=0-9,20-29,-5", int64(100))
	f.Add("bytes=0-,5-,-3", int64(10))
	f.Fuzz(func(t *testing.T, field string, size int64) {
		if size < 0 {
			size = -size
		}
		rs, what := parseRange([]byte(field), size, DefaultMaxRanges)
		if what != rangeOK {
			if rs != nil {
				t.Fatalf("%q: ranges %v with verdict %d", field, rs, what)
			}
			return
		}
		if len(rs) == 0 || len(rs) > DefaultMaxRanges {
			t.Fatalf("%q: %d ranges", field, len(rs))
		}
		// Disjoint (in whatever order they were asked), so the parts
		// never add up to more than the file.
		sorted := slices.SortedFunc(slices.Values(rs), func(a, b byteRange) int { return cmp.Compare(a.off, b.off) })
		var total int64
		for i, r := range sorted {
			if r.n <= 0 || r.off < 0 || r.end() > size || i > 0 && r.off <= sorted[i-1].end() {
				t.Fatalf("%q (size %d): bad ranges %v", field, size, rs)
			}
			total += r.n
		}
		if total > size {
			t.Fatalf("%q (size %d): %d bytes for a %d-byte file", field, size, total, size)
		}
	})
}
