package files

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/sluice-server/sluice/httpgrammar"
)

// byteRange is a satisfiable range of a representation: n bytes from off.
type byteRange struct{ off, n int64 }

func (r byteRange) end() int64 { return r.off + r.n }

// What a Range field asks for, as parseRange reports it.
const (
	rangeIgnore        = iota // serve the whole representation (200)
	rangeUnsatisfiable        // 416
	rangeOK                   // serve the ranges (206)
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

// parseRange parses a Range field value (RFC 9110 §14.1.1) against a
// representation of size bytes. It returns rangeIgnore for a field to
// ignore: another range unit, invalid syntax (a range-spec with last-pos
// before first-pos), too many range-specs, or more than maxRanges ranges
// once overlapping and nearby ones are merged; rangeUnsatisfiable when no
// range-spec is satisfiable; otherwise rangeOK and the ranges, merged and
// in the order asked (see coalesce), so that the parts sent never exceed the
// representation plus maxRanges part headers.
func parseRange(field []byte, size int64, maxRanges int) ([]byteRange, int) {
	const unit = "bytes="
	if len(field) < len(unit) || !httpgrammar.EqualFold(field[:len(unit)], unit) {
		return nil, rangeIgnore
	}
	var ranges []byteRange
	specs, suffixOnEmpty := 0, false
	// Empty list elements are skipped (RFC 9110 §5.6.1).
	for spec, rest := httpgrammar.NextElement(field[len(unit):]); len(spec) > 0; spec, rest = httpgrammar.NextElement(rest) {
		if specs++; specs > maxRangeSpecs {
			return nil, rangeIgnore
		}
		dash := -1
		for i, c := range spec {
			if c == '-' {
				dash = i
				break
			}
		}
		if dash < 0 {
			return nil, rangeIgnore
		}
		first, last := spec[:dash], spec[dash+1:]
		if len(first) == 0 { // suffix-range: the last n bytes
			n, ok := parseDigits(last)
			if !ok {
				return nil, rangeIgnore
			}
			if n == 0 {
				continue // unsatisfiable
			}
			if size == 0 {
				suffixOnEmpty = true
				continue
			}
			n = min(n, size)
			ranges = append(ranges, byteRange{size - n, n})
			continue
		}
		off, ok := parseDigits(first)
		if !ok {
			return nil, rangeIgnore
		}
		end := int64(-1) // inclusive; -1: to the end
		if len(last) > 0 {
			if end, ok = parseDigits(last); !ok || end < off {
				return nil, rangeIgnore
			}
		}
		if off >= size {
			continue // unsatisfiable
		}
		if end < 0 || end >= size {
			end = size - 1
		}
		ranges = append(ranges, byteRange{off, end - off + 1})
	}
	if len(ranges) == 0 {
		if specs == 0 || suffixOnEmpty {
			// "bytes=" alone is invalid; a suffix of an empty
			// representation is the whole of it.
			return nil, rangeIgnore
		}
		return nil, rangeUnsatisfiable
	}
	ranges = coalesce(ranges)
	if len(ranges) > maxRanges {
		return nil, rangeIgnore
	}
	return ranges, rangeOK
}

// coalesce merges ranges that overlap or lie within rangeGap bytes of
// each other (RFC 9110 §14.2 allows both) and keeps the order they were
// asked in, a merged range taking the place of its first member (the
// order §15.3.7.2 asks for). What it returns is disjoint, so the parts
// never add up to more than the representation.
func coalesce(rs []byteRange) []byteRange {
	if len(rs) < 2 {
		return rs
	}
	type span struct {
		byteRange
		first int // the position of its first member in rs
	}
	spans := make([]span, len(rs))
	for i, r := range rs {
		spans[i] = span{r, i}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	out := spans[:1]
	for _, r := range spans[1:] {
		cur := &out[len(out)-1]
		if r.off <= cur.end()+rangeGap {
			cur.n = max(cur.end(), r.end()) - cur.off
			cur.first = min(cur.first, r.first)
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.first, b.first) })
	rs = rs[:len(out)]
	for i, r := range out {
		rs[i] = r.byteRange
	}
	return rs
}

// parseDigits parses 1*DIGIT. Values beyond 2^62 saturate there: they
// are past the end of any file.
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

// contentRange formats a Content-Range field value for r of size bytes.
func contentRange(r byteRange, size int64) string {
	b := make([]byte, 0, 48)
	b = append(b, "bytes "...)
	b = strconv.AppendInt(b, r.off, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, r.end()-1, 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, size, 10)
	return string(b)
}

// unsatisfiedRange is the Content-Range of a 416 for size bytes.
func unsatisfiedRange(size int64) string {
	return "bytes */" + strconv.FormatInt(size, 10)
}

// multipart describes a multipart/byteranges body (RFC 9110 §14.6): each
// part's header, then the part's bytes and CRLF, and the closing
// delimiter.
type multipart struct {
	ranges []byteRange
	ctype  string   // the response's Content-Type, with the boundary
	heads  []string // per range: delimiter and part header fields
	tail   string   // the close delimiter
	length int64    // the whole body
}

// newMultipart lays out the parts of ranges of a representation of size
// bytes and media type ctype.
func newMultipart(ranges []byteRange, size int64, ctype string) *multipart {
	var rnd [16]byte
	b := strconv.AppendUint(rnd[:0], rand.Uint64(), 36)
	boundary := "sluice-" + string(b)
	m := &multipart{
		ranges: ranges,
		ctype:  "multipart/byteranges; boundary=" + boundary,
		heads:  make([]string, len(ranges)),
		tail:   "--" + boundary + "--\r\n",
	}
	for i, r := range ranges {
		h := "--" + boundary + "\r\nContent-Type: " + ctype + "\r\nContent-Range: " + contentRange(r, size) + "\r\n\r\n"
		m.heads[i] = h
		m.length += int64(len(h)) + r.n + 2
	}
	m.length += int64(len(m.tail))
	return m
}
