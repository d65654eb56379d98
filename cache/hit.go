package cache

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// serve answers the request from the entry e with response m (its body
// complete or still growing): the stored status and fields, Age and
// Cache-Status; 304 or 412 when the request's preconditions say so
// against the stored validators; a 206 for a Range of a complete 200;
// no body for HEAD. It returns true: the pipeline is done.
func (x *Cache) serve(c *pipe.Conn, e *entry, m *meta, ri *reqInfo, now time.Time, status string) bool {
	h := c.Header()
	r := c.Request
	age := ageString(m.currentAge(now))
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
			return true
		case http.StatusPreconditionFailed:
			h.Set("Age", age)
			h.Add("Cache-Status", status)
			c.Error(http.StatusPreconditionFailed, "precondition failed")
			return true
		}
	}
	for _, f := range m.fields {
		h.Add(f.name, f.value)
	}
	h.Set("Age", age)
	h.Add("Cache-Status", status)
	n, done := e.body.state()
	length := m.length
	if done {
		length = n
	}
	code := m.status
	off, end := int64(0), int64(-1)
	if ri.ranged && !ri.head && code == http.StatusOK && done && rangeApplies(r, m) {
		if start, stop, ok := singleRange(r.HeaderList("Range"), n); ok {
			code, off, end = http.StatusPartialContent, start, stop
			h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(stop-1, 10)+"/"+strconv.FormatInt(n, 10))
			length = stop - start
		} else if start < 0 {
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(n, 10))
			c.SetStatus(http.StatusRequestedRangeNotSatisfiable)
			h.SetContentLength(0)
			c.SetContent(nil)
			return true
		}
	}
	c.SetStatus(code)
	h.SetContentLength(length)
	if ri.head || code == http.StatusNoContent || code == http.StatusNotModified {
		c.SetContent(nil)
		return true
	}
	var gone <-chan struct{}
	if !done {
		gone = c.Gone()
	}
	c.SetContent(func(w pipe.Writer) error { return e.body.writeTo(w, off, end, gone) })
	return true
}

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
// response (RFC 9110 §13.2.2, steps 1 to 4; RFC 9111 §4.3.2): 412, 304,
// or 0 to answer in full. Without Last-Modified, If-Modified-Since is
// compared with the stored Date.
func precondition(r *engine.Request, m *meta) int {
	if im := r.HeaderList("If-Match"); im != nil {
		if !matchETag(im, m.etag, false) {
			return http.StatusPreconditionFailed
		}
	} else if ius := r.HeaderList("If-Unmodified-Since"); ius != nil && !m.lastModT.IsZero() {
		if t, ok := httpgrammar.ParseDate(ius); ok && m.lastModT.After(t) {
			return http.StatusPreconditionFailed
		}
	}
	if inm := r.HeaderList("If-None-Match"); inm != nil {
		if matchETag(inm, m.etag, true) {
			return http.StatusNotModified
		}
		return 0
	}
	if ims := r.HeaderList("If-Modified-Since"); ims != nil {
		mod := m.lastModT
		if mod.IsZero() {
			mod = m.date
		}
		if t, ok := httpgrammar.ParseDate(ims); ok && !mod.After(t) {
			return http.StatusNotModified
		}
	}
	return 0
}

// matchETag reports whether the If-Match or If-None-Match list matches
// etag: "*" matches any stored response, weak compares opaque tags
// ignoring W/, strong needs two strong equal tags.
func matchETag(list []byte, etag string, weak bool) bool {
	if string(httpgrammar.TrimOWS(list)) == "*" {
		return true
	}
	if etag == "" {
		return false
	}
	strip := func(t string) (string, bool) {
		if strings.HasPrefix(t, "W/") {
			return t[2:], true
		}
		return t, false
	}
	et, etWeak := strip(etag)
	for elem, rest := httpgrammar.NextElement(list); len(elem) > 0; elem, rest = httpgrammar.NextElement(rest) {
		t, tWeak := strip(string(elem))
		if t == et && (weak || !etWeak && !tWeak) {
			return true
		}
	}
	return false
}

// rangeApplies is If-Range (RFC 9110 §13.1.5): a strong tag equal to the
// stored one, or the stored Last-Modified exactly.
func rangeApplies(r *engine.Request, m *meta) bool {
	ir := r.HeaderList("If-Range")
	if ir == nil {
		return true
	}
	if len(ir) > 0 && (ir[0] == '"' || len(ir) > 1 && ir[0] == 'W' && ir[1] == '/') {
		return m.etag != "" && m.etag[0] == '"' && string(ir) == m.etag
	}
	t, ok := httpgrammar.ParseDate(ir)
	return ok && !m.lastModT.IsZero() && t.Equal(m.lastModT)
}

// singleRange reads a Range of one byte range of a body of size n and
// returns [start, stop). A Range of several ranges, or not in bytes, is
// ignored (ok false, start 0): the whole body is sent. A range that
// cannot be satisfied gives ok false and start -1 (416).
func singleRange(v []byte, n int64) (start, stop int64, ok bool) {
	s := string(httpgrammar.TrimOWS(v))
	spec, found := strings.CutPrefix(s, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false
	}
	if first == "" {
		k, err := strconv.ParseInt(last, 10, 64)
		if err != nil || k < 0 || last[0] == '+' {
			return 0, 0, false
		}
		if k == 0 || n == 0 {
			return -1, 0, false
		}
		return max(0, n-k), n, true
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 || first[0] == '+' {
		return 0, 0, false
	}
	b := n - 1
	if last != "" {
		if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a || last[0] == '+' {
			return 0, 0, false
		}
	}
	if a >= n {
		return -1, 0, false
	}
	return a, min(b, n-1) + 1, true
}

// ageString is an Age value: whole seconds, never negative (§5.1).
func ageString(d time.Duration) string {
	return strconv.FormatInt(max(0, int64(d/time.Second)), 10)
}

// ttl is Cache-Status's ttl: the seconds of freshness left, negative
// when stale; it adds up with Age (whole seconds) to the lifetime.
func ttl(m *meta, now time.Time) string {
	age := max(0, int64(m.currentAge(now)/time.Second))
	return strconv.FormatInt(int64(m.lifetime/time.Second)-age, 10)
}

// hitStatus is the Cache-Status of a fresh hit.
func (x *Cache) hitStatus(m *meta, now time.Time) string {
	return x.name + "; hit; ttl=" + ttl(m, now)
}
