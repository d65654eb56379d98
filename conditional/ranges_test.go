package conditional

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
)

// maxRanges is files' default (files.DefaultMaxRanges).
const maxRanges = 16

func TestParseRange(t *testing.T) {
	const size = 1000
	tests := []struct {
		field string
		what  RangeVerdict
		want  string
	}{
		{"bytes=0-9", RangeOK, "[{0 10}]"},
		{"bytes=990-", RangeOK, "[{990 10}]"},
		{"bytes=-10", RangeOK, "[{990 10}]"},
		{"bytes=-2000", RangeOK, "[{0 1000}]"},
		{"bytes=0-0,999-999", RangeOK, "[{0 1} {999 1}]"},
		{"bytes=500-599,0-99", RangeOK, "[{500 100} {0 100}]"},            // in the order asked (RFC 9110 §15.3.7.2)
		{"bytes=900-901,0-1,450-451", RangeOK, "[{900 2} {0 2} {450 2}]"}, // in the order asked
		{"bytes=500-599,0-99,550-", RangeOK, "[{500 500} {0 100}]"},       // merged where its first member was
		{"bytes=0-99,150-199", RangeOK, "[{0 200}]"},                      // a gap under rangeGap is merged
		{"bytes=0-99,50-149,100-", RangeOK, "[{0 1000}]"},                 // overlapping
		{"bytes=0-,0-,0-", RangeOK, "[{0 1000}]"},                         // repeated
		{"bytes=1000-", RangeUnsatisfiable, "[]"},
		{"bytes=-0", RangeUnsatisfiable, "[]"},
		{"bytes=1000-1001,2000-", RangeUnsatisfiable, "[]"},
		{"bytes=1000-,0-0", RangeOK, "[{0 1}]"}, // unsatisfiable specs are dropped
		{"bytes=9-0", RangeIgnore, "[]"},
		{"bytes=", RangeIgnore, "[]"},
		{"bytes=,", RangeIgnore, "[]"},
		{"bytes=x", RangeIgnore, "[]"},
		{"bytes=1", RangeIgnore, "[]"},
		{"bytes=--1", RangeIgnore, "[]"},
		{"bytes=1-2-3", RangeIgnore, "[]"},
		{"pages=1-2", RangeIgnore, "[]"},
		{"bytes=99999999999999999999999-", RangeUnsatisfiable, "[]"},
		{"bytes=0-99999999999999999999999", RangeOK, "[{0 1000}]"},
	}
	for _, tt := range tests {
		rs, what := ParseRange([]byte(tt.field), size, maxRanges)
		got := fmt.Sprint(rs)
		if rs == nil {
			got = "[]"
		}
		if what != tt.what || got != tt.want {
			t.Errorf("ParseRange(%q) = %s, %d; want %s, %d", tt.field, got, what, tt.want, tt.what)
		}
	}
	// A zero-length file: a suffix is the whole (empty) file; other ranges
	// are unsatisfiable.
	if _, what := ParseRange([]byte("bytes=-5"), 0, 16); what != RangeIgnore {
		t.Errorf("suffix of an empty file: %d, want RangeIgnore", what)
	}
	if _, what := ParseRange([]byte("bytes=0-5"), 0, 16); what != RangeUnsatisfiable {
		t.Errorf("range of an empty file: %d, want RangeUnsatisfiable", what)
	}
}

func FuzzParseRange(f *testing.F) {
	f.Add("bytes=0-9,20-29,-5", int64(100))
	f.Add("bytes=0-,5-,-3", int64(10))
	f.Fuzz(func(t *testing.T, field string, size int64) {
		if size < 0 {
			size = -size
		}
		rs, what := ParseRange([]byte(field), size, maxRanges)
		if what != RangeOK {
			if rs != nil {
				t.Fatalf("%q: ranges %v with verdict %d", field, rs, what)
			}
			return
		}
		if len(rs) == 0 || len(rs) > maxRanges {
			t.Fatalf("%q: %d ranges", field, len(rs))
		}
		// Disjoint (in whatever order they were asked), so the parts
		// never add up to more than the file.
		sorted := slices.SortedFunc(slices.Values(rs), func(a, b Range) int { return cmp.Compare(a.Off, b.Off) })
		var total int64
		for i, r := range sorted {
			if r.N <= 0 || r.Off < 0 || r.End() > size || i > 0 && r.Off <= sorted[i-1].End() {
				t.Fatalf("%q (size %d): bad ranges %v", field, size, rs)
			}
			total += r.N
		}
		if total > size {
			t.Fatalf("%q (size %d): %d bytes for a %d-byte file", field, size, total, size)
		}
	})
}
