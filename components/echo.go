package components

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "echo", Kind: KindSource, Scalar: "format",
		Example: `echo: json`,
	}, func(o EchoOptions, _ Context) (pipe.Component, error) { return NewEcho(o) })
}

// EchoOptions configures the echo source. A config scalar (`echo: json`)
// sets Format.
type EchoOptions struct {
	// Format is "raw" (the default: the request body is the response
	// body) or "json" (the whole request, see NewEcho).
	Format string `yaml:"format"`

	// Max bounds the request body echoed, in bytes; a longer body gets 413.
	// Default 1 MiB. The engine's Limits.MaxBodyBytes applies as well.
	Max int64 `yaml:"max"`
}

// echoDefaultMax is EchoOptions.Max when zero.
const echoDefaultMax = 1 << 20

// NewEcho returns the echo Source. It answers any method with 200 and a
// Content-Length framed body: in "raw" format the request body, as
// application/octet-stream whatever the request's Content-Type (a body
// sent as text/html or image/svg+xml and reflected as such would be a
// page running the sender's script on this server's origin; the json
// format shows the Content-Type received); in "json" format
// (Content-Type application/json) the object
//
//	{"method":…,"uri":…,"version":…,"headers":[[name,value],…],"body":…}
//
// where every value is the standard base64 encoding of the bytes as
// received: the method, the request-target, the version ("HTTP/1.0" or
// "HTTP/1.1"; the engine serves later 1.x minors as 1.1), each header
// field's name and value in order (the value without surrounding
// whitespace, as the parser keeps it), and the body (dechunked).
//
// Both formats carry "X-Content-Type-Options: nosniff" and
// "Content-Security-Policy: sandbox", so no browser renders the echo as a
// page of this origin.
//
// The body is read whole in the setup phase, so a body over Max is
// answered with 413 before anything is sent. Buffers are pooled; the
// source is safe for concurrent use.
func NewEcho(opts EchoOptions) (pipe.Component, error) {
	e := &echo{max: opts.Max}
	switch opts.Format {
	case "", "raw":
	case "json":
		e.json = true
	default:
		return nil, fmt.Errorf("echo: unknown format %q (want raw or json)", opts.Format)
	}
	if e.max == 0 {
		e.max = echoDefaultMax
	}
	if e.max < 0 {
		return nil, fmt.Errorf("echo: max %d is negative", opts.Max)
	}
	return e, nil
}

type echo struct {
	json bool
	max  int64
}

var _ pipe.Component = (*echo)(nil)

// echoBufs pools the buffers holding a request body and its reply.
var echoBufs = sync.Pool{New: func() any { return new(echoBuf) }}

type echoBuf struct{ body, out []byte }

// echoPoolMax is the largest buffer kept in echoBufs; larger ones (bodies
// near Max) are left to the garbage collector.
const echoPoolMax = 64 << 10

func echoRelease(b *echoBuf) {
	if cap(b.body) > echoPoolMax || cap(b.out) > echoPoolMax {
		return
	}
	echoBufs.Put(b)
}

// Handle reads the request body and sets up the reply.
func (e *echo) Handle(c *pipe.Conn) bool {
	r := c.Request
	if r.ContentLength > e.max {
		return c.Error(http.StatusRequestEntityTooLarge, "the body is longer than "+strconv.FormatInt(e.max, 10)+" bytes")
	}
	b := echoBufs.Get().(*echoBuf)
	if r.ContentLength > 0 {
		b.body = slices.Grow(b.body[:0], int(r.ContentLength)+1) // +1: room to read the EOF
	}
	body, err := echoRead(b.body[:0], r.Body, e.max)
	b.body = body
	if err != nil {
		echoRelease(b)
		var tooBig *http.MaxBytesError
		if errors.Is(err, errEchoTooLarge) || errors.As(err, &tooBig) {
			return c.Error(http.StatusRequestEntityTooLarge, "the body is longer than "+strconv.FormatInt(e.max, 10)+" bytes")
		}
		return c.Error(http.StatusBadRequest, "reading the body: "+err.Error())
	}
	out := body
	h := c.Header()
	if e.json {
		b.out = echoJSON(b.out[:0], c, body)
		out = b.out
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "application/octet-stream")
	}
	// The body is the client's, not ours: never a page of this origin.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.SetContentLength(int64(len(out)))
	c.SetStatus(http.StatusOK)
	c.SetContent(func(w pipe.Writer) error {
		_, err := w.Write(out)
		echoRelease(b)
		return err
	})
	return true
}

var errEchoTooLarge = errors.New("echo: body too large")

// echoRead appends the body from r to buf, failing with errEchoTooLarge
// past max bytes.
func echoRead(buf []byte, r io.Reader, max int64) ([]byte, error) {
	if r == nil {
		return buf, nil
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return buf, errEchoTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// echoJSON appends the json format of the request to b.
func echoJSON(b []byte, c *pipe.Conn, body []byte) []byte {
	r := c.Request
	enc := base64.StdEncoding
	b = append(b, `{"method":"`...)
	b = enc.AppendEncode(b, r.Method)
	b = append(b, `","uri":"`...)
	b = enc.AppendEncode(b, r.Target)
	b = append(b, `","version":"`...)
	if r.ProtoMinor == 0 {
		b = append(b, echoHTTP10...)
	} else {
		b = append(b, echoHTTP11...)
	}
	b = append(b, `","headers":[`...)
	for i, f := range r.Fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `["`...)
		b = enc.AppendEncode(b, f.Name)
		b = append(b, `","`...)
		b = enc.AppendEncode(b, f.Value)
		b = append(b, `"]`...)
	}
	b = append(b, `],"body":"`...)
	b = enc.AppendEncode(b, body)
	return append(b, `"}`...)
}

// The base64 of the two versions the engine reports.
var (
	echoHTTP10 = base64.StdEncoding.EncodeToString([]byte("HTTP/1.0"))
	echoHTTP11 = base64.StdEncoding.EncodeToString([]byte("HTTP/1.1"))
)
