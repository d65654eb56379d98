package files

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// allow is the Allow field value of 405 and OPTIONS responses.
const allow = "GET, HEAD, OPTIONS"

// Server is an engine.Handler serving files from a directory (New) or an
// fs.FS (NewFS). It is safe for concurrent use by any number of
// connections. Its zero value is not usable.
type Server struct {
	fsys  fs.FS
	root  *os.Root // New's directory, closed by Close; nil for NewFS or FollowSymlinks
	opts  Options
	paths PathMap // request path → name, from opts.StripPrefix
	try   []tryCandidate
	cache *cache
	types typeTable

	cacheControl string                       // the Cache-Control value, or ""
	expiresVal   atomic.Pointer[expiresValue] // the Expires value for the current second
}

var _ engine.Handler = (*Server)(nil)

// New returns a Server for the directory root. The directory is opened
// once, now: files are looked up beneath that open directory with
// os.Root, so neither a ".." nor a symbolic link can lead outside it, even
// if the tree changes while a request is served. Symbolic links inside the
// tree are followed when relative and their target stays inside root;
// absolute links and links leading out are refused (404) — unless
// opts.FollowSymlinks, which serves whatever a link points to (see
// Options). Replacing root itself (renaming another directory over it) is
// not seen; its contents may change freely.
//
// New fails for invalid options (Options.Validate) and for a root that is
// not a readable directory. Files are sent with sendfile(2) when the
// engine allows. Call Close to release the directory and the open files
// when the Server is no longer used.
func New(root string, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	fi, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, err
	}
	if !fi.IsDir() {
		r.Close()
		return nil, &fs.PathError{Op: "open", Path: root, Err: errors.New("not a directory")}
	}
	if opts.FollowSymlinks {
		r.Close()
		return newServer(os.DirFS(root), opts), nil
	}
	s := newServer(r.FS(), opts)
	s.root = r
	return s, nil
}

// NewFS returns a Server for the files of fsys, such as an embed.FS (use
// fs.Sub to serve a subdirectory). fsys must be safe for concurrent use.
// Content is copied through user space; a file fsys opens as an *os.File
// is still sent with sendfile(2). Options.FollowSymlinks does not apply:
// fsys decides. NewFS panics on invalid options (see Options.Validate).
func NewFS(fsys fs.FS, opts Options) *Server {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	return newServer(fsys, opts)
}

func newServer(fsys fs.FS, opts Options) *Server {
	opts = opts.withDefaults()
	return &Server{
		fsys:         fsys,
		opts:         opts,
		paths:        PathMap{stripPrefix: opts.StripPrefix},
		cache:        newCache(opts),
		types:        newTypeTable(opts.Types),
		try:          parseTry(opts.Try),
		cacheControl: opts.cacheControl(),
	}
}

// Close releases the directory opened by New and the files kept open
// (files being sent close when their transfer ends). Requests after Close
// fail with 404 or 500.
func (s *Server) Close() error {
	s.cache.close()
	if s.root == nil {
		return nil
	}
	return s.root.Close()
}

// Serve implements engine.Handler: it answers GET and HEAD with the file
// the path names (200, 206, or 301, 304, 403, 404, 412, 416), OPTIONS
// with 204, and other methods with 405, as the package documentation
// describes. It does not read the request body.
func (s *Server) Serve(w engine.ResponseWriter, r *engine.Request) {
	var rp Reply
	s.decideOpen(&rp, r)
	rp.SetHeader(w.Header())
	w.WriteHeader(rp.status)
	bw, ok := w.(BodyWriter)
	if !ok {
		bw = copyWriter{w}
	}
	rp.Send(bw) // errors are the engine's: it closes the connection
	rp.release()
}

// decideOpen fills rp with the reply to r and takes a reference to the
// file it sends. When the file changed since it was cached, it looks the
// path up again, a few times at most; a file that keeps changing, or that
// cannot be opened, gets an error reply.
func (s *Server) decideOpen(rp *Reply, r *engine.Request) {
	for attempt := 0; ; attempt++ {
		s.decide(rp, r, attempt > 0)
		err := rp.open()
		switch {
		case err == nil:
			return
		case err == errChanged && attempt < 3:
			*rp = Reply{}
			continue
		}
		flags := rp.flags & replyHead
		*rp = Reply{s: s, flags: flags}
		if err == errChanged {
			err = errors.New("files: file keeps changing")
		}
		s.fail(rp, r, err)
		return
	}
}

// Decide fills rp with the reply to r, for a caller that sets the header
// now and sends the body later, as a pipeline source does: SetHeader,
// then, in the content phase, Send. rp must be a zero Reply. The reply
// holds no open file between the two, so a Send that never happens leaks
// nothing. Decide reads the request only while it runs.
func (s *Server) Decide(rp *Reply, r *engine.Request) {
	s.decideOpen(rp, r)
	rp.release() // the file stays open in the cache for Send
}

// copyWriter sends file regions by copying, for ResponseWriters that
// cannot send files themselves.
type copyWriter struct{ w engine.ResponseWriter }

func (c copyWriter) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c copyWriter) SendFile(f *os.File, offset, n int64) error {
	m, err := io.Copy(c.w, io.NewSectionReader(f, offset, n))
	if err == nil && m < n {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// logError reports an unexpected file system error.
func (s *Server) logError(r *engine.Request, err error) {
	slog.Error("files: cannot serve", "path", string(r.Path), "error", err)
}

// lookup returns the entry for the request's path: from the cache while
// fresh, else resolved from the file system. While one request revalidates
// an expired entry, others keep using it.
// With force, a cached entry is looked up again even if fresh. now is the
// cache's clock.
func (s *Server) lookup(r *engine.Request, force bool, now int64) (*entry, error) {
	if len(s.try) == 0 {
		return s.lookupPath(r.RawPath, r.Path, force, now)
	}
	return s.lookupTry(r, force, now)
}

// lookupPath is lookup for the path p, whose raw form is raw.
func (s *Server) lookupPath(raw, p []byte, force bool, now int64) (*entry, error) {
	p, clean, verdict := s.paths.split(raw, p)
	switch {
	case verdict == pathRefused:
		return notFound, nil
	case verdict == pathPrefix:
		return s.prefixRedirect(), nil
	case verdict == pathDotfile && s.opts.Dotfiles == DotfilesHide:
		return notFound, nil
	case verdict == pathDotfile && s.opts.Dotfiles == DotfilesDeny:
		return forbidden, nil
	}
	if clean && !force {
		if e := s.cache.get(p); e != nil && now < e.expires.Load() {
			return e, nil // the fast path: a fresh entry under the path itself
		}
	}
	return s.lookupSlow(p, clean, force, now)
}

// lookupSlow is lookup for a path that is not clean, not cached or whose
// entry expired: while one request revalidates an expired entry, others
// keep using it.
func (s *Server) lookupSlow(p []byte, clean, force bool, now int64) (*entry, error) {
	var e *entry
	key := ""
	if clean {
		e = s.cache.get(p)
	} else {
		key = cleanKey(string(p))
		e = s.cache.getString(key)
	}
	if e != nil && !force && (now < e.expires.Load() || !e.refreshing.CompareAndSwap(false, true)) {
		return e, nil
	}
	if e != nil && force {
		e.refreshing.Store(true)
	}
	if key == "" {
		key = string(p)
	}
	n, err := s.resolve(key, e)
	if e != nil {
		e.refreshing.Store(false)
	}
	return n, err
}

// prefixRedirect answers the StripPrefix path itself: a redirect to it
// with a slash added. It is kept out of lookup, whose frame stays small.
//
//go:noinline
func (s *Server) prefixRedirect() *entry {
	return &entry{status: http.StatusMovedPermanently, location: escapePath(s.opts.StripPrefix + "/")}
}

// Entries answering paths refused before the file system is asked.
var (
	notFound  = &entry{status: http.StatusNotFound}
	forbidden = &entry{status: http.StatusForbidden}
)

// resolve looks key up in the file system and caches the result. old is
// the expired entry, or nil; it is kept when nothing changed.
func (s *Server) resolve(key string, old *entry) (*entry, error) {
	n, err := s.resolveKey(key)
	if err != nil {
		return nil, err
	}
	if old != nil && old.sameAs(n) && !s.wantsLoad(old) {
		s.cache.renew(old)
		return old, nil
	}
	if err := s.ready(n); err != nil {
		if n, err = failure(key, err); err != nil {
			return nil, err
		}
	}
	for i := 0; i < len(n.variants); i++ {
		if err := s.ready(n.variants[i]); err != nil {
			// An unreadable variant is not offered; the original still is.
			n.variants = append(n.variants[:i:i], n.variants[i+1:]...)
			i--
		}
	}
	s.cache.put(old, n)
	return n, nil
}

// ready makes sure the file of e, a new entry, can be read: a small one
// is read into memory, a larger one opened (and kept open for the
// requests to come), so that a file the server may not read is refused
// (403) alike for GET, HEAD and conditional requests, and an unreadable
// variant is not offered at all. A file that changed meanwhile is not an
// error: it is read from disk when sent, and looked at again at the next
// expiry.
func (s *Server) ready(e *entry) error {
	if e.status != http.StatusOK || e.dir {
		return nil
	}
	var err error
	if s.wantsLoad1(e) {
		err = e.load(s.fsys)
	} else {
		var o *openFile
		if o, err = s.openEntry(e, s.cache.now()); err == nil {
			o.release()
		}
	}
	if err == errChanged {
		return nil
	}
	return err
}

// wantsLoad reports whether e or one of its variants is a file small
// enough to hold in memory, not held yet, that fits the memory budget.
func (s *Server) wantsLoad(e *entry) bool {
	if s.wantsLoad1(e) {
		return true
	}
	for _, v := range e.variants {
		if s.wantsLoad1(v) {
			return true
		}
	}
	return false
}

func (s *Server) wantsLoad1(e *entry) bool {
	return e.status == http.StatusOK && !e.dir && !e.held && e.size <= s.opts.MaxMemFile && s.cache.fits(e.size)
}

// openEntry returns a reference to an open file for e (a file or variant
// entry not held in memory): e's shared file when it has one, else a
// newly opened file, verified to still be the file e describes (else
// errChanged), which becomes e's shared file if the fd cache has room.
// now is the cache's clock, as of the request's start.
func (s *Server) openEntry(e *entry, now int64) (*openFile, error) {
	if o := e.fd.Load(); o != nil && o.acquire() {
		if now-e.used.Load() > int64(s.opts.OpenExpiry/8) { // a coarse clock is enough
			e.used.Store(now)
		}
		return o, nil
	}
	f, err := s.fsys.Open(e.name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() || !e.sameFile(fi) {
		f.Close()
		return nil, errChanged
	}
	o := &openFile{f: f}
	o.osf, _ = f.(*os.File)
	o.refs.Store(1)
	if o.osf != nil && s.opts.MaxOpenFiles > 0 {
		o.refs.Store(2) // one for the cache, if it keeps it
		e.used.Store(now)
		if !s.cache.fds.keep(e, o) {
			o.refs.Store(1)
		}
	}
	return o, nil
}

// expiresValue is the Expires field value for one second.
type expiresValue struct {
	sec int64
	val string
}

// expires returns the Expires value (now + MaxAge), formatted once a
// second.
func (s *Server) expires() string {
	now := time.Now()
	sec := now.Unix()
	if ev := s.expiresVal.Load(); ev != nil && ev.sec == sec {
		return ev.val
	}
	ev := &expiresValue{sec: sec, val: now.Add(s.opts.MaxAge).UTC().Format(http.TimeFormat)}
	s.expiresVal.Store(ev)
	return ev.val
}
