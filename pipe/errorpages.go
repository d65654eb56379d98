package pipe

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ErrorPages answers error statuses with pages: an HTML template for a
// status ("404") or a class of statuses ("4xx", "5xx"), the exact status
// chosen before its class. As a Component it makes itself the error pages
// of the request, replacing any set before, and the pipeline goes on: put
// it before the Router for the whole server. A route's own go in its
// Route.ErrorPages (typically over the server's, see Over).
//
// A response gets a page when, as the content phase starts (Conn.Finish),
// its status is 400 or above and a page is set for it: whatever decided
// the status in the setup phase — Conn.Error, a source's SetStatus (the
// files source's 404), the Router's own 404, 405 and 400 (a path
// parameter). A status a Content
// sets while it writes (a CGI program's Status, a net/http handler's
// WriteHeader) is that content's own answer and keeps its body, as do the
// engine's protocol errors (a malformed request, 413 and 431 over the
// limits, timeouts), which never reach a pipeline.
//
// The page replaces the body and the fields that described it:
// Content-Type becomes text/html; Content-Length is the page's; and
// Content-Encoding, ETag, Last-Modified and Content-Disposition are
// dropped. The status and every other field stay, so a 405 keeps its
// Allow, a 401 its WWW-Authenticate, a 416 its Content-Range, a 429 or
// 503 its Retry-After. A HEAD request gets the header alone, with the
// page's length. Filters see the page as they would any content: compress
// may encode it, a log counts its bytes.
//
// A page is rendered per response with ErrorPageData; html/template
// escapes what comes from the request, so a path like /<script> is shown
// inert. A page whose rendering fails (it cannot, for templates that
// NewErrorPages accepted, unless a template function fails) is logged and
// the response keeps its short plain-text body. An ErrorPages is
// immutable and safe for concurrent use; a request that gets no page
// costs no allocation.
type ErrorPages struct {
	exact map[int]*template.Template
	class [6]*template.Template // by status / 100; 4 and 5 are used
	base  *ErrorPages           // consulted when this one has no page
}

// ErrorPageData is what an error page's template sees. Its strings are
// copies: a template may keep nothing, but need not care.
type ErrorPageData struct {
	Status     int    // the response status, 404
	StatusText string // its reason phrase, "Not Found"
	Method     string // the request method
	Path       string // the request path, canonical and percent-decoded
	Host       string // the Host field as sent (with any port)
	Message    string // the short message of Conn.Error, or ""
	RequestID  string // the request's ID (Conn.RequestID), or ""
}

// SampleErrorPageData is the data CheckErrorPage renders a template
// with.
var SampleErrorPageData = ErrorPageData{
	Status: 404, StatusText: "Not Found", Method: "GET",
	Path: "/sample", Host: "example.com", Message: "no such file",
	RequestID: "5f0c6a3e9b1d4e2f8a7c6b5d4e3f2a1b",
}

// NewErrorPages returns the error pages for pages, which maps a status
// ("404", 400 to 599) or a class ("4xx" or "5xx") to the template that
// answers it. Each template is checked with CheckErrorPage. It fails for
// a key that is neither and for a nil template. An empty map gives error
// pages with no page, which as a route's turn the server's off there.
func NewErrorPages(pages map[string]*template.Template) (*ErrorPages, error) {
	ep := &ErrorPages{exact: map[int]*template.Template{}}
	for key, t := range pages {
		if err := CheckErrorPage(t); err != nil {
			return nil, fmt.Errorf("error pages: %q: %v", key, err)
		}
		switch {
		case key == "4xx" || key == "5xx":
			ep.class[key[0]-'0'] = t
		default:
			status, err := ParseErrorStatus(key)
			if err != nil {
				return nil, err
			}
			ep.exact[status] = t
		}
	}
	return ep, nil
}

// CheckErrorPage renders t once with SampleErrorPageData, so that a
// template naming a field ErrorPageData lacks is refused when it is
// loaded rather than failing for a client.
func CheckErrorPage(t *template.Template) error {
	if t == nil {
		return fmt.Errorf("no template")
	}
	return t.Execute(io.Discard, SampleErrorPageData)
}

// ParseErrorStatus parses an exact status key of error pages: a number
// from 400 to 599. The classes "4xx" and "5xx" are not exact statuses.
func ParseErrorStatus(key string) (int, error) {
	status, err := strconv.Atoi(key)
	if err != nil || len(key) != 3 || status < 400 || status > 599 {
		return 0, fmt.Errorf("error pages: %q is not an error status: want 400 to 599, 4xx or 5xx", key)
	}
	return status, nil
}

// Over returns error pages that answer with ep's page when ep has one for
// the status (exact or class) and with base's otherwise: a route's own
// pages over the server's. A nil base returns ep.
func (ep *ErrorPages) Over(base *ErrorPages) *ErrorPages {
	if base == nil {
		return ep
	}
	o := *ep
	o.base = base
	return &o
}

// String lists ep's own pages, statuses before classes, each with its
// template's name ("404 404.html, 5xx oops.html"), and says when another's
// answer the rest; "none" when it has no page.
func (ep *ErrorPages) String() string {
	var parts []string
	for _, status := range slices.Sorted(maps.Keys(ep.exact)) {
		parts = append(parts, strconv.Itoa(status)+" "+ep.exact[status].Name())
	}
	for k, t := range ep.class {
		if t != nil {
			parts = append(parts, strconv.Itoa(k)+"xx "+t.Name())
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	if ep.base != nil {
		parts = append(parts, "then the server's")
	}
	return strings.Join(parts, ", ")
}

// Handle implements Component: it makes ep the request's error pages.
func (ep *ErrorPages) Handle(c *Conn) bool {
	c.pages = ep
	return true
}

// Page returns the template that answers status, or nil.
func (ep *ErrorPages) Page(status int) *template.Template {
	for ; ep != nil; ep = ep.base {
		if t := ep.exact[status]; t != nil {
			return t
		}
		if k := status / 100; k < len(ep.class) && ep.class[k] != nil {
			return ep.class[k]
		}
	}
	return nil
}

// apply replaces c's response with its error page, if it has one.
func (ep *ErrorPages) apply(c *Conn) {
	t := ep.Page(c.status)
	if t == nil {
		return
	}
	r := c.Request
	data := ErrorPageData{
		Status:     c.status,
		StatusText: http.StatusText(c.status),
		Method:     string(r.Method),
		Path:       string(r.Path),
		Host:       string(r.Host),
		Message:    c.message,
		RequestID:  string(c.RequestID()),
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		slog.Error("error page failed; answering with the short message", "status", c.status, "path", data.Path, "err", err, c.RequestIDAttr())
		return
	}
	body := buf.Bytes()
	h := c.Header()
	for _, name := range replacedFields {
		h.Del(name)
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(int64(len(body)))
	c.content = func(w Writer) error {
		_, err := w.Write(body)
		return err
	}
}

// replacedFields describe the body an error page replaces.
var replacedFields = []string{"Content-Encoding", "ETag", "Last-Modified", "Content-Disposition"}
