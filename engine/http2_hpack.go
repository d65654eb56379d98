package engine

import (
	"encoding/binary"
	"strconv"
	"strings"

	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/httpgrammar"
)

// HTTP/2 header blocks (RFC 9113 §4.3, §6.2, §6.10, §8.2): HEADERS and
// CONTINUATION decoded with golang.org/x/net/http2/hpack into a block
// whose fields are checked as they come, and response fields encoded
// back, lowercased, with the :status values and names made once.

// h2BlockBuf collects the encoder's output.
type h2BlockBuf struct{ b []byte }

func (w *h2BlockBuf) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// handleHeaders starts a header block (RFC 9113 §6.2).
func (h *h2Conn) handleHeaders(fh h2FrameHeader, p []byte) error {
	id := fh.streamID
	if id == 0 || id%2 == 0 {
		return h2ConnError(h2ProtocolError) // §5.1.1: clients open odd streams
	}
	frag, err := unpad(fh, p)
	if err != nil {
		return h2ConnError(h2ProtocolError)
	}
	selfDep := false
	if fh.has(h2FlagPriority) {
		if len(frag) < 5 {
			return h2ConnError(h2FrameSizeError)
		}
		selfDep = binary.BigEndian.Uint32(frag)&(1<<31-1) == id
		frag = frag[5:]
	}
	h.blk.begin(id, fh.has(h2FlagEndStream))
	h.blk.selfDep = selfDep
	h.blk.maxFields = h.srv.limits().MaxHeaderCount
	return h.blockFragment(frag, fh.has(h2FlagEndHeaders))
}

// handleContinuation continues a header block (RFC 9113 §6.10).
func (h *h2Conn) handleContinuation(fh h2FrameHeader, p []byte) error {
	if !h.blk.active || fh.streamID != h.blk.id {
		return h2ConnError(h2ProtocolError)
	}
	return h.blockFragment(p, fh.has(h2FlagEndHeaders))
}

// blockFragment decodes a fragment of the header block; at its end it
// opens the stream (or takes the trailer).
func (h *h2Conn) blockFragment(frag []byte, end bool) error {
	b := &h.blk
	b.wire += len(frag)
	if b.wire > 2*h.maxList {
		// CVE-2024-27316: a block that keeps growing is not decoded on
		// and on for a request that is refused anyway.
		return h2ConnError(h2ProtocolError)
	}
	if _, err := h.dec.Write(frag); err != nil {
		return h2ConnError(h2CompressionError)
	}
	if !end {
		return nil
	}
	b.active = false
	if err := h.dec.Close(); err != nil {
		return h2ConnError(h2CompressionError)
	}
	h.dec.SetEmitEnabled(true)
	return h.endBlock()
}

// emit is the HPACK decoder's callback: it checks one field and adds it
// to the block (RFC 9113 §8.2, §8.3).
func (h *h2Conn) emit(f hpack.HeaderField) {
	b := &h.blk
	b.size += len(f.Name) + len(f.Value) + 32
	if b.size > h.maxList {
		b.tooBig = true
		h.dec.SetEmitEnabled(false) // decoded on (the table must stay in step), not kept
		return
	}
	name, value := f.Name, f.Value
	if len(name) > 0 && name[0] == ':' {
		if b.regular {
			b.malformed = true // §8.3: pseudo-header fields come first
			return
		}
		var bit uint8
		var slot *[2]int
		switch name {
		case ":method":
			bit, slot = h2Method, &b.method
		case ":scheme":
			bit, slot = h2Scheme, &b.scheme
		case ":path":
			bit, slot = h2Path, &b.path
		case ":authority":
			bit, slot = h2Authority, &b.authority
		default:
			b.malformed = true // unknown, or a response's (:status), or :protocol (not offered)
			return
		}
		if b.pseudo&bit != 0 {
			b.malformed = true
			return
		}
		b.pseudo |= bit
		*slot = b.add(value)
		return
	}
	b.regular = true
	// The one field-value rule of both protocols (RFC 9110 §5.5, RFC 9113
	// §8.2.1): no control byte but HTAB, so none is passed on to a
	// program or an HTTP/1.1 upstream, and no SP or HTAB first or last.
	if !h2ValidName(name) || !httpgrammar.IsFieldValue(value) {
		b.malformed = true
		return
	}
	switch name {
	case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
		b.malformed = true // §8.2.2: connection-specific
		return
	case "te":
		if value != "trailers" {
			b.malformed = true
			return
		}
	case "content-length":
		n, ok := httpgrammar.ParseContentLength(value)
		if !ok || b.clSeen && n != b.cl {
			b.malformed = true
			return
		}
		b.clSeen, b.cl = true, n
	case "host":
		// One host for every decision: routing, :authority's check, a
		// program's HTTP_HOST, a template's Header("Host"). HTTP/1.1
		// refuses a second Host (RFC 9112 §3.2) and so does this.
		if b.hostSeen {
			b.malformed = true
			return
		}
		b.hostSeen = true
		if len(b.fields) < b.maxFields {
			b.host = len(b.fields) // the index it is stored at, below
		}
	case "cookie":
		if len(b.fields) < b.maxFields {
			b.cookies++ // stored ones only: joinCookies finds them
		}
	case "expect":
		addExpectations([]byte(value), &b.expectCont, &b.expectOther)
	}
	if len(b.fields) >= b.maxFields {
		b.tooMany = true
		return
	}
	b.fields = append(b.fields, h2FieldRef{b.addCanonical(name), b.add(value)})
}

// h2ValidName reports whether a field name is a lowercase token (RFC
// 9113 §8.2.1).
func h2ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || !httpgrammar.IsTokenChar(c) {
			return false
		}
	}
	return true
}

// Pseudo-header field bits.
const (
	h2Method uint8 = 1 << iota
	h2Scheme
	h2Path
	h2Authority
)

// h2FieldRef is a field as [start, end) offsets of name and value in the
// block's arena.
type h2FieldRef struct{ name, value [2]int }

// h2Block is a header block as it is decoded: the fields' bytes in one
// arena, and what the checks found.
type h2Block struct {
	active    bool
	id        uint32
	endStream bool
	selfDep   bool
	wire      int // encoded bytes so far
	maxFields int // Limits.MaxHeaderCount as the block began
	size      int // decoded size, as SETTINGS_MAX_HEADER_LIST_SIZE counts it

	arena                           []byte
	fields                          []h2FieldRef
	method, scheme, path, authority [2]int
	pseudo                          uint8
	regular                         bool // a regular field came (no pseudo-header may follow)
	host                            int  // index in fields of host, or -1 (none, or one past maxFields)
	hostSeen                        bool
	cookies                         int // cookie fields
	clSeen                          bool
	cl                              int64
	expectCont, expectOther         bool
	malformed, tooBig, tooMany      bool
}

func (b *h2Block) begin(id uint32, endStream bool) {
	arena, fields := b.arena[:0], b.fields[:0]
	*b = h2Block{active: true, id: id, endStream: endStream, arena: arena, fields: fields, host: -1}
}

// addCanonical copies the lowercase field name s into the arena in the
// canonical form net/http gives names ("content-type" as
// "Content-Type"), as the engine handed HTTP/2 requests' fields to
// handlers when it served them through net/http, and returns its offsets.
func (b *h2Block) addCanonical(s string) [2]int {
	start := len(b.arena)
	upper := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if upper && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = c == '-'
		b.arena = append(b.arena, c)
	}
	return [2]int{start, len(b.arena)}
}

// add copies s into the arena and returns its offsets.
func (b *h2Block) add(s string) [2]int {
	start := len(b.arena)
	b.arena = append(b.arena, s...)
	return [2]int{start, len(b.arena)}
}

// writeField encodes a handler's field: its name lowercased, and
// skipped if it is connection-specific (RFC 9113 §8.2.2) or not a token;
// CR, LF and NUL in its value replaced by spaces.
func (h *h2Conn) writeField(name, value string) {
	if known := h2KnownName(name); known != "" {
		name = known // a token, and not connection-specific
	} else {
		name = h2Lower(name)
		switch name {
		case "connection", "proxy-connection", "keep-alive", "te", "transfer-encoding", "upgrade":
			return
		}
		if !h2ValidName(name) {
			return
		}
	}
	value = httpgrammar.TrimOWS(value)
	if lineBreakAt(value) >= 0 {
		value = string(appendReplaced(nil, value))
	}
	// Cookies never enter the dynamic table, where a compression oracle
	// could guess them (RFC 7541 §7.1.3).
	h.enc.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: name == "set-cookie"})
}

// itoa formats a Content-Length, reusing the last one's string.
func (h *h2Conn) itoa(n int64) string {
	if n != h.lastLen || h.lastLenText == "" {
		h.lastLen, h.lastLenText = n, strconv.FormatInt(n, 10)
	}
	return h.lastLenText
}

// h2StatusTexts are the :status values.
var h2StatusTexts [1000]string

func h2StatusText(code int) string {
	if code >= 0 && code < len(h2StatusTexts) {
		if s := h2StatusTexts[code]; s != "" {
			return s
		}
	}
	return strconv.Itoa(code)
}

func init() {
	for c := 100; c < 600; c++ {
		h2StatusTexts[c] = strconv.Itoa(c)
	}
}

// h2KnownName returns the lowercase form of a common response field
// name, given in its canonical or lowercase form, or "" for another.
// A switch, not a map: the compiler compares lengths, then bytes, where
// a map hashes the name (3% of the CPU of a small file over HTTP/2).
func h2KnownName(name string) string {
	switch name {
	case "Accept-Ranges", "accept-ranges":
		return "accept-ranges"
	case "Access-Control-Allow-Origin", "access-control-allow-origin":
		return "access-control-allow-origin"
	case "Age", "age":
		return "age"
	case "Allow", "allow":
		return "allow"
	case "Alt-Svc", "alt-svc":
		return "alt-svc"
	case "Cache-Control", "cache-control":
		return "cache-control"
	case "Content-Disposition", "content-disposition":
		return "content-disposition"
	case "Content-Encoding", "content-encoding":
		return "content-encoding"
	case "Content-Language", "content-language":
		return "content-language"
	case "Content-Location", "content-location":
		return "content-location"
	case "Content-Range", "content-range":
		return "content-range"
	case "Content-Security-Policy", "content-security-policy":
		return "content-security-policy"
	case "Content-Type", "content-type":
		return "content-type"
	case "Cross-Origin-Opener-Policy", "cross-origin-opener-policy":
		return "cross-origin-opener-policy"
	case "Date", "date":
		return "date"
	case "ETag", "etag":
		return "etag"
	case "Expires", "expires":
		return "expires"
	case "Last-Modified", "last-modified":
		return "last-modified"
	case "Link", "link":
		return "link"
	case "Location", "location":
		return "location"
	case "Referrer-Policy", "referrer-policy":
		return "referrer-policy"
	case "Retry-After", "retry-after":
		return "retry-after"
	case "Server", "server":
		return "server"
	case "Set-Cookie", "set-cookie":
		return "set-cookie"
	case "Strict-Transport-Security", "strict-transport-security":
		return "strict-transport-security"
	case "Trailer", "trailer":
		return "trailer"
	case "Vary", "vary":
		return "vary"
	case "Via", "via":
		return "via"
	case "WWW-Authenticate", "www-authenticate":
		return "www-authenticate"
	case "X-Content-Type-Options", "x-content-type-options":
		return "x-content-type-options"
	case "X-Frame-Options", "x-frame-options":
		return "x-frame-options"
	case "X-Request-Id", "x-request-id":
		return "x-request-id"
	case "X-Xss-Protection", "x-xss-protection":
		return "x-xss-protection"
	}
	return ""
}

// h2Lower returns name in lowercase, as HTTP/2 sends field names.
func h2Lower(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(name)
		}
	}
	return name
}
