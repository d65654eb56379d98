package cache

import (
	"net/http"
	"strings"
	"time"

	"github.com/sluice-server/sluice/conditional"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// serve answers the request from the entry e with response m (its body
// complete or still growing): the stored status and fields, Age and
// Cache-Status; 304 or 412 when the request's preconditions say so
// against the stored validators; a 206 for a Range of a complete 200;
// no body for HEAD. It returns true: the pipeline is done. The caller
// holds e.body (body.ref) while it runs.
func (x *Cache) serve(c *pipe.Conn, e *entry, m *meta, ri *reqInfo, now time.Time, status string) bool {
	x.answer(c, e, m, ri, now, status)
	return true
}

// answer is serve, and reports whether the content it set reads the body
// (and holds it until it has). One that does not (304, 412, 416, HEAD)
// holds nothing: an error page may replace it (a 412, a 416), so it must
// carry no release that has to run. One that does reads a 2xx or 3xx
// answer, which no error page replaces, or a stored error response,
// whose body is on the Go heap (entry.publish): a hold on it that is
// never let go of keeps no memory of the arena.
func (x *Cache) answer(c *pipe.Conn, e *entry, m *meta, ri *reqInfo, now time.Time, status string) (reads bool) {
	h := c.Header()
	r := c.Request
	age := e.strings(x, m, now).age
	if m.status >= 200 && m.status < 300 {
		switch code := precondition(r, m); code {
		case http.StatusNotModified:
			for _, f := range m.fields {
				if notModifiedField(f.name) {
					h.Add(f.name, f.value)
				}
			}
			h.Set("Age", age)
			h.Add("Cache-Status", status)
			c.SetStatus(http.StatusNotModified)
			c.SetContent(nil)
			return false
		case http.StatusPreconditionFailed:
			h.Set("Age", age)
			h.Add("Cache-Status", status)
			c.Error(http.StatusPreconditionFailed, "precondition failed")
			return false
		}
	}
	for _, f := range m.fields {
		h.Add(f.name, f.value)
	}
	h.Set("Age", age)
	h.Add("Cache-Status", status)
	var content contentReader = e.body
	n, done := content.state()
	length := m.length
	if done {
		length = n
	}
	code := m.status
	off, end := int64(0), int64(-1)
	var parts *conditional.Multipart
	if ri.ranged && !ri.head && code == http.StatusOK && done && conditional.RangeApplies(r, m.validators()) {
		ranges, verdict := conditional.ParseRange(r.HeaderList("Range"), n, maxRanges)
		switch verdict {
		case conditional.RangeUnsatisfiable:
			h.Set("Content-Range", conditional.UnsatisfiedRange(n))
			c.SetStatus(http.StatusRequestedRangeNotSatisfiable)
			h.SetContentLength(0)
			c.SetContent(nil)
			return false
		case conditional.RangeOK:
			code = http.StatusPartialContent
			if len(ranges) == 1 {
				off, end = ranges[0].Off, ranges[0].End()
				h.Set("Content-Range", conditional.ContentRange(ranges[0], n))
				length = ranges[0].N
			} else {
				parts = conditional.NewMultipart(ranges, n, h.Get("Content-Type"))
				h.Set("Content-Type", parts.ContentType)
				length = parts.Length
			}
		}
	}
	c.SetStatus(code)
	h.SetContentLength(length)
	if ri.head || code == http.StatusNoContent || code == http.StatusNotModified {
		c.SetContent(nil)
		return false
	}
	var gone <-chan struct{}
	if !done {
		gone = c.Gone()
	}
	// The content holds the body until it has sent it; the caller holds
	// it until then, so this hold is always had.
	b := e.body
	b.ref()
	if parts != nil {
		c.SetContent(x.counted(c, func(w pipe.Writer) error {
			defer b.unref()
			return parts.Send(w, func(rg conditional.Range) error { return content.writeTo(w, rg.Off, rg.End(), nil) })
		}, func() int64 { return parts.Length }))
		return true
	}
	if done && off == 0 && end < 0 {
		// The whole of a complete body: a Content made once for all hits.
		if c.Value(StatusKey) == StatusMiss {
			c.SetContent(b.sendAll(nil))
		} else {
			c.SetContent(b.sendAll(&x.stats.BytesServed))
		}
		return true
	}
	size := func() int64 {
		if end >= 0 {
			return end - off
		}
		n, _ := content.state()
		return n - off
	}
	c.SetContent(x.counted(c, func(w pipe.Writer) error {
		defer b.unref()
		return content.writeTo(w, off, end, gone)
	}, size))
	return true
}

// maxRanges bounds the ranges of one request answered from the store
// after merging; more are answered with the whole response, as files
// does by default.
const maxRanges = 16

// notModifiedField reports whether a 304 carries the stored field (RFC
// 9110 §15.4.5).
func notModifiedField(name string) bool {
	for _, n := range [...]string{"Cache-Control", "Content-Location", "Date", "ETag", "Expires", "Vary", "Last-Modified"} {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}

// precondition evaluates the request's preconditions against the stored
// response (RFC 9110 §13.2.2, steps 1 to 4): 412, 304, or 0 to answer in
// full. Without Last-Modified, If-Modified-Since is compared with the
// stored Date, as RFC 9111 §4.3.2 says a cache does.
func precondition(r *engine.Request, m *meta) int {
	v := m.validators()
	if v.LastModified == "" && r.Header("If-Modified-Since") != nil {
		byDate := *v
		byDate.LastModified, byDate.ModTime = m.get("Date"), m.date
		return conditional.Precondition(r, &byDate)
	}
	return conditional.Precondition(r, v)
}
