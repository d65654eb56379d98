package files

import (
	"errors"
	"hash/fnv"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// entry is what the Server knows about one cleaned request path, or
// about one precompressed variant of a file. Apart from its atomic fields,
// an entry is immutable once it is in the cache, so requests read it
// without locking; a change on disk makes a new entry.
type entry struct {
	status   int    // http.StatusOK for a file or listing, or 301, 403, 404
	location string // for 301: the escaped path with a slash added
	dir      bool   // status 200: a directory to list (Options.Browse)

	// For a file (status 200, not dir):
	name    string // the fs.FS name of the file (the index for a directory)
	size    int64
	modTime time.Time
	ino     uint64
	body    []byte // the content, when held is true
	held    bool

	// Precomputed header values, made safe once (engine.MakeSafe) as the
	// response sets them for every request; lastMod and etag may be empty.
	ctype, lastMod, etag engine.SafeString

	encoding string   // for a precompressed variant: its content coding
	variants []*entry // the file's precompressed variants, preferred first

	key        string       // the cache key
	expires    atomic.Int64 // cache clock reading after which to revalidate
	refreshing atomic.Bool  // one request is revalidating

	fd      atomic.Pointer[openFile] // the shared open file, see fdCache
	used    atomic.Int64             // cache clock at the last use of fd
	dropped atomic.Bool              // left the cache: keep no fd
}

// sameFile reports whether fi describes the same unchanged file as e.
func (e *entry) sameFile(fi fs.FileInfo) bool {
	return e.size == fi.Size() && e.modTime.Equal(fi.ModTime()) && e.ino == inode(fi)
}

// sameAs reports whether n says what e says, so e may be kept.
func (e *entry) sameAs(n *entry) bool {
	if e.status != n.status || e.location != n.location || e.dir != n.dir || e.name != n.name {
		return false
	}
	if e.status != http.StatusOK || e.dir {
		return true
	}
	if e.size != n.size || !e.modTime.Equal(n.modTime) || e.ino != n.ino || e.lastMod != n.lastMod || len(e.variants) != len(n.variants) {
		return false
	}
	for i, v := range e.variants {
		if !v.sameAs(n.variants[i]) {
			return false
		}
	}
	return true
}

// errChanged reports a file that changed while it was being read.
var errChanged = errors.New("files: file changed while read")

// resolve finds what key names in the file system, without reading
// content: a file entry (with its precompressed variants), a directory to
// list, a redirect, or a 403/404. It returns an error only for failures
// that should not be cached (an I/O error, running out of descriptors).
func (s *Server) resolveKey(key string) (*entry, error) {
	name := fsName(key)
	fi, err := fs.Stat(s.fsys, name)
	if err != nil {
		return failure(key, err)
	}
	slash := key[len(key)-1] == '/'
	if fi.IsDir() {
		if !slash {
			return &entry{status: http.StatusMovedPermanently, key: key, location: escapePath(s.opts.StripPrefix + key + "/")}, nil
		}
		for _, index := range s.opts.Index {
			iname := index
			if name != "." {
				iname = name + "/" + index
			}
			ifi, err := fs.Stat(s.fsys, iname)
			switch {
			case err == nil && ifi.Mode().IsRegular():
				return s.fileEntry(key, iname, ifi), nil
			case err == nil || errors.Is(err, fs.ErrNotExist):
				continue
			}
			return failure(key, err)
		}
		if s.opts.Browse {
			return &entry{status: http.StatusOK, dir: true, key: key, name: name}, nil
		}
		return &entry{status: http.StatusNotFound, key: key}, nil
	}
	if slash || !fi.Mode().IsRegular() {
		return &entry{status: http.StatusNotFound, key: key}, nil
	}
	return s.fileEntry(key, name, fi), nil
}

// failure maps a file system error to a cacheable 403 or 404 entry, or
// passes on an error that should be retried.
func failure(key string, err error) (*entry, error) {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return &entry{status: http.StatusForbidden, key: key}, nil
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE),
		errors.Is(err, syscall.ENOMEM), errors.Is(err, syscall.EIO),
		errors.Is(err, syscall.EINTR):
		return nil, err
	}
	// Not found, not a directory, a loop, a name too long, or a symbolic
	// link escaping the root.
	return &entry{status: http.StatusNotFound, key: key}, nil
}

// fileEntry describes the regular file name from its FileInfo, with the
// precompressed variants found beside it.
func (s *Server) fileEntry(key, name string, fi fs.FileInfo) *entry {
	e := newFileEntry(key, name, fi, s.types.byName(name))
	if len(s.opts.Precompressed) == 0 || isPrecompressedName(name) {
		return e
	}
	for _, coding := range s.opts.Precompressed {
		vname := name + precompressedExt[coding]
		vfi, err := fs.Stat(s.fsys, vname)
		if err != nil || !vfi.Mode().IsRegular() || vfi.ModTime().Before(fi.ModTime()) {
			continue // missing, or older than the original: stale
		}
		v := newFileEntry(key, vname, vfi, e.ctype.String())
		v.encoding = coding
		e.variants = append(e.variants, v)
	}
	return e
}

// isPrecompressedName reports whether name is itself a precompressed file.
func isPrecompressedName(name string) bool {
	for _, ext := range precompressedExt {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

func newFileEntry(key, name string, fi fs.FileInfo, ctype string) *entry {
	e := &entry{
		status:  http.StatusOK,
		key:     key,
		name:    name,
		size:    fi.Size(),
		modTime: fi.ModTime(),
		ino:     inode(fi),
		ctype:   engine.MakeSafe(ctype),
	}
	if !e.modTime.IsZero() {
		// A file dated in the future (a clock set wrong where it was
		// made) has no Last-Modified until its time has come: the field
		// must not be later than Date (RFC 9110 §8.8.2.1), and any other
		// date would be invented, one a different version of the file
		// might have (If-Range would then splice the two). Its ETag still
		// validates; the entry is replaced once the date is sent (sameAs).
		//
		// Nor has a file changed in the current second, for two reasons.
		// The engine's Date comes from its coarse clock, cut to the
		// second and up to a tick (at most a quarter of a second) behind,
		// so it can still show the second before. And a date is a
		// validator only once its second is over: a second change within
		// it would keep the same Last-Modified, and If-Range with that
		// date would splice the two versions (§8.8.2.2).
		if e.modTime.Unix() < time.Now().Unix() {
			e.lastMod = engine.MakeSafe(e.modTime.UTC().Format(http.TimeFormat))
		}
		e.etag = engine.MakeSafe(makeETag(e.ino, e.size, e.modTime))
	}
	return e
}

// load reads a small file's content into e, which must not be shared
// yet. The content is read from an open file whose FileInfo must still
// match e; a file changing meanwhile gives errChanged.
func (e *entry) load(fsys fs.FS) error {
	f, err := fsys.Open(e.name)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || !e.sameFile(fi) {
		return errChanged
	}
	body := make([]byte, e.size)
	if _, err := io.ReadFull(f, body); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = errChanged
		}
		return err
	}
	e.body, e.held = body, true
	if e.etag.String() == "" {
		e.etag = engine.MakeSafe(contentETag(body))
	}
	return nil
}

// makeETag makes a strong entity tag from a file's inode, size and
// modification time, as "inode-size-mtime" in hexadecimal.
func makeETag(ino uint64, size int64, mod time.Time) string {
	b := make([]byte, 0, 48)
	b = append(b, '"')
	if ino != 0 {
		b = strconv.AppendUint(b, ino, 16)
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, size, 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, mod.UnixNano(), 16)
	return string(append(b, '"'))
}

// contentETag makes a strong entity tag from the content itself, for files
// without a modification time (embed.FS).
func contentETag(body []byte) string {
	h := fnv.New64a()
	h.Write(body)
	b := make([]byte, 0, 40)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(len(body)), 16)
	b = append(b, '-')
	b = strconv.AppendUint(b, h.Sum64(), 16)
	return string(append(b, '"'))
}
