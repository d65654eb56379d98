package fastcgi

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sluice-server/sluice/upstream"
)

// ErrNotFound is wrapped by Resolve's errors for a path that names no
// script to run: 404.
var ErrNotFound = errors.New("fastcgi: no script")

// ErrForbidden is wrapped by Resolve's errors for a path that names a
// script Sluice refuses to run: 403.
var ErrForbidden = errors.New("fastcgi: script may not run")

// Script is what a request runs: the file the FastCGI server executes
// and how the URL named it.
type Script struct {
	// Filename is the script's absolute path under Root
	// (SCRIPT_FILENAME).
	Filename string
	// Name is the URL path of the script (SCRIPT_NAME), "/a/index.php".
	Name string
	// PathInfo is the rest of the URL path after Name (PATH_INFO), ""
	// or starting with "/".
	PathInfo string
}

// Resolve maps a canonical URL path (engine.Request.Path) to the script
// it runs: the path is split after its first segment ending in one of
// Options.SplitPath (a path ending in "/" gets Options.Index appended
// first), and what precedes must name a regular file under Root, reached
// without leaving it (os.Root: no "..", no symbolic link out of it),
// with no segment starting with '.', and not under an Options.NoExec
// prefix. A path holding a control byte (a newline in PATH_INFO:
// CVE-2019-11043) never resolves. The error wraps ErrNotFound (no such
// script; a path naming no script at all) or ErrForbidden (a script that
// may not run). Results are kept for a second (up to 4096 paths), so that
// a busy script costs no stat per request: a script created or removed
// is seen at most a second later (PHP-FPM answers 404 for one removed
// meanwhile). A script found is checked again after the second with one
// stat of its file (see revalidate), and all over again once a minute;
// other results are worked out again. Resolve is safe for concurrent use.
func (cl *Client) Resolve(path string) (Script, error) {
	if s, err, ok := cl.cached(path); ok {
		return s, err
	}
	s, id, err := cl.resolve(path)
	cl.remember(path, s, err, id)
	return s, err
}

// resolveTTL is how long a Resolve result is kept before it is checked
// again; resolveFull, how long a script found is kept on revalidate's
// word before every check of resolve is made again; maxResolved bounds
// the paths kept (all are dropped when it is reached).
const (
	resolveTTL  = time.Second
	resolveFull = time.Minute
	maxResolved = 4096
)

// resolveCache keeps Resolve's results.
type resolveCache struct {
	mu sync.RWMutex
	m  map[string]resolved
}

type resolved struct {
	s    Script
	err  error
	at   upstream.Instant // when the result was last checked
	full upstream.Instant // when resolve worked it out
	id   fileID           // the script's file then; id.ok false: no revalidate
}

// cached returns the result kept for path, if fresh. path may be a
// conversion of the request's bytes: the lookup does not keep it.
func (cl *Client) cached(path string) (Script, error, bool) {
	cl.resolved.mu.RLock()
	e, ok := cl.resolved.m[path]
	cl.resolved.mu.RUnlock()
	if !ok {
		return Script{}, nil, false
	}
	renew, s, err, ok := cl.fresh(&e)
	if renew {
		cl.renew(path, e.full)
	}
	return s, err, ok
}

// cachedBytes is cached for the request's path, without converting it
// (but once a second, to renew its entry).
func (cl *Client) cachedBytes(path []byte) (Script, error, bool) {
	cl.resolved.mu.RLock()
	e, ok := cl.resolved.m[string(path)]
	cl.resolved.mu.RUnlock()
	if !ok {
		return Script{}, nil, false
	}
	renew, s, err, ok := cl.fresh(&e)
	if renew {
		cl.renew(string(path), e.full)
	}
	return s, err, ok
}

// fresh returns e's result if it is fresh, or is a script whose file
// revalidate finds unchanged: then renew is set, and the caller keeps e
// for another resolveTTL (renew).
func (cl *Client) fresh(e *resolved) (renew bool, s Script, err error, ok bool) {
	now := upstream.Now()
	if now.Sub(e.at) < resolveTTL {
		return false, e.s, e.err, true
	}
	if e.err != nil || !e.id.ok || now.Sub(e.full) >= resolveFull || !revalidate(e.id) {
		return false, Script{}, nil, false
	}
	return true, e.s, nil, true
}

// renew keeps the entry of path, if it is still the one resolve worked
// out at full, for another resolveTTL.
func (cl *Client) renew(path string, full upstream.Instant) {
	now := upstream.Now()
	cl.resolved.mu.Lock()
	if k, ok := cl.resolved.m[path]; ok && k.full == full {
		k.at = now
		cl.resolved.m[path] = k
	}
	cl.resolved.mu.Unlock()
}

func (cl *Client) remember(path string, s Script, err error, id fileID) {
	now := upstream.Now()
	cl.resolved.mu.Lock()
	if cl.resolved.m == nil || len(cl.resolved.m) >= maxResolved {
		cl.resolved.m = make(map[string]resolved)
	}
	cl.resolved.m[path] = resolved{s, err, now, now, id}
	cl.resolved.mu.Unlock()
}

// resolve is Resolve without the cache; it also returns what identifies
// the script's file for revalidate.
func (cl *Client) resolve(path string) (Script, fileID, error) {
	s, fi, err := cl.resolveFile(path)
	if err != nil {
		return Script{}, fileID{}, err
	}
	return s, identify(s.Filename, fi), nil
}

// resolveFile is resolve, returning what os.Root's stat found.
func (cl *Client) resolveFile(path string) (Script, fs.FileInfo, error) {
	if path == "" || path[0] != '/' {
		return Script{}, nil, notFound("not an absolute path")
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c < ' ' || c == 0x7f {
			return Script{}, nil, forbidden("control byte in the path")
		}
	}
	end := cl.split(path)
	if end < 0 && strings.HasSuffix(path, "/") {
		path += cl.index
		end = cl.split(path)
	}
	if end < 0 {
		return Script{}, nil, notFound("no script in the path")
	}
	name, info := path[:end], path[end:]
	for seg := range strings.SplitSeq(name[1:], "/") {
		if seg == "" || seg[0] == '.' {
			return Script{}, nil, forbidden("dot or empty segment")
		}
	}
	if cl.noExecName(name) {
		return Script{}, nil, forbidden("under a no_exec prefix")
	}
	rel := name[1:]
	fi, err := cl.root.Stat(rel)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return Script{}, nil, notFound("no such file")
	case err != nil && errors.Is(err, fs.ErrPermission):
		return Script{}, nil, forbidden("permission denied")
	case err != nil:
		// Out of the root (a symbolic link), or not a directory on the
		// way: nothing Sluice would run.
		return Script{}, nil, notFound(err.Error())
	case !fi.Mode().IsRegular():
		return Script{}, nil, notFound("not a regular file")
	}
	// Where the file is: its name may reach it through a symbolic link
	// (or a bind mount) inside the root, or spell a directory in another
	// case on a case-insensitive file system.
	real, err := cl.realPath(rel)
	if err != nil {
		return Script{}, nil, notFound(err.Error())
	}
	if cl.split("/"+real[strings.LastIndexByte(real, '/')+1:]) < 0 {
		// x.php, a symbolic link to an upload's a.jpg.
		return Script{}, nil, forbidden("a symbolic link to a file not named as a script")
	}
	if cl.noExecDir(real) {
		return Script{}, nil, forbidden("in a no_exec directory")
	}
	return Script{Filename: filepath.Join(cl.rootPath, filepath.FromSlash(rel)), Name: name, PathInfo: info}, fi, nil
}

// realPath returns the path under the root of the file rel names, its
// symbolic links resolved; an error if it leads out of the root (which
// os.Root found it did not, a moment before).
func (cl *Client) realPath(rel string) (string, error) {
	full, err := filepath.EvalSymlinks(filepath.Join(cl.rootPath, filepath.FromSlash(rel)))
	if err != nil {
		return "", err
	}
	r, err := filepath.Rel(cl.realRoot, full)
	if err != nil || !filepath.IsLocal(r) {
		return "", errors.New("out of the root")
	}
	return filepath.ToSlash(r), nil
}

// noExecDir reports whether real, a file's path under the root with its
// links resolved, lies in a NoExec directory: by its name (ASCII case
// folded), and by device and inode of each directory above it (a bind
// mount, or a case-insensitive file system's other spelling, names the
// same directory).
func (cl *Client) noExecDir(real string) bool {
	if len(cl.noExecs) == 0 {
		return false
	}
	if cl.noExecName("/" + real) {
		return true
	}
	var dirs []fs.FileInfo
	for _, p := range cl.noExecs {
		if fi, err := cl.root.Stat("." + p); err == nil {
			dirs = append(dirs, fi)
		}
	}
	for d := path.Dir(real); len(dirs) > 0; d = path.Dir(d) {
		if fi, err := cl.root.Stat(d); err == nil {
			for _, nd := range dirs {
				if os.SameFile(fi, nd) {
					return true
				}
			}
		}
		if d == "." {
			break
		}
	}
	return false
}

// split returns where the script's name ends in path: after the first
// segment ending in a SplitPath extension (and longer than it), or -1.
func (cl *Client) split(path string) int {
	for i := 1; i <= len(path); {
		end := strings.IndexByte(path[i:], '/')
		if end < 0 {
			end = len(path)
		} else {
			end += i
		}
		seg := path[i:end]
		for _, ext := range cl.splitPath {
			if len(seg) > len(ext) && strings.HasSuffix(seg, ext) {
				return end
			}
		}
		i = end + 1
	}
	return -1
}

// noExecName reports whether the script name is a NoExec prefix or
// under one, with ASCII case folded (so that "/Uploads/x.php" is refused
// wherever "/uploads" could name the same directory).
func (cl *Client) noExecName(name string) bool {
	for _, p := range cl.noExecs {
		if p == "/" || len(name) >= len(p) && strings.EqualFold(name[:len(p)], p) && (len(name) == len(p) || name[len(p)] == '/') {
			return true
		}
	}
	return false
}

func notFound(why string) error  { return &resolveError{ErrNotFound, why} }
func forbidden(why string) error { return &resolveError{ErrForbidden, why} }

// resolveError is a Resolve failure: its kind, and why (for the log).
type resolveError struct {
	kind error
	why  string
}

func (e *resolveError) Error() string { return e.kind.Error() + ": " + e.why }
func (e *resolveError) Unwrap() error { return e.kind }
