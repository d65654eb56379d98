package pipe

import "io"

// Component is one stage of a pipeline. Handle runs in the setup phase: it
// may inspect the request, set the response status and header, provide the
// content (a Source) or register a transformation of it (a Filter). It
// returns false to end the pipeline: the response is then whatever has
// been set up so far (typically an error a Pipe answered with).
//
// A Component must be safe for concurrent use: one instance serves every
// request of its route.
type Component interface {
	Handle(c *Conn) bool
}

// Pipe is a Component that inspects or routes the request and may answer
// it (see Conn.Error); it returns false to stop the pipeline.
type Pipe func(c *Conn) bool

// Handle calls p(c).
func (p Pipe) Handle(c *Conn) bool { return p(c) }

// Content writes a response body to w in the content phase. w is the head
// of the filter stack; Content does not close it.
type Content func(w Writer) error

// Source is a Component that produces the body: in the setup phase it sets
// status and header (Content-Type, and the length when it knows it) and
// returns the Content to run in the content phase, or nil for no body. A
// later source replaces an earlier one's content.
type Source func(c *Conn) Content

// Handle sets the source's content on c.
func (s Source) Handle(c *Conn) bool {
	c.SetContent(s(c))
	return true
}

// Filter is a Component that transforms the body. It is called once the
// response header is final — when the source first writes or flushes, or
// has finished — so it can decide by the source's status and header (and
// adjust them: Content-Encoding, Content-Length). It returns the Wrap that
// builds its content writer around the next one, or nil to leave the
// content alone.
type Filter func(c *Conn) Wrap

// Handle registers f on c.
func (f Filter) Handle(c *Conn) bool {
	c.AddFilter(f)
	return true
}

// Wrap builds a filter's content writer, which transforms what is written
// to it and writes the result to next. Its Flush must flush what it holds
// and then call next.Flush; its Close must write what remains but not
// close next.
type Wrap func(next Writer) Writer

// Writer is a content writer. Write transforms or sends the bytes; Flush
// pushes everything written so far to the client; Close ends the content
// written through this writer (a compressor writes its trailer) without
// closing the writer beneath it. Writers are used by one goroutine at a
// time.
type Writer interface {
	io.Writer
	Flush() error
	Close() error
}

// Aborter is implemented by a filter's Writer that must know when the
// content failed after the response was under way (the source's upstream
// broke off), such as a cache that must not keep a truncated body. The
// content phase then calls Abort with the content's error, on the
// content's goroutine, before it closes the filter writers and cuts the
// connection; a content that succeeds never causes a call.
type Aborter interface {
	Abort(err error)
}

// Compile-time checks of the function kinds.
var (
	_ Component = Pipe(nil)
	_ Component = Source(nil)
	_ Component = Filter(nil)
)
