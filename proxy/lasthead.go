package proxy

import "bytes"

// maxLastHead bounds the head an upstream connection keeps a copy of (see
// upConn.readHead): a larger one is parsed every time.
const maxLastHead = 2 << 10

// lastHead is a copy of the last response head an upstream connection
// read, with its parse, whose slices are views into the copy: valid until
// the next remember.
type lastHead struct {
	raw                 []byte // the head's bytes, up to and with its empty line
	head                responseHead
	maxBytes, maxFields int // the limits it was parsed under
	hits                int // heads readHead took from it (for tests; the connection's own, so no atomic)
}

// repeats reports whether buf starts with the remembered head's bytes,
// which were parsed under the same limits. The head ends with its empty
// line, so a buffer that starts with those bytes holds that head and
// nothing else before its body: it parses to the same head.
func (l *lastHead) repeats(buf []byte, maxBytes, maxFields int) bool {
	n := len(l.raw)
	return n > 0 && len(buf) >= n && maxBytes == l.maxBytes && maxFields == l.maxFields && bytes.Equal(buf[:n], l.raw)
}

// remember keeps a copy of raw, a head parseResponseHead just parsed
// into h (whose slices are views into raw), with h's slices moved to the
// copy. A head longer than maxLastHead, or one whose slices are not
// views into raw, is forgotten instead.
func (l *lastHead) remember(raw []byte, h *responseHead, maxBytes, maxFields int) {
	l.raw = l.raw[:0]
	if len(raw) > maxLastHead {
		return
	}
	cp := append(l.raw, raw...)
	l.head.copyFrom(h)
	ok := true
	move := func(s []byte) []byte {
		if len(s) == 0 {
			return nil
		}
		off := cap(raw) - cap(s)
		if off < 0 || off+len(s) > len(raw) || &raw[off] != &s[0] {
			ok = false
			return nil
		}
		return cp[off : off+len(s) : off+len(s)]
	}
	l.head.reason = move(h.reason)
	for i := range l.head.fields {
		f := &l.head.fields[i]
		f.name, f.value = move(f.name), move(f.value)
	}
	if !ok {
		l.raw = cp[:0]
		return
	}
	l.raw, l.maxBytes, l.maxFields = cp, maxBytes, maxFields
}

// copyFrom makes h a copy of o, sharing o's bytes but not its fields
// slice.
func (h *responseHead) copyFrom(o *responseHead) {
	fields := append(h.fields[:0], o.fields...)
	*h = *o
	h.fields = fields
}
