package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// h2EncoderCheck encodes blocks with h2Encoder and decodes them with
// x/net's decoder, which must read back every field, in order, whatever
// the table has come to hold.
type h2EncoderCheck struct {
	t   testing.TB
	buf h2BlockBuf
	enc *h2Encoder
	dec *hpack.Decoder
}

func newH2EncoderCheck(t testing.TB) *h2EncoderCheck {
	c := &h2EncoderCheck{t: t}
	c.enc = newH2Encoder(&c.buf)
	c.dec = hpack.NewDecoder(4096, nil)
	return c
}

// setSize is a SETTINGS_HEADER_TABLE_SIZE from the decoder's side.
func (c *h2EncoderCheck) setSize(v uint32) {
	c.dec.SetAllowedMaxDynamicTableSize(v)
	c.enc.SetMaxDynamicTableSize(v)
}

// block encodes fields as one header block and checks the decoding.
func (c *h2EncoderCheck) block(fields []hpack.HeaderField) {
	c.t.Helper()
	c.buf.b = c.buf.b[:0]
	for _, f := range fields {
		c.enc.WriteField(f)
	}
	got, err := c.dec.DecodeFull(c.buf.b)
	if err != nil {
		c.t.Fatalf("decoding %x: %v", c.buf.b, err)
	}
	if len(got) != len(fields) {
		c.t.Fatalf("decoded %d fields, encoded %d", len(got), len(fields))
	}
	for i, f := range fields {
		if got[i].Name != f.Name || got[i].Value != f.Value || got[i].Sensitive != f.Sensitive {
			c.t.Fatalf("field %d: decoded %v, encoded %v", i, got[i], f)
		}
	}
}

// A response's fields repeated, with a changing date and length: every
// block decodes, and the repeats are sent as indexes.
func TestH2EncoderRepeats(t *testing.T) {
	c := newH2EncoderCheck(t)
	var sizes []int
	for i := range 200 {
		c.block([]hpack.HeaderField{
			{Name: ":status", Value: "200"},
			{Name: "server", Value: "sluice"},
			{Name: "date", Value: fmt.Sprintf("Sun, 06 Dec 2026 19:%02d:00 GMT", i/20)},
			{Name: "content-type", Value: "text/html; charset=utf-8"},
			{Name: "etag", Value: `"abc"`},
			{Name: "x-request-id", Value: "0123456789abcdef"},
			{Name: "content-length", Value: fmt.Sprint(150 + i%3)},
		})
		sizes = append(sizes, len(c.buf.b))
	}
	// After the first few blocks every field but a new date or length
	// is one byte.
	if n := sizes[len(sizes)-1]; n > 7 {
		t.Errorf("a repeated response's block is %d bytes, want 7 (one index a field)", n)
	}
}

// Sensitive fields are never indexed, and a field larger than the table
// is sent without indexing: both decode.
func TestH2EncoderLiterals(t *testing.T) {
	c := newH2EncoderCheck(t)
	big := strings.Repeat("v", 5000)
	for range 3 {
		c.block([]hpack.HeaderField{
			{Name: ":status", Value: "301"},
			{Name: "set-cookie", Value: "a=b", Sensitive: true},
			{Name: "x-big", Value: big},
			{Name: "location", Value: "/elsewhere"},
			{Name: "X-Upper-Is-Not-Changed", Value: ""},
		})
	}
	if c.enc.size > c.enc.max {
		t.Errorf("table size %d over its max %d", c.enc.size, c.enc.max)
	}
}

// Table size changes between blocks, down (to 0) and up again, are
// announced as §4.2 says and followed by the decoder.
func TestH2EncoderSizeUpdates(t *testing.T) {
	c := newH2EncoderCheck(t)
	fields := []hpack.HeaderField{{Name: "server", Value: "sluice"}, {Name: "content-type", Value: "text/plain"}, {Name: "x-a", Value: "1"}}
	c.block(fields)
	for _, sizes := range [][]uint32{{0}, {4096}, {100, 4096}, {0, 50}, {4096}, {200}} {
		for _, s := range sizes {
			c.setSize(s)
		}
		c.block(fields)
		c.block(fields)
	}
}

// Random blocks from a small vocabulary, with random size changes.
func TestH2EncoderRandom(t *testing.T) {
	c := newH2EncoderCheck(t)
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		if r.IntN(50) == 0 {
			c.setSize(uint32(r.IntN(4097)))
		}
		c.block(randomFields(r))
	}
}

var h2FuzzNames = []string{":status", "server", "date", "content-type", "content-length", "etag", "set-cookie",
	"x-request-id", "vary", "location", "alt-svc", "link", "x-custom", "accept-ranges", "cache-control"}

func randomFields(r *rand.Rand) []hpack.HeaderField {
	n := 1 + r.IntN(12)
	fields := make([]hpack.HeaderField, n)
	for i := range fields {
		name := h2FuzzNames[r.IntN(len(h2FuzzNames))]
		var value string
		switch r.IntN(4) {
		case 0:
			value = fmt.Sprint(r.IntN(5))
		case 1:
			value = strings.Repeat("ab", r.IntN(300))
		case 2:
			value = []string{"200", "204", "404", "301", "text/html", ""}[r.IntN(6)]
		default:
			value = fmt.Sprintf("v%d", r.IntN(1000))
		}
		fields[i] = hpack.HeaderField{Name: name, Value: value, Sensitive: name == "set-cookie" || r.IntN(20) == 0}
	}
	return fields
}

func FuzzH2Encoder(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(300))
	f.Fuzz(func(t *testing.T, a, b uint64, n uint16) {
		c := newH2EncoderCheck(t)
		r := rand.New(rand.NewPCG(a, b))
		for range int(n % 500) {
			if r.IntN(30) == 0 {
				c.setSize(uint32(r.IntN(4097)))
			}
			c.block(randomFields(r))
		}
	})
}

func BenchmarkH2Encoder(b *testing.B) {
	fields := []hpack.HeaderField{
		{Name: ":status", Value: "200"}, {Name: "server", Value: "sluice"},
		{Name: "date", Value: "Sun, 06 Dec 2026 19:00:00 GMT"}, {Name: "content-type", Value: "text/html; charset=utf-8"},
		{Name: "last-modified", Value: "Sun, 06 Dec 2026 18:00:00 GMT"}, {Name: "etag", Value: `"5f-151"`},
		{Name: "accept-ranges", Value: "bytes"}, {Name: "content-length", Value: "151"},
	}
	b.Run("sluice", func(b *testing.B) {
		var buf h2BlockBuf
		e := newH2Encoder(&buf)
		for b.Loop() {
			buf.b = buf.b[:0]
			for _, f := range fields {
				e.WriteField(f)
			}
		}
	})
	b.Run("x-net", func(b *testing.B) {
		var buf h2BlockBuf
		e := hpack.NewEncoder(&buf)
		for b.Loop() {
			buf.b = buf.b[:0]
			for _, f := range fields {
				e.WriteField(f)
			}
		}
	})
}

// writeField sends every name lowercased, whether a common one the switch
// knows (canonical or lowercase) or another; it drops connection-specific
// fields and names that are not tokens; x/net's decoder reads the block.
func TestH2WriteFieldNames(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Content-Type", "content-type"},
		{"content-type", "content-type"},
		{"Content-type", "content-type"},
		{"ETag", "etag"},
		{"WWW-Authenticate", "www-authenticate"},
		{"X-Request-Id", "x-request-id"},
		{"Set-Cookie", "set-cookie"},
		{"X-Custom", "x-custom"},
		{"x-custom", "x-custom"},
		{"Connection", ""},
		{"Transfer-Encoding", ""},
		{"keep-alive", ""},
		{"Bad Name", ""},
		{"", ""},
	}
	for _, tt := range tests {
		h := &h2Conn{}
		h.enc = newH2Encoder(&h.encBuf)
		h.writeField(tt.in, " v ")
		var got []hpack.HeaderField
		dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got = append(got, f) })
		if _, err := dec.Write(h.encBuf.b); err != nil {
			t.Fatalf("%q: decoding: %v", tt.in, err)
		}
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%q: sent %v, want nothing", tt.in, got)
		case tt.want != "" && (len(got) != 1 || got[0].Name != tt.want || got[0].Value != "v"):
			t.Errorf("%q: sent %v, want %s: v", tt.in, got, tt.want)
		}
	}
}

// BenchmarkH2WriteField encodes the fields the files handler sets on a
// small file's response, as commitLocked passes them.
func BenchmarkH2WriteField(b *testing.B) {
	fields := [][2]string{
		{"Content-Type", "text/html; charset=utf-8"}, {"Last-Modified", "Sun, 06 Dec 2026 18:00:00 GMT"},
		{"ETag", `"5f-151"`}, {"Accept-Ranges", "bytes"}, {"X-Request-Id", "0123456789abcdef"},
	}
	h := &h2Conn{}
	h.enc = newH2Encoder(&h.encBuf)
	for b.Loop() {
		h.encBuf.b = h.encBuf.b[:0]
		for _, f := range fields {
			h.writeField(f[0], f[1])
		}
	}
}
