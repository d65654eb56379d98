package files

import (
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/sluice-server/sluice/conditional"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// Reply is the Server's answer to one request, decided but not yet sent:
// the status, the header fields (SetHeader) and the body (Send). The
// Server's own Serve uses it; so do pipeline sources that set the header
// in one phase and write the body in another (see Decide).
//
// A Reply refers to the Server's cached data (and a listing it owns),
// never to the request, so it stays valid after the request's buffers are
// reused. It is used by one
// goroutine at a time. The zero Reply is not usable.
type Reply struct {
	s      *Server
	v      *entry                 // the file or variant sent, for file replies
	f      *openFile              // a reference taken by open, dropped by release
	multi  *conditional.Multipart // bodyMulti
	list   *listing               // bodyList
	status int
	length int64  // the Content-Length to declare, or -1
	off, n int64  // bodyFile: the region of v
	ctype  string // Content-Type, for replies that are not file content
	data   []byte // bodyBytes
	crange string // Content-Range
	loc    string // Location of a 301
	kind   uint8  // body kind, below
	flags  uint8  // below
	now    int64  // the cache's clock when the reply was decided
}

// Flags of a Reply.
const (
	replyHead    = 1 << iota // HEAD: header fields of the GET, no body
	replyVary                // the file has variants: Vary: Accept-Encoding
	replyAllow               // an Allow field
	replyListing             // a directory listing: Vary: Accept
)

// Body kinds of a Reply.
const (
	bodyNone  = iota
	bodyBytes // data
	bodyFile  // n bytes of v's file from off
	bodyMulti // multipart/byteranges of v
	bodyList  // a directory listing, rendered as it is sent
)

// Status returns the reply's status code.
func (rp *Reply) Status() int { return rp.status }

// HasBody reports whether Send writes anything: false for HEAD, 204, 304
// and redirects.
func (rp *Reply) HasBody() bool { return rp.flags&replyHead == 0 && rp.kind != bodyNone }

// BodyWriter receives a Reply's body: Write for bytes, SendFile for file
// regions (sendfile(2) where possible; it must not move f's offset, as
// f is shared with concurrent requests). The engine's ResponseWriter is
// one.
type BodyWriter interface {
	Write(p []byte) (int, error)
	SendFile(f *os.File, offset, n int64) error
}

// Error bodies, one per status, shared and never modified.
var errorBodies = map[int][]byte{}

func init() {
	for status, msg := range map[int]string{
		http.StatusForbidden:                    "permission denied",
		http.StatusNotFound:                     "no such file",
		http.StatusMethodNotAllowed:             "use " + allow,
		http.StatusPreconditionFailed:           "precondition failed",
		http.StatusRequestedRangeNotSatisfiable: "no requested range is within the file",
		http.StatusInternalServerError:          "cannot read file",
	} {
		errorBodies[status] = []byte(strconv.Itoa(status) + " " + http.StatusText(status) + ": " + msg + "\n")
	}
}

// setError makes rp answer status with its short plain-text body, keeping
// rp's flags and representation.
func (rp *Reply) setError(status int) {
	body := errorBodies[status]
	rp.status, rp.kind, rp.ctype, rp.data, rp.length = status, bodyBytes, "text/plain; charset=utf-8", body, int64(len(body))
}

// decide fills rp, a zero Reply, with the reply to r, without opening any
// file. force looks the path up in the file system even when the cache
// has it.
func (s *Server) decide(rp *Reply, r *engine.Request, force bool) {
	rp.s, rp.length, rp.now = s, -1, s.cache.now()
	switch string(r.Method) {
	case "GET":
	case "HEAD":
		rp.flags = replyHead
	case "OPTIONS":
		rp.status, rp.flags = http.StatusNoContent, replyAllow
		return
	default:
		rp.flags = replyAllow
		rp.setError(http.StatusMethodNotAllowed)
		return
	}
	e, err := s.lookup(r, force, rp.now)
	switch {
	case err != nil:
		s.fail(rp, r, err)
		return
	case e.status == http.StatusMovedPermanently:
		rp.status, rp.loc = e.status, e.location
		if len(r.Query) > 0 {
			rp.loc += "?" + string(r.Query)
		}
		return
	case e.status != http.StatusOK:
		rp.setError(e.status)
		return
	case e.dir:
		s.list(rp, r, e)
		return
	}
	s.decideFile(rp, r, e)
}

// decideFile fills rp with the reply for the file entry e.
func (s *Server) decideFile(rp *Reply, r *engine.Request, e *entry) {
	v := e
	if len(e.variants) > 0 {
		v = negotiate(r.HeaderList("Accept-Encoding"), e)
		rp.flags |= replyVary
	}
	rp.v, rp.status, rp.length = v, http.StatusOK, v.size
	cond, ranged := conditionalFields(r)
	if !cond && !ranged {
		// Most requests: Precondition and the Range field would each
		// look through the fields for nothing.
		if rp.flags&replyHead == 0 {
			rp.kind, rp.off, rp.n = bodyFile, 0, v.size
		}
		return
	}
	val := conditional.Validators{ETag: v.etag.String(), LastModified: v.lastMod.String(), ModTime: v.modTime}
	if cond {
		if st := conditional.Precondition(r, &val); st == http.StatusNotModified {
			rp.status, rp.length = st, -1
			return
		} else if st != 0 {
			rp.setError(st)
			return
		}
	}
	head := rp.flags&replyHead != 0
	if rh := r.HeaderList("Range"); rh != nil && !head && conditional.RangeApplies(r, &val) && s.decideRange(rp, rh) {
		return
	}
	if !head {
		rp.kind, rp.off, rp.n = bodyFile, 0, v.size
	}
}

// conditionalFields reports, in one pass over r's fields, whether r has
// a field whose name starts with "If-" (every precondition field of RFC
// 9110 §13.1 does, and If-Range) and whether it has a Range field.
func conditionalFields(r *engine.Request) (cond, ranged bool) {
	for i := range r.Fields {
		n := r.Fields[i].Name
		switch {
		case len(n) > 3 && n[0]|0x20 == 'i' && n[1]|0x20 == 'f' && n[2] == '-':
			cond = true
		case len(n) == 5 && httpgrammar.EqualFold(n, "Range"):
			ranged = true
		}
	}
	return cond, ranged
}

// decideRange fills rp for a Range field value rh of a GET and reports
// whether it did; false means serving the whole representation.
func (s *Server) decideRange(rp *Reply, rh []byte) bool {
	v := rp.v
	ranges, what := conditional.ParseRange(rh, v.size, s.opts.MaxRanges)
	switch what {
	case conditional.RangeUnsatisfiable:
		rp.setError(http.StatusRequestedRangeNotSatisfiable)
		rp.crange = conditional.UnsatisfiedRange(v.size)
	case conditional.RangeOK:
		rp.status = http.StatusPartialContent
		if len(ranges) == 1 {
			rp.kind, rp.off, rp.n = bodyFile, ranges[0].Off, ranges[0].N
			rp.length, rp.crange = rp.n, conditional.ContentRange(ranges[0], v.size)
		} else {
			rp.kind = bodyMulti
			rp.multi = conditional.NewMultipart(ranges, v.size, v.ctype.String())
			rp.length = rp.multi.Length
		}
	default:
		return false
	}
	return true
}

// list fills rp with a directory listing.
func (s *Server) list(rp *Reply, r *engine.Request, e *entry) {
	rp.flags |= replyListing // its Vary goes on a 304 too (§15.4.5)
	var val conditional.Validators
	if st := conditional.Precondition(r, &val); st != 0 {
		rp.setError(st)
		return
	}
	l, err := s.listing(r, e)
	if err != nil {
		s.fail(rp, r, err)
		return
	}
	// The length is known only once rendered: the engine chunks.
	rp.status, rp.kind, rp.ctype, rp.list, rp.length = http.StatusOK, bodyList, l.ctype(), l, -1
}

// fail makes rp answer a file system error: 403 or 404 where the error
// says so, else 500 (logged).
func (s *Server) fail(rp *Reply, r *engine.Request, err error) {
	if e, ferr := failure("", err); ferr == nil {
		rp.setError(e.status)
		return
	}
	s.logError(r, err)
	rp.setError(http.StatusInternalServerError)
}

// needsFile reports whether sending the body reads v's file (rather than
// memory).
func (rp *Reply) needsFile() bool {
	return (rp.kind == bodyFile || rp.kind == bodyMulti) && !rp.v.held
}

// open takes a reference to v's open file for the body, opening it if no
// request holds it open. It fails with errChanged, having written
// nothing, when the file on disk is no longer the one the reply was
// decided for.
func (rp *Reply) open() error {
	if !rp.needsFile() || rp.f != nil {
		return nil
	}
	f, err := rp.s.openEntry(rp.v, rp.now)
	if err != nil {
		return err
	}
	rp.f = f
	return nil
}

// release drops the reference taken by open.
func (rp *Reply) release() {
	if rp.f != nil {
		rp.f.release()
		rp.f = nil
	}
}

// Field names and values SetHeader sets for most file replies, made safe
// once (see engine.SafeString).
var (
	fieldETag         = engine.MakeSafe("ETag")
	fieldLastModified = engine.MakeSafe("Last-Modified")
	fieldContentType  = engine.MakeSafe("Content-Type")
	fieldAcceptRanges = engine.MakeSafe("Accept-Ranges")
	valueBytes        = engine.MakeSafe("bytes")
)

// SetHeader sets the reply's header fields on h: Content-Type,
// Content-Length, the validators, Content-Range, Content-Encoding, Vary,
// Cache-Control, Expires, Location or Allow as the reply calls for.
// Fields set before are kept unless the reply sets the same name. It does
// not allocate.
func (rp *Reply) SetHeader(h *engine.Header) {
	s, v := rp.s, rp.v
	switch {
	case rp.flags&replyAllow != 0:
		h.Set("Allow", allow)
	case rp.loc != "":
		h.Set("Location", rp.loc)
	}
	// A 200, 206 or 304 describes the representation (a 304 the one it
	// stands for); errors and redirects describe only themselves.
	represents := rp.status == http.StatusOK || rp.status == http.StatusPartialContent || rp.status == http.StatusNotModified
	if represents {
		if v != nil {
			if v.etag.String() != "" {
				h.SetSafe(fieldETag, v.etag)
			}
			if v.lastMod.String() != "" && (rp.status != http.StatusNotModified || v.etag.String() == "") {
				h.SetSafe(fieldLastModified, v.lastMod)
			}
		}
		if s.cacheControl != "" {
			h.Set("Cache-Control", s.cacheControl)
			if s.opts.MaxAge > 0 {
				h.Set("Expires", s.expires())
			}
		}
	}
	if rp.flags&replyVary != 0 {
		h.Set("Vary", "Accept-Encoding")
		// Not on a 412 or 416: their plain-text error is not the
		// variant's encoded content (RFC 9110 §8.4).
		if v.encoding != "" && represents {
			h.Set("Content-Encoding", v.encoding)
		}
	}
	if rp.flags&replyListing != 0 {
		h.Set("Vary", "Accept")
	}
	switch rp.status {
	case http.StatusNotModified:
		if v != nil {
			// The representation's type and length, as the 200 would
			// have them, tell a filter (compress) what it would have done,
			// so the 304 gets the same Vary and ETag (RFC 9110 §15.4.5).
			// The engine does not send them on a 304.
			h.SetSafe(fieldContentType, v.ctype)
			h.SetContentLength(v.size)
		}
		return
	case http.StatusNoContent:
		return
	case http.StatusMovedPermanently:
		// Said even for HEAD, whose response has the GET's fields (§9.3.2).
		h.SetContentLength(0)
		return
	}
	switch {
	case rp.multi != nil:
		h.Set("Content-Type", rp.multi.ContentType)
	case rp.ctype != "":
		h.Set("Content-Type", rp.ctype)
	case v != nil:
		h.SetSafe(fieldContentType, v.ctype)
	}
	if rp.crange != "" {
		h.Set("Content-Range", rp.crange)
	}
	if rp.ctype == "" && v != nil {
		h.SetSafe(fieldAcceptRanges, valueBytes)
	}
	if s.opts.NoSniff || rp.ctype != "" {
		h.Set("X-Content-Type-Options", "nosniff")
	}
	h.SetContentLength(rp.length)
}

// Send writes the reply's body to w: nothing for HEAD, 204, 304 and
// redirects; bytes from memory; a listing, rendered through a small
// buffer as w takes it; or file content, which it reads from a
// shared open file (taking and dropping a reference, so a client that
// goes away mid-transfer does not keep the file open). If the file
// changed on disk since the reply was decided, Send writes nothing and
// fails; a caller that has not committed the header may decide again.
func (rp *Reply) Send(w BodyWriter) error {
	if rp.flags&replyHead != 0 {
		return nil
	}
	switch rp.kind {
	case bodyNone:
		return nil
	case bodyBytes:
		_, err := w.Write(rp.data)
		return err
	case bodyList:
		return rp.list.writeTo(writerOnly{w})
	}
	opened := rp.f == nil
	if opened && rp.needsFile() {
		rp.now = rp.s.cache.now() // the body may be sent long after Decide
	}
	if err := rp.open(); err != nil {
		return err
	}
	if opened {
		defer rp.release()
	}
	if rp.kind == bodyFile {
		return rp.sendRegion(w, rp.off, rp.n)
	}
	return rp.multi.Send(writerOnly{w}, func(r conditional.Range) error {
		return rp.sendRegion(w, r.Off, r.N)
	})
}

// writerOnly hides any WriteString of w, so io.WriteString copies.
type writerOnly struct{ w BodyWriter }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// sendRegion sends n bytes of the representation from off.
func (rp *Reply) sendRegion(w BodyWriter, off, n int64) error {
	v := rp.v
	if v.held {
		_, err := w.Write(v.body[off : off+n])
		return err
	}
	if rp.f.osf != nil {
		return w.SendFile(rp.f.osf, off, n)
	}
	r, err := rp.f.section(off, n)
	if err != nil {
		return err
	}
	m, err := io.Copy(writerOnly{w}, r)
	if err == nil && m < n {
		err = io.ErrUnexpectedEOF // the file shrank
	}
	return err
}
