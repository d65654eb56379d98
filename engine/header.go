package engine

import (
	"strconv"
	"strings"

	"github.com/sluice-server/sluice/httpgrammar"
)

// Header holds a response's header fields in the order they were set.
//
// The engine writes the framing fields itself: Content-Length is kept as a
// number (SetContentLength, or Set("Content-Length", ...) which parses it),
// Transfer-Encoding is ignored (the engine chunks when the length is
// unknown), and "Connection: close" makes the connection close after the
// response. Set a "Date" or "Server" field to replace the engine's;
// Set("Server", "") sends no Server field at all.
//
// A Header belongs to one response and is not safe for concurrent use. The
// strings it is given are kept, not copied.
type Header struct {
	fields        []headerField
	trailers      []headerField // sent after a chunked body (AddTrailer)
	contentLength int64         // -1 when unknown
	close         bool          // Connection: close
	hasDate       bool
	hasServer     bool
}

// headerField is a stored field; safe says name and value were made safe
// (MakeSafe) and need no scan when written.
type headerField struct {
	name, value string
	safe        bool
}

// A SafeString is a string that holds no CR, LF or NUL: MakeSafe made it
// so. A field set with SetSafe is written as it is, where the name and
// value of one set with Set or Add are scanned for those bytes each time
// they are written; a name or value made once and sent in many
// responses, such as a cached file's ETag or a constant field name, is
// worth making safe once. The zero SafeString is "".
type SafeString struct{ s string }

// MakeSafe returns s as a SafeString, CR, LF and NUL replaced by spaces
// (as a field set with Set has them when written). It allocates only
// when s has such a byte.
func MakeSafe(s string) SafeString {
	if lineBreakAt(s) >= 0 {
		s = string(appendReplaced(make([]byte, 0, len(s)), s))
	}
	return SafeString{s}
}

// String returns the string.
func (s SafeString) String() string { return s.s }

// Set replaces every field named name (ASCII case-insensitive) with one
// field name: value.
func (h *Header) Set(name, value string) { h.set(name, value, false) }

// SetSafe is Set for a name and value made safe beforehand: the field is
// written without being scanned again.
func (h *Header) SetSafe(name, value SafeString) { h.set(name.s, value.s, true) }

// set is Set; safe marks a field made safe beforehand.
func (h *Header) set(name, value string, safe bool) {
	if mayBeSpecial(name) && h.special(name, value) {
		return
	}
	if len(h.fields) > 0 {
		h.delStored(name)
	}
	h.push(name, value, safe)
}

// push appends a field, filled in place (see grow).
func (h *Header) push(name, value string, safe bool) {
	f := grow(&h.fields)
	f.name, f.value, f.safe = name, value, safe
}

// grow extends *s by one element and returns it, to be filled in place;
// it may hold what it held before the slice was cut back, so the caller
// sets every field of it. append(s, T{...}) would build the value on the
// stack and copy it with wider loads than the stores that built it,
// which stall (store-to-load forwarding fails), on paths that run for
// every field of every request.
func grow[T any](s *[]T) *T {
	n := len(*s)
	if n < cap(*s) {
		*s = (*s)[:n+1]
	} else {
		*s = append(*s, *new(T))
	}
	return &(*s)[n]
}

// Add appends a field, keeping any others of the same name.
func (h *Header) Add(name, value string) {
	if mayBeSpecial(name) && h.special(name, value) {
		return
	}
	h.push(name, value, false)
}

// Del removes every field named name.
func (h *Header) Del(name string) {
	switch len(name) {
	case 4:
		if strings.EqualFold(name, "Date") {
			h.hasDate = false
		}
	case 6:
		if strings.EqualFold(name, "Server") {
			h.hasServer = false
		}
	case 10:
		if strings.EqualFold(name, "Connection") {
			h.close = false
		}
	case 14:
		if strings.EqualFold(name, "Content-Length") {
			h.contentLength = -1
			return
		}
	}
	h.delStored(name)
}

// delStored removes every stored field named name, leaving the engine's
// own (Date, Server, Connection, Content-Length) as they are.
func (h *Header) delStored(name string) {
	// Most Sets find no field to remove: look before moving any.
	i := 0
	for i < len(h.fields) && (len(h.fields[i].name) != len(name) || !strings.EqualFold(h.fields[i].name, name)) {
		i++
	}
	if i == len(h.fields) {
		return
	}
	kept := h.fields[:i]
	for _, f := range h.fields[i+1:] {
		if len(f.name) != len(name) || !strings.EqualFold(f.name, name) {
			kept = append(kept, f)
		}
	}
	clear(h.fields[len(kept):])
	h.fields = kept
}

// Get returns the value of the first field named name, or "".
func (h *Header) Get(name string) string {
	if len(name) == 14 && strings.EqualFold(name, "Content-Length") {
		if h.contentLength < 0 {
			return ""
		}
		return strconv.FormatInt(h.contentLength, 10)
	}
	for _, f := range h.fields {
		if len(f.name) == len(name) && strings.EqualFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// Values calls fn for every field in order until fn returns false.
// Content-Length is not among them; see ContentLength.
func (h *Header) Values(fn func(name, value string) bool) {
	for _, f := range h.fields {
		if !fn(f.name, f.value) {
			return
		}
	}
}

// AddTrailer adds a trailer field, sent after the body of a chunked
// response (RFC 9112 §7.1.2); it may be called until the handler
// returns. A response is chunked when its length is unknown once the
// body outgrows the engine's buffer or is flushed, or, for an HTTP/1.1
// client, whenever the header has a Trailer field announcing trailers;
// otherwise (a known length, HTTP/1.0, HEAD) trailers are dropped, as a
// recipient may drop them anyway. Names and values are sent as given,
// CR, LF and NUL replaced by spaces.
func (h *Header) AddTrailer(name, value string) {
	h.trailers = append(h.trailers, headerField{name: name, value: value})
}

// SetContentLength declares the body length; -1 means unknown, in which
// case the engine computes it for bodies that fit its buffer and chunks
// longer ones (or, for HTTP/1.0 clients, closes the connection at the end).
func (h *Header) SetContentLength(n int64) {
	if n < 0 {
		n = -1
	}
	h.contentLength = n
}

// ContentLength returns the declared body length, or -1.
func (h *Header) ContentLength() int64 { return h.contentLength }

// mayBeSpecial reports whether name may be one of the fields special
// handles, by its length and first letter: most fields are not, and are
// told so without a call.
func mayBeSpecial(name string) bool {
	return len(name) >= 4 && len(name) <= 17 && specialFirst[name[0]|0x20] != 0
}

// special handles the fields the engine owns. It reports whether the field
// was consumed rather than stored.
func (h *Header) special(name, value string) bool {
	switch len(name) {
	case 4:
		if strings.EqualFold(name, "Date") {
			h.hasDate = true
		}
	case 6:
		if strings.EqualFold(name, "Server") {
			h.hasServer = true
			if value == "" { // an empty Server field means none at all
				h.delStored(name)
				return true
			}
		}
	case 10:
		if strings.EqualFold(name, "Connection") {
			if httpgrammar.HasToken(value, "close") {
				h.close = true
			}
			return true
		}
	case 14:
		if strings.EqualFold(name, "Content-Length") {
			if n, ok := parseContentLength([]byte(strings.TrimSpace(value))); ok {
				h.contentLength = n
			}
			return true
		}
	case 17:
		if strings.EqualFold(name, "Transfer-Encoding") {
			return true
		}
	}
	return false
}

// specialFirst marks the first letters, lower case, of the fields special
// handles: Date, Server, Connection, Content-Length, Transfer-Encoding.
var specialFirst = [256]uint8{'d': 1, 's': 1, 'c': 1, 't': 1}

func (h *Header) reset() {
	clear(h.fields)
	clear(h.trailers)
	// Zeroed, then filled: a Header literal assigned whole is built on
	// the stack and copied with wider loads than the stores that built
	// it, which stall (see grow).
	fields, trailers := h.fields[:0], h.trailers[:0]
	*h = Header{}
	h.fields, h.trailers, h.contentLength = fields, trailers, -1
}

// announcesTrailers reports whether the header has a Trailer field.
func (h *Header) announcesTrailers() bool {
	for _, f := range h.fields {
		if len(f.name) == 7 && strings.EqualFold(f.name, "Trailer") {
			return true
		}
	}
	return false
}

// appendTrailer appends the last chunk and the trailer section.
func (h *Header) appendTrailer(b []byte) []byte {
	b = append(b, "0\r\n"...)
	for _, f := range h.trailers {
		b = appendSafe(b, f.name)
		b = append(b, ": "...)
		b = appendSafe(b, f.value)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

// appendFields appends every field as "name: value\r\n". Bytes that would
// end a line or the header (CR, LF, NUL) in a name or value are replaced by
// a space, so a handler cannot split the response; a field set with
// SetSafe had them replaced already.
func (h *Header) appendFields(b []byte) []byte {
	for i := range h.fields {
		f := &h.fields[i] // not a copy: see grow
		if f.safe {
			b = append(b, f.name...)
			b = append(b, ": "...)
			b = append(b, f.value...)
		} else {
			b = appendSafe(b, f.name)
			b = append(b, ": "...)
			b = appendSafe(b, f.value)
		}
		b = append(b, "\r\n"...)
	}
	return b
}

// appendSafe appends s, with CR, LF and NUL replaced by spaces.
func appendSafe(b []byte, s string) []byte {
	if lineBreakAt(s) < 0 {
		return append(b, s...)
	}
	return appendReplaced(b, s)
}

// lineBreakAt returns the index of the first CR, LF or NUL in s, or -1.
// It tests eight bytes at a time for a control byte, all three being
// below 0x20: a word x has a byte below 0x20 iff (x-0x20*ones) &^ x &
// highs is not zero (the classic "has a byte less than n" test, exact
// for n up to 0x80), and only a word that has one (a field value rarely
// does: a tab at most) is looked at byte by byte.
func lineBreakAt(s string) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		below = 0x20 * ones
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if (x-below)&^x&highs != 0 {
			for j := i; j < i+8; j++ {
				if c := s[j]; c == '\r' || c == '\n' || c == 0 {
					return j
				}
			}
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
			return i
		}
	}
	return -1
}

func appendReplaced(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' || c == 0 {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}
