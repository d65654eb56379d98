package php

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// Options configures a Site: the options of the FastCGI client (the
// upstreams and their settings, root, split_path, index, no_exec, env,
// timeouts), inline, and what the shortcut adds.
type Options struct {
	fastcgi.Options `yaml:",inline"`

	// Try lists what a request path that names no script is tried as, in
	// order, as nginx's try_files does: "$path" (a static file), "$path/"
	// (a directory: the redirect to its slash form, its index script or
	// static index file) and fixed script paths ("/index.php", a front
	// controller, run with the request's URI and query). Default [$path,
	// $path/, /index.php]; [$path, $path/] is a site without a front
	// controller, whose missing paths are 404.
	Try []string `yaml:"try"`

	// Dotfiles says how a path with a segment starting with "."
	// (".htaccess", ".env", ".git/") is refused: "hide" (the default)
	// answers 404, as for a missing file, "deny" answers 403. Such a path
	// is never served or run; a first segment ".well-known" (RFC 8615) is
	// not a dotfile.
	Dotfiles string `yaml:"dotfiles"`

	// Static tunes the files server that serves the static files; its
	// root is Root.
	Static StaticOptions `yaml:"static"`

	// Processes is how many processes serve the site side by side (a
	// master's workers): the static files' cache budgets are divided by
	// it (files.Options.SharedBy). Go code and the config set it; 0 or
	// 1 is this process alone.
	Processes int `yaml:"-"`
}

// StaticOptions are the options of package files (files.Options) that
// the php shortcut lets a site set for its static files; the others
// (try, strip_prefix, browse, follow_symlinks, dotfiles) are the
// shortcut's to decide. The zero value is files' defaults.
type StaticOptions struct {
	// Index lists the static index files tried for a directory after the
	// index script (default [index.html]; an empty list means none). A
	// name of PHP source is refused.
	Index []string `yaml:"index"`

	// MaxAge, when positive, sends "Cache-Control: max-age=N" and an
	// Expires field with static files (whole seconds: 1h, 720h).
	MaxAge time.Duration `yaml:"max_age"`

	// Immutable adds "immutable" to Cache-Control, for fingerprinted
	// assets; it needs MaxAge.
	Immutable bool `yaml:"immutable"`

	// NoCache sends "Cache-Control: no-cache"; it excludes MaxAge.
	NoCache bool `yaml:"no_cache"`

	// NoSniff adds "X-Content-Type-Options: nosniff".
	NoSniff bool `yaml:"nosniff"`

	// Types maps extensions to media types ({".md": "text/markdown"}),
	// before the built-in table.
	Types map[string]string `yaml:"types"`

	// Precompressed lists the codings of precompressed files served
	// ("a.css.br" beside "a.css"): default [br, zstd, gzip]; an empty
	// list turns them off.
	Precompressed []string `yaml:"precompressed"`

	// Expiry is how long what the server learned about a path is trusted
	// (default 1s; negative: every request asks the file system).
	Expiry time.Duration `yaml:"expiry"`
}

// filesOptions returns o as files.Options.
func (o StaticOptions) filesOptions() files.Options {
	return files.Options{
		Index: o.Index, MaxAge: o.MaxAge, Immutable: o.Immutable, NoCache: o.NoCache, NoSniff: o.NoSniff,
		Types: o.Types, Precompressed: o.Precompressed, Expiry: o.Expiry, Dotfiles: files.DotfilesHide,
	}
}

// DefaultTry is Options.Try when it is nil.
var DefaultTry = []string{"$path", "$path/", "/index.php"}

// sourceExts are the extensions of files never served as static files,
// whatever their case: PHP source and what PHP includes.
var sourceExts = []string{".php", ".phtml", ".php3", ".php4", ".php5", ".php7", ".php8", ".phps", ".phar", ".inc"}

// A Site is the php shortcut: a pipe Component (a source) that answers
// each request with a static file, a script's response, a redirect or
// an error, as the package documentation describes. It is safe for
// concurrent use; Close releases it.
type Site struct {
	cl     *fastcgi.Client
	static *files.Server
	try    []candidate
	split  []string // the split_path extensions
	source []string // sourceExts and split
	index  string   // the index script
	deny   bool     // dotfiles: deny
}

var _ pipe.Component = (*Site)(nil)

// candidate is one Options.Try entry.
type candidate struct {
	kind   int
	script string // tryScript: the fixed path
}

const (
	tryPath   = iota // $path
	tryDir           // $path/
	tryScript        // a fixed script path
)

// New checks opts, opens the root for the static files and makes the
// FastCGI client. Its errors start with "php: " or, for the FastCGI
// options, "fastcgi: ".
func New(opts Options) (*Site, error) {
	s := &Site{split: opts.SplitPath, index: opts.Index}
	if len(s.split) == 0 {
		s.split = fastcgi.DefaultSplitPath
	}
	s.split = slices.Clone(s.split)
	s.source = append(slices.Clone(sourceExts), s.split...)
	if s.index == "" {
		s.index = fastcgi.DefaultIndex
	}
	if opts.Script != "" {
		return nil, errors.New("php: script: the php shortcut picks the script itself; use try for a front controller")
	}
	switch opts.Dotfiles {
	case "", files.DotfilesHide:
	case files.DotfilesDeny:
		s.deny = true
	default:
		return nil, fmt.Errorf("php: dotfiles %q: want hide or deny", opts.Dotfiles)
	}
	try := opts.Try
	if try == nil {
		try = DefaultTry
	}
	if len(try) == 0 {
		return nil, errors.New("php: try: an empty list answers nothing")
	}
	for _, t := range try {
		c, err := s.parseTry(t)
		if err != nil {
			return nil, err
		}
		s.try = append(s.try, c)
	}
	st := opts.Static.filesOptions().SharedBy(opts.Processes)
	for _, name := range st.Index {
		if s.sourceName(name) {
			return nil, fmt.Errorf("php: static: index %q is PHP source, never served as a static file", name)
		}
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("php: static: %w", err)
	}
	var err error
	// A local redirect from a script runs this Site's try logic again for
	// its path: a static file, a directory's index or the front
	// controller, as a request for it would.
	opts.Options.LocalRedirect = s.Handle
	if s.cl, err = fastcgi.New(opts.Options); err != nil {
		return nil, err
	}
	if s.static, err = files.New(opts.Root, st); err != nil {
		s.cl.Close()
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("php: root %s: %v", opts.Root, pe.Err)
		}
		return nil, fmt.Errorf("php: %w", err)
	}
	return s, nil
}

// parseTry checks one Options.Try entry.
func (s *Site) parseTry(t string) (candidate, error) {
	switch t {
	case "$path":
		return candidate{kind: tryPath}, nil
	case "$path/":
		return candidate{kind: tryDir}, nil
	}
	if t == "" || t[0] != '/' || !canonical(t) || s.scriptEnd([]byte(t)) != len(t) {
		return candidate{}, fmt.Errorf("php: try %q: want $path, $path/ or the path of a script such as /index.php", t)
	}
	return candidate{kind: tryScript, script: t}, nil
}

// canonical reports whether p has no empty, "." or ".." segment and no
// byte outside printable ASCII, backslash, '?' or '#'.
func canonical(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '\\' || c == '?' || c == '#' {
			return false
		}
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "" || seg[0] == '.' {
			return false
		}
	}
	return true
}

// Close releases the FastCGI client and the static files' root. Requests
// after Close fail.
func (s *Site) Close() error {
	err := s.cl.Close()
	if serr := s.static.Close(); err == nil {
		err = serr
	}
	return err
}

// Client returns the FastCGI client the Site runs its scripts with.
func (s *Site) Client() *fastcgi.Client { return s.cl }

// UpstreamSet returns the name of the live set its FastCGI upstreams
// are registered under (see fastcgi.Client.UpstreamSet), or "" if none.
func (s *Site) UpstreamSet() string { return s.cl.UpstreamSet() }

// Handle answers c's request: it sets up a static file, a script's run,
// a redirect or an error. It returns false when it answered with an
// error that ends the pipeline.
func (s *Site) Handle(c *pipe.Conn) bool {
	r := c.Request
	p := r.Path
	if len(p) == 0 || p[0] != '/' {
		return c.Error(http.StatusNotFound, "not found")
	}
	for _, b := range p {
		if b < ' ' || b == 0x7f {
			// No URL of a site has one; a script would get it in
			// PATH_INFO or SCRIPT_NAME (CVE-2019-11043).
			return c.Error(http.StatusBadRequest, "control character in the path")
		}
	}
	if hasDotSegment(p) {
		if s.deny {
			return c.Error(http.StatusForbidden, "forbidden")
		}
		return c.Error(http.StatusNotFound, "not found")
	}
	if s.scriptEnd(p) >= 0 {
		return s.runPath(c, string(p))
	}
	isDir := false // a static lookup found a directory at p
	for _, cand := range s.try {
		switch cand.kind {
		case tryPath:
			if p[len(p)-1] == '/' {
				continue
			}
			if s.sourceBytes(lastSegment(p)) {
				return c.Error(http.StatusNotFound, "not found")
			}
			switch s.serveStatic(c, r, p) {
			case staticServed:
				return true
			case staticDir:
				isDir = true
			}
		case tryDir:
			if p[len(p)-1] != '/' {
				if !isDir && !s.isDir(r, p) {
					continue
				}
				isDir = true
				if s.hasIndex(r, p) {
					return s.redirect(c, r)
				}
				continue
			}
			sc, err := s.cl.Resolve(string(p) + s.index)
			switch {
			case err == nil:
				return s.cl.Run(c, sc)
			case errors.Is(err, fastcgi.ErrForbidden):
				return c.Error(http.StatusForbidden, "forbidden")
			}
			if s.serveStatic(c, r, p) == staticServed {
				return true
			}
		case tryScript:
			if ok, done := s.runScript(c, cand.script); done {
				return ok
			}
		}
	}
	return c.Error(http.StatusNotFound, "not found")
}

// runPath runs the script the path p names, or answers 404 or 403.
func (s *Site) runPath(c *pipe.Conn, p string) bool {
	sc, err := s.cl.Resolve(p)
	switch {
	case err == nil:
		return s.cl.Run(c, sc)
	case errors.Is(err, fastcgi.ErrForbidden):
		return c.Error(http.StatusForbidden, "forbidden")
	}
	return c.Error(http.StatusNotFound, "not found")
}

// runScript runs the fixed script p (a front controller) if it exists;
// done is false when it does not, for the next candidate to try.
func (s *Site) runScript(c *pipe.Conn, p string) (ok, done bool) {
	sc, err := s.cl.Resolve(p)
	switch {
	case err == nil:
		return s.cl.Run(c, sc), true
	case errors.Is(err, fastcgi.ErrForbidden):
		return c.Error(http.StatusForbidden, "forbidden"), true
	}
	return false, false
}

// scriptEnd returns where the script's name ends in p: after the first
// segment ending in a split_path extension (and longer than it), or -1.
// It is fastcgi.Client.Resolve's split, so that what the shortcut takes
// for a script is what Resolve looks for.
func (s *Site) scriptEnd(p []byte) int {
	for i := 1; i <= len(p); {
		end := bytes.IndexByte(p[i:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += i
		}
		seg := p[i:end]
		for _, ext := range s.split {
			if len(seg) > len(ext) && string(seg[len(seg)-len(ext):]) == ext {
				return end
			}
		}
		i = end + 1
	}
	return -1
}

// sourceName reports whether a file name is PHP source by its extension,
// in any case.
func (s *Site) sourceName(name string) bool { return s.sourceBytes([]byte(name)) }

func (s *Site) sourceBytes(name []byte) bool {
	for _, ext := range s.source {
		if len(name) > len(ext) && httpgrammar.EqualFold(name[len(name)-len(ext):], ext) {
			return true
		}
	}
	return false
}

// lastSegment returns what follows the last slash of p.
func lastSegment(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// hasDotSegment reports whether the canonical path p has a segment
// starting with '.' other than a first segment ".well-known".
func hasDotSegment(p []byte) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '/' && p[i+1] == '.' {
			if i == 0 && (string(p[1:]) == ".well-known" || bytes.HasPrefix(p[1:], wellKnown)) {
				continue
			}
			return true
		}
	}
	return false
}

var wellKnown = []byte(".well-known/")

// Results of serveStatic.
const (
	staticMissing = iota // no file: the next candidate
	staticDir            // a directory without the slash: the next candidate
	staticServed         // answered: c is set up
)

// serveStatic looks the path p up as a static file. When files finds
// something other than a missing file or a directory it sets up c with
// its answer (the file, 304, 412, 416, 403, 405) and returns
// staticServed. For the lookup, a request of a method other than GET
// and HEAD is looked up as a GET: a POST to a missing path still goes
// to the front controller.
func (s *Site) serveStatic(c *pipe.Conn, r *engine.Request, p []byte) int {
	b := bodyPool.Get().(*staticBody)
	probe := r
	var rq engine.Request
	get := r.IsMethod("GET") || r.IsMethod("HEAD")
	if !get || string(p) != string(r.Path) {
		rq = *r
		rq.Path = p
		if string(p) != string(r.Path) {
			rq.RawPath = p
		}
		if !get {
			rq.Method = methodGET
		}
		probe = &rq
	}
	s.static.Decide(&b.rp, probe)
	switch b.rp.Status() {
	case http.StatusNotFound:
		b.put()
		return staticMissing
	case http.StatusMovedPermanently:
		b.put()
		return staticDir
	}
	if !get {
		// The file exists: the answer is files' to the method itself.
		b.rp = files.Reply{}
		rq.Method = r.Method
		s.static.Decide(&b.rp, &rq)
	}
	b.rp.SetHeader(c.Header())
	c.SetStatus(b.rp.Status())
	if !b.rp.HasBody() {
		b.put()
		c.SetContent(nil)
		return staticServed
	}
	c.SetContent(b.content)
	return staticServed
}

var methodGET = []byte("GET")

// isDir reports whether the path p, without its slash, is a directory
// under the root, as files sees it.
func (s *Site) isDir(r *engine.Request, p []byte) bool {
	return s.probe(r, p) == http.StatusMovedPermanently
}

// probe returns the status files would answer a GET of p with.
func (s *Site) probe(r *engine.Request, p []byte) int {
	rq := *r
	rq.Method, rq.Path, rq.RawPath = methodGET, p, p
	var rp files.Reply
	s.static.Decide(&rp, &rq)
	return rp.Status()
}

// hasIndex reports whether the directory p (without its slash) has an
// index: the index script, or a static index file.
func (s *Site) hasIndex(r *engine.Request, p []byte) bool {
	dir := string(p) + "/"
	if _, err := s.cl.Resolve(dir + s.index); err == nil || errors.Is(err, fastcgi.ErrForbidden) {
		return true
	}
	return s.probe(r, []byte(dir)) != http.StatusNotFound
}

// redirect answers with a redirect to the request path with a slash
// added, the query kept: 301 for GET and HEAD, 308 for other methods.
func (s *Site) redirect(c *pipe.Conn, r *engine.Request) bool {
	loc := (&url.URL{Path: string(r.Path) + "/"}).EscapedPath()
	if len(r.Query) > 0 {
		loc += "?" + string(r.Query)
	}
	status := http.StatusPermanentRedirect
	if r.IsMethod("GET") || r.IsMethod("HEAD") {
		status = http.StatusMovedPermanently
	}
	h := c.Header()
	h.Set("Location", loc)
	h.SetContentLength(0)
	c.SetStatus(status)
	c.SetContent(nil)
	return true
}

// staticBody carries a decided reply to the content phase. Pooled with
// its content function made once.
type staticBody struct {
	rp      files.Reply
	w       bodyWriter
	content pipe.Content
}

func (b *staticBody) put() {
	b.rp, b.w.w = files.Reply{}, nil
	bodyPool.Put(b)
}

var bodyPool sync.Pool

func init() {
	bodyPool.New = func() any {
		b := &staticBody{}
		b.content = func(w pipe.Writer) error {
			b.w.w = w
			err := b.rp.Send(&b.w)
			b.put()
			return err
		}
		return b
	}
}

// bodyWriter is a files.BodyWriter over a pipe.Writer: file regions go
// through pipe.SendFile, which uses sendfile(2) when no filter applies.
type bodyWriter struct{ w pipe.Writer }

func (w *bodyWriter) Write(p []byte) (int, error) { return w.w.Write(p) }

func (w *bodyWriter) SendFile(f *os.File, offset, n int64) error {
	return pipe.SendFile(w.w, f, offset, n)
}
