package engine

import (
	"strings"

	"golang.org/x/net/http2/hpack"
)

// h2Encoder is the HPACK encoder (RFC 7541) of a connection's response
// header blocks. It replaces x/net's hpack.Encoder, which searches its
// static and dynamic tables with map lookups, hashing each name and value:
// 10% of the CPU of a small response over HTTP/2. Responses repeat the
// same few fields (server, date, content-type, content-length, etag, ...),
// so this one remembers, for each of those names, the dynamic table entry
// it last added and answers a repeat with that entry's index after one
// string comparison; other fields are looked for among the newest entries.
// What it emits is what x/net's decoder (and any other) reads: the
// differential test and FuzzH2Encoder check it against hpack.Decoder.
//
// Like x/net's encoder, it indexes every field that fits the table except
// those marked sensitive (never indexed, RFC 7541 §7.1.3), and uses
// Huffman coding where it is shorter. Not safe for concurrent use: the
// connection's mu guards it.
type h2Encoder struct {
	w *h2BlockBuf

	// The dynamic table, oldest first: ents[head:] are live; entry k (0 the
	// first ever added) is ents[head+k-first].
	ents  []h2TableEntry
	head  int
	first uint64 // the number of the oldest live entry
	next  uint64 // the number the next entry added will get
	size  uint32 // RFC 7541 §4.1's size of the live entries
	max   uint32 // the table's maximum size

	// A size change to announce at the start of the next block (§4.2):
	// the smallest size set since the last block, then the last.
	pendingMin, pendingMax uint32
	pending                bool

	// memo[slot] is the entry last added for a common name (h2NameSlot).
	memo [h2MemoSlots]struct {
		value string
		entry uint64
		set   bool
	}
}

// h2TableEntry is one entry of the dynamic table; its strings are the
// encoder's own copies.
type h2TableEntry struct{ name, value string }

// h2RecentScan bounds how many of the newest entries are compared with a
// field its name's memo slot did not find.
const h2RecentScan = 16

// newH2Encoder returns an encoder with the default table size (4,096)
// that appends its output to w.
func newH2Encoder(w *h2BlockBuf) *h2Encoder {
	return &h2Encoder{w: w, max: 4096}
}

// SetMaxDynamicTableSize sets the table's maximum size, announced at the
// start of the next header block (the peer's SETTINGS_HEADER_TABLE_SIZE,
// at most 4,096).
func (e *h2Encoder) SetMaxDynamicTableSize(v uint32) {
	if !e.pending {
		e.pending, e.pendingMin = true, v
	}
	e.pendingMin = min(e.pendingMin, v)
	e.pendingMax = v
}

// WriteField encodes f into the block being written: a block starts when
// the buffer it appends to is empty (the caller empties it). It never
// fails; the error is there to match hpack.Encoder's.
func (e *h2Encoder) WriteField(f hpack.HeaderField) error {
	b := e.w.b
	if e.pending && len(b) == 0 {
		// §4.2: the smallest size set since the last block comes first
		// in the block. A larger final size follows it only into an
		// empty table (x/net's decoder refuses a second update
		// otherwise); else it is announced at the next block's start.
		b = appendHpackInt(b, 0x20, 5, uint64(e.pendingMin))
		e.max = e.pendingMin
		e.evict(0)
		switch {
		case e.pendingMax == e.pendingMin:
			e.pending = false
		case e.size == 0:
			b = appendHpackInt(b, 0x20, 5, uint64(e.pendingMax))
			e.max = e.pendingMax
			e.pending = false
		default:
			e.pendingMin = e.pendingMax
		}
	}
	e.w.b = e.appendField(b, f.Name, f.Value, f.Sensitive)
	return nil
}

// appendField appends the representation of one field to b.
func (e *h2Encoder) appendField(b []byte, name, value string, sensitive bool) []byte {
	staticIdx, static, slot := h2StaticIndex(name, value)
	if static && !sensitive {
		return appendHpackInt(b, 0x80, 7, uint64(staticIdx)) // §6.1
	}
	if !sensitive {
		if i, ok := e.find(name, value, slot); ok {
			return appendHpackInt(b, 0x80, 7, uint64(i))
		}
	}
	size := uint32(len(name) + len(value) + 32)
	switch {
	case sensitive:
		b = appendHpackInt(b, 0x10, 4, uint64(staticIdx)) // §6.2.3: never indexed
	case size > e.max:
		b = appendHpackInt(b, 0x00, 4, uint64(staticIdx)) // §6.2.2: without indexing
	default:
		b = appendHpackInt(b, 0x40, 6, uint64(staticIdx)) // §6.2.1: with incremental indexing
		e.add(name, value, slot)
	}
	if staticIdx == 0 {
		b = appendHpackString(b, name)
	}
	return appendHpackString(b, value)
}

// find returns the index of a live dynamic entry holding name and value.
func (e *h2Encoder) find(name, value string, slot int) (int, bool) {
	if slot >= 0 {
		m := &e.memo[slot]
		if m.set && m.entry >= e.first && m.value == value {
			return e.index(m.entry), true
		}
	}
	live := e.ents[e.head:]
	for i := len(live) - 1; i >= 0 && i >= len(live)-h2RecentScan; i-- {
		if en := &live[i]; en.value == value && en.name == name {
			return e.index(e.first + uint64(i)), true
		}
	}
	return 0, false
}

// index returns the HPACK index of live entry k: the newest is 62.
func (e *h2Encoder) index(k uint64) int {
	return int(e.next-1-k) + len(h2StaticTable) + 1
}

// add adds a field to the dynamic table, evicting as §4.4 says, and
// remembers it in its name's memo slot.
func (e *h2Encoder) add(name, value string, slot int) {
	size := uint32(len(name) + len(value) + 32)
	e.evict(size)
	if e.head > 0 && e.head >= len(e.ents)/2 {
		// Compact: the live entries move to the front.
		n := copy(e.ents, e.ents[e.head:])
		clear(e.ents[n:])
		e.ents, e.head = e.ents[:n], 0
	}
	// Copies: the caller's strings may alias buffers it reuses.
	en := h2TableEntry{name: strings.Clone(name), value: strings.Clone(value)}
	e.ents = append(e.ents, en)
	e.size += size
	k := e.next
	e.next++
	if slot >= 0 {
		e.memo[slot].value, e.memo[slot].entry, e.memo[slot].set = en.value, k, true
	}
}

// evict drops the oldest entries until room more bytes fit within max.
func (e *h2Encoder) evict(room uint32) {
	for e.head < len(e.ents) && e.size+room > e.max {
		en := &e.ents[e.head]
		e.size -= uint32(len(en.name) + len(en.value) + 32)
		*en = h2TableEntry{}
		e.head++
		e.first++
	}
}

// appendHpackInt appends i with an n-bit prefix (§5.1), the prefix's
// other bits being those of first.
func appendHpackInt(b []byte, first byte, n uint, i uint64) []byte {
	k := uint64(1)<<n - 1
	if i < k {
		return append(b, first|byte(i))
	}
	b = append(b, first|byte(k))
	i -= k
	for i >= 128 {
		b = append(b, byte(i&0x7f|0x80))
		i >>= 7
	}
	return append(b, byte(i))
}

// appendHpackString appends s as a string literal (§5.2), Huffman coded
// when that is shorter.
func appendHpackString(b []byte, s string) []byte {
	if n := hpack.HuffmanEncodeLength(s); n < uint64(len(s)) {
		b = appendHpackInt(b, 0x80, 7, n)
		return hpack.AppendHuffmanString(b, s)
	}
	b = appendHpackInt(b, 0, 7, uint64(len(s)))
	return append(b, s...)
}

// h2StaticTable is RFC 7541 Appendix A: entry i is index i+1.
var h2StaticTable = [...]h2TableEntry{
	{":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"},
	{":path", "/index.html"}, {":scheme", "http"}, {":scheme", "https"}, {":status", "200"},
	{":status", "204"}, {":status", "206"}, {":status", "304"}, {":status", "400"},
	{":status", "404"}, {":status", "500"}, {"accept-charset", ""}, {"accept-encoding", "gzip, deflate"},
	{"accept-language", ""}, {"accept-ranges", ""}, {"accept", ""}, {"access-control-allow-origin", ""},
	{"age", ""}, {"allow", ""}, {"authorization", ""}, {"cache-control", ""},
	{"content-disposition", ""}, {"content-encoding", ""}, {"content-language", ""}, {"content-length", ""},
	{"content-location", ""}, {"content-range", ""}, {"content-type", ""}, {"cookie", ""},
	{"date", ""}, {"etag", ""}, {"expect", ""}, {"expires", ""},
	{"from", ""}, {"host", ""}, {"if-match", ""}, {"if-modified-since", ""},
	{"if-none-match", ""}, {"if-range", ""}, {"if-unmodified-since", ""}, {"last-modified", ""},
	{"link", ""}, {"location", ""}, {"max-forwards", ""}, {"proxy-authenticate", ""},
	{"proxy-authorization", ""}, {"range", ""}, {"referer", ""}, {"refresh", ""},
	{"retry-after", ""}, {"server", ""}, {"set-cookie", ""}, {"strict-transport-security", ""},
	{"transfer-encoding", ""}, {"user-agent", ""}, {"vary", ""}, {"via", ""},
	{"www-authenticate", ""},
}

// h2StaticNames maps a static table name to its first index, for the
// names h2StaticIndex's switch does not know.
var h2StaticNames = func() map[string]int {
	m := make(map[string]int, len(h2StaticTable))
	for i := len(h2StaticTable) - 1; i >= 0; i-- {
		m[h2StaticTable[i].name] = i + 1
	}
	return m
}()

// h2MemoSlots is the number of names the encoder remembers an entry for.
const h2MemoSlots = 16

// h2StaticIndex returns the static table's index for name (0: none),
// whether the static table holds name and value together, and name's
// memo slot (-1: none). The names of most response fields are found by
// the switch, without hashing.
func h2StaticIndex(name, value string) (idx int, exact bool, slot int) {
	switch name {
	case ":status":
		switch value {
		case "200":
			return 8, true, 0
		case "204":
			return 9, true, 0
		case "206":
			return 10, true, 0
		case "304":
			return 11, true, 0
		case "400":
			return 12, true, 0
		case "404":
			return 13, true, 0
		case "500":
			return 14, true, 0
		}
		return 8, false, 0
	case "server":
		return 54, false, 1
	case "date":
		return 33, false, 2
	case "content-type":
		return 31, false, 3
	case "content-length":
		return 28, false, 4
	case "last-modified":
		return 44, false, 5
	case "etag":
		return 34, false, 6
	case "accept-ranges":
		return 18, false, 7
	case "cache-control":
		return 24, false, 8
	case "vary":
		return 59, false, 9
	case "content-encoding":
		return 26, false, 10
	case "location":
		return 46, false, 11
	case "expires":
		return 36, false, 12
	case "strict-transport-security":
		return 56, false, 13
	case "alt-svc":
		return 0, false, 14
	case "x-content-type-options":
		return 0, false, 15
	case "set-cookie":
		return 55, false, -1
	}
	return h2StaticNames[name], false, -1
}
