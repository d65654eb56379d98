package fastcgi

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// host is an upstream with its pool of connections.
type host = upstream.Host[*conn]

// A Client is a FastCGI 1.0 client in the responder role: a pipe
// Component (a source) that runs a script of a FastCGI server such as
// PHP-FPM for each request it handles, over kept-alive connections
// pooled per upstream, with the balancing, health checks, max_conns
// queue and retries of package upstream. Handle picks the script
// (Options.Script, or Resolve of the request path) and sets up the
// content phase (Run), which sends the request and streams the response.
// A Client is safe for concurrent use; Close releases it.
type Client struct {
	set  upstream.Settings
	grp  *upstream.Group[*conn]
	bal  *upstream.Balancer
	log  *slog.Logger
	host string            // os.Hostname, for SERVER_NAME without a Host field
	upm  metrics.Upstreams // each host's counters, by name

	root      *os.Root
	rootPath  string // absolute
	realRoot  string // rootPath with its symbolic links resolved
	script    Script // Options.Script resolved; Filename "" without one
	splitPath []string
	index     string
	noExecs   []string // Options.NoExec, cleaned: "/uploads", no trailing "/"
	env       []envVar // Options.Env, sorted

	headerTO, readTO, sendTO time.Duration
	maxHead                  int
	maxBody                  int64

	redirect func(*pipe.Conn) bool // Options.LocalRedirect, or Handle

	rate     stderrRate   // stderr lines logged this second
	resolved resolveCache // Resolve's results
}

// envVar is one of Options.Env.
type envVar struct{ name, value string }

var (
	_ pipe.Component = (*Client)(nil)
	_ io.Closer      = (*Client)(nil)
)

// New checks opts and returns the Client, with its active health checks
// started when opts.Health has a path. Its errors start with "fastcgi: "
// and name the config key at fault.
func New(opts Options) (*Client, error) {
	set, err := opts.Options.Settings("fastcgi")
	if err != nil {
		return nil, err
	}
	// Zero takes the default; a negative value would otherwise become
	// zero, and every request would time out or be refused.
	for _, o := range []struct {
		key string
		neg bool
	}{
		{"response_header_timeout", opts.ResponseHeaderTimeout < 0},
		{"read_timeout", opts.ReadTimeout < 0},
		{"send_timeout", opts.SendTimeout < 0},
		{"max_header_bytes", opts.MaxHeaderBytes < 0},
		{"max_body", opts.MaxBody < 0},
	} {
		if o.neg {
			return nil, fmt.Errorf("fastcgi: %s must not be negative (leave it out for the default)", o.key)
		}
	}
	cl := &Client{
		set:       set,
		bal:       set.Balancer,
		log:       opts.Logger,
		splitPath: opts.SplitPath,
		index:     opts.Index,
		headerTO:  upstream.OrDefault(opts.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		readTO:    upstream.OrDefault(opts.ReadTimeout, DefaultReadTimeout),
		sendTO:    upstream.OrDefault(opts.SendTimeout, DefaultSendTimeout),
		maxHead:   upstream.OrDefault(opts.MaxHeaderBytes, DefaultMaxHeaderBytes),
		maxBody:   upstream.OrDefault(opts.MaxBody, DefaultMaxBody),
	}
	if cl.log == nil {
		cl.log = slog.Default()
	}
	if cl.redirect = opts.LocalRedirect; cl.redirect == nil {
		cl.redirect = cl.Handle
	}
	if len(cl.splitPath) == 0 {
		cl.splitPath = DefaultSplitPath
	}
	for _, ext := range cl.splitPath {
		if len(ext) < 2 || ext[0] != '.' || strings.ContainsAny(ext, "/\\") || !printable(ext) {
			return nil, fmt.Errorf("fastcgi: split_path %q: want extensions such as .php", ext)
		}
	}
	cl.splitPath = slices.Clone(cl.splitPath)
	if cl.index == "" {
		cl.index = DefaultIndex
	}
	if strings.ContainsAny(cl.index, "/\\") || cl.index[0] == '.' || !printable(cl.index) {
		return nil, fmt.Errorf("fastcgi: index %q: want a file name such as index.php", cl.index)
	}
	for _, p := range opts.NoExec {
		q, err := noExecPrefix(p)
		if err != nil {
			return nil, err
		}
		cl.noExecs = append(cl.noExecs, q)
	}
	for k, v := range opts.Env {
		if k == "" || !printable(k) || strings.ContainsRune(k, '=') || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return nil, fmt.Errorf("fastcgi: env: invalid variable %q", k)
		}
		switch k {
		case "SCRIPT_FILENAME", "SCRIPT_NAME", "PATH_INFO", "PATH_TRANSLATED", "DOCUMENT_ROOT":
			return nil, fmt.Errorf("fastcgi: env: %s is set from the script Sluice checked and may not be configured", k)
		}
		cl.env = append(cl.env, envVar{k, v})
	}
	slices.SortFunc(cl.env, func(a, b envVar) int { return strings.Compare(a.name, b.name) })

	if opts.Root == "" {
		return nil, errors.New("fastcgi: root: the document root is required")
	}
	if cl.rootPath, err = filepath.Abs(opts.Root); err != nil {
		return nil, fmt.Errorf("fastcgi: root %q: %v", opts.Root, err)
	}
	if cl.root, err = os.OpenRoot(cl.rootPath); err != nil {
		return nil, fmt.Errorf("fastcgi: root: %w", err)
	}
	if cl.realRoot, err = filepath.EvalSymlinks(cl.rootPath); err != nil {
		cl.root.Close()
		return nil, fmt.Errorf("fastcgi: root: %w", err)
	}
	if opts.Script != "" {
		rel := filepath.Clean(opts.Script)
		if filepath.IsAbs(rel) {
			if rel, err = filepath.Rel(cl.rootPath, rel); err != nil || !filepath.IsLocal(rel) {
				cl.root.Close()
				return nil, fmt.Errorf("fastcgi: script %q is not under root %q", opts.Script, cl.rootPath)
			}
		}
		rel = filepath.ToSlash(rel)
		fi, err := cl.root.Stat(rel)
		if err != nil {
			cl.root.Close()
			return nil, fmt.Errorf("fastcgi: script: %v", err)
		}
		if !fi.Mode().IsRegular() {
			cl.root.Close()
			return nil, fmt.Errorf("fastcgi: script %q is not a regular file under root", opts.Script)
		}
		cl.script = Script{Filename: filepath.Join(cl.rootPath, filepath.FromSlash(rel)), Name: "/" + rel}
	}
	cl.host, _ = os.Hostname()
	if cl.host == "" {
		cl.host = "localhost"
	}

	set.Config.ParseAddr = ParseAddr
	set.Config.Log = cl.log
	if cl.grp, err = upstream.NewGroup(opts.Upstreams, cl.bal, set.Config, (*conn).put); err != nil {
		cl.root.Close()
		return nil, fmt.Errorf("fastcgi: %w", err)
	}
	if set.Name != "" {
		cl.grp.Register(set.Name, "fastcgi", cl.log)
	}
	cl.grp.Start()
	if set.Config.MaxConns == 0 {
		cl.log.Warn("fastcgi: max_conns is not set: a FastCGI server such as PHP-FPM keeps a worker per open connection; set max_conns to its pm.max_children")
	}
	if set.Health.Path != "" {
		cl.grp.StartChecks(set.Health.Interval, cl.check, cl.reportCheck)
	}
	return cl, nil
}

// ParseAddr reads a FastCGI upstream: "unix:/path/to/socket",
// "host:port" (as nginx's fastcgi_pass spells it) or "tcp://host:port".
// It returns the network and address to dial and the authority (the
// host:port, or "localhost" for a socket), or an error telling the forms
// accepted. It is upstream.Config.ParseAddr for FastCGI.
func ParseAddr(s string) (network, addr, authority string, err error) {
	want := "want unix:/path/to/socket, host:port or tcp://host:port"
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if path == "" || path[0] != '/' && !strings.HasPrefix(path, "./") || strings.HasPrefix(path, "//") {
			return "", "", "", fmt.Errorf("upstream %q: %s", s, want)
		}
		return "unix", path, "localhost", nil
	}
	hp := strings.TrimPrefix(s, "tcp://")
	h, port, err := net.SplitHostPort(hp)
	if err != nil || h == "" || port == "" || strings.ContainsAny(hp, "/?#@ ") {
		return "", "", "", fmt.Errorf("upstream %q: %s", s, want)
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", "", "", fmt.Errorf("upstream %q: port %q: %s", s, port, want)
		}
	}
	return "tcp", hp, hp, nil
}

// noExecPrefix checks and cleans a NoExec prefix: an absolute URL path
// of printable ASCII whose "//" and "." segments are dropped, and its
// trailing "/" ("/uploads//" and "/uploads/./" are "/uploads"); one
// holding ".." is refused.
func noExecPrefix(p string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("fastcgi: no_exec %q: %s; want a URL path prefix such as /uploads/", p, why)
	}
	if p == "" || p[0] != '/' {
		return bad("not an absolute path")
	}
	if !printable(p) || strings.ContainsRune(p, '\\') {
		return bad("a space, control byte, backslash or non-ASCII byte")
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return bad(`".." segment`)
		}
	}
	return path.Clean(p), nil
}

// printable reports whether s is all printable ASCII.
func printable(s string) bool {
	for i := range len(s) {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return s != ""
}

// Handle runs Options.Script, or the script Resolve finds for the
// request path (404 or 403 when none may run), by Run.
func (cl *Client) Handle(c *pipe.Conn) bool {
	if cl.script.Filename != "" {
		return cl.Run(c, Script{Filename: cl.script.Filename, Name: cl.script.Name})
	}
	s, err, ok := cl.cachedBytes(c.Request.Path)
	if !ok {
		s, err = cl.Resolve(string(c.Request.Path))
	}
	if err != nil {
		if errors.Is(err, ErrForbidden) {
			return c.Error(http.StatusForbidden, "forbidden")
		}
		return c.Error(http.StatusNotFound, "not found")
	}
	return cl.Run(c, s)
}

// Run sets up the content phase of c that runs s on an upstream: the
// request's parameters and body are sent, and the response streamed
// back, parsed as a CGI response. s must come from Resolve, or be built
// by a caller that checked it as strictly (its Filename under Root, its
// PathInfo without control bytes). Run is the entry point of components
// that pick the script themselves (package php); it always returns
// true.
func (cl *Client) Run(c *pipe.Conn, s Script) bool {
	x := getExchange()
	x.cl, x.c, x.script = cl, c, s
	c.SetContent(x.content)
	return true
}

// UpstreamSet returns the name cl's upstreams are registered under as a
// live set (Options.Name; see upstream.LookupSet), or "" if none.
func (cl *Client) UpstreamSet() string {
	if s := cl.grp.Live(); s != nil {
		return s.Name()
	}
	return ""
}

// Close stops the health checks, closes the idle connections (those in
// use close when their requests end) and releases Root. It may be
// called more than once.
func (cl *Client) Close() error {
	cl.grp.Close()
	return cl.root.Close()
}
