package conditional

import (
	"cmp"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/sluice-server/sluice/httpgrammar"
)

// Range is a satisfiable byte range of a representation: N bytes from
// offset Off.
type Range struct{ Off, N int64 }

// End returns the offset just past r.
func (r Range) End() int64 { return r.Off + r.N }

// RangeVerdict is what ParseRange makes of a Range field.
type RangeVerdict int

// The verdicts of ParseRange.
const (
	RangeIgnore        RangeVerdict = iota // send the whole representation (200)
	RangeUnsatisfiable                     // 416, with UnsatisfiedRange
	RangeOK                                // 206: the ranges
)

// Limits of range handling.
const (
	// maxRangeSpecs bounds the range-specs parsed from one field; a field
	// with more is ignored (RFC 9110 §14.2 allows ignoring "a set of many
	// small ranges").
	maxRangeSpecs = 1000

	// rangeGap is the largest gap between two ranges that are merged into
	// one: sending the gap costs less than a part header.
	rangeGap = 80
)

// ParseRange parses a Range field value (RFC 9110 §14.1.1) against a
// representation of size bytes. It returns RangeIgnore for a field to
// ignore: another range unit, invalid syntax (a range-spec with last-pos
// before first-pos), more than 1000 range-specs, or more than maxRanges
// ranges once overlapping and nearby ones are merged; RangeUnsatisfiable
// when no range-spec is satisfiable; otherwise RangeOK and the ranges,
// merged and in the order asked, so that the parts sent never exceed the
// representation plus maxRanges part headers. The ranges are nil unless
// the verdict is RangeOK; the slice is new and the caller's. field is
// only read.
func ParseRange(field []byte, size int64, maxRanges int) ([]Range, RangeVerdict) {
	const unit = "bytes="
	if len(field) < len(unit) || !httpgrammar.EqualFold(field[:len(unit)], unit) {
		return nil, RangeIgnore
	}
	var ranges []Range
	specs, suffixOnEmpty := 0, false
	// Empty list elements are skipped (RFC 9110 §5.6.1).
	for spec, rest := httpgrammar.NextElement(field[len(unit):]); len(spec) > 0; spec, rest = httpgrammar.NextElement(rest) {
		if specs++; specs > maxRangeSpecs {
			return nil, RangeIgnore
		}
		dash := -1
		for i, c := range spec {
			if c == '-' {
				dash = i
				break
			}
		}
		if dash < 0 {
			return nil, RangeIgnore
		}
		first, last := spec[:dash], spec[dash+1:]
		if len(first) == 0 { // suffix-range: the last n bytes
			n, ok := parseDigits(last)
			if !ok {
				return nil, RangeIgnore
			}
			if n == 0 {
				continue // unsatisfiable
			}
			if size == 0 {
				suffixOnEmpty = true
				continue
			}
			n = min(n, size)
			ranges = append(ranges, Range{size - n, n})
			continue
		}
		off, ok := parseDigits(first)
		if !ok {
			return nil, RangeIgnore
		}
		end := int64(-1) // inclusive; -1: to the end
		if len(last) > 0 {
			if end, ok = parseDigits(last); !ok || end < off {
				return nil, RangeIgnore
			}
		}
		if off >= size {
			continue // unsatisfiable
		}
		if end < 0 || end >= size {
			end = size - 1
		}
		ranges = append(ranges, Range{off, end - off + 1})
	}
	if len(ranges) == 0 {
		if specs == 0 || suffixOnEmpty {
			// "bytes=" alone is invalid; a suffix of an empty
			// representation is the whole of it.
			return nil, RangeIgnore
		}
		return nil, RangeUnsatisfiable
	}
	ranges = coalesce(ranges)
	if len(ranges) > maxRanges {
		return nil, RangeIgnore
	}
	return ranges, RangeOK
}

// coalesce merges ranges that overlap or lie within rangeGap bytes of
// each other (RFC 9110 §14.2 allows both) and keeps the order they were
// asked in, a merged range taking the place of its first member (the
// order §15.3.7.2 asks for). What it returns is disjoint, so the parts
// never add up to more than the representation.
func coalesce(rs []Range) []Range {
	if len(rs) < 2 {
		return rs
	}
	type span struct {
		Range
		first int // the position of its first member in rs
	}
	spans := make([]span, len(rs))
	for i, r := range rs {
		spans[i] = span{r, i}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.Off, b.Off) })
	out := spans[:1]
	for _, r := range spans[1:] {
		cur := &out[len(out)-1]
		if r.Off <= cur.End()+rangeGap {
			cur.N = max(cur.End(), r.End()) - cur.Off
			cur.first = min(cur.first, r.first)
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.first, b.first) })
	rs = rs[:len(out)]
	for i, r := range out {
		rs[i] = r.Range
	}
	return rs
}

// parseDigits parses 1*DIGIT. Values beyond 2^62 saturate there: they
// are past the end of any representation.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < 1<<58 {
			n = n*10 + int64(c-'0')
		} else {
			n = 1 << 62
		}
	}
	return n, true
}

// ContentRange returns the Content-Range field value of a 206 for r of a
// representation of size bytes: "bytes FIRST-LAST/SIZE".
func ContentRange(r Range, size int64) string {
	b := make([]byte, 0, 48)
	b = append(b, "bytes "...)
	b = strconv.AppendInt(b, r.Off, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.End()-1, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, size, 10)
	return string(b)
}

// UnsatisfiedRange returns the Content-Range field value of a 416 for a
// representation of size bytes: "bytes */SIZE".
func UnsatisfiedRange(size int64) string {
	return "bytes */" + strconv.FormatInt(size, 10)
}

// Multipart lays out a multipart/byteranges body (RFC 9110 §14.6): for
// each range, a delimiter and part header, then the range's bytes and
// CRLF; then the close delimiter. Its fields are set by NewMultipart and
// read-only after; a Multipart may be shared by goroutines.
type Multipart struct {
	Ranges      []Range  // the parts' ranges, as given to NewMultipart
	ContentType string   // the response's Content-Type, with the boundary
	Heads       []string // per range: the delimiter and part header fields
	Tail        string   // the close delimiter
	Length      int64    // the whole body's length: its Content-Length
}

// NewMultipart lays out the parts of ranges of a representation of size
// bytes and media type ctype, under a random boundary. It keeps ranges
// (the caller no longer changes it).
func NewMultipart(ranges []Range, size int64, ctype string) *Multipart {
	var rnd [16]byte
	b := strconv.AppendUint(rnd[:0], rand.Uint64(), 36)
	boundary := "sluice-" + string(b)
	m := &Multipart{
		Ranges:      ranges,
		ContentType: "multipart/byteranges; boundary=" + boundary,
		Heads:       make([]string, len(ranges)),
		Tail:        "--" + boundary + "--\r\n",
	}
	for i, r := range ranges {
		h := "--" + boundary + "\r\nContent-Type: " + ctype + "\r\nContent-Range: " + ContentRange(r, size) + "\r\n\r\n"
		m.Heads[i] = h
		m.Length += int64(len(h)) + r.N + 2
	}
	m.Length += int64(len(m.Tail))
	return m
}

var crlf = []byte("\r\n")

// Send writes the body m lays out to w: each part's head, then the
// part's bytes, which part writes (to w, or by a faster path of its own
// such as sendfile, as long as they arrive between the heads), then CRLF;
// then the tail. It stops at the first error and returns it.
func (m *Multipart) Send(w io.Writer, part func(Range) error) error {
	for i, r := range m.Ranges {
		if _, err := io.WriteString(w, m.Heads[i]); err != nil {
			return err
		}
		if err := part(r); err != nil {
			return err
		}
		if _, err := w.Write(crlf); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, m.Tail)
	return err
}
