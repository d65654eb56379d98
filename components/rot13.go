package components

import (
	"sync"

	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "rot13", Kind: KindFilter,
		Example: `rot13`,
	}, func(o Rot13Options, _ Context) (pipe.Component, error) { return NewRot13(o) })
}

// Rot13Options configures the rot13 filter; it has no options.
type Rot13Options struct{}

// NewRot13 returns the rot13 Filter, the webpipes paper's demonstration
// filter: it rotates every ASCII letter of the body by 13 places and
// leaves every other byte alone. It streams: each Write is transformed
// and passed on at once (through a pooled 4 KiB buffer, never changing
// the caller's bytes), and Flush flushes through. The length does not
// change, so a Content-Length stays valid. It is safe for concurrent use.
func NewRot13(Rot13Options) (pipe.Component, error) {
	return pipe.Filter(rot13Filter), nil
}

func rot13Filter(*pipe.Conn) pipe.Wrap { return rot13Wrap }

var rot13Wrap pipe.Wrap = func(next pipe.Writer) pipe.Writer {
	w := rot13Pool.Get().(*rot13Writer)
	w.next = next
	return w
}

var rot13Pool = sync.Pool{New: func() any { return &rot13Writer{} }}

// rot13Table maps every byte to its rotation.
var rot13Table = func() (t [256]byte) {
	for i := range t {
		c := byte(i)
		switch {
		case 'a' <= c && c <= 'z':
			c = 'a' + (c-'a'+13)%26
		case 'A' <= c && c <= 'Z':
			c = 'A' + (c-'A'+13)%26
		}
		t[i] = c
	}
	return t
}()

type rot13Writer struct {
	next pipe.Writer
	buf  [4 << 10]byte
}

func (w *rot13Writer) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		chunk := p[n:min(len(p), n+len(w.buf))]
		out := w.buf[:len(chunk)]
		for i, c := range chunk {
			out[i] = rot13Table[c]
		}
		m, err := w.next.Write(out)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (w *rot13Writer) Flush() error { return w.next.Flush() }

// Close returns the writer to its pool; nothing is held back.
func (w *rot13Writer) Close() error {
	w.next = nil
	rot13Pool.Put(w)
	return nil
}
