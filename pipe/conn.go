package pipe

import (
	"iter"
	"net"
	"net/http"
	"sync"

	"github.com/sluice-server/sluice/engine"
)

// Conn is one request on its way through a pipeline: the request, the
// response being set up (status and header), the content source and the
// filters the content will pass through. It is one request, not a
// connection: a client connection that sends several requests gives each
// its own Conn, and a component keeps no per-connection state in it.
//
// Components see a Conn in the setup phase, in pipeline order. When the
// setup is done the content phase runs: the source's Content writes into
// the filters, which are stacked when the header is final, and the bottom
// of the stack writes to the client. A Conn and its Request are valid only
// while the request is served and must not be used by two goroutines at a
// time.
type Conn struct {
	_ noCopy

	// Request is the request being served. Its byte slices point into the
	// connection's buffer: copy what must outlive the request.
	Request *engine.Request

	w       engine.ResponseWriter
	conn    engine.ResponseWriter // the connection's, which w may stand in front of (Middleware)
	status  int
	content Content
	filters []Filter

	top      topWriter
	wire     wireWriter
	wraps    []Writer // the filter writers, head first, once committed
	wrapFns  []Wrap   // the filters' Wraps, reused across requests
	finished bool
	done     chan bool // ProcNetwork's completion signal
	values   []keyValue
	pages    *ErrorPages // see ErrorPages.Handle
	message  string      // Conn.Error's, for an error page
	params   []keyValue  // the matched route's captures, in pattern order
	noGone   bool        // DetachGone was called
	idLen    uint8       // the request ID's length in idBuf; 0: none
	idBuf    [MaxRequestIDLen]byte
	trace    Trace // see SetTrace
}

type keyValue struct{ key, value string }

var connPool = sync.Pool{New: func() any {
	c := &Conn{done: make(chan bool, 1)}
	c.top.c, c.wire.c = c, c
	return c
}}

func acquireConn(w engine.ResponseWriter, r *engine.Request) *Conn {
	c := connPool.Get().(*Conn)
	c.Request, c.w, c.conn = r, w, w
	return c
}

func releaseConn(c *Conn) {
	clear(c.filters)
	clear(c.wraps)
	clear(c.wrapFns)
	clear(c.values)
	clear(c.params)
	c.values, c.params = c.values[:0], c.params[:0]
	c.Request, c.w, c.conn, c.content = nil, nil, nil, nil
	c.filters, c.wraps, c.wrapFns = c.filters[:0], c.wraps[:0], c.wrapFns[:0]
	c.status, c.finished = 0, false
	c.pages, c.message, c.noGone = nil, "", false
	c.idLen, c.trace = 0, nil
	c.top.committed, c.top.head, c.wire.started = false, nil, false
	connPool.Put(c)
}

// Header returns the response header to set up. Filters may still change
// it when they are stacked; it is sent with the first content byte.
func (c *Conn) Header() *engine.Header { return c.w.Header() }

// SetStatus sets the response status (200 if never set).
func (c *Conn) SetStatus(code int) { c.status = code }

// Status returns the response status set so far, 200 if none.
func (c *Conn) Status() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}

// SetContent sets the Content that writes the body in the content phase;
// nil means no body. It replaces any earlier content.
func (c *Conn) SetContent(content Content) { c.content = content }

// AddFilter adds f to the filters the content passes through, after those
// added before it.
func (c *Conn) AddFilter(f Filter) { c.filters = append(c.filters, f) }

// Finished reports whether the content phase has run: a Wrapper whose
// rest finished the response inside its own call (net/http middleware
// does) can no longer nest a filter or change the response.
func (c *Conn) Finished() bool { return c.finished }

// FilterMark returns a mark of the filters added so far, for NestFilters.
func (c *Conn) FilterMark() int { return len(c.filters) }

// NestFilters is for a Wrapper that ran the rest of the pipeline on c
// after taking mark with FilterMark: it reorders the filters so that the
// content passes first the filters added since mark (the rest's), then f,
// then the filters added before mark (those of the components before the
// Wrapper). f sees what the rest of the pipeline produced, its source and
// filters together, and the earlier filters see the same bytes and header
// whether the rest ran or the Wrapper answered alone (a cache's hit and
// miss). f's Filter function is called at commit after the rest's and
// before the earlier ones', so it sees the header as the rest left it.
// A nil f only reorders. It allocates nothing when the filters fit their
// slice, and has no effect once the content phase has begun.
func (c *Conn) NestFilters(mark int, f Filter) {
	if c.top.committed || mark < 0 || mark > len(c.filters) {
		return
	}
	if f != nil {
		c.filters = append(c.filters, f)
	}
	if mark == 0 {
		return
	}
	// Rotate left by mark: [before, rest, f] becomes [rest, f, before].
	reverseFilters(c.filters[:mark])
	reverseFilters(c.filters[mark:])
	reverseFilters(c.filters)
}

func reverseFilters(fs []Filter) {
	for i, j := 0, len(fs)-1; i < j; i, j = i+1, j-1 {
		fs[i], fs[j] = fs[j], fs[i]
	}
}

// DetachGone makes Gone return nil for the rest of the request, so that
// the components that ask after it (a proxy) finish their work although
// the client leaves: for a Wrapper whose rest produces a response others
// wait for (a cache storing what a client asked for). Channels Gone
// returned before still close.
func (c *Conn) DetachGone() { c.noGone = true }

// Gone returns a channel that is closed once the client has closed or
// reset the connection, or the server has given up on it (see
// engine.GoneNotifier), so that a component can stop work nobody will
// receive. It is nil — never ready in a select — when the server cannot
// tell. The watch starts with the first call, so a request that never
// asks pays nothing; it ends with the request: a channel not closed by
// then is never closed. Gone may be called from any goroutine while the
// request is served.
func (c *Conn) Gone() <-chan struct{} {
	if c.noGone {
		return nil
	}
	if g, ok := c.conn.(engine.GoneNotifier); ok {
		return g.Gone()
	}
	return nil
}

// SetValue records a per-request value for later components, such as the
// user an authentication component admitted ("user", set by basic_auth
// and read by cgi for REMOTE_USER). Setting a key again replaces its value.
func (c *Conn) SetValue(key, value string) {
	for i := range c.values {
		if c.values[i].key == key {
			c.values[i].value = value
			return
		}
	}
	c.values = append(c.values, keyValue{key, value})
}

// Value returns the value recorded for key, or "".
func (c *Conn) Value(key string) string {
	for _, kv := range c.values {
		if kv.key == key {
			return kv.value
		}
	}
	return ""
}

// Param returns the value of the path parameter name — the canonical
// path segment that the capture {name} or {name:int} of the route's
// pattern took (see Route.Match) — or "" when the route captured no such
// name. A name of decimal digits is a capture's number, counted from 1
// in the pattern: Param("1") is the first capture's value, named or not
// (a regular expression's groups are numbered so). The value is
// decoded: "/tag/a%20b" gives "a b" for "/tag/{t}". A {name} capture's
// value is never empty, "." or "..", and holds no '/' or NUL; a regular
// expression group's is a part of the canonical path, which may be
// empty or hold '/' but no NUL. Either may hold any other byte (spaces,
// '<', bytes that are not UTF-8): escape it where it lands
// (html/template does). An int capture's value has been checked to
// parse with strconv.ParseInt(v, 10, 64). The string stays valid after
// the request.
func (c *Conn) Param(name string) string {
	if name == "" {
		return ""
	}
	if n, ok := captureNumber(name); ok {
		if n <= len(c.params) {
			return c.params[n-1].value
		}
		return ""
	}
	for _, kv := range c.params {
		if kv.key == name {
			return kv.value
		}
	}
	return ""
}

// captureNumber returns the number a name of decimal digits stands for,
// 1 or more; ok is false for any other name.
func captureNumber(name string) (n int, ok bool) {
	if name == "" || len(name) > 4 {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
		n = n*10 + int(name[i]-'0')
	}
	return n, n > 0
}

// Params yields the route's named path parameters, name and value, in
// the order of the pattern's captures; nothing for a route without
// captures. A regular expression's groups without a name are left out
// (Param gives them by number). It must not be used after the request.
func (c *Conn) Params() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, kv := range c.params {
			if kv.key == "" {
				continue
			}
			if !yield(kv.key, kv.value) {
				return
			}
		}
	}
}

// capture records the captures of segs, a pattern matching the request
// path, as the Conn's parameters (one string allocation for all of them,
// none when segs has no capture). It checks int captures, and answers the
// request 400 and returns false when one fails.
func (c *Conn) capture(segs []segment) bool {
	clear(c.params)
	c.params = c.params[:0]
	var path string
	i := 1
	for _, s := range segs {
		j := segmentEnd(c.Request.Path, i)
		if s.name != "" {
			if path == "" {
				path = string(c.Request.Path)
			}
			v := path[i:j]
			if s.isInt {
				if ok, why := isInt64(v); !ok {
					clear(c.params)
					c.params = c.params[:0]
					return c.Error(http.StatusBadRequest, "path parameter "+s.name+": "+why)
				}
			}
			c.params = append(c.params, keyValue{s.name, v})
		}
		i = j + 1
	}
	return true
}

// Error sets up a short plain-text error response — status and "status
// text: msg" as the body, and for a 5xx status the request's ID (see
// ErrorText) — and returns false,
// so a Pipe can end with `return c.Error(403, "forbidden")`. Where error pages are set (see
// ErrorPages), the page for the status replaces the text and sees msg.
func (c *Conn) Error(status int, msg string) bool {
	h := c.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(-1)
	c.status, c.message = status, msg
	body := c.ErrorText(status, msg)
	c.content = func(w Writer) error {
		_, err := w.Write([]byte(body))
		return err
	}
	return false
}

// ErrorText returns the short plain-text body of an error response of
// status with msg, as Error answers: "404 Not Found: msg\n", and for a
// 5xx status a second line "request id: ID\n" when the request has an ID
// (a server error names the request, so that whoever reports it can be
// matched with the log lines about it; a client error's text stays the
// same from request to request). For a source that answers an error in
// its content phase (a proxy's 502), as Error does in the setup phase.
// msg must hold nothing from the request unescaped.
func (c *Conn) ErrorText(status int, msg string) string {
	body := statusLine(status, http.StatusText(status)) + ": " + msg + "\n"
	if id := c.RequestID(); id != nil && status >= 500 {
		body += "request id: " + string(id) + "\n"
	}
	return body
}

func statusLine(code int, text string) string {
	b := make([]byte, 0, 4+len(text))
	b = append(b, byte('0'+code/100), byte('0'+code/10%10), byte('0'+code%10))
	if text != "" {
		b = append(b, ' ')
		b = append(b, text...)
	}
	return string(b)
}

// Finish runs the content phase now, if it has not run yet: the content
// writes through the filters and the response is complete. An error
// status set by then gets its error page, if the request has one (see
// ErrorPages). The pipeline
// handler calls it after the setup phase; a component calls it only to
// finish the response inside its own Handle (as net/http middleware does).
func (c *Conn) Finish() {
	if c.finished {
		return
	}
	c.finished = true
	if c.pages != nil && c.status >= 400 {
		c.pages.apply(c)
	}
	var err error
	if c.content != nil {
		err = c.content(&c.top)
	}
	if err != nil && !c.top.committed {
		// Nothing is out yet: answer 500 instead, through the same filters
		// (they have not decided anything yet; a logger still sees it).
		c.content = nil
		c.Header().Del("Content-Encoding")
		c.Error(http.StatusInternalServerError, "content failed")
		c.finished = false
		c.Finish()
		return
	}
	if err != nil {
		for _, w := range c.wraps {
			if a, ok := w.(Aborter); ok {
				a.Abort(err)
			}
		}
	}
	if cerr := c.top.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Part of the response is out; the only honest signal left is to
		// cut the connection so the client sees it incomplete.
		panic(http.ErrAbortHandler)
	}
}

// Tunnel answers the request 101 Switching Protocols, with the header
// set up so far, and hands over the client connection with the bytes the
// client sent after the request head (see engine.Tunneler), for a source
// that relays another protocol (a proxy tunnelling WebSocket). The
// filters are stacked first, with status 101, so that they may adjust
// the header and observe the exchange (a log records it when the
// pipeline ends); no content passes through them. The connection closes
// when the pipeline ends. Tunnel fails with engine.ErrNoTunnel when the
// request is no Upgrade request, when something of the response was
// written, or when the server cannot hand its connections over.
func (c *Conn) Tunnel() (net.Conn, []byte, error) {
	t, ok := c.conn.(engine.Tunneler)
	if !ok || c.top.committed {
		return nil, nil, engine.ErrNoTunnel
	}
	c.status = http.StatusSwitchingProtocols
	c.top.commit()
	c.wire.started = true // the engine sends the head itself
	return t.Tunnel()
}

// WriteInterim sends an interim (1xx) response with fields, name and
// value pairs, at once (see engine.InterimWriter), as a proxy passes on
// an upstream's 103 Early Hints; the final response's header is not
// touched. It does nothing once the response is under way, or when the
// server cannot send one.
func (c *Conn) WriteInterim(code int, fields ...string) error {
	iw, ok := c.conn.(engine.InterimWriter)
	if !ok || c.top.committed {
		return nil
	}
	return iw.WriteInterim(code, fields...)
}

// noCopy makes `go vet` report copies of a struct that embeds it.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Content returns the Content set by SetContent (or by Error), nil if
// none: for a source that re-runs a component's Handle within its own
// content phase (a FastCGI local redirect) and writes what it set.
func (c *Conn) Content() Content { return c.content }
