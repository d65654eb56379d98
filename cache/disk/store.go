package disk

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures a Store. The zero value is a sound configuration:
// a 1 GB budget, at most 1,048,576 objects, no fsync.
type Options struct {
	// Size is the byte budget of the directory: the objects' files, each
	// rounded up to 4 KB, the unit file systems allocate. Every process
	// sharing the directory should give the same Size; the one whose
	// write takes the total over it evicts. Default 1 GB.
	Size int64

	// MaxObjects bounds the number of objects, and with it the memory of
	// the index: under 100 bytes an object (TestIndexMemory logs the
	// figure). Default 1 << 20.
	MaxObjects int

	// Sync makes Commit fsync an object's file before publishing it,
	// and its directory after, so that a power failure cannot leave a
	// published file whose body was never written. Without it, a crash of the process loses nothing
	// published, and Rescan removes files a power failure truncated.
	Sync bool
}

// Defaults of Options.
const (
	DefaultSize       = 1 << 30
	DefaultMaxObjects = 1 << 20
)

// touchInterval is how stale a file's modification time may get before
// a hit sets it: it is the access time every process sharing the
// directory sees after its next Rescan.
const touchInterval = time.Minute

// ErrNotFound is what Get returns for a key with no stored object.
var ErrNotFound = errors.New("disk: no stored object")

// ErrClosed is what a Store's writes return once it is closed.
var ErrClosed = errors.New("disk: store closed")

// Store is a directory of objects, one file each. Make one with Open; it
// is safe for concurrent use, and several processes (and several Stores
// of one process) may open one directory at once on Unix: each sees the
// others' objects, purges and evictions.
type Store struct {
	dir    string // cleaned
	size   int64
	maxObj int
	sync   bool
	now    func() time.Time

	lmu   sync.Mutex // serializes this Store's holders of the flock
	lockf *os.File   // dir/lock: its flock guards changes to the tree; it holds the total

	tmpID   string   // this Store's name under dir/tmp
	tmpDir  string   // dir/tmp/ID: this Store's writers' temporary files
	tmpLock *os.File // dir/tmp/ID.lock, flocked while the Store is open

	mu    sync.Mutex // guards the index
	index map[hash]*ientry
	lru   ientry // sentinel: lru.next is the most recently used

	hits, misses, evictions atomic.Uint64
	closed                  atomic.Bool
}

// ientry is what the index knows of one object: when it was last used.
// Sizes are read from the files under the flock when they are removed.
type ientry struct {
	h          hash
	used       int64 // unix nanoseconds of the last hit here, or the file's mtime
	touched    int64 // the file's mtime as last set or seen
	prev, next *ientry
}

// Open opens the store in dir, making the directory if need be. It
// rebuilds the index from the files there (Rescan with validation):
// files that are not complete objects, or whose stored key does not hash
// to their name, are removed, and so are temporary files no live writer
// holds.
func Open(dir string, o Options) (*Store, error) {
	s := &Store{
		dir:    filepath.Clean(dir),
		size:   o.Size,
		maxObj: o.MaxObjects,
		sync:   o.Sync,
		now:    time.Now,
		index:  make(map[hash]*ientry),
	}
	if s.size <= 0 {
		s.size = DefaultSize
	}
	if s.maxObj <= 0 {
		s.maxObj = DefaultMaxObjects
	}
	s.lru.next, s.lru.prev = &s.lru, &s.lru
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	s.lockf = f
	if err := s.makeTmp(); err != nil {
		f.Close()
		return nil, err
	}
	if err := s.rescan(true); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// makeTmp makes the Store's directory of temporary files, dir/tmp/ID,
// and holds the flock of dir/tmp/ID.lock while the Store is open, so
// that other Stores know it is alive. The lock file is locked under
// another name and renamed, so no one ever sees it unlocked while its
// Store lives.
func (s *Store) makeTmp() error {
	var id [8]byte
	rand.Read(id[:])
	s.tmpID = hex.EncodeToString(id[:])
	tmp := filepath.Join(s.dir, "tmp")
	s.tmpDir = filepath.Join(tmp, s.tmpID)
	name := filepath.Join(tmp, s.tmpID+".new")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err = lockFile(f); err == nil {
		err = os.Rename(name, s.tmpDir+".lock")
	}
	if err == nil {
		err = os.Mkdir(s.tmpDir, 0o700)
	}
	if err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	s.tmpLock = f
	return nil
}

// Close releases the Store's files. It waits for a Commit, Purge or
// Rescan under way; those that come after fail with ErrClosed (a Writer
// still open then cannot commit: its object is dropped, and another
// Store's Rescan removes its temporary file). Objects still open stay
// readable.
func (s *Store) Close() error {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.tmpLock.Close()
	return s.lockf.Close()
}

// Dir returns the Store's directory.
func (s *Store) Dir() string { return s.dir }

// locked runs fn holding the directory's flock (and this Store's mutex),
// with the total bytes stored as fn may change it; the new total is
// written back.
func (s *Store) locked(fn func(total *int64) error) error {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if err := lockFile(s.lockf); err != nil {
		return err
	}
	defer unlockFile(s.lockf)
	var b [8]byte
	var total int64
	if n, err := s.lockf.ReadAt(b[:], 0); n == 8 {
		total = int64(binary.LittleEndian.Uint64(b[:]))
	} else if err != nil && err != io.EOF {
		return err
	}
	before := total
	err := fn(&total)
	if total != before {
		binary.LittleEndian.PutUint64(b[:], uint64(total))
		if _, werr := s.lockf.WriteAt(b[:], 0); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// Stats are a Store's counters.
type Stats struct {
	Hits, Misses, Evictions uint64 // of this Store
	Objects                 int    // in this Store's index
	Bytes                   int64  // in the directory, all processes' objects
}

// Stats returns the Store's counters and the directory's total.
func (s *Store) Stats() (Stats, error) {
	st := Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Evictions: s.evictions.Load()}
	s.mu.Lock()
	st.Objects = len(s.index)
	s.mu.Unlock()
	err := s.locked(func(total *int64) error {
		st.Bytes = *total
		return nil
	})
	return st, err
}

// Get returns the object stored under key, or ErrNotFound. The Object
// holds an open file: the caller must Close it. An object another
// process stored is found as well as this one's; one another process
// removed is not.
func (s *Store) Get(key string) (*Object, error) {
	h := hashKey(key)
	path := s.path(h)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.forget(h)
			s.misses.Add(1)
			return nil, ErrNotFound
		}
		return nil, err
	}
	p, head, err := readHead(f, make([]byte, 1024))
	if err != nil || p.bodyLen < 0 || string(head[preambleSize:preambleSize+p.keyLen]) != key {
		// A torn file (only a power failure makes one) or, never in
		// practice, another key with the same hash: a miss.
		f.Close()
		s.misses.Add(1)
		return nil, ErrNotFound
	}
	s.hits.Add(1)
	s.used(h, path)
	// One allocation for the Object and its file's holder.
	both := &struct {
		o  Object
		sf sharedFile
	}{}
	both.sf.f = f
	both.sf.refs.Store(1)
	o := &both.o
	o.sf, o.key, o.head = &both.sf, key, head[preambleSize+p.keyLen:]
	o.bodyOff, o.size = p.bodyOffset(), p.bodyLen
	return o, nil
}

// used records a hit on h: the index learns the object if it did not
// know it (another process stored it), and the file's mtime is moved to
// now when it is older than touchInterval.
func (s *Store) used(h hash, path string) {
	now := s.now().UnixNano()
	touch := false
	s.mu.Lock()
	e := s.index[h]
	if e == nil {
		if len(s.index) < s.maxObj {
			e = &ientry{h: h, touched: now}
			s.index[h] = e
			s.pushFront(e)
		}
	} else {
		s.unlink(e)
		s.pushFront(e)
		if now-e.touched > int64(touchInterval) {
			e.touched, touch = now, true
		}
	}
	if e != nil {
		e.used = now
	}
	s.mu.Unlock()
	if touch {
		t := time.Unix(0, now)
		os.Chtimes(path, t, t) // best effort: the object may be gone
	}
}

// forget drops h from the index.
func (s *Store) forget(h hash) *ientry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.index[h]
	if e != nil {
		delete(s.index, h)
		s.unlink(e)
	}
	return e
}

func (s *Store) pushFront(e *ientry) {
	e.prev, e.next = &s.lru, s.lru.next
	e.prev.next, e.next.prev = e, e
}

func (s *Store) unlink(e *ientry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// remember puts h in the index as just used.
func (s *Store) remember(h hash) {
	now := s.now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.index[h]
	if e != nil {
		s.unlink(e)
	} else {
		e = &ientry{h: h}
		s.index[h] = e
	}
	e.used, e.touched = now, now
	s.pushFront(e)
}

// victim takes the least recently used object but keep out of the index.
func (s *Store) victim(keep hash) (hash, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.lru.prev; e != &s.lru; e = e.prev {
		if e.h != keep {
			delete(s.index, e.h)
			s.unlink(e)
			return e.h, true
		}
	}
	return hash{}, false
}

// removeLocked removes h's file, under the flock, and takes its charge
// off the total. It reports whether there was a file.
func (s *Store) removeLocked(h hash, total *int64) bool {
	path := s.path(h)
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	if os.Remove(path) != nil {
		return false
	}
	*total -= charge(fi.Size())
	return true
}

// evictLocked removes least recently used objects (but keep) under the
// flock until the total fits the budget and the index MaxObjects. When
// the index runs out of objects while the total is still over, which
// happens when other processes stored them, it rescans the directory to
// learn them, once.
func (s *Store) evictLocked(total *int64, keep hash) {
	rescanned := false
	for {
		s.mu.Lock()
		over := *total > s.size || len(s.index) > s.maxObj
		s.mu.Unlock()
		if !over {
			return
		}
		h, ok := s.victim(keep)
		if !ok {
			if rescanned {
				return
			}
			rescanned = true
			s.rescanLocked(total, false)
			continue
		}
		if s.removeLocked(h, total) {
			s.evictions.Add(1)
		}
	}
}

// Purge removes the object stored under key, if any, and reports
// whether there was one. Every process sharing the directory stops
// finding it; Objects already open keep reading it.
func (s *Store) Purge(key string) (bool, error) {
	h := hashKey(key)
	found := false
	err := s.locked(func(total *int64) error {
		if !s.owns(h, key) {
			return nil
		}
		found = s.removeLocked(h, total)
		return nil
	})
	s.forget(h)
	return found, err
}

// owns reports whether h's file holds key.
func (s *Store) owns(h hash, key string) bool {
	f, err := os.Open(s.path(h))
	if err != nil {
		return false
	}
	defer f.Close()
	p, head, err := readHead(f, make([]byte, preambleSize+len(key)))
	return err == nil && string(head[preambleSize:preambleSize+p.keyLen]) == key
}

// PurgePrefix removes every object whose key starts with prefix and
// returns how many it removed. It reads the key of every file in the
// directory (the index holds no keys, to stay small), so it costs a
// walk of the directory: an operator's tool, not a per-request one.
func (s *Store) PurgePrefix(prefix string) (int, error) {
	return s.PurgeWhere(func(key string, _ []byte) bool { return strings.HasPrefix(key, prefix) })
}

// PurgeWhere removes every object for whose key and head match reports
// true, and returns how many it removed. match must not keep head,
// which is reused. Like PurgePrefix it reads every file of the
// directory. An object replaced under the same key between the read and
// the removal is removed too, whatever its head.
func (s *Store) PurgeWhere(match func(key string, head []byte) bool) (int, error) {
	n := 0
	buf := make([]byte, 512)
	err := s.walk(func(h hash, path string) {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		p, b, err := readHead(f, buf)
		f.Close()
		if err != nil {
			return
		}
		if cap(b) > cap(buf) {
			buf = b[:cap(b)]
		}
		key := b[preambleSize : preambleSize+p.keyLen]
		if !match(string(key), b[preambleSize+p.keyLen:]) {
			return
		}
		if ok, _ := s.Purge(string(key)); ok {
			n++
		}
	})
	return n, err
}

// walk calls fn for each object file name in the tree.
func (s *Store) walk(fn func(h hash, path string)) error {
	l1, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, d1 := range l1 {
		if !d1.IsDir() || len(d1.Name()) != 2 {
			continue
		}
		p1 := filepath.Join(s.dir, d1.Name())
		l2, err := os.ReadDir(p1)
		if err != nil {
			continue
		}
		for _, d2 := range l2 {
			if !d2.IsDir() || len(d2.Name()) != 2 {
				continue
			}
			p2 := filepath.Join(p1, d2.Name())
			l3, err := os.ReadDir(p2)
			if err != nil {
				continue
			}
			for _, d3 := range l3 {
				h, ok := parseName(d3.Name())
				if !ok || d3.Name()[0:2] != d1.Name() || d3.Name()[2:4] != d2.Name() {
					continue
				}
				fn(h, filepath.Join(p2, d3.Name()))
			}
		}
	}
	return nil
}

// Rescan walks the directory under the flock: it sets the total stored
// to what the files add up to, learns the objects other processes
// stored (with their files' mtimes as their last use), forgets those
// they removed, removes temporary files no live writer holds, and, when
// there are more than MaxObjects files, the least recently used beyond
// them. It holds every process's writes back while it runs; call it
// now and then (each minute, say) to correct a total that a process
// killed between publishing an object and counting it left wrong.
func (s *Store) Rescan() error { return s.rescan(false) }

func (s *Store) rescan(validate bool) error {
	return s.locked(func(total *int64) error {
		s.cleanTemps()
		return s.rescanLocked(total, validate)
	})
}

// cleanTemps removes the temporary files of Stores that are gone: a
// directory dir/tmp/ID whose lock file ID.lock no one holds (its
// process died, or its Store was closed), with the lock file. A lock
// file not renamed yet (ID.new) is left an hour, which its Store takes
// far less than, and anything else is removed.
func (s *Store) cleanTemps() {
	tmp := filepath.Join(s.dir, "tmp")
	list, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, d := range list {
		id, ok := strings.CutSuffix(d.Name(), ".lock")
		if !ok || d.IsDir() {
			continue
		}
		path := filepath.Join(tmp, d.Name())
		if id == s.tmpID {
			live[id] = true
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && abandoned(f, fi) {
			os.RemoveAll(filepath.Join(tmp, id))
			os.Remove(path)
		} else {
			live[id] = true
		}
		f.Close()
	}
	for _, d := range list {
		name := d.Name()
		switch {
		case strings.HasSuffix(name, ".lock"):
		case strings.HasSuffix(name, ".new"):
			if fi, err := d.Info(); err == nil && s.now().Sub(fi.ModTime()) > time.Hour {
				os.Remove(filepath.Join(tmp, name))
			}
		case !live[name]:
			os.RemoveAll(filepath.Join(tmp, name))
		}
	}
}

// rescanLocked is Rescan's walk, under the flock. With validate it
// opens every file to check that it is a complete object under the right
// name, and removes it otherwise.
func (s *Store) rescanLocked(total *int64, validate bool) error {
	type found struct {
		h      hash
		charge int64
		mtime  int64
	}
	var all []found
	var sum int64
	buf := make([]byte, 512)
	err := s.walk(func(h hash, path string) {
		fi, err := os.Stat(path)
		if err != nil {
			return
		}
		if validate && !validObject(h, path, fi.Size(), buf) {
			os.Remove(path)
			return
		}
		c := charge(fi.Size())
		sum += c
		all = append(all, found{h, c, fi.ModTime().UnixNano()})
	})
	if err != nil {
		return err
	}
	if len(all) > s.maxObj {
		slices.SortFunc(all, func(a, b found) int { return cmp.Compare(b.mtime, a.mtime) })
		for _, f := range all[s.maxObj:] {
			if os.Remove(s.path(f.h)) == nil {
				sum -= f.charge
			}
		}
		all = all[:s.maxObj]
	}
	*total = sum
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.index
	s.index = make(map[hash]*ientry, len(all))
	s.lru.next, s.lru.prev = &s.lru, &s.lru
	for _, f := range all {
		e := &ientry{h: f.h, used: f.mtime, touched: f.mtime}
		if o := old[f.h]; o != nil && o.used > e.used {
			e.used = o.used
		}
		s.index[f.h] = e
	}
	// Most recently used first.
	order := make([]*ientry, 0, len(s.index))
	for _, e := range s.index {
		order = append(order, e)
	}
	slices.SortFunc(order, func(a, b *ientry) int { return cmp.Compare(a.used, b.used) })
	for _, e := range order {
		s.pushFront(e)
	}
	return nil
}

// validObject reports whether path is a complete object file of size
// bytes whose key hashes to h.
func validObject(h hash, path string, size int64, buf []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	p, head, err := readHead(f, buf)
	if err != nil || p.bodyLen < 0 || p.bodyOffset()+p.bodyLen != size {
		return false
	}
	return hashKey(string(head[preambleSize:preambleSize+p.keyLen])) == h
}
