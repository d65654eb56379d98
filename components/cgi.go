package components

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// CGIOptions configures a CGI source (see NewCGI). Exactly one of Script
// and Dir is set. In a config file the scalar form `cgi: PATH` sets Script.
type CGIOptions struct {
	// Script is the program run for every request the component sees.
	Script string `yaml:"script"`

	// Dir holds programs: the request path below Prefix names one, and
	// what follows its name is PATH_INFO (/cgi-bin/app.cgi/a/b runs
	// Dir/app.cgi with PATH_INFO /a/b). Names starting with '.' are never
	// run; a program that is not executable gets 403, no program 404.
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

// Defaults for the zero fields of CGIOptions.
const (
	DefaultCGITimeout    = 30 * time.Second
	DefaultCGIMaxHeader  = 64 << 10
	DefaultCGIMaxBody    = 8 << 20
	DefaultCGIMaxRunning = 64
)

const (
	cgiChunk         = 32 << 10  // one read of the program's stdout
	cgiMaxPending    = 256 << 10 // stdout held in memory while the request body is still being fed
	cgiMaxStderrLine = 4 << 10   // longer stderr lines are logged truncated
	cgiMaxStderrLogs = 100       // stderr lines logged per request; the rest are counted
)

// CGI is a Source that runs a CGI/1.1 program (RFC 3875) for each request:
// the request's meta-variables in its environment, the request body on
// its stdin, and its stdout parsed as a CGI response (header fields, then
// the body streamed to the client, flushed whenever the program pauses).
//
// The request path becomes SCRIPT_NAME and PATH_INFO only if it has no
// "." or ".." segment, no empty segment but a trailing slash's and no
// control byte, whatever the server made of the request-target: any other
// is refused with 400. PATH_TRANSLATED is PATH_INFO under DocRoot.
//
// The request body is streamed to the program (a chunked one is read
// whole first, see MaxBody); what the program leaves unread is read and
// dropped. The engine reads and writes a connection on one goroutine, so
// nothing is sent until the whole body has been read: output the program
// writes meanwhile is held, in memory up to 256 KiB and beyond that in an
// unlinked temporary file.
//
// The program is executed directly, never through a shell, in its own
// process group and with its directory as the working directory. On
// Linux the group is killed when the timeout expires, when the client
// goes away (the server notices while the program runs, see
// pipe.Conn.Gone), when the component is closed, and when the program has
// finished, so no process of a request outlives it (elsewhere only the
// program itself is killed). The program is reaped as soon as it has
// exited and its group is killed, whatever the request is still doing.
// At most MaxRunning programs run at once. Its stderr goes to the Logger,
// line by line, at most 100 lines of 4 KiB per request.
//
// Close kills every program still running and waits until they are
// reaped (at most 10 s: a program stuck in an uninterruptible sleep cannot
// be, and is logged); requests after it get 503. A config closes its components when
// it is retired (by a reload, or at shutdown) and, once the server's
// grace period has run out, under the requests still in flight.
//
// Response header handling (RFC 3875 §6): "Status: 404 Not Found" sets
// the status; a Location without a Status answers 302 with that Location
// — for a local path too (§6.2.2 allows a server to answer a local
// redirect as a client redirect: a component cannot re-run the request
// through the server's other routes); hop-by-hop fields are dropped, the
// rest are passed on. A program that ends without a valid header (one of
// Content-Type, Location or Status, then a blank line) is answered 502,
// one that times out before it 504. The query string is never passed as
// command-line arguments (§4.4 allows omitting that, and it is how
// CVE-2012-1823 happened).
//
// The meta-variables are RFC 3875's — AUTH_TYPE, CONTENT_LENGTH,
// CONTENT_TYPE, GATEWAY_INTERFACE, PATH_INFO, PATH_TRANSLATED,
// QUERY_STRING, REMOTE_ADDR, REMOTE_HOST, REMOTE_USER, REQUEST_METHOD,
// SCRIPT_NAME, SERVER_NAME, SERVER_PORT, SERVER_PROTOCOL, SERVER_SOFTWARE
// (REMOTE_USER only for a user an earlier component admitted, such as
// basic_auth — never a name the client merely sent) — plus
// REMOTE_PORT, REQUEST_URI, SCRIPT_FILENAME, DOCUMENT_ROOT and PATH, and an
// HTTP_* variable per request header field, except: Proxy (never
// HTTP_PROXY: httpoxy, CVE-2016-5385), Authorization and
// Proxy-Authorization (§4.1.18), Content-Type and Content-Length (in their
// own variables), Transfer-Encoding, and any field whose name has a
// character other than a letter, digit or '-' (so X_Forwarded_For cannot
// pose as X-Forwarded-For). Repeated fields are joined with ", " ("; " for
// Cookie). SERVER_NAME and SERVER_PORT come from the Host field (port 80
// when it has none).
//
// A CGI is safe for concurrent use.
type CGI struct {
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
	running int                  // programs admitted and not yet reaped
	runs    map[*cgiRun]struct{} // those started
	closed  bool
	reaped  sync.WaitGroup // one count per program admitted
}

var (
	_ pipe.Component = (*CGI)(nil)
	_ io.Closer      = (*CGI)(nil)
)

// NewCGI checks opts (Script must be an executable file, Dir a directory)
// and returns the CGI source.
func NewCGI(opts CGIOptions) (pipe.Component, error) {
	g := &CGI{
		timeout:    opts.Timeout,
		maxHdr:     opts.MaxHeader,
		maxBody:    opts.MaxBody,
		maxRunning: opts.MaxRunning,
		log:        opts.Logger,
		prefix:     strings.TrimSuffix(opts.Prefix, "/"),
		runs:       map[*cgiRun]struct{}{},
	}
	if g.timeout <= 0 {
		g.timeout = DefaultCGITimeout
	}
	if g.maxRunning <= 0 {
		g.maxRunning = DefaultCGIMaxRunning
	}
	if g.maxHdr <= 0 {
		g.maxHdr = DefaultCGIMaxHeader
	}
	if g.maxBody <= 0 {
		g.maxBody = DefaultCGIMaxBody
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
			return nil, fmt.Errorf("cgi: script: %v", err)
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
			return nil, fmt.Errorf("cgi: dir: %v", err)
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
func (g *CGI) Handle(c *pipe.Conn) bool {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed { // Dir is closed too
		c.Header().Set("Retry-After", "1")
		return c.Error(http.StatusServiceUnavailable, "server shutting down")
	}
	path := string(c.Request.Path)
	if !cgiCleanPath(path) {
		return c.Error(http.StatusBadRequest, "invalid path")
	}
	var t cgiTarget
	var status int
	t.script, t.scriptName, t.pathInfo, status = g.resolve(path)
	if status != 0 {
		return c.Error(status, http.StatusText(status))
	}
	if t.pathInfo != "" {
		var ok bool
		if t.translated, ok = cgiTranslate(g.docRoot, t.pathInfo); !ok {
			return c.Error(http.StatusBadRequest, "invalid path")
		}
	}
	c.SetContent(func(w pipe.Writer) error {
		return g.serve(c, w, t)
	})
	return true
}

// cgiTarget is what a request path names: the program, its SCRIPT_NAME,
// and the PATH_INFO with its PATH_TRANSLATED ("" without PATH_INFO).
type cgiTarget struct {
	script, scriptName, pathInfo, translated string
}

// cgiCleanPath reports whether a request path may become SCRIPT_NAME and
// PATH_INFO: no "." or ".." segment, no empty segment other than the one
// a trailing slash ends with, no control byte. The engine's canonical
// path always is; this keeps CGI safe on its own.
func cgiCleanPath(p string) bool {
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

// cgiTranslate maps PATH_INFO under the document root for
// PATH_TRANSLATED, or reports false if the result would not be inside it.
func cgiTranslate(root, pathInfo string) (string, bool) {
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
func (g *CGI) Close() error {
	g.mu.Lock()
	g.closed = true
	runs := make([]*cgiRun, 0, len(g.runs))
	for x := range g.runs {
		runs = append(runs, x)
	}
	g.mu.Unlock()
	for _, x := range runs {
		x.killFor(&x.closing)
	}
	reaped := make(chan struct{})
	go func() { g.reaped.Wait(); close(reaped) }()
	t := time.NewTimer(cgiCloseWait)
	defer t.Stop()
	select {
	case <-reaped:
	case <-t.C:
		g.log.Error("cgi: programs not reaped after close", "wait", cgiCloseWait)
	}
	if g.dir != nil {
		g.dir.Close()
	}
	return nil
}

// cgiCloseWait bounds how long Close waits for killed programs to be
// reaped (one stuck in an uninterruptible sleep cannot be).
const cgiCloseWait = 10 * time.Second

// admit counts a program about to start, or returns why it may not: the
// component is closed, or MaxRunning programs run already.
func (g *CGI) admit() (status int, msg string) {
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
func (g *CGI) started(x *cgiRun) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs[x] = struct{}{}
	return !g.closed
}

// done uncounts a program admitted, once reaped (or never started).
func (g *CGI) done(x *cgiRun) {
	g.mu.Lock()
	delete(g.runs, x)
	g.running--
	g.mu.Unlock()
	g.reaped.Done()
}

// resolve maps a request path to the program, SCRIPT_NAME and PATH_INFO,
// or to an error status.
func (g *CGI) resolve(path string) (script, scriptName, pathInfo string, status int) {
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
			return "", "", "", http.StatusForbidden
		case err != nil:
			return "", "", "", http.StatusNotFound
		case fi.IsDir():
			continue
		case !fi.Mode().IsRegular():
			return "", "", "", http.StatusNotFound
		case fi.Mode()&0o111 == 0:
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

// environ builds the program's environment.
// user is the name an authentication component admitted (REMOTE_USER),
// or "".
func (g *CGI) environ(r *engine.Request, user string, t cgiTarget, length int64) []string {
	env := make([]string, 0, len(g.env)+24+len(r.Fields))
	env = append(env, g.env...)
	set := func(k, v string) { env = append(env, k+"="+v) }

	set("GATEWAY_INTERFACE", "CGI/1.1")
	set("SERVER_SOFTWARE", "sluice")
	if r.ProtoMinor == 0 {
		set("SERVER_PROTOCOL", "HTTP/1.0")
	} else {
		set("SERVER_PROTOCOL", "HTTP/1.1")
	}
	set("REQUEST_METHOD", string(r.Method))
	set("REQUEST_URI", string(r.Target))
	set("QUERY_STRING", string(r.Query))
	set("SCRIPT_NAME", t.scriptName)
	set("SCRIPT_FILENAME", t.script)
	set("DOCUMENT_ROOT", g.docRoot)
	if t.pathInfo != "" {
		set("PATH_INFO", t.pathInfo)
		set("PATH_TRANSLATED", t.translated)
	}
	name, port := splitHostPort(string(r.Host))
	if name == "" {
		name = g.host
	}
	if port == "" {
		port = "80"
	}
	set("SERVER_NAME", name)
	set("SERVER_PORT", port)
	if r.RemoteAddr != nil {
		addr, rport := splitHostPort(r.RemoteAddr.String())
		addr = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
		set("REMOTE_ADDR", addr)
		set("REMOTE_HOST", addr)
		if rport != "" {
			set("REMOTE_PORT", rport)
		}
	}
	if length > 0 {
		set("CONTENT_LENGTH", strconv.FormatInt(length, 10))
	}
	if ct := r.Header("Content-Type"); ct != nil {
		set("CONTENT_TYPE", string(ct))
	}
	if auth := r.Header("Authorization"); len(auth) > 0 {
		scheme, _, _ := strings.Cut(string(auth), " ")
		set("AUTH_TYPE", scheme)
	}
	if user != "" {
		set("REMOTE_USER", user)
	}

	// HTTP_* variables, repeated fields joined.
	type kv struct{ k, v string }
	var hs []kv
fields:
	for _, f := range r.Fields {
		k, ok := cgiHeaderVar(f.Name)
		if !ok {
			continue
		}
		for i := range hs {
			if hs[i].k == k {
				sep := ", "
				if k == "HTTP_COOKIE" {
					sep = "; "
				}
				hs[i].v += sep + string(f.Value)
				continue fields
			}
		}
		hs = append(hs, kv{k, string(f.Value)})
	}
	for _, h := range hs {
		set(h.k, h.v)
	}
	return env
}

// cgiHeaderVar returns the HTTP_* variable for a request field name, or
// false for fields that get none.
func cgiHeaderVar(name []byte) (string, bool) {
	b := make([]byte, 0, 5+len(name))
	b = append(b, "HTTP_"...)
	for _, ch := range name {
		switch {
		case 'a' <= ch && ch <= 'z':
			b = append(b, ch-'a'+'A')
		case 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9':
			b = append(b, ch)
		case ch == '-':
			b = append(b, '_')
		default:
			return "", false
		}
	}
	switch k := string(b); k {
	case "HTTP_PROXY", "HTTP_AUTHORIZATION", "HTTP_PROXY_AUTHORIZATION",
		"HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH", "HTTP_TRANSFER_ENCODING", "HTTP_":
		return "", false
	default:
		return k, true
	}
}

// splitHostPort splits "host:port", "[v6]:port", "host" or "[v6]".
func splitHostPort(s string) (host, port string) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 || strings.IndexByte(s[i:], ']') >= 0 {
		return s, ""
	}
	if strings.IndexByte(s[:i], ':') >= 0 && !strings.HasPrefix(s, "[") {
		return s, "" // a bare IPv6 address
	}
	return s[:i], s[i+1:]
}

// cgiBufs recycles the buffers stdout is read into.
var cgiBufs = sync.Pool{New: func() any { b := make([]byte, cgiChunk); return &b }}

// cgiRun is one program run.
type cgiRun struct {
	g          *CGI
	c          *pipe.Conn
	scriptName string
	cmd        *exec.Cmd

	stdinW  *os.File // nil without a body, or when a spool file is stdin
	stdoutR *os.File
	stderrR *os.File

	fed     chan struct{} // closed once nothing reads the request body any more
	bodyErr error         // the feeder's read error, set before fed closes
	unread  bool          // the feeder stopped before the body's end; set before fed closes
	feeding chan struct{} // closed when the memory feeder is done with the spool
	chunks  chan []byte   // stdout, in pooled buffers
	quit    chan struct{} // tells the stdout reader to stop
	logged  chan struct{} // closed when stderr reaches EOF

	stop     chan struct{} // closed by the first kill, or by end: the reaper may go on
	stopOnce sync.Once
	leader   chan struct{} // closed when the program has exited (not yet reaped)
	exited   chan struct{} // closed once the program is reaped and uncounted
	waitErr  error         // cmd.Wait's, set before exited closes

	timer      *time.Timer
	timedOut   atomic.Bool
	clientGone atomic.Bool
	closing    atomic.Bool // killed by Close
	mu         sync.Mutex  // guards reaped against the kills
	reaped     bool
	killed     bool // the server killed the group before it finished

	added []string // header fields set from the program's header
	wrote bool     // something was written or flushed to w
}

// serve is the content phase: run the program and send its response.
func (g *CGI) serve(c *pipe.Conn, w pipe.Writer, t cgiTarget) error {
	r := c.Request
	var in cgiInput
	length := r.ContentLength
	switch {
	case length > 0:
		in.stream = io.LimitReader(r.Body, length)
	case length < 0: // chunked: RFC 3875 needs CONTENT_LENGTH, so read it all
		spool, err := cgiSpoolBody(r.Body, g.maxBody)
		switch {
		case cgiBodyTooLarge(err):
			return cgiAnswer(c, w, http.StatusRequestEntityTooLarge, "request body too large for CGI")
		case err != nil:
			return err // the client went away or was too slow
		}
		defer spool.close()
		if length = spool.n; length > 0 {
			in.spool = spool
		}
	}

	if status, msg := g.admit(); status != 0 {
		c.Header().Set("Retry-After", "1")
		return cgiAnswer(c, w, status, msg)
	}
	x := &cgiRun{g: g, c: c, scriptName: t.scriptName}
	if err := x.start(t.script, g.environ(r, c.Value("user"), t, length), in); err != nil {
		g.done(x)
		g.log.Error("cgi: cannot run program", "script", t.scriptName, "err", err)
		return cgiAnswer(c, w, http.StatusInternalServerError, "cannot run CGI program")
	}
	err := x.respond(w)
	x.end()
	return err
}

// cgiInput is what a program reads on its stdin: nothing, the request
// body read from the connection while the program runs, or a spooled one.
type cgiInput struct {
	stream io.Reader
	spool  *cgiSpool
}

// start starts the program and the goroutines that feed its stdin, read
// its stdout and stderr, reap it, and kill it when the client goes.
func (x *cgiRun) start(script string, env []string, in cgiInput) error {
	var files []*os.File // the child's ends, closed once it has them
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	x.cmd = &exec.Cmd{Path: script, Args: []string{script}, Env: env, Dir: filepath.Dir(script)}
	cgiSysProcAttr(x.cmd)
	switch {
	case in.spool != nil && in.spool.file != nil:
		x.cmd.Stdin = in.spool.file // the program reads the file itself
	case in.spool != nil || in.stream != nil:
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		files = append(files, r)
		x.cmd.Stdin, x.stdinW = r, w
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		x.closeParentEnds()
		return err
	}
	files = append(files, outW)
	x.cmd.Stdout, x.stdoutR = outW, outR
	errR, errW, err := os.Pipe()
	if err != nil {
		x.closeParentEnds()
		return err
	}
	files = append(files, errW)
	x.cmd.Stderr, x.stderrR = errW, errR
	if err := x.cmd.Start(); err != nil {
		x.closeParentEnds()
		return err
	}

	x.stop = make(chan struct{})
	x.leader = make(chan struct{})
	x.exited = make(chan struct{})
	x.timer = time.AfterFunc(x.g.timeout, func() { x.killFor(&x.timedOut) })
	go x.reap()
	if !x.g.started(x) {
		x.killFor(&x.closing)
	}
	if gone := x.c.Gone(); gone != nil {
		go func() {
			select {
			case <-gone:
				x.killFor(&x.clientGone)
			case <-x.exited:
			}
		}()
	}

	x.fed = make(chan struct{})
	x.feeding = make(chan struct{})
	switch {
	case in.stream != nil:
		close(x.feeding)
		go x.feed(in.stream)
	case in.spool != nil && in.spool.file == nil:
		close(x.fed) // the connection is not read: output need not wait
		go x.feedMem(in.spool.mem)
	default:
		close(x.fed)
		close(x.feeding)
	}
	x.chunks = make(chan []byte, 4)
	x.quit = make(chan struct{})
	go x.readStdout()
	x.logged = make(chan struct{})
	go x.logStderr()
	return nil
}

func (x *cgiRun) closeParentEnds() {
	for _, f := range []*os.File{x.stdinW, x.stdoutR, x.stderrR} {
		if f != nil {
			f.Close()
		}
	}
}

// kill kills the program's process group, unless it has been reaped (its
// group id could then belong to someone else), and lets the reaper go on.
func (x *cgiRun) kill() { x.killFor(nil) }

// killFor is kill for a reason the response tells (see stopped): why is
// set if the group was killed.
func (x *cgiRun) killFor(why *atomic.Bool) {
	x.mu.Lock()
	if !x.reaped {
		if why != nil {
			why.Store(true)
		}
		x.killed = true
		cgiKillGroup(x.cmd.Process)
	}
	x.mu.Unlock()
	x.stopOnce.Do(func() { close(x.stop) })
}

// reap waits for the program to exit and, once it was killed or its
// response is done (stop), kills what is left of its group and reaps it,
// so that a killed program is reaped at once, whatever the request's
// goroutine is still waiting for (a request body still arriving).
func (x *cgiRun) reap() {
	cgiWaitExited(x.cmd.Process) // without reaping: the group id stays ours
	close(x.leader)
	<-x.stop
	x.mu.Lock()
	cgiKillGroup(x.cmd.Process) // whatever the program left running
	x.reaped = true
	x.mu.Unlock()
	x.timer.Stop()
	x.waitErr = x.cmd.Wait()
	x.g.done(x)
	close(x.exited)
}

// feed copies the request body from the connection to the program's
// stdin. A program may stop reading it (a broken pipe is not an error):
// the rest of the body is then read and dropped, so the client, still
// sending, gets the response on a connection that stays usable. Once the
// program is killed (its timeout, say) feed stops reading, so that the
// answer need not wait for the rest of the body; the connection then
// closes. A failing body kills the program.
func (x *cgiRun) feed(body io.Reader) {
	defer close(x.fed)
	buf := cgiBufs.Get().(*[]byte)
	defer cgiBufs.Put(buf)
	out := x.stdinW
	for {
		select {
		case <-x.stop:
			x.unread = true
			x.stdinW.Close()
			return
		default:
		}
		n, rerr := body.Read(*buf)
		if n > 0 && out != nil {
			if _, err := out.Write((*buf)[:n]); err != nil {
				out.Close()
				out = nil
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			x.bodyErr = rerr
			x.kill()
			break
		}
	}
	x.stdinW.Close()
}

// feedMem writes a body spooled in memory to the program's stdin.
func (x *cgiRun) feedMem(b []byte) {
	defer close(x.feeding)
	x.stdinW.Write(b) // a program may stop reading
	x.stdinW.Close()
}

// readStdout sends the program's stdout to x.chunks until EOF.
func (x *cgiRun) readStdout() {
	defer close(x.chunks)
	for {
		buf := cgiBufs.Get().(*[]byte)
		n, err := x.stdoutR.Read(*buf)
		if n > 0 {
			select {
			case x.chunks <- (*buf)[:n]:
			case <-x.quit:
				cgiBufs.Put(buf)
				return
			}
		} else {
			cgiBufs.Put(buf)
		}
		if err != nil {
			return
		}
	}
}

func cgiPut(b []byte) {
	b = b[:cap(b)]
	cgiBufs.Put(&b)
}

// logStderr logs the program's stderr line by line, a bounded number of
// lines of bounded length, and drains the rest.
func (x *cgiRun) logStderr() {
	defer close(x.logged)
	br := bufio.NewReaderSize(x.stderrR, cgiMaxStderrLine)
	logged, dropped := 0, 0
	truncated := false // inside a line too long to log whole
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			cont := truncated
			truncated = err == bufio.ErrBufferFull
			if !cont {
				if logged < cgiMaxStderrLogs {
					logged++
					x.g.log.Warn("cgi: stderr", "script", x.scriptName,
						"line", strings.TrimRight(string(line), "\r\n"), "truncated", truncated)
				} else {
					dropped++
				}
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			break
		}
	}
	if dropped > 0 {
		x.g.log.Warn("cgi: stderr lines not logged", "script", x.scriptName, "count", dropped)
	}
}

// respond reads the program's header, sets up the response and streams
// the body. It stops early when the program is killed (stop).
func (x *cgiRun) respond(w pipe.Writer) error {
	// The header.
	var hdr []byte
	var rest []byte
	for {
		var b []byte
		ok := false
		select {
		case b, ok = <-x.chunks:
		case <-x.stop:
		}
		if !ok {
			return x.failStopped(w)
		}
		scan := max(0, len(hdr)-2) // a blank line may straddle reads
		hdr = append(hdr, b...)
		cgiPut(b)
		if end, bodyAt := cgiHeaderEnd(hdr, scan); end >= 0 {
			hdr, rest = hdr[:end], hdr[bodyAt:]
			break
		}
		if len(hdr) > x.g.maxHdr {
			x.kill()
			return x.fail(w, http.StatusBadGateway, "CGI program's header is too large")
		}
	}
	if len(hdr) > x.g.maxHdr {
		x.kill()
		return x.fail(w, http.StatusBadGateway, "CGI program's header is too large")
	}
	if err := x.setHeader(hdr); err != nil {
		x.kill()
		x.g.log.Warn("cgi: invalid response header", "script", x.scriptName, "err", err)
		return x.fail(w, http.StatusBadGateway, "CGI program sent an invalid header")
	}

	// Nothing goes to the client while the body feeder may still read the
	// request: the engine reads and writes a connection on one goroutine.
	// Meanwhile stdout is held in memory, up to a bound, and past it in an
	// unlinked temporary file (a program echoing a large upload).
	pending := [][]byte{rest}
	held := len(rest)
	putPending := func() {
		for _, b := range pending[1:] {
			cgiPut(b)
		}
	}
	var spill *os.File
	defer func() {
		if spill != nil {
			spill.Close()
		}
	}()
	chunks := x.chunks
	for waiting := true; waiting; {
		select {
		case <-x.fed:
			waiting = false
		case <-x.stop:
			putPending()
			return x.failStopped(w)
		case b, ok := <-chunks:
			if !ok {
				chunks = nil
				continue
			}
			if spill == nil && held+len(b) <= cgiMaxPending {
				pending = append(pending, b)
				held += len(b)
				continue
			}
			var err error
			if spill == nil {
				spill, err = cgiTempFile()
			}
			if err == nil {
				_, err = spill.Write(b)
			}
			cgiPut(b)
			if err != nil {
				x.kill()
				putPending()
				x.g.log.Error("cgi: cannot hold output", "script", x.scriptName, "err", err)
				return x.fail(w, http.StatusInternalServerError, "cannot hold CGI output")
			}
		}
	}
	if x.bodyErr != nil {
		putPending()
		return x.failBody(w)
	}
	for i, b := range pending {
		if len(b) > 0 {
			x.wrote = true
			if _, err := w.Write(b); err != nil {
				x.kill()
				for _, b := range pending[i+1:] {
					cgiPut(b)
				}
				return err
			}
		}
		if i > 0 {
			cgiPut(b)
		}
	}
	if spill != nil {
		x.wrote = true
		buf := cgiBufs.Get().(*[]byte)
		_, err := io.CopyBuffer(cgiWriterOnly{w}, io.NewSectionReader(spill, 0, 1<<62), *buf)
		cgiBufs.Put(buf)
		if err != nil {
			x.kill()
			return err
		}
	}

	// The body, flushed whenever the program pauses.
	for chunks != nil {
		var b []byte
		ok := false
		select {
		case b, ok = <-chunks:
		case <-x.stop:
		default:
			x.wrote = true
			if err := w.Flush(); err != nil {
				x.kill()
				return err
			}
			select {
			case b, ok = <-chunks:
			case <-x.stop:
			}
		}
		if !ok {
			break
		}
		x.wrote = true
		_, err := w.Write(b)
		cgiPut(b)
		if err != nil {
			x.kill()
			return err
		}
	}
	_, err := x.stopped(w)
	return err
}

// errCGIClientGone ends a response nobody will receive.
var errCGIClientGone = errors.New("cgi: client gone")

// stopped answers for a program the server killed: 504 after its timeout
// and 503 when the component closed, if nothing was sent yet; otherwise
// an error cuts the response short. It reports false, doing nothing, if
// the program was not killed for one of those reasons or the client's.
func (x *cgiRun) stopped(w pipe.Writer) (bool, error) {
	switch {
	case x.clientGone.Load():
		return true, errCGIClientGone
	case x.timedOut.Load():
		return true, x.fail(w, http.StatusGatewayTimeout, "CGI program timed out")
	case x.closing.Load():
		return true, x.fail(w, http.StatusServiceUnavailable, "server shutting down")
	}
	return false, nil
}

// failStopped answers a program that ended, or was killed, before its
// response could be sent.
func (x *cgiRun) failStopped(w pipe.Writer) error {
	if x.stdinW != nil {
		x.stdinW.Close() // no more output: the program is done with its input
	}
	if <-x.fed; x.bodyErr != nil {
		return x.failBody(w)
	}
	if done, err := x.stopped(w); done {
		return err
	}
	return x.fail(w, http.StatusBadGateway, "CGI program ended without a valid header")
}

// cgiTempFile creates an unlinked temporary file.
func cgiTempFile() (*os.File, error) {
	f, err := os.CreateTemp("", "sluice-cgi-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// cgiWriterOnly hides everything but Write, so io.CopyBuffer uses the
// buffer it is given.
type cgiWriterOnly struct{ io.Writer }

// cgiHeaderEnd finds the blank line ending a CGI header (lines end in LF
// or CRLF), searching from offset from. It returns the header's length
// without the blank line and where the body starts, or -1.
func cgiHeaderEnd(b []byte, from int) (end, body int) {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		// b[i] ends a line; is the next line empty?
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 1, i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 1, i + 3
		}
	}
	if len(b) > 0 && b[0] == '\n' { // no header lines at all
		return 0, 1
	}
	if len(b) > 1 && b[0] == '\r' && b[1] == '\n' {
		return 0, 2
	}
	return -1, -1
}

// setHeader applies the program's header fields to the response.
func (x *cgiRun) setHeader(hdr []byte) error {
	h := x.c.Header()
	status := 0
	location := ""
	cgiField := false
	for len(hdr) > 0 {
		line := hdr
		if i := bytes.IndexByte(hdr, '\n'); i >= 0 {
			line, hdr = hdr[:i], hdr[i+1:]
		} else {
			hdr = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !httpgrammar.IsToken(line[:colon]) {
			return fmt.Errorf("malformed header line %q", cgiClip(line))
		}
		name := string(line[:colon])
		value := string(bytes.Trim(line[colon+1:], " \t"))
		switch {
		case strings.EqualFold(name, "Status"):
			code, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(value, " ", 2)[0]))
			if err != nil || code < 200 || code > 599 {
				return fmt.Errorf("invalid Status %q", cgiClip([]byte(value)))
			}
			status, cgiField = code, true
			continue
		case strings.EqualFold(name, "Location"):
			if value == "" {
				return errors.New("empty Location")
			}
			location, cgiField = value, true
		case strings.EqualFold(name, "Content-Type"):
			cgiField = true
		}
		if cgiIsHopByHop(name) {
			continue
		}
		h.Add(name, value)
		x.added = append(x.added, name)
	}
	if !cgiField {
		return errors.New("no Content-Type, Location or Status field")
	}
	if status == 0 && location != "" {
		status = http.StatusFound
	}
	if status != 0 {
		x.c.SetStatus(status)
	}
	return nil
}

// cgiIsHopByHop reports whether a program's header field is one it must
// not set: a hop-by-hop field (the engine frames the connection), or
// Trailer (the engine sends no trailers for a program).
func cgiIsHopByHop(name string) bool {
	return httpgrammar.IsHopByHop(name) || httpgrammar.EqualFold(name, "Trailer")
}

func cgiClip(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}

// fail answers an error before anything was written: it undoes the
// program's header fields, waits for the body feeder (the request must not
// be read while the response is written) and writes the error. If the
// feeder left part of the body unread, the connection closes after it.
func (x *cgiRun) fail(w pipe.Writer, status int, msg string) error {
	if x.wrote {
		return errors.New("cgi: " + msg)
	}
	if x.stdinW != nil {
		x.stdinW.Close()
	}
	<-x.fed
	for _, name := range x.added {
		x.c.Header().Del(name)
	}
	x.added = nil
	if x.unread {
		x.c.Header().Set("Connection", "close")
	}
	x.g.log.Warn("cgi: "+msg, "script", x.scriptName, "status", status)
	return cgiAnswer(x.c, w, status, msg)
}

// failBody answers a request whose body could not be read: 413 for one
// over the server's limit; otherwise the client is gone or too slow, and
// the error goes back to the pipeline (the engine closes the connection).
func (x *cgiRun) failBody(w pipe.Writer) error {
	if cgiBodyTooLarge(x.bodyErr) {
		return x.fail(w, http.StatusRequestEntityTooLarge, "request body too large")
	}
	for _, name := range x.added {
		x.c.Header().Del(name)
	}
	x.added = nil
	return x.bodyErr
}

// cgiAnswer writes a plain-text error response from a Content.
func cgiAnswer(c *pipe.Conn, w pipe.Writer, status int, msg string) error {
	h := c.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.SetContentLength(-1)
	c.SetStatus(status)
	_, err := io.WriteString(w, strconv.Itoa(status)+" "+http.StatusText(status)+": "+msg+"\n")
	return err
}

// end stops everything the run started: it waits for the feeders and the
// stdout reader, for the program to exit (it has closed its stdout, or
// was killed), then lets the reaper kill what is left of its group and
// reap it, and logs an unsuccessful exit.
func (x *cgiRun) end() {
	if x.stdinW != nil {
		x.stdinW.Close()
	}
	<-x.fed
	<-x.feeding
	close(x.quit)
	// Stdout is at EOF unless respond returned early, in which case the
	// group has been killed; closing it unblocks the reader either way.
	x.stdoutR.Close()
	for b := range x.chunks {
		cgiPut(b)
	}
	<-x.leader
	x.stopOnce.Do(func() { close(x.stop) })
	<-x.exited

	// Stderr ends with the group, unless a process escaped it (setsid)
	// holding the pipe: give it a moment, then stop listening.
	grace := time.NewTimer(time.Second)
	select {
	case <-x.logged:
	case <-grace.C:
	}
	grace.Stop()
	x.stderrR.Close()
	<-x.logged

	switch {
	case x.timedOut.Load():
		x.g.log.Warn("cgi: program killed after timeout", "script", x.scriptName, "timeout", x.g.timeout)
	case x.clientGone.Load():
		x.g.log.Info("cgi: program killed: the client went away", "script", x.scriptName)
	case x.closing.Load():
		x.g.log.Warn("cgi: program killed: shutting down", "script", x.scriptName)
	case x.killed:
		// the program misbehaved or the client went away; said already
	case x.waitErr != nil:
		x.g.log.Warn("cgi: program failed", "script", x.scriptName, "err", x.waitErr)
	}
}
