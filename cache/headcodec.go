package cache

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sluice-server/sluice/httpgrammar"
)

// The head of a disk store object: what the cache keeps with a body on
// disk, a stored response's meta or a Vary marker. Binary, versioned:
//
//	"SLCH" version(1) kind('R'|'V')
//	R: uvarint status, varint length, varint date, request time,
//	   response time (Unix nanoseconds, 0 for none), varint Age value and
//	   freshness lifetime (nanoseconds), uvarint field count, then each
//	   field's name and value as uvarint length and bytes
//	V: uvarint generation, uvarint name count, the names as above
//
// Everything else of a meta (the parsed Cache-Control, validators,
// Content-Encoding, Vary names, header size) is derived again from the
// fields when it is read, as freshen derives it.
const (
	headMagic   = "SLCH"
	headVersion = 1
	kindByteR   = 'R'
	kindByteV   = 'V'

	// maxHeadFields bounds the fields (or Vary names) a head may hold.
	maxHeadFields = 4096
)

var errBadHead = errors.New("cache: not a stored response head")

// encodeMeta returns m's head.
func encodeMeta(m *meta) []byte {
	b := make([]byte, 0, 64+m.headerSize+int64(4*len(m.fields)))
	b = append(b, headMagic...)
	b = append(b, headVersion, kindByteR)
	b = binary.AppendUvarint(b, uint64(m.status))
	b = binary.AppendVarint(b, m.length)
	b = binary.AppendVarint(b, unixNano(m.date))
	b = binary.AppendVarint(b, unixNano(m.requestTime))
	b = binary.AppendVarint(b, unixNano(m.responseTime))
	b = binary.AppendVarint(b, int64(m.ageValue))
	b = binary.AppendVarint(b, int64(m.lifetime))
	b = binary.AppendUvarint(b, uint64(len(m.fields)))
	for _, f := range m.fields {
		b = appendString(b, f.name)
		b = appendString(b, f.value)
	}
	return b
}

// encodeVary returns the head of a Vary marker.
func encodeVary(gen uint64, names []string) []byte {
	b := append([]byte(headMagic), headVersion, kindByteV)
	b = binary.AppendUvarint(b, gen)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		b = appendString(b, n)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// headReader reads a head; its first error sticks.
type headReader struct {
	b   []byte
	err error
}

func (r *headReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadHead
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *headReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errBadHead
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *headReader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadHead
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// count reads a count of items no fewer bytes than each takes two of.
func (r *headReader) count() int {
	n := r.uvarint()
	if r.err == nil && (n > maxHeadFields || n > uint64(len(r.b))) {
		r.err = errBadHead
	}
	return int(n)
}

// decodeHead reads a head: a response's meta, or a Vary marker (its
// generation and names). It never panics on any input, and rejects a
// head of another version, a field name that is not a token, a value
// with a line break or NUL, and trailing bytes.
func decodeHead(b []byte) (m *meta, gen uint64, names []string, err error) {
	if len(b) < len(headMagic)+2 || string(b[:len(headMagic)]) != headMagic || b[len(headMagic)] != headVersion {
		return nil, 0, nil, errBadHead
	}
	kind := b[len(headMagic)+1]
	r := &headReader{b: b[len(headMagic)+2:]}
	switch kind {
	case kindByteV:
		gen = r.uvarint()
		n := r.count()
		for i := 0; i < n && r.err == nil; i++ {
			s := r.str()
			if s == "" || strings.ContainsAny(s, "\r\n\x00") {
				r.err = errBadHead
			}
			names = append(names, s)
		}
		if r.err == nil && (len(r.b) != 0 || n == 0) {
			r.err = errBadHead
		}
		if r.err != nil {
			return nil, 0, nil, r.err
		}
		return nil, gen, names, nil
	case kindByteR:
	default:
		return nil, 0, nil, errBadHead
	}
	m = &meta{}
	status := r.uvarint()
	m.length = r.varint()
	m.date = fromUnixNano(r.varint())
	m.requestTime = fromUnixNano(r.varint())
	m.responseTime = fromUnixNano(r.varint())
	m.ageValue = time.Duration(r.varint())
	m.lifetime = time.Duration(r.varint())
	n := r.count()
	if r.err == nil && (status < 200 || status > 999 || m.length < -1) {
		r.err = errBadHead
	}
	m.status = int(status)
	for i := 0; i < n && r.err == nil; i++ {
		name, value := r.str(), r.str()
		if !httpgrammar.IsToken(name) || strings.ContainsAny(value, "\r\n\x00") {
			r.err = errBadHead
		}
		m.fields = append(m.fields, field{name, value})
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errBadHead
	}
	if r.err != nil {
		return nil, 0, nil, r.err
	}
	if !m.derive() {
		return nil, 0, nil, errBadHead
	}
	return m, 0, nil, nil
}

// derive sets what a meta holds besides its status, length, times and
// fields, from the fields; it reports false for a Vary of "*".
func (m *meta) derive() bool {
	ccs, cdns := "", ""
	for _, f := range m.fields {
		m.headerSize += int64(len(f.name) + len(f.value) + 4)
		switch {
		case strings.EqualFold(f.name, "Cache-Control"):
			ccs = joinList(ccs, f.value)
		case strings.EqualFold(f.name, "CDN-Cache-Control"):
			cdns = joinList(cdns, f.value)
		case strings.EqualFold(f.name, "ETag"):
			if m.val.ETag == "" {
				m.val.ETag = f.value
			}
		case strings.EqualFold(f.name, "Last-Modified"):
			if m.val.LastModified == "" {
				m.val.LastModified = f.value
			}
		case strings.EqualFold(f.name, "Content-Encoding"):
			m.encoding = f.value
		case strings.EqualFold(f.name, "Vary"):
			names, star := varyNames(f.value)
			if star {
				return false
			}
			m.vary = append(m.vary, names...)
		}
	}
	if len(m.vary) > 1 {
		slices.Sort(m.vary)
		m.vary = slices.Compact(m.vary)
	}
	if validCDN(cdns) {
		ccs = cdns
	}
	m.cc = httpgrammar.ParseCacheControl(ccs)
	return true
}

func joinList(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}
