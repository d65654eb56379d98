package disk

import (
	"errors"
	"io"
	"os"
	"sync/atomic"

	"github.com/sluice-server/sluice/pipe"
)

// errGone is what SendTo returns when the client goes away.
var errGone = errors.New("disk: client gone")

// sharedFile is an open object file and its holders: a Writer and its
// Objects share one descriptor, closed when the last lets go.
type sharedFile struct {
	f    *os.File
	refs atomic.Int32
}

func (sf *sharedFile) release() {
	if sf.refs.Add(-1) == 0 {
		sf.f.Close()
	}
}

// Object is one stored object, open for reading: a hit from Store.Get,
// or one still being written, from Writer.Object, whose body grows. Its
// body is bytes [BodyOffset, BodyOffset+length) of File, which a caller
// may hand to pipe.SendFile (sendfile(2)) as they are; the file is
// unlinked, never changed, when the object is purged, evicted or
// replaced, so an open Object reads what it opened to the end. Safe for
// concurrent use; the caller must Close it.
type Object struct {
	sf      *sharedFile
	key     string
	head    []byte
	bodyOff int64
	size    int64   // body length when complete; -1 while written
	w       *Writer // while written
	closed  atomic.Bool
}

// Key returns the object's key.
func (o *Object) Key() string { return o.key }

// Head returns the metadata stored with the object. It belongs to the
// Object: the caller must not change it.
func (o *Object) Head() []byte { return o.head }

// File returns the object's open file, for pipe.SendFile or ReadAt with
// BodyOffset. It is valid until Close; the caller must not close it,
// seek it or write to it.
func (o *Object) File() *os.File { return o.sf.f }

// BodyOffset returns where the body starts in File.
func (o *Object) BodyOffset() int64 { return o.bodyOff }

// Size returns the body's length so far and whether it is complete.
func (o *Object) Size() (int64, bool) {
	if o.w == nil {
		return o.size, true
	}
	o.w.mu.Lock()
	defer o.w.mu.Unlock()
	return o.w.n, o.w.state == committed
}

// Next says how much of the body is there from offset off: n bytes
// (readable at File offset BodyOffset+off), or none and done at the end
// of a complete body, ErrAborted when its writer gave up, or a channel
// closed when more is there (or that changes).
func (o *Object) Next(off int64) (n int64, done bool, wait <-chan struct{}, err error) {
	if o.w == nil {
		if off >= o.size {
			return 0, true, nil, nil
		}
		return o.size - off, false, nil, nil
	}
	return o.w.next(off)
}

// ReadAt reads the body from offset off. Of a complete body it is
// io.ReaderAt's ReadAt (io.EOF at the end). Of a body being written it
// reads what is there now: when p goes past that it returns fewer bytes
// (possibly 0) and no error, and ErrAborted after its writer aborts.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	n, done, _, err := o.Next(off)
	if err != nil {
		return 0, err
	}
	if done {
		return 0, io.EOF
	}
	short := int64(len(p)) > n
	if short {
		p = p[:n]
	}
	k, err := o.sf.f.ReadAt(p, o.bodyOff+off)
	if err == io.EOF && k == len(p) {
		err = nil
	}
	if err == nil && short && o.w == nil {
		err = io.EOF
	}
	return k, err
}

// SendTo writes the body's bytes [off, end) to w (end -1: to the end)
// with pipe.SendFile, which uses sendfile(2) when no filter transforms
// the content; while the body is written it sends what is there,
// flushes, and waits for more. It stops with an error when w fails, the
// writer aborts or gone is closed (a nil gone is never closed).
func (o *Object) SendTo(w pipe.Writer, off, end int64, gone <-chan struct{}) error {
	for end < 0 || off < end {
		n, done, wait, err := o.Next(off)
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case wait != nil:
			if err := w.Flush(); err != nil {
				return err
			}
			select {
			case <-wait:
			case <-gone:
				return errGone
			}
			continue
		}
		if end >= 0 && n > end-off {
			n = end - off
		}
		if err := pipe.SendFile(w, o.sf.f, o.bodyOff+off, n); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// Close releases the Object's hold on its file. Further calls do
// nothing.
func (o *Object) Close() error {
	if !o.closed.Swap(true) {
		o.sf.release()
	}
	return nil
}
