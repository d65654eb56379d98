package cgi

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// Options configures a Gateway (see New). Exactly one of Script and Dir
// is set. The yaml tags are the keys a config file's cgi entry sets them
// with (components.CGIOptions embeds Options); Logger is for Go code only.
type Options struct {
	// Script is the program run for every request the component sees.
	Script string `yaml:"script"`

	// Dir holds programs: the request path below Prefix names one, and
	// what follows its name is PATH_INFO (/cgi-bin/app.cgi/a/b runs
	// Dir/app.cgi with PATH_INFO /a/b). Names starting with '.' are never
	// run; a program that is not executable gets 403 (and a warning
	// logged saying so), no program 404.
	Dir string `yaml:"dir"`

	// Prefix is the URL path the Script or Dir is mounted at, e.g.
	// "/cgi-bin/". With Dir it is stripped before the path is looked up
	// (default "/"). With Script it becomes SCRIPT_NAME and the rest of
	// the path PATH_INFO; unset, the whole path is SCRIPT_NAME.
	Prefix string `yaml:"prefix"`

	// Timeout bounds a program's whole run. A program still running then
	// is killed with its process group: before its header that is a 504
	// (also while the request body is still arriving: the rest is not
	// read and the connection closes), after it the response is cut
	// short. Default 30s.
	Timeout time.Duration `yaml:"timeout"`

	// MaxRunning bounds how many of the component's programs run at once:
	// a request beyond it gets 503 with Retry-After, and no program is
	// started for it. Default 64.
	MaxRunning int `yaml:"max_running"`

	// Env adds variables to the programs' environment (PATH is the
	// server's unless set here). It cannot replace the request's
	// meta-variables, which are set after it.
	Env map[string]string `yaml:"env"`

	// MaxHeader bounds the response header a program writes; a longer one
	// is a 502. Default 64 KiB.
	MaxHeader int `yaml:"max_header"`

	// MaxBody bounds a chunked request body, which is read whole before
	// the program starts because CGI needs CONTENT_LENGTH: the first 64
	// KiB in memory, the rest in an unlinked temporary file, released as
	// soon as the request ends or the client goes. A larger one gets 413.
	// Bodies with a Content-Length are streamed to the program whatever
	// their size (the server's body limit applies). Default 8 MiB.
	MaxBody int64 `yaml:"max_body"`

	// DocRoot is the document root PATH_INFO is mapped under for
	// PATH_TRANSLATED (which never names anything outside it), and
	// DOCUMENT_ROOT. Default: the server's working directory.
	DocRoot string `yaml:"doc_root"`

	// Logger receives the programs' stderr, line by line, and failures.
	// Nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// Defaults for the zero fields of Options.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxHeader  = 64 << 10
	DefaultMaxBody    = 8 << 20
	DefaultMaxRunning = 64
)

const (
	chunkSize     = 32 << 10  // one read of the program's stdout
	maxPending    = 256 << 10 // stdout held in memory while the request body is still being fed
	maxStderrLine = 4 << 10   // longer stderr lines are logged truncated
	maxStderrLogs = 100       // stderr lines logged per request; the rest are counted
)

// A Gateway runs a CGI program for each request it handles (see the
// package doc): the program Options.Script names, or the one the request
// path names under Options.Dir. Handle decides the program and sets up
// the content phase, which runs it; Close kills the programs still
// running. A Gateway is safe for concurrent use.
type Gateway struct {
	script     string   // absolute; "" in Dir mode
	dir        *os.Root // Dir mode
	dirPath    string   // absolute Dir
	prefix     string   // without its trailing slash
	timeout    time.Duration
	env        []string // PATH and Options.Env
	maxHdr     int
	maxBody    int64
	maxRunning int
	docRoot    string
	log        *slog.Logger
	host       string // os.Hostname, for SERVER_NAME without a Host field

	mu      sync.Mutex
	running int               // programs admitted and not yet reaped
	runs    map[*run]struct{} // those started
	closed  bool
	reaped  sync.WaitGroup // one count per program admitted
}

var (
	_ pipe.Component = (*Gateway)(nil)
	_ io.Closer      = (*Gateway)(nil)
)

// New checks opts (Script must be an executable file, Dir a directory)
// and returns the Gateway. Its errors start with "cgi: " and name the
// option at fault with its config key (`cgi: prefix "x" must start with
// /`).
func New(opts Options) (*Gateway, error) {
	g := &Gateway{
		timeout:    opts.Timeout,
		maxHdr:     opts.MaxHeader,
		maxBody:    opts.MaxBody,
		maxRunning: opts.MaxRunning,
		log:        opts.Logger,
		prefix:     strings.TrimSuffix(opts.Prefix, "/"),
		runs:       map[*run]struct{}{},
	}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if g.maxRunning <= 0 {
		g.maxRunning = DefaultMaxRunning
	}
	if g.maxHdr <= 0 {
		g.maxHdr = DefaultMaxHeader
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultMaxBody
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	if opts.Prefix != "" && opts.Prefix[0] != '/' {
		return nil, fmt.Errorf("cgi: prefix %q must start with /", opts.Prefix)
	}
	switch {
	case opts.Script != "" && opts.Dir != "":
		return nil, errors.New("cgi: set script or dir, not both")
	case opts.Script != "":
		abs, err := filepath.Abs(opts.Script)
		if err != nil {
			return nil, fmt.Errorf("cgi: script %q: %v", opts.Script, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("cgi: script: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("cgi: script %q is not a regular file", opts.Script)
		}
		if fi.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("cgi: script %q is not executable", opts.Script)
		}
		g.script = abs
	case opts.Dir != "":
		abs, err := filepath.Abs(opts.Dir)
		if err != nil {
			return nil, fmt.Errorf("cgi: dir %q: %v", opts.Dir, err)
		}
		root, err := os.OpenRoot(abs)
		if err != nil {
			return nil, fmt.Errorf("cgi: dir: %w", err)
		}
		g.dir, g.dirPath = root, abs
	default:
		return nil, errors.New("cgi: set script or dir")
	}
	docRoot := opts.DocRoot
	if docRoot == "" {
		docRoot = "."
	}
	var err error
	if g.docRoot, err = filepath.Abs(docRoot); err != nil {
		return nil, fmt.Errorf("cgi: doc_root %q: %v", opts.DocRoot, err)
	}
	g.host, _ = os.Hostname()
	if g.host == "" {
		g.host = "localhost"
	}

	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	g.env = append(g.env, "PATH="+path)
	names := make([]string, 0, len(opts.Env))
	for k := range opts.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := opts.Env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("cgi: env: invalid variable %q", k)
		}
		g.env = append(g.env, k+"="+v)
	}
	return g, nil
}

// Handle finds the program for the request (400 for a path that is not
// clean, 404 or 403 when Dir has none to run) and sets up the content
// phase, which runs it.
func (g *Gateway) Handle(c *pipe.Conn) bool {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed { // Dir is closed too
		c.Header().Set("Retry-After", "1")
		return c.Error(http.StatusServiceUnavailable, "server shutting down")
	}
	path := string(c.Request.Path)
	if !cleanPath(path) {
		return c.Error(http.StatusBadRequest, "invalid path")
	}
	var t target
	var status int
	t.script, t.scriptName, t.pathInfo, status = g.resolve(c, path)
	if status != 0 {
		return c.Error(status, http.StatusText(status))
	}
	if t.pathInfo != "" {
		var ok bool
		if t.translated, ok = translate(g.docRoot, t.pathInfo); !ok {
			return c.Error(http.StatusBadRequest, "invalid path")
		}
	}
	c.SetContent(func(w pipe.Writer) error {
		return g.serve(c, w, t)
	})
	return true
}

// target is what a request path names: the program, its SCRIPT_NAME,
// and the PATH_INFO with its PATH_TRANSLATED ("" without PATH_INFO).
type target struct {
	script, scriptName, pathInfo, translated string
}

// cleanPath reports whether a request path may become SCRIPT_NAME and
// PATH_INFO: no "." or ".." segment, no empty segment other than the one
// a trailing slash ends with, no control byte. The engine's canonical
// path always is; this keeps CGI safe on its own.
func cleanPath(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] < ' ' || p[i] == 0x7f {
			return false
		}
	}
	for i := 0; i < len(p); {
		end := strings.IndexByte(p[i:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += i
		}
		switch seg := p[i:end]; {
		case seg == "." || seg == "..":
			return false
		case seg == "" && i > 0 && end < len(p):
			return false // "//"
		}
		i = end + 1
	}
	return true
}

// translate maps PATH_INFO under the document root for
// PATH_TRANSLATED, or reports false if the result would not be inside it.
func translate(root, pathInfo string) (string, bool) {
	p := filepath.Join(root, filepath.FromSlash(pathInfo))
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return p, true
}

// Close kills the programs still running, waits (up to 10 seconds) until
// they are reaped, and releases Dir; requests after it get 503. It may be
// called while requests are in flight, which are then cut short, and
// more than once.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	runs := make([]*run, 0, len(g.runs))
	for x := range g.runs {
		runs = append(runs, x)
	}
	g.mu.Unlock()
	for _, x := range runs {
		x.killFor(&x.closing)
	}
	reaped := make(chan struct{})
	go func() { g.reaped.Wait(); close(reaped) }()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-reaped:
	case <-t.C:
		g.log.Error("cgi: programs not reaped after close", "wait", closeWait)
	}
	if g.dir != nil {
		g.dir.Close()
	}
	return nil
}

// closeWait bounds how long Close waits for killed programs to be
// reaped (one stuck in an uninterruptible sleep cannot be).
const closeWait = 10 * time.Second

// admit counts a program about to start, or returns why it may not: the
// component is closed, or MaxRunning programs run already.
func (g *Gateway) admit() (status int, msg string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return http.StatusServiceUnavailable, "server shutting down"
	case g.running >= g.maxRunning:
		return http.StatusServiceUnavailable, "too many CGI programs running"
	}
	g.running++
	g.reaped.Add(1)
	return 0, ""
}

// started records a started program, which Close must kill. It reports
// false if Close came first: the caller kills it.
func (g *Gateway) started(x *run) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs[x] = struct{}{}
	return !g.closed
}

// done uncounts a program admitted, once reaped (or never started).
func (g *Gateway) done(x *run) {
	g.mu.Lock()
	delete(g.runs, x)
	g.running--
	g.mu.Unlock()
	g.reaped.Done()
}

// forbidden logs at warn why the program at rel, under Dir, gets 403:
// the client is told only the status. The name comes from the request
// path, which cleanPath let through; the logger's handler quotes it.
// The line names c's request ID.
func (g *Gateway) forbidden(c *pipe.Conn, msg, rel string) {
	g.log.Warn(msg, "script", g.prefix+"/"+rel, "file", filepath.Join(g.dirPath, filepath.FromSlash(rel)), "status", http.StatusForbidden, c.RequestIDAttr())
}

// resolve maps a request path to the program, SCRIPT_NAME and PATH_INFO,
// or to an error status; c is the request, for its log lines.
func (g *Gateway) resolve(c *pipe.Conn, path string) (script, scriptName, pathInfo string, status int) {
	if g.dir == nil {
		if g.prefix != "" && (path == g.prefix || strings.HasPrefix(path, g.prefix+"/")) {
			return g.script, g.prefix, path[len(g.prefix):], 0
		}
		return g.script, path, "", 0
	}
	if g.prefix != "" {
		if path != g.prefix && !strings.HasPrefix(path, g.prefix+"/") {
			return "", "", "", http.StatusNotFound
		}
		path = path[len(g.prefix):]
	}
	rest := strings.Trim(path, "/")
	if rest == "" {
		return "", "", "", http.StatusNotFound
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		if s == "" || s[0] == '.' {
			return "", "", "", http.StatusNotFound
		}
		rel := strings.Join(segs[:i+1], "/")
		fi, err := g.dir.Stat(rel)
		switch {
		case err != nil && errors.Is(err, fs.ErrPermission):
			g.forbidden(c, "cgi: cannot look the program up: permission denied (the server's user needs search permission on the directories)", rel)
			return "", "", "", http.StatusForbidden
		case err != nil:
			return "", "", "", http.StatusNotFound
		case fi.IsDir():
			continue
		case !fi.Mode().IsRegular():
			return "", "", "", http.StatusNotFound
		case fi.Mode()&0o111 == 0:
			g.forbidden(c, "cgi: program is not executable (make it so: chmod +x FILE)", rel)
			return "", "", "", http.StatusForbidden
		}
		if i+1 < len(segs) {
			pathInfo = "/" + strings.Join(segs[i+1:], "/")
		}
		if strings.HasSuffix(path, "/") {
			pathInfo += "/"
		}
		return filepath.Join(g.dirPath, filepath.FromSlash(rel)), g.prefix + "/" + rel, pathInfo, 0
	}
	return "", "", "", http.StatusNotFound
}
