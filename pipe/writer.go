package pipe

import (
	"io"
	"os"

	"github.com/sluice-server/sluice/engine"
)

// topWriter is the Writer a Content writes to. Its first Write, Flush or
// Close commits the response: the filters decide with the final header
// and are stacked, and the stack's head receives the content.
type topWriter struct {
	c         *Conn
	committed bool
	head      Writer
}

func (t *topWriter) commit() {
	t.committed = true
	c := t.c
	wraps := c.wrapFns[:0]
	for _, f := range c.filters {
		if wrap := f(c); wrap != nil {
			wraps = append(wraps, wrap)
		}
	}
	c.wrapFns = wraps
	var w Writer = &c.wire
	c.wraps = c.wraps[:0]
	for i := len(wraps) - 1; i >= 0; i-- {
		w = wraps[i](w)
		c.wraps = append(c.wraps, w)
	}
	t.head = w
}

func (t *topWriter) Write(p []byte) (int, error) {
	if !t.committed {
		t.commit()
	}
	return t.head.Write(p)
}

func (t *topWriter) Flush() error {
	if !t.committed {
		t.commit()
	}
	return t.head.Flush()
}

// Close closes the filter writers from the head down, each writing what it
// still holds into the one beneath, then starts the response if nothing
// was written.
func (t *topWriter) Close() error {
	if !t.committed {
		t.commit()
	}
	var first error
	for i := len(t.c.wraps) - 1; i >= 0; i-- {
		if err := t.c.wraps[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	if err := t.c.wire.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// wireWriter is the bottom of every stack: it sends the status and header
// with its first byte and then writes to the engine.
type wireWriter struct {
	c       *Conn
	started bool
}

func (w *wireWriter) start() {
	if !w.started {
		w.started = true
		w.c.w.WriteHeader(w.c.Status())
	}
}

func (w *wireWriter) Write(p []byte) (int, error) {
	w.start()
	return w.c.w.Write(p)
}

func (w *wireWriter) Flush() error {
	w.start()
	return w.c.w.Flush()
}

func (w *wireWriter) Close() error {
	w.start()
	return nil
}

// FileWriter is a Writer that can take file content by reference. The
// bottom of every stack is one (it uses sendfile(2) when the engine can);
// a filter that only observes the bytes (a logger counting them) can be
// one too by forwarding SendFile to the writer beneath, so sendfile
// survives it.
type FileWriter interface {
	Writer
	SendFile(f *os.File, offset, n int64) error
}

// SendFile writes n bytes of f from offset as content: by reference when
// the head of the stack is a FileWriter (no transforming filter applies),
// copying through w otherwise. It does not use or move f's offset.
func SendFile(w Writer, f *os.File, offset, n int64) error {
	if t, ok := w.(*topWriter); ok {
		if !t.committed {
			t.commit()
		}
		w = t.head
	}
	if fw, ok := w.(FileWriter); ok {
		return fw.SendFile(f, offset, n)
	}
	_, err := io.Copy(w, io.NewSectionReader(f, offset, n))
	return err
}

// BuffersWriter is a Writer that can take several buffers of content at
// once and send them in one system call. The bottom of every stack is one
// (it hands them to the engine, which sends them with the header in one
// writev where it can); a filter that only observes the bytes can be one
// too by forwarding WriteBuffers to the writer beneath, as Through does.
type BuffersWriter interface {
	Writer
	// WriteBuffers writes the bytes of p's buffers in order, as one
	// Write of their concatenation would, and returns how many it wrote.
	// Neither p nor its buffers are kept or changed.
	WriteBuffers(p [][]byte) (int64, error)
}

// WriteBuffers writes the bytes of p's buffers in order as content: in
// one call when the head of the stack is a BuffersWriter (no transforming
// filter applies), with a Write of each otherwise. Neither p nor its
// buffers are kept or changed.
func WriteBuffers(w Writer, p [][]byte) (int64, error) {
	if t, ok := w.(*topWriter); ok {
		if !t.committed {
			t.commit()
		}
		w = t.head
	}
	if bw, ok := w.(BuffersWriter); ok {
		return bw.WriteBuffers(p)
	}
	return writeEach(w, p)
}

// writeEach writes the buffers of p to w one Write each.
func writeEach(w io.Writer, p [][]byte) (int64, error) {
	var n int64
	for _, b := range p {
		m, err := w.Write(b)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Through is the part of a filter's Writer that lets the content through
// unchanged to Next, the writer beneath it: Write, Flush, WriteBuffers,
// and SendFile, by reference, so that sendfile survives the filter. A filter that only
// observes the response (counting it, timing it) embeds Through, sets
// Next in its Wrap, and adds its own Close. The zero value has no Next
// and must not be written to; like every Writer, a Through is used by
// one goroutine at a time.
type Through struct {
	Next Writer
}

// Write writes p to Next.
func (t *Through) Write(p []byte) (int, error) { return t.Next.Write(p) }

// Flush flushes Next.
func (t *Through) Flush() error { return t.Next.Flush() }

// WriteBuffers implements BuffersWriter: the buffers go on to Next
// together when Next can take them so (see WriteBuffers).
func (t *Through) WriteBuffers(p [][]byte) (int64, error) {
	return WriteBuffers(t.Next, p)
}

// SendFile implements FileWriter: the file goes on to Next by reference
// when Next can take it so (see SendFile).
func (t *Through) SendFile(f *os.File, offset, n int64) error {
	return SendFile(t.Next, f, offset, n)
}

// SendFile implements FileWriter.
func (w *wireWriter) SendFile(f *os.File, offset, n int64) error {
	w.start()
	if fs, ok := w.c.w.(engine.FileSender); ok {
		return fs.SendFile(f, offset, n)
	}
	_, err := io.Copy(w.c.w, io.NewSectionReader(f, offset, n))
	return err
}

// WriteBuffers implements BuffersWriter.
func (w *wireWriter) WriteBuffers(p [][]byte) (int64, error) {
	w.start()
	if bw, ok := w.c.w.(engine.BuffersWriter); ok {
		return bw.WriteBuffers(p)
	}
	return writeEach(w.c.w, p)
}
