package components

import (
	"os"
	"sync"

	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "count", Kind: KindPipe,
		Example: `count`,
	}, func(o CountOptions, _ Context) (pipe.Component, error) { return NewCount(o) })
}

// CountOptions configures the count pipe.
type CountOptions struct {
	// Stats receives the counts. Nil means DefaultStats, which the status
	// source reads by default. (Not settable from a config file.)
	Stats *Stats `yaml:"-"`
}

// NewCount returns the count Pipe, which records in a Stats every request
// that reaches it, the status class of its response, the body bytes of
// the response that pass its place in the pipeline, and responses whose
// body could not be delivered. Put it first in a pipeline (or before a
// Router) to see every request, including those a later pipe answers
// with an error; the bytes it counts are then the content as the source
// produced it, before later filters such as compress (and for HEAD the
// bytes the source wrote, which are not sent). It is safe for concurrent
// use and allocates nothing per request.
func NewCount(opts CountOptions) (pipe.Component, error) {
	s := opts.Stats
	if s == nil {
		s = DefaultStats
	}
	k := &count{stats: s}
	k.wrap = k.newWriter
	k.filter = pipe.Filter(k.response)
	return pipe.Pipe(k.handle), nil
}

type count struct {
	stats  *Stats
	wrap   pipe.Wrap
	filter pipe.Filter
}

func (k *count) handle(c *pipe.Conn) bool {
	k.stats.requests.Add(1)
	c.AddFilter(k.filter)
	return true
}

// response runs when the header is final: the status is known.
func (k *count) response(c *pipe.Conn) pipe.Wrap {
	k.stats.addStatus(c.Status())
	return k.wrap
}

var countPool = sync.Pool{New: func() any { return new(countWriter) }}

func (k *count) newWriter(next pipe.Writer) pipe.Writer {
	w := countPool.Get().(*countWriter)
	w.next, w.stats, w.failed = next, k.stats, false
	return w
}

// countWriter counts the bytes passing to the writer beneath.
type countWriter struct {
	next   pipe.Writer
	stats  *Stats
	failed bool
}

func (w *countWriter) Write(p []byte) (int, error) {
	n, err := w.next.Write(p)
	w.stats.bytes.Add(uint64(n))
	if err != nil {
		w.fail()
	}
	return n, err
}

// WriteBuffers implements pipe.BuffersWriter: the buffers go on to the
// writer beneath together, and are counted.
func (w *countWriter) WriteBuffers(p [][]byte) (int64, error) {
	n, err := pipe.WriteBuffers(w.next, p)
	w.stats.bytes.Add(uint64(n))
	if err != nil {
		w.fail()
	}
	return n, err
}

// SendFile implements pipe.FileWriter: the file goes on to the writer
// beneath by reference, so a file served under count still goes out with
// sendfile(2), and is counted whole once sent.
func (w *countWriter) SendFile(f *os.File, offset, n int64) error {
	if err := pipe.SendFile(w.next, f, offset, n); err != nil {
		w.fail()
		return err
	}
	w.stats.bytes.Add(uint64(n))
	return nil
}

func (w *countWriter) Flush() error {
	err := w.next.Flush()
	if err != nil {
		w.fail()
	}
	return err
}

func (w *countWriter) fail() {
	if !w.failed {
		w.failed = true
		w.stats.errors.Add(1)
	}
}

// Close returns the writer to its pool.
func (w *countWriter) Close() error {
	w.next, w.stats = nil, nil
	countPool.Put(w)
	return nil
}
