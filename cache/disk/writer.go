package disk

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// ErrAborted is what readers of an object get when its writer aborts.
var ErrAborted = errors.New("disk: the object being written was abandoned")

// errDone is what a Writer used after Commit or Abort returns.
var errDone = errors.New("disk: writer already committed or aborted")

// Writer writes one object: a temporary file (in the Store's own
// directory under dir/tmp, which other Stores leave alone while the
// Store is open), published under its key by
// Commit (a rename, so no reader ever sees half an object) or removed by
// Abort. One goroutine writes; any number read the body as it grows
// through Objects from Writer.Object.
type Writer struct {
	s       *Store
	h       hash
	key     string
	head    []byte
	tmp     string
	sf      *sharedFile
	bodyOff int64
	// replaces, when set, is the file the object must still replace:
	// Commit publishes nothing (ErrNotFound) when the key's file has
	// been purged or replaced since (SetHead's freshened copy).
	replaces os.FileInfo

	mu    sync.Mutex
	n     int64 // body bytes on disk
	state int   // writing, committed, aborted
	wait  chan struct{}
}

const (
	writing = iota
	committed
	aborted
)

// Create starts an object under key with head (the metadata the caller
// keeps with the body: a response's status and fields, say); the body
// is written with Write. The Store copies head. The caller must end the
// Writer with Commit or Abort, or its temporary file stays until the
// next Rescan after the process ends.
func (s *Store) Create(key string, head []byte) (*Writer, error) {
	if len(key) > maxKeySize || len(head) > maxHeadSize {
		return nil, errors.New("disk: key or head too large")
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	h := hashKey(key)
	var name [32]byte
	hex.Encode(name[:], h[:])
	f, err := os.CreateTemp(s.tmpDir, string(name[:])+".*")
	if err != nil {
		return nil, err
	}
	w := &Writer{s: s, h: h, key: key, tmp: f.Name(), sf: &sharedFile{f: f}}
	w.sf.refs.Store(1)
	w.bodyOff = int64(preambleSize + len(key) + len(head))
	buf := make([]byte, w.bodyOff)
	encodePreamble(buf, len(key), len(head), -1)
	copy(buf[preambleSize:], key)
	copy(buf[preambleSize+len(key):], head)
	w.head = buf[preambleSize+len(key):]
	if _, err := f.Write(buf); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// Write appends p to the body and wakes the readers waiting for it. It
// is not safe for concurrent use with itself, Commit or Abort.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	st := w.state
	w.mu.Unlock()
	if st != writing {
		return 0, errDone
	}
	n, err := w.sf.f.Write(p)
	w.mu.Lock()
	w.n += int64(n)
	w.wake()
	w.mu.Unlock()
	return n, err
}

// Len returns how many body bytes are written.
func (w *Writer) Len() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *Writer) wake() {
	if w.wait != nil {
		close(w.wait)
		w.wait = nil
	}
}

// Commit publishes the object under its key, replacing any object
// stored there, and evicts least recently used objects when the
// directory's total goes over the budget. Readers of the Writer's
// Objects read on to the end. On an error the object is not stored, and
// readers get ErrAborted.
func (w *Writer) Commit() error {
	w.mu.Lock()
	if w.state != writing {
		w.mu.Unlock()
		return errDone
	}
	n := w.n
	w.mu.Unlock()
	s := w.s
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	_, err := w.sf.f.WriteAt(b[:], 16)
	if err == nil && s.sync {
		err = w.sf.f.Sync()
	}
	path := s.path(w.h)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o700)
	}
	ch := charge(w.bodyOff + n)
	if err == nil {
		err = s.locked(func(total *int64) error {
			var old int64
			fi, err := os.Stat(path)
			if err == nil {
				old = charge(fi.Size())
			}
			if w.replaces != nil && (err != nil || !os.SameFile(fi, w.replaces)) {
				return ErrNotFound
			}
			if err := os.Rename(w.tmp, path); err != nil {
				return err
			}
			*total += ch - old
			s.remember(w.h)
			s.evictLocked(total, w.h)
			return nil
		})
	}
	if err != nil {
		w.Abort()
		return err
	}
	if s.sync {
		// The rename too must reach the disk.
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			d.Sync()
			d.Close()
		}
	}
	w.mu.Lock()
	w.state = committed
	w.wake()
	w.mu.Unlock()
	w.sf.release()
	return nil
}

// Abort drops the object: its temporary file is removed and readers of
// its Objects get ErrAborted once they have read what was written.
func (w *Writer) Abort() {
	w.mu.Lock()
	if w.state != writing {
		w.mu.Unlock()
		return
	}
	w.state = aborted
	w.wake()
	w.mu.Unlock()
	os.Remove(w.tmp)
	w.sf.release()
}

// Object returns a reader of the object being written: its body grows
// as Write adds to it, and ends at Commit. The caller must Close it. It
// may be called until Commit or Abort.
func (w *Writer) Object() (*Object, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != writing {
		return nil, errDone
	}
	w.sf.refs.Add(1)
	return &Object{sf: w.sf, key: w.key, head: w.head, bodyOff: w.bodyOff, size: -1, w: w}, nil
}

// next says how much of the body is there from off: n bytes, or none
// and done (committed, at the end), an error (aborted) or a channel
// closed when that changes.
func (w *Writer) next(off int64) (n int64, done bool, wait <-chan struct{}, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if off < w.n {
		return w.n - off, false, nil, nil
	}
	switch w.state {
	case committed:
		return 0, true, nil, nil
	case aborted:
		return 0, false, nil, ErrAborted
	}
	if w.wait == nil {
		w.wait = make(chan struct{})
	}
	return 0, false, w.wait, nil
}

// SetHead replaces the head stored with key's object, keeping its body
// (the freshened header of a revalidated response, say): it writes a
// new object and publishes it as Commit does, so readers see the old
// object or the new one whole. It returns ErrNotFound when key has no
// object, or when the object is purged or replaced while the copy is
// made (a purge is never undone by a late freshening).
func (s *Store) SetHead(key string, head []byte) error {
	o, err := s.Get(key)
	if err != nil {
		return err
	}
	defer o.Close()
	fi, err := o.File().Stat()
	if err != nil {
		return err
	}
	w, err := s.Create(key, head)
	if err != nil {
		return err
	}
	w.replaces = fi
	if _, err := io.Copy(w, io.NewSectionReader(o.File(), o.BodyOffset(), o.size)); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}
