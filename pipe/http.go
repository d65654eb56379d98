package pipe

import (
	"context"
	"io"
	"net/http"
	"os"

	"github.com/sluice-server/sluice/engine"
)

// FromHTTP makes a net/http handler a Source. It runs in the content
// phase; the status and header it sets become the response's (filters
// decide once it writes), and what it writes is the content. The
// request's context is cancelled when the content is done, and when the
// client goes (see engine.GoneContext).
func FromHTTP(h http.Handler) Component {
	return Pipe(func(c *Conn) bool {
		hr, err := engine.NewHTTPRequest(c.Request)
		if err != nil {
			return c.Error(http.StatusBadRequest, "invalid request-target")
		}
		c.SetContent(func(w Writer) error {
			ctx, cancel := engine.GoneContext(context.Background(), c.conn)
			defer cancel()
			sw := &sourceWriter{c: c, w: w, h: make(http.Header)}
			h.ServeHTTP(sw, hr.WithContext(ctx))
			sw.commit(http.StatusOK)
			return nil
		})
		return true
	})
}

// sourceWriter is the http.ResponseWriter a FromHTTP handler writes to.
type sourceWriter struct {
	c         *Conn
	w         Writer
	h         http.Header
	committed bool
}

func (sw *sourceWriter) Header() http.Header { return sw.h }

func (sw *sourceWriter) WriteHeader(code int) {
	if sw.committed {
		return
	}
	if code >= 100 && code < 200 && code != 101 {
		sw.copyHeader()
		sw.c.w.WriteHeader(code) // an interim response goes out at once
		return
	}
	sw.commit(code)
}

func (sw *sourceWriter) commit(code int) {
	if sw.committed {
		return
	}
	sw.committed = true
	sw.copyHeader()
	sw.c.SetStatus(code)
}

func (sw *sourceWriter) copyHeader() {
	eh := sw.c.Header()
	for name, values := range sw.h {
		eh.Del(name)
		for _, v := range values {
			eh.Add(name, v)
		}
	}
}

func (sw *sourceWriter) Write(p []byte) (int, error) {
	sw.commit(http.StatusOK)
	return sw.w.Write(p)
}

func (sw *sourceWriter) Flush() {
	sw.commit(http.StatusOK)
	sw.w.Flush()
}

// ReadFrom lets http.ServeContent and io.Copy send files with SendFile.
func (sw *sourceWriter) ReadFrom(src io.Reader) (int64, error) {
	sw.commit(http.StatusOK)
	if f, ok := src.(*os.File); ok {
		off, err1 := f.Seek(0, io.SeekCurrent)
		fi, err2 := f.Stat()
		if err1 == nil && err2 == nil && fi.Mode().IsRegular() {
			n := fi.Size() - off
			if err := SendFile(sw.w, f, off, n); err != nil {
				return 0, err
			}
			_, err := f.Seek(off+n, io.SeekStart)
			return n, err
		}
	}
	return io.Copy(writerOnly{sw.w}, src)
}

type writerOnly struct{ io.Writer }

// Middleware makes net/http middleware a component. The rest of the
// pipeline after it runs inside the middleware, as its next handler, and
// writes through the ResponseWriter the middleware passes on; if the
// middleware answers without calling next, that answer is the response.
// It does so in a Chain and in a ProcNetwork alike; either way the
// middleware runs on the goroutine that serves the request.
// A request the middleware changes (r.WithContext, a rewritten URL) is
// what the rest of the pipeline sees, its path made canonical as the
// engine makes every path (a rewritten path the engine would refuse is
// answered 400). The request's context is cancelled when the pipeline is
// done, and when the client goes (see engine.GoneContext).
func Middleware(mw func(http.Handler) http.Handler) Component {
	return &middleware{mw: mw}
}

type middleware struct {
	mw func(http.Handler) http.Handler
}

// Handle runs the middleware with nothing after it.
func (m *middleware) Handle(c *Conn) bool { return m.HandleRest(c, nil) }

// HandleRest runs the middleware with rest as its next handler.
func (m *middleware) HandleRest(c *Conn, rest Component) bool {
	hr, err := engine.NewHTTPRequest(c.Request)
	if err != nil {
		return c.Error(http.StatusBadRequest, "invalid request-target")
	}
	ctx, cancel := engine.GoneContext(context.Background(), c.conn)
	defer cancel()
	hr = hr.WithContext(ctx)
	outer := c.w
	hw, finish := engine.NewHTTPResponseWriter(outer)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner, done := engine.NewResponseWriter(w)
		c.w = inner
		run := rest
		if r != hr {
			if nr, err := engine.NewRequest(r); err != nil {
				c.Error(http.StatusBadRequest, "invalid request path")
				run = nil
			} else {
				c.Request = nr
			}
		}
		if run != nil {
			run.Handle(c)
		}
		c.Finish()
		done()
	})
	m.mw(next).ServeHTTP(hw, hr)
	finish()
	c.w = outer
	c.finished = true
	return false
}

// HTTPHandler serves a pipeline with net/http (for TLS or HTTP/2), through
// the engine's bridge.
func HTTPHandler(comp Component) http.Handler { return engine.ToHTTP(Handler(comp)) }
