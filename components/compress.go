package components

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "compress", Kind: KindFilter, Scalar: "encodings",
		Example: `compress: [zstd, br, gzip]`,
	}, func(o CompressOptions, _ Context) (pipe.Component, error) { return NewCompress(o) })
}

// CompressOptions configures the compress filter. The zero value is a
// sound configuration: zstd, br and gzip at their default levels for the
// usual text types, bodies of 256 bytes and more.
type CompressOptions struct {
	// Encodings lists the content codings offered, in the server's order
	// of preference, which decides between codings the client accepts
	// equally: any of "zstd", "br", "gzip", "deflate". Default
	// [zstd, br, gzip]. A config scalar or list (`compress: [gzip]`) sets
	// this option.
	Encodings []string `yaml:"encodings"`

	// Levels sets the compression level per coding, in that coding's own
	// scale: gzip and deflate 1 (fastest) to 9, br 0 to 11, zstd 1 to 22
	// (mapped onto the encoder's four speeds as zstd.EncoderLevelFromZstd
	// does). Defaults: gzip 5, deflate 5, br 4, zstd 3. nginx's `gzip on`
	// compresses at level 1. Measured on the 80 KB test page (one core of
	// the benchmark machine), gzip 1 takes about 0.37 ms, gzip 5 and zstd 3
	// about 0.6 ms, and br 4 about 2.8 ms for a body 1-4% smaller than
	// gzip 5's: where CPU matters more than those bytes, offer [zstd, gzip].
	Levels map[string]int `yaml:"levels"`

	// MinSize skips bodies whose declared Content-Length is below it.
	// Bodies of unknown length are always compressed. Default 256; -1
	// compresses every body.
	MinSize int64 `yaml:"min_size"`

	// Types lists the media types compressed: "type/subtype", or
	// "type/*" for every subtype. Parameters (charset) are ignored.
	// Default DefaultCompressTypes. Already compressed formats (images,
	// video, archives) are left out of the default on purpose.
	Types []string `yaml:"types"`
}

// DefaultCompressTypes are the media types compress compresses when
// CompressOptions.Types is empty.
var DefaultCompressTypes = []string{
	"text/*",
	"application/json",
	"application/ld+json",
	"application/manifest+json",
	"application/javascript",
	"application/ecmascript",
	"application/xml",
	"application/xhtml+xml",
	"application/rss+xml",
	"application/atom+xml",
	"application/wasm",
	"image/svg+xml",
	"image/x-icon",
	"image/vnd.microsoft.icon",
	"image/bmp",
	"font/ttf",
	"font/otf",
	"application/vnd.ms-fontobject",
}

// compressDefaultMinSize is CompressOptions.MinSize when zero.
const compressDefaultMinSize = 256

// zstdWindow bounds the zstd window (and so the memory of each pooled
// encoder and of the client's decoder); RFC 9659 requires at most 8 MiB
// for HTTP. 128 KiB is Caddy's choice, for the same reason.
const zstdWindow = 128 << 10

// brotliWindowLog bounds the brotli window to 256 KiB: a pooled quality-4
// encoder then holds about 2 MB instead of nearly 10 MB with the default
// 4 MiB window, and the output is within 0.1% on a 290 KB HTML page.
const brotliWindowLog = 18

// compressCoding describes one content coding.
type compressCoding struct {
	name     string
	min, max int // level range
	def      int // default level
	newEnc   func(level int) (compressEncoder, error)
}

var compressCodings = []compressCoding{
	{name: "zstd", min: 1, max: 22, def: 3, newEnc: func(l int) (compressEncoder, error) {
		return zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(l)),
			zstd.WithEncoderConcurrency(1), // encode on the caller's goroutine
			zstd.WithWindowSize(zstdWindow),
			zstd.WithZeroFrames(true)) // an empty body is still a valid frame
	}},
	{name: "br", min: 0, max: 11, def: 4, newEnc: func(l int) (compressEncoder, error) {
		return brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: l, LGWin: brotliWindowLog}), nil
	}},
	{name: "gzip", min: 1, max: 9, def: 5, newEnc: func(l int) (compressEncoder, error) {
		return gzip.NewWriterLevel(nil, l)
	}},
	// "deflate" in HTTP is the zlib format (RFC 9110 §8.4.1.2), not raw
	// deflate.
	{name: "deflate", min: 1, max: 9, def: 5, newEnc: func(l int) (compressEncoder, error) {
		return zlib.NewWriterLevel(nil, l)
	}},
}

// compressEncoder is what the four encoders have in common.
type compressEncoder interface {
	io.WriteCloser
	Flush() error
	Reset(w io.Writer)
}

// compressPools holds one pool of encoders per coding and level, shared
// by every compress component.
var compressPools struct {
	sync.Mutex
	m map[string]*sync.Pool
}

func compressPool(cd *compressCoding, level int) (*sync.Pool, error) {
	// Build one encoder now so a bad level fails at construction.
	enc, err := cd.newEnc(level)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprint(cd.name, level)
	compressPools.Lock()
	defer compressPools.Unlock()
	if compressPools.m == nil {
		compressPools.m = map[string]*sync.Pool{}
	}
	p := compressPools.m[key]
	if p == nil {
		p = &sync.Pool{New: func() any {
			e, _ := cd.newEnc(level) // the level was validated above
			return &compressWriter{enc: e}
		}}
		compressPools.m[key] = p
	}
	p.Put(&compressWriter{enc: enc})
	return p, nil
}

// compress is the configured filter. It is immutable after NewCompress.
type compress struct {
	codings []*compressCoding // offered, server preference first
	offers  []string          // the codings' names, then "identity"
	wraps   []pipe.Wrap       // one per coding, same order
	minSize int64
	exact   []string // media types matched exactly (lower case)
	prefix  []string // "type/" prefixes from "type/*" patterns
}

// NewCompress returns the compress Filter: it compresses the response
// body with the content coding the client prefers among Encodings
// (Accept-Encoding, RFC 9110 §12.5.3: q-values, q=0 refusing a coding,
// "*" standing for codings not listed, identity acceptable unless refused
// by "identity;q=0" or "*;q=0"), as httpgrammar.Negotiate chooses with
// the offers Encodings followed by identity. The acceptable offered
// coding with the highest q-value is used, the server's order deciding
// between equal ones; identity is preferred only when the client rates it
// explicitly (or through "*") above that coding. A malformed list element
// (a q that is not a qvalue, such as "q=2" or "q= 0.5") is ignored. A
// request without Accept-Encoding gets the body unchanged, and so does
// one that accepts nothing offered. The files source chooses among its
// precompressed variants by the same rule.
//
// It decides when the response header is final and leaves alone:
// responses that already have a Content-Encoding, 1xx, 204, 206 and 304
// responses, media types not in Types or without a Content-Type, and
// bodies with a Content-Length below MinSize. On the responses it
// compresses it sets Content-Encoding, removes Content-Length (the
// engine then measures a short body or chunks a long one) and
// Accept-Ranges, and turns a strong ETag weak (RFC 9110 §8.8.3). Every
// response whose content could differ by Accept-Encoding gets "Vary:
// Accept-Encoding", merged with the Vary already set (RFC 9110 §12.5.5):
// each it could compress, whatever this client accepted; a 206 whose
// whole representation (Content-Type, and Content-Range's complete
// length) it could compress, and any multipart/byteranges 206; a 304
// standing for a 200 it could compress, or without a Content-Type to
// tell (a 304 also gets the weak ETag of the 200 it stands for).
//
// A HEAD response gets the header fields the GET would (Content-Encoding,
// Vary, weak ETag, no Content-Length) and no compression work: what the
// source writes is discarded.
//
// Flush compresses what was written so far (a sync flush) and flushes the
// writer beneath, so streamed responses arrive as they are produced.
// Encoders are pooled per coding and level; each request borrows one when
// its response starts and returns it when the content ends. The filter is
// safe for concurrent use.
func NewCompress(opts CompressOptions) (pipe.Component, error) {
	f := &compress{minSize: opts.MinSize}
	if f.minSize == 0 {
		f.minSize = compressDefaultMinSize
	}
	names := opts.Encodings
	if len(names) == 0 {
		names = []string{"zstd", "br", "gzip"}
	}
	for name := range opts.Levels {
		if compressCodingNamed(name) == nil {
			return nil, fmt.Errorf("compress: level for unknown encoding %q", name)
		}
	}
	for _, name := range names {
		cd := compressCodingNamed(name)
		if cd == nil {
			return nil, fmt.Errorf("compress: unknown encoding %q (want zstd, br, gzip or deflate)", name)
		}
		for _, have := range f.codings {
			if have == cd {
				return nil, fmt.Errorf("compress: encoding %q listed twice", name)
			}
		}
		level := cd.def
		if l, ok := opts.Levels[cd.name]; ok {
			level = l
		}
		if level < cd.min || level > cd.max {
			return nil, fmt.Errorf("compress: %s level %d out of range %d..%d", cd.name, level, cd.min, cd.max)
		}
		pool, err := compressPool(cd, level)
		if err != nil {
			return nil, fmt.Errorf("compress: %s level %d: %v", cd.name, level, err)
		}
		f.codings = append(f.codings, cd)
		f.offers = append(f.offers, cd.name)
		f.wraps = append(f.wraps, compressWrap(pool))
	}
	f.offers = append(f.offers, "identity")
	types := opts.Types
	if len(types) == 0 {
		types = DefaultCompressTypes
	}
	for _, t := range types {
		t = strings.ToLower(strings.TrimSpace(t))
		slash := strings.IndexByte(t, '/')
		if slash <= 0 || slash == len(t)-1 || strings.ContainsAny(t, " ;,") {
			return nil, fmt.Errorf("compress: type %q is not type/subtype or type/*", t)
		}
		if strings.HasSuffix(t, "/*") {
			f.prefix = append(f.prefix, t[:len(t)-1])
		} else {
			f.exact = append(f.exact, t)
		}
	}
	return pipe.Filter(f.filter), nil
}

// compressCodingNamed returns the coding called name (case-insensitive).
func compressCodingNamed(name string) *compressCoding {
	for i := range compressCodings {
		if strings.EqualFold(compressCodings[i].name, name) {
			return &compressCodings[i]
		}
	}
	return nil
}

// filter decides, with the final status and header, whether and how to
// compress.
func (f *compress) filter(c *pipe.Conn) pipe.Wrap {
	status := c.Status()
	if status < 200 || status == http.StatusNoContent {
		return nil
	}
	h := c.Header()
	if ce := h.Get("Content-Encoding"); ce != "" && !httpgrammar.EqualFold(ce, "identity") {
		return nil
	}
	if !f.couldEncode(status, h) {
		return nil
	}
	compressAddVary(h)
	if status == http.StatusPartialContent {
		return nil // a part of the unencoded representation, sent as is
	}
	i := compressNegotiate(c.Request, f.offers)
	if i < 0 {
		return nil
	}
	if et := h.Get("ETag"); strings.HasPrefix(et, `"`) {
		h.Set("ETag", "W/"+et)
	}
	h.SetContentLength(-1)
	if status == 304 {
		return nil
	}
	h.Set("Content-Encoding", f.codings[i].name)
	h.Del("Accept-Ranges")
	if c.Request.IsMethod("HEAD") {
		return compressDiscard
	}
	return f.wraps[i]
}

// couldEncode reports whether the representation a response carries or
// stands for is one compress encodes for a client accepting one of its
// codings: the 200's own, the whole of which a 206 sends a part, the one
// a 304 validates. Such a response varies with Accept-Encoding and needs
// Vary (RFC 9110 §12.5.5) whatever this client accepted. The type comes
// from Content-Type and the size from Content-Length, or for a 206 from
// Content-Range's complete length; what the header does not tell (a 304
// without Content-Type, a multipart/byteranges 206, an unknown length)
// counts as compressible.
func (f *compress) couldEncode(status int, h *engine.Header) bool {
	ct, size := h.Get("Content-Type"), h.ContentLength()
	unknownType := false
	switch status {
	case http.StatusPartialContent:
		size = compressCompleteLength(h.Get("Content-Range"))
		unknownType = compressMediaTypeIs(ct, "multipart/byteranges")
	case http.StatusNotModified:
		unknownType = ct == ""
	}
	if !unknownType && !f.compressible(ct) {
		return false
	}
	return size < 0 || size >= f.minSize
}

// compressCompleteLength returns the complete length of a Content-Range
// value ("bytes 0-99/5000": 5000), or -1 when it is unknown ("/*") or the
// field is absent or malformed.
func compressCompleteLength(cr string) int64 {
	i := strings.LastIndexByte(cr, '/')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(cr[i+1:], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// compressMediaTypeIs reports whether the media type of a Content-Type
// value, without parameters, is typ (ASCII case-insensitive).
func compressMediaTypeIs(ct, typ string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return httpgrammar.EqualFold(httpgrammar.TrimOWS(ct), typ)
}

// compressible reports whether the media type of a Content-Type value is
// one of the configured types.
func (f *compress) compressible(ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = httpgrammar.TrimOWS(ct)
	if ct == "" {
		return false
	}
	for _, p := range f.prefix {
		if len(ct) > len(p) && httpgrammar.EqualFold(ct[:len(p)], p) {
			return true
		}
	}
	for _, t := range f.exact {
		if httpgrammar.EqualFold(ct, t) {
			return true
		}
	}
	return false
}

// compressAddVary adds Accept-Encoding to the response's Vary, unless it
// is there already or Vary is "*".
func compressAddVary(h *engine.Header) {
	var existing string
	n, covered := 0, false
	h.Values(func(name, value string) bool {
		if !httpgrammar.EqualFold(name, "Vary") {
			return true
		}
		n++
		existing = value
		covered = httpgrammar.HasToken(value, "*") || httpgrammar.HasToken(value, "Accept-Encoding")
		return !covered
	})
	switch {
	case covered:
	case n == 1 && httpgrammar.TrimOWS(existing) != "":
		h.Set("Vary", existing+", Accept-Encoding")
	default:
		h.Add("Vary", "Accept-Encoding")
	}
}

// compressNegotiate returns the index in offers (the offered codings'
// names, then "identity") of the coding to use for r, or -1 for identity,
// as httpgrammar.Negotiate chooses on r's Accept-Encoding lines. It does
// not allocate unless r has several Accept-Encoding lines.
func compressNegotiate(r *engine.Request, offers []string) int {
	if i := httpgrammar.Negotiate(r.HeaderList("Accept-Encoding"), offers); i < len(offers)-1 {
		return i
	}
	return -1
}

// compressWrap returns the Wrap that borrows an encoder from pool.
func compressWrap(pool *sync.Pool) pipe.Wrap {
	return func(next pipe.Writer) pipe.Writer {
		w := pool.Get().(*compressWriter)
		w.pool, w.next, w.closed = pool, next, false
		w.out.next = next
		w.enc.Reset(&w.out)
		return w
	}
}

// compressWriter is a pooled encoder writing into the writer beneath.
type compressWriter struct {
	_      compressNoCopy
	enc    compressEncoder
	out    compressOut
	next   pipe.Writer
	pool   *sync.Pool
	closed bool
}

var _ pipe.Writer = (*compressWriter)(nil)

var errCompressClosed = errors.New("compress: write after close")

// Write compresses p into the writer beneath.
func (w *compressWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, errCompressClosed
	}
	return w.enc.Write(p)
}

// Flush sends everything written so far, compressed, to the client.
func (w *compressWriter) Flush() error {
	if w.closed {
		return errCompressClosed
	}
	if err := w.enc.Flush(); err != nil {
		return err
	}
	if err := w.out.flush(); err != nil {
		return err
	}
	return w.next.Flush()
}

// Close writes the end of the compressed stream and returns the encoder
// to its pool. An encoder whose stream failed is dropped instead.
func (w *compressWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.enc.Close()
	if err == nil {
		err = w.out.flush()
	}
	w.next, w.out.next = nil, nil
	w.out.buf = w.out.buf[:0]
	if err == nil {
		w.pool.Put(w)
	}
	return err
}

// compressOutSize is the buffer gathering an encoder's output. The flate
// encoders emit a few hundred bytes at a time; gathered, a typical
// compressed page leaves in one write (one chunk, one writev) rather than
// a hundred small chunks.
const compressOutSize = 32 << 10

// compressOut buffers encoder output on its way to the writer beneath.
type compressOut struct {
	next pipe.Writer
	buf  []byte
}

func (o *compressOut) Write(p []byte) (int, error) {
	large := len(p) >= compressOutSize/2
	if large || len(o.buf)+len(p) > compressOutSize {
		if err := o.flush(); err != nil {
			return 0, err
		}
	}
	if large {
		return o.next.Write(p) // after what is buffered, without a copy
	}
	if o.buf == nil {
		o.buf = make([]byte, 0, compressOutSize)
	}
	o.buf = append(o.buf, p...)
	return len(p), nil
}

func (o *compressOut) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	_, err := o.next.Write(o.buf)
	o.buf = o.buf[:0]
	return err
}

// compressDiscard is the content writer of a HEAD response: the body is
// not sent, so it is not compressed either.
var compressDiscard pipe.Wrap = func(pipe.Writer) pipe.Writer { return compressDiscardWriter{} }

type compressDiscardWriter struct{}

func (compressDiscardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (compressDiscardWriter) Flush() error                { return nil }
func (compressDiscardWriter) Close() error                { return nil }

// compressNoCopy makes `go vet` report copies of a pooled writer.
type compressNoCopy struct{}

func (*compressNoCopy) Lock()   {}
func (*compressNoCopy) Unlock() {}
