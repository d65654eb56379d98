package files

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"os"

	"github.com/sluice-server/sluice/engine"
)

// allow is the Allow field value of 405 and OPTIONS responses.
const allow = "GET, HEAD, OPTIONS"

// Server is an engine.Handler serving files from a directory (New) or an
// fs.FS (NewFS). It is safe for concurrent use by any number of
// connections. Its zero value is not usable.
type Server struct {
	fsys  fs.FS
	root  *os.Root // New's directory, closed by Close; nil for NewFS
	opts  Options
	cache *cache
}

var _ engine.Handler = (*Server)(nil)

// New returns a Server for the directory root. The directory is opened
// once, now: files are looked up beneath that open directory with
// os.Root, so neither a ".." nor a symbolic link can lead outside it, even
// if the tree changes while a request is served. Symbolic links inside the
// tree are followed when relative and their target stays inside root;
// absolute links are refused (404). Replacing root itself (renaming
// another directory over it) is not seen; its contents may change freely.
//
// Files are sent with sendfile(2) when the engine allows. Call Close to
// release the directory when the Server is no longer used.
func New(root string, opts Options) (*Server, error) {
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
	s := NewFS(r.FS(), opts)
	s.root = r
	return s, nil
}

// NewFS returns a Server for the files of fsys, such as an embed.FS (use
// fs.Sub to serve a subdirectory). fsys must be safe for concurrent use.
// Content is copied through user space; a file fsys opens as an *os.File
// is still sent with sendfile(2).
func NewFS(fsys fs.FS, opts Options) *Server {
	opts = opts.withDefaults()
	return &Server{fsys: fsys, opts: opts, cache: newCache(opts)}
}

// Close releases the directory opened by New. Requests after Close fail
// with 404 or 500. It returns nil for a Server made by NewFS.
func (s *Server) Close() error {
	if s.root == nil {
		return nil
	}
	return s.root.Close()
}

// Serve implements engine.Handler: it answers GET and HEAD with the file
// the path names (or 301, 304, 403, 404), OPTIONS with 204, and other
// methods with 405, as the package documentation describes. It does not
// read the request body.
func (s *Server) Serve(w engine.ResponseWriter, r *engine.Request) {
	switch string(r.Method) {
	case "GET", "HEAD":
	case "OPTIONS":
		w.Header().Set("Allow", allow)
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", allow)
		engine.Error(w, http.StatusMethodNotAllowed, "use "+allow)
		return
	}
	for attempt := 0; ; attempt++ {
		e, err := s.lookup(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		switch e.status {
		case http.StatusOK:
		case http.StatusMovedPermanently:
			s.redirect(w, r, e)
			return
		default:
			engine.Error(w, e.status, statusMessage(e.status))
			return
		}
		err = s.serveFile(w, r, e, attempt == 0)
		if err == nil {
			return
		}
		if attempt > 0 {
			s.fail(w, r, err)
			return
		}
		// The file changed or vanished since it was cached: look again.
		e.expires.Store(math.MinInt64)
	}
}

// fail answers a request that hit an unexpected file system error.
func (s *Server) fail(w engine.ResponseWriter, r *engine.Request, err error) {
	if e, ferr := failure("", err); ferr == nil {
		engine.Error(w, e.status, statusMessage(e.status))
		return
	}
	slog.Error("files: cannot serve", "path", string(r.Path), "error", err)
	engine.Error(w, http.StatusInternalServerError, "cannot read file")
}

// lookup returns the entry for the request's path: from the cache while
// fresh, else resolved from the file system. While one request revalidates
// an expired entry, others keep using it.
func (s *Server) lookup(r *engine.Request) (*entry, error) {
	if hasEncodedSlash(r.RawPath) {
		return notFound, nil
	}
	p := r.Path
	clean, ok := checkPath(p)
	if !ok {
		return notFound, nil
	}
	var e *entry
	key := ""
	if clean {
		e = s.cache.get(p)
	} else {
		key = cleanKey(string(p))
		e = s.cache.getString(key)
	}
	if e != nil && (s.cache.now() < e.expires.Load() || !e.refreshing.CompareAndSwap(false, true)) {
		return e, nil
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

// notFound answers paths refused before the file system is asked.
var notFound = &entry{status: http.StatusNotFound}

// resolve looks key up in the file system and caches the result. old is
// the expired entry, or nil; it is kept when nothing changed.
func (s *Server) resolve(key string, old *entry) (*entry, error) {
	n, err := resolve(s.fsys, key, s.opts.Index)
	if err != nil {
		return nil, err
	}
	hold := n.status == http.StatusOK && n.size <= s.opts.MaxMemFile
	if old != nil && old.sameAs(n) && (old.held || !hold) {
		s.cache.renew(old)
		return old, nil
	}
	if hold && s.cache.fits(n.size) {
		switch err := n.load(s.fsys); {
		case err == errChanged:
			// Serve it from disk this time; the next expiry reads it again.
		case err != nil:
			if n, err = failure(key, err); err != nil {
				return nil, err
			}
		}
	}
	s.cache.put(old, n)
	return n, nil
}

// serveFile answers with the file e, or a 304. A file not held in memory
// is opened first; if that fails, or verify is set and the open file no
// longer matches e, serveFile writes nothing and returns the error
// (errChanged for a mismatch).
func (s *Server) serveFile(w engine.ResponseWriter, r *engine.Request, e *entry, verify bool) error {
	status := precondition(r, e)
	var f fs.File
	if status == 0 && !e.held && !r.IsMethod("HEAD") {
		var err error
		if f, err = s.fsys.Open(e.name); err != nil {
			return err
		}
		defer f.Close()
		if verify {
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			if !e.sameFile(fi) {
				return errChanged
			}
		}
	}
	h := w.Header()
	if e.etag != "" {
		h.Set("ETag", e.etag)
	}
	if e.lastMod != "" {
		h.Set("Last-Modified", e.lastMod)
	}
	if status != 0 {
		w.WriteHeader(status)
		return nil
	}
	h.Set("Content-Type", e.ctype)
	h.SetContentLength(e.size)
	switch {
	case e.held:
		w.Write(e.body)
	case f == nil: // HEAD
	default:
		sendFile(w, f, e.size)
	}
	return nil
}

// sendFile sends n bytes of f as the body: with sendfile(2) when both
// sides allow, else by copying. Errors are the engine's to handle (it
// closes the connection); there is nothing left to answer.
func sendFile(w engine.ResponseWriter, f fs.File, n int64) {
	if fsnd, ok := w.(engine.FileSender); ok {
		if osf, ok := f.(*os.File); ok {
			fsnd.SendFile(osf, 0, n)
			return
		}
	}
	io.CopyN(w, f, n)
}

// redirect answers a directory path without its trailing slash with a
// redirect to the path with it, keeping the query.
func (s *Server) redirect(w engine.ResponseWriter, r *engine.Request, e *entry) {
	loc := e.location
	if len(r.Query) > 0 {
		loc += "?" + string(r.Query)
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusMovedPermanently)
}

func statusMessage(status int) string {
	switch status {
	case http.StatusNotFound:
		return "no such file"
	case http.StatusForbidden:
		return "permission denied"
	}
	return http.StatusText(status)
}
