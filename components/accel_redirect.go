package components

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "accel_redirect", Kind: KindFilter,
		Example: `accel_redirect: {locations: {/protected/: /srv/private}, sendfile: [/srv/exports]}`,
	}, func(o AccelRedirectOptions, _ Context) (pipe.Component, error) { return NewAccelRedirect(o) })
}

// The response fields an application sets to hand a file to the server.
const (
	accelRedirectField = "X-Accel-Redirect"
	sendfileField      = "X-Sendfile"
)

// AccelRedirectOptions configures the accel_redirect filter: the
// internal roots an application may hand files from. Both are opt-in: a
// field naming a place no option lists is refused.
type AccelRedirectOptions struct {
	// Locations maps the URI prefixes an X-Accel-Redirect field may name
	// (starting and ending with "/": "/protected/") to the absolute
	// directories they are served from, as nginx's internal locations do:
	// with {/protected/: /srv/private}, "X-Accel-Redirect:
	// /protected/a/b.zip" serves /srv/private/a/b.zip. The value is a
	// percent-encoded path; a query after "?" is ignored.
	Locations map[string]string `yaml:"locations"`

	// Sendfile lists the absolute directories an X-Sendfile field (an
	// absolute file name, as Apache's mod_xsendfile and lighttpd take it)
	// may name files under. Neither a Locations directory nor a Sendfile
	// one may be (or link to) the file system's root or a system
	// directory (/etc, /var, /home, /usr…): New refuses them. Keep them
	// out of the PHP root too, whose scripts hold the site's secrets
	// (wp-config.php); that is not checked.
	Sendfile []string `yaml:"sendfile"`

	// Logger receives a line for every field refused. Nil means
	// slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// AccelRedirect is the accel_redirect filter: when the response a source
// produced (fastcgi, php, proxy, cgi) carries an X-Accel-Redirect or
// X-Sendfile field naming a file under one of its configured roots, it
// drops the source's body and serves that file instead, as the files
// source would — its type, ETag and Last-Modified, ranges and the
// client's conditional fields (If-None-Match, If-Range…) applied, sent
// with sendfile(2) — so an application can authorise a download that the
// server then sends. The status becomes the file's (200, 206, 304, 412,
// 416); the fields that describe the application's body (Content-Type,
// Content-Length, Content-Encoding, Content-Range, ETag, Last-Modified,
// Accept-Ranges) are replaced, and the others it set (Set-Cookie,
// Content-Disposition, Cache-Control) kept; an error (404, 412, 416)
// drops Content-Disposition. The X-Accel-Redirect and
// X-Sendfile fields themselves are never sent to the client.
//
// A field is refused, answered 404 and logged, when it names no
// configured root, holds a "..", "." or empty segment, a backslash, a
// NUL or another control byte, or an encoded slash, or names a directory
// or a dotfile; a symbolic link is followed only while it stays inside
// its root (os.Root). A client's own request is never served from these
// roots: only an application's response field leads there.
//
// An AccelRedirect is safe for concurrent use.
type AccelRedirect struct {
	locs     []accelRoot // longest prefix first
	sendfile []accelRoot // longest directory first
	log      *slog.Logger
}

// accelRoot is one configured root: the prefix of the field values that
// lead to it (a URI prefix or a directory, ending in "/") and the files
// server for its directory.
type accelRoot struct {
	prefix string
	srv    *files.Server
}

var _ pipe.Component = (*AccelRedirect)(nil)

// NewAccelRedirect returns the accel_redirect filter (an *AccelRedirect)
// for opts. It fails when neither Locations nor Sendfile is set, for a
// location prefix that does not start and end with "/", and for a
// directory that is not absolute or cannot be opened.
func NewAccelRedirect(opts AccelRedirectOptions) (pipe.Component, error) {
	a := &AccelRedirect{log: opts.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	if len(opts.Locations) == 0 && len(opts.Sendfile) == 0 {
		return nil, errors.New("accel_redirect: no locations and no sendfile directories: nothing may be served")
	}
	fail := func(err error) (pipe.Component, error) {
		a.Close()
		return nil, err
	}
	for _, prefix := range slices.Sorted(maps.Keys(opts.Locations)) {
		dir := opts.Locations[prefix]
		if !strings.HasPrefix(prefix, "/") || !strings.HasSuffix(prefix, "/") || !accelCanonical(prefix[:len(prefix)-1]) {
			return fail(fmt.Errorf("accel_redirect: location %q must be a canonical path starting and ending with /", prefix))
		}
		srv, err := accelServer(dir)
		if err != nil {
			return fail(fmt.Errorf("accel_redirect: location %s: %w", prefix, err))
		}
		a.locs = append(a.locs, accelRoot{prefix: prefix, srv: srv})
	}
	for _, dir := range opts.Sendfile {
		srv, err := accelServer(dir)
		if err != nil {
			return fail(fmt.Errorf("accel_redirect: sendfile: %w", err))
		}
		prefix := filepath.Clean(dir)
		if prefix != "/" {
			prefix += "/"
		}
		a.sendfile = append(a.sendfile, accelRoot{prefix: prefix, srv: srv})
	}
	byLength := func(x, y accelRoot) int { return len(y.prefix) - len(x.prefix) }
	slices.SortStableFunc(a.locs, byLength)
	slices.SortStableFunc(a.sendfile, byLength)
	return a, nil
}

// systemDirs are the roots accel_redirect refuses to serve from: the
// file system's root and the directories of the system's own files.
var systemDirs = []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
	"/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var"}

// accelServer opens the files server of one root: no index files, no
// listings, dotfiles hidden.
func accelServer(dir string) (*files.Server, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("directory %q is not absolute", dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", dir, err)
	}
	if real = filepath.Clean(real); slices.Contains(systemDirs, real) {
		return nil, fmt.Errorf("directory %s is %s, a system directory: an application could hand out any file under it; name the directory of the files it may send", dir, real)
	}
	srv, err := files.New(dir, files.Options{Index: []string{}})
	if err != nil {
		return nil, fmt.Errorf("directory %s: %w", dir, err)
	}
	return srv, nil
}

// Close releases the roots' directories and open files. The pipeline
// must no longer be served.
func (a *AccelRedirect) Close() error {
	for _, r := range append(slices.Clip(a.locs), a.sendfile...) {
		r.srv.Close()
	}
	return nil
}

// Handle registers the filter.
func (a *AccelRedirect) Handle(c *pipe.Conn) bool {
	c.AddFilter(a.filter)
	return true
}

// filter looks at the final response header: without either field it
// leaves the response alone; with one it decides the file's reply.
func (a *AccelRedirect) filter(c *pipe.Conn) pipe.Wrap {
	h := c.Header()
	accel, sendfile := h.Get(accelRedirectField), h.Get(sendfileField)
	if accel == "" && sendfile == "" {
		return nil
	}
	h.Del(accelRedirectField)
	h.Del(sendfileField)
	field, value := accelRedirectField, accel
	var root *accelRoot
	var p string
	var why string
	if accel != "" {
		root, p, why = a.mapAccel(accel)
	} else {
		field, value = sendfileField, sendfile
		root, p, why = a.mapSendfile(sendfile)
	}
	for _, name := range accelReplaced {
		h.Del(name)
	}
	b := accelBodyPool.Get().(*accelBody)
	if root == nil {
		return a.refuse(c, b, field, value, why)
	}
	// The file is served as a GET of its path beneath the root would
	// be, with the client's conditional and range fields.
	rq := *c.Request
	if !rq.IsMethod("HEAD") {
		rq.Method = accelGET
	}
	rq.Path = []byte(p)
	rq.RawPath, rq.Query = rq.Path, nil
	root.srv.Decide(&b.rp, &rq)
	if st := b.rp.Status(); st == http.StatusMovedPermanently {
		// A directory: its redirect would reveal the internal path.
		b.rp = files.Reply{}
		return a.refuse(c, b, field, value, "a directory")
	}
	b.rp.SetHeader(h)
	st := b.rp.Status()
	c.SetStatus(st)
	if st != http.StatusOK && st != http.StatusPartialContent && st != http.StatusNotModified {
		h.Del("Content-Disposition") // an error is no attachment
	}
	return b.wrap
}

// refuse answers 404 for a field that names no file it may serve, and
// logs why.
func (a *AccelRedirect) refuse(c *pipe.Conn, b *accelBody, field, value, why string) pipe.Wrap {
	a.log.Warn("accel_redirect: refused", "field", field, "value", accelQuote(value), "reason", why, c.RequestIDAttr())
	h := c.Header()
	h.Del("Content-Disposition") // an error is no attachment
	c.SetStatus(http.StatusNotFound)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(int64(len(accelNotFound)))
	b.err = true
	return b.wrap
}

// accelReplaced are the fields describing the application's body, which
// the file's replace.
var accelReplaced = []string{"Content-Type", "Content-Length", "Content-Encoding", "Content-Range",
	"ETag", "Last-Modified", "Accept-Ranges", "Location", "Allow", "Vary", "X-Content-Type-Options"}

var (
	accelGET      = []byte("GET")
	accelNotFound = []byte("404 Not Found: no such file\n")
)

// accelQuote quotes a field value for a log line: ASCII only, at most
// 200 bytes of it.
func accelQuote(v string) string {
	if len(v) > 200 {
		v = v[:200] + "…"
	}
	return strconv.QuoteToASCII(v)
}

// mapAccel maps an X-Accel-Redirect value to its root and the path
// beneath it, or says why it is refused.
func (a *AccelRedirect) mapAccel(v string) (*accelRoot, string, string) {
	if i := strings.IndexByte(v, '?'); i >= 0 {
		v = v[:i]
	}
	p, ok := accelUnescape(v)
	switch {
	case !ok:
		return nil, "", "a bad percent-encoding, an encoded slash or a control byte"
	case !strings.HasPrefix(p, "/") || !accelCanonical(p):
		return nil, "", "not a canonical absolute path"
	}
	for i := range a.locs {
		if rest, ok := strings.CutPrefix(p, a.locs[i].prefix); ok {
			return &a.locs[i], "/" + rest, ""
		}
	}
	return nil, "", "no configured location"
}

// mapSendfile maps an X-Sendfile value to its root and the path beneath
// it, or says why it is refused.
func (a *AccelRedirect) mapSendfile(p string) (*accelRoot, string, string) {
	if !strings.HasPrefix(p, "/") || !accelCanonical(p) {
		return nil, "", "not a canonical absolute file name"
	}
	for _, c := range []byte(p) {
		if c < 0x20 || c == 0x7f {
			return nil, "", "a control byte"
		}
	}
	for i := range a.sendfile {
		if rest, ok := strings.CutPrefix(p, a.sendfile[i].prefix); ok {
			return &a.sendfile[i], "/" + rest, ""
		}
	}
	return nil, "", "no configured sendfile directory"
}

// accelCanonical reports whether p, which starts with "/", has no empty,
// "." or ".." segment (so no trailing slash either), and no backslash or
// NUL.
func accelCanonical(p string) bool {
	if p == "" || p[0] != '/' || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// accelUnescape percent-decodes a path; ok is false for a bad escape, an
// encoded slash, or a control byte (raw or decoded).
func accelUnescape(s string) (string, bool) {
	if !strings.ContainsRune(s, '%') {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return "", false
			}
		}
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) {
				return "", false
			}
			hi, ok1 := httpgrammar.Unhex(s[i+1])
			lo, ok2 := httpgrammar.Unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", false
			}
			c = hi<<4 | lo
			if c == '/' {
				return "", false
			}
			i += 2
		}
		if c < 0x20 || c == 0x7f {
			return "", false
		}
		b = append(b, c)
	}
	return string(b), true
}

// accelBody is the content writer of a redirected response: it drops
// what the source writes and, on Close, sends the file (or the 404).
// Pooled with its Wrap made once.
type accelBody struct {
	rp   files.Reply
	err  bool
	next pipe.Writer
	fw   filesWriter
	wrap pipe.Wrap
}

var accelBodyPool = sync.Pool{New: func() any {
	b := &accelBody{}
	b.wrap = func(next pipe.Writer) pipe.Writer {
		b.next = next
		return b
	}
	return b
}}

// Write drops the application's body.
func (b *accelBody) Write(p []byte) (int, error) { return len(p), nil }

// Flush does nothing: the application's body is not sent.
func (b *accelBody) Flush() error { return nil }

// Close sends the file, or the error, and returns b to its pool.
func (b *accelBody) Close() error {
	var err error
	if b.err {
		_, err = b.next.Write(accelNotFound)
	} else if b.rp.HasBody() {
		b.fw.w = b.next
		err = b.rp.Send(&b.fw)
	}
	b.rp, b.err, b.next, b.fw.w = files.Reply{}, false, nil, nil
	accelBodyPool.Put(b)
	return err
}
