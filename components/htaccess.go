package components

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "htaccess", Kind: KindPipe, Scalar: "root", Paths: []string{"root"}, Stops: "403",
		Example: `htaccess: ./public`,
	}, func(o HtaccessOptions, _ Context) (pipe.Component, error) { return NewHtaccess(o) })
}

// HtaccessOptions configures NewHtaccess. In a config file a scalar
// argument sets Root: `htaccess: ./public`.
type HtaccessOptions struct {
	// Root is the document root the request path is resolved under; the
	// walk for access files starts there. Required.
	Root string `yaml:"root"`

	// StripPrefix is removed from the request path before it is mapped
	// to a directory under Root, as files' strip_prefix is: give both
	// the same value (and the same root) so that the access files are
	// those of the directories files serves from. A path without the
	// prefix is 404.
	StripPrefix string `yaml:"strip_prefix"`

	// File is the name of the per-directory access files. Default
	// ".htaccess".
	File string `yaml:"file"`

	// TrustedProxies lists the reverse proxies (CIDRs or addresses, and
	// "unix:" for any peer on a Unix socket) whose client-address header
	// is believed. Empty: the peer is the client and no header is read.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// ClientIPHeader is the header trusted proxies put the client address
	// in: "X-Forwarded-For" (the default) or "Forwarded" (RFC 7239), read
	// from the right, skipping trusted proxies.
	ClientIPHeader string `yaml:"client_ip_header"`

	// Logger receives the errors of invalid access files. Nil means
	// slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// NewHtaccess returns a Pipe that applies Apache-style per-directory
// access files, as the C++ web server paper proposes: for a request path
// it looks for an access file in Root and in every directory on the way
// down to the requested file — and in the requested path itself, should
// it be a directory — and answers 403 Forbidden when the rules refuse the
// client. Requests for the access files themselves are refused too.
//
// # Paths
//
// The request path is mapped to a name under Root by files.PathMap, the
// mapping the files source uses, with StripPrefix: the walk sees the
// directories files would serve from. A path files refuses whatever the
// tree holds (outside StripPrefix, a ".." segment, NUL, a backslash, an
// encoded slash) is answered 404, as files would. The walk ends at the
// first directory on the way that does not exist (nothing beneath it
// can be served, so no access file beneath it can apply); a name the
// system cannot look up (too long, a symbolic-link loop) is 404, and a
// directory the server may not search is 403, as files would answer.
//
// # Directives
//
// The access directives of Apache's mod_access_compat, case-insensitive:
//
//	Order Deny,Allow     (the default) allowed unless a Deny matches and
//	                     no Allow does
//	Order Allow,Deny     allowed only if an Allow matches and no Deny does
//	Order Mutual-failure the same as Allow,Deny
//	Allow from HOST...   HOST: all, an address (10.1.2.3, 2001:db8::1), a
//	Deny from HOST...    partial IPv4 address (10.1 is 10.1.0.0/16), a
//	                     CIDR (10.1.0.0/16, 2001:db8::/32) or a network/
//	                     netmask pair (10.1.0.0/255.255.0.0)
//
// "all" matches every client, including one without an IP address (a
// Unix-socket peer not trusted as a proxy), which no other HOST matches.
//
// Lines starting with '#' are comments and a trailing backslash continues
// a line. <Limit> and <LimitExcept> lines are ignored, so the directives
// inside them apply to every method (stricter than Apache, never looser).
// Other directives (Options, AuthType, Rewrite…) are ignored, except
// those that would restrict access in ways not implemented — Require,
// host names and env= in Allow/Deny — which, like a malformed access
// directive, make the file invalid: requests under it get 500 and the
// error is logged, so a file is never silently half-applied.
//
// # Merging
//
// As in Apache, the nearest file that has any Order, Allow or Deny
// directive decides alone: its rules replace those of files above it,
// while files without access directives inherit them.
//
// # Caching
//
// Files are parsed once and cached; each is stat'ed again at most once a
// second and re-parsed when its modification time or size changes (a
// new, removed or edited file takes effect within a second). Directories
// found missing are cached alike. The cache holds at most 10000
// directories, dropping arbitrary ones when full. Errors are logged once
// per file version or change of state, with names of existing files and
// directories only, never the rest of a request's path.
//
// The client address is the TCP peer's, or, when the peer is one of
// TrustedProxies, the rightmost untrusted address of ClientIPHeader.
//
// The returned Pipe is safe for concurrent use.
func NewHtaccess(opts HtaccessOptions) (pipe.Component, error) {
	h, err := newHtaccess(opts)
	if err != nil {
		return nil, err
	}
	return pipe.Pipe(h.handle), nil
}

const (
	htaccessCheckEvery = int64(time.Second)
	htaccessMaxDirs    = 10000
)

// htaccess is the state of an htaccess component.
type htaccess struct {
	root   string
	file   string
	paths  files.PathMap
	client *clientaddr.Resolver
	log    *slog.Logger

	mu   sync.RWMutex
	dirs map[string]*htDir // by directory relative to root, "" for root

	// clock returns monotonic nanoseconds; tests replace it.
	clock func() int64
}

// htDir caches one directory's access file.
type htDir struct {
	state   atomic.Pointer[htState]
	checked atomic.Int64 // clock()+1 of the last stat; 0: never
}

// htState is what a directory held when last looked at. It is immutable.
type htState struct {
	mod    time.Time // of the access file
	size   int64
	rules  *htRules // nil: no access file
	absent bool     // no such directory: the walk ends here
	status int      // non-zero: answer requests at or under it so (404 only if the rules above admit them)
}

// htAbsent is the state of a directory that does not exist.
var htAbsent = &htState{absent: true}

// htRules are the access directives of one file.
type htRules struct {
	access     bool // the file has an Order, Allow or Deny directive
	allowFirst bool // Order Allow,Deny or Mutual-failure
	allow      []netip.Prefix
	deny       []netip.Prefix
	allowAll   bool  // "Allow from all": also clients without an address
	denyAll    bool  // "Deny from all": also clients without an address
	err        error // the file is invalid
}

func newHtaccess(opts HtaccessOptions) (*htaccess, error) {
	if opts.Root == "" {
		return nil, errors.New("htaccess: root not set")
	}
	fi, err := os.Stat(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("htaccess: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("htaccess: root %s is not a directory", opts.Root)
	}
	if opts.File == "" {
		opts.File = ".htaccess"
	}
	if strings.ContainsAny(opts.File, `/\`) || opts.File == "." || opts.File == ".." {
		return nil, fmt.Errorf("htaccess: file %q must be a plain file name", opts.File)
	}
	paths, err := files.NewPathMap(opts.StripPrefix)
	if err != nil {
		return nil, fmt.Errorf("htaccess: %w", err)
	}
	ci, err := clientaddr.New(opts.TrustedProxies, opts.ClientIPHeader)
	if err != nil {
		return nil, fmt.Errorf("htaccess: %w", err)
	}
	start := time.Now()
	return &htaccess{
		root:   opts.Root,
		file:   opts.File,
		paths:  paths,
		client: ci,
		log:    cmp.Or(opts.Logger, slog.Default()),
		dirs:   make(map[string]*htDir),
		clock:  func() int64 { return int64(time.Since(start)) },
	}, nil
}

func (h *htaccess) handle(c *pipe.Conn) bool {
	switch h.check(c.Request) {
	case http.StatusForbidden:
		return c.Error(http.StatusForbidden, "access denied")
	case http.StatusNotFound:
		return c.Error(http.StatusNotFound, "no such file")
	case http.StatusInternalServerError:
		return c.Error(http.StatusInternalServerError, "invalid access file")
	}
	return true
}

// check returns 0 if r may proceed, else the status to refuse it with.
func (h *htaccess) check(r *engine.Request) int {
	name, ok := h.paths.Map(r)
	if !ok {
		return http.StatusNotFound
	}
	if path.Base(name) == h.file {
		return http.StatusForbidden
	}
	rel := name
	if rel == "." {
		rel = ""
	}
	now := h.clock()
	var rules *htRules
	missing := false // a name on the way cannot be looked up: 404 unless refused
	for i := 0; ; {
		st := h.stateOf(rel[:i], now)
		if st.status == http.StatusNotFound {
			missing = true
			break
		}
		if st.status != 0 {
			return st.status
		}
		if st.absent {
			break
		}
		if st.rules != nil && st.rules.access {
			rules = st.rules
		}
		if i == len(rel) {
			break
		}
		if j := strings.IndexByte(rel[i+1:], '/'); j >= 0 {
			i += 1 + j
		} else {
			i = len(rel)
		}
	}
	switch {
	case rules != nil && !rules.allows(h.client.Addr(r)):
		return http.StatusForbidden
	case missing:
		return http.StatusNotFound
	}
	return 0
}

// allows applies the rules to a client address. A client without an IP
// address (a Unix-socket peer) matches only "all".
func (r *htRules) allows(a netip.Addr) bool {
	allowed, denied := htMatch(r.allow, a) || r.allowAll, htMatch(r.deny, a) || r.denyAll
	if r.allowFirst {
		return allowed && !denied
	}
	return allowed || !denied
}

func htMatch(list []netip.Prefix, a netip.Addr) bool {
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// stateOf returns what directory rel holds, looking again if the last
// look is older than a second.
func (h *htaccess) stateOf(rel string, now int64) *htState {
	h.mu.RLock()
	d := h.dirs[rel]
	h.mu.RUnlock()
	if d == nil {
		h.mu.Lock()
		if d = h.dirs[rel]; d == nil {
			for k := range h.dirs {
				if len(h.dirs) < htaccessMaxDirs {
					break
				}
				delete(h.dirs, k)
			}
			d = new(htDir)
			h.dirs[strings.Clone(rel)] = d
		}
		h.mu.Unlock()
	}
	checked := d.checked.Load()
	if checked != 0 && now+1-checked < htaccessCheckEvery || !d.checked.CompareAndSwap(checked, now+1) {
		if st := d.state.Load(); st != nil {
			return st
		}
		// Another request is looking at it for the first time: look too
		// rather than pass without its rules.
	}
	st := h.look(rel, d.state.Load())
	d.state.Store(st)
	return st
}

// look finds what directory rel holds now; old is what it held, or nil.
// The walk has found rel's parent to be a searchable directory, so an
// error other than "no such file" is about a name that exists (or, for
// ENAMETOOLONG, cannot), and only such names are logged.
func (h *htaccess) look(rel string, old *htState) *htState {
	dir := filepath.Join(h.root, filepath.FromSlash(rel))
	name := filepath.Join(dir, h.file)
	fi, err := os.Stat(name)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return &htState{}
	case err == nil:
		if old != nil && old.rules != nil && old.mod.Equal(fi.ModTime()) && old.size == fi.Size() {
			return old
		}
		st := &htState{mod: fi.ModTime(), size: fi.Size()}
		data, err := os.ReadFile(name)
		if err != nil {
			st.rules = &htRules{err: fmt.Errorf("%s: %w", name, htErrno(err))}
		} else {
			st.rules = parseHtaccess(string(data), name)
		}
		if st.rules.err != nil {
			st.status = http.StatusInternalServerError
			h.log.Error("htaccess: invalid access file; refusing requests under it", "err", st.rules.err)
		}
		return st
	case errors.Is(err, fs.ErrNotExist):
		// No access file here, or no directory at all: only the latter
		// ends the walk.
		if di, err := os.Stat(dir); err == nil && di.IsDir() {
			return &htState{}
		}
		return htAbsent
	case errors.Is(err, syscall.ENOTDIR):
		return htAbsent
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.ELOOP):
		// Nothing files could serve either; the name may be the
		// request's, so it is not logged.
		return &htState{status: http.StatusNotFound}
	}
	status := http.StatusInternalServerError
	if errors.Is(err, fs.ErrPermission) {
		status = http.StatusForbidden // as files answers beneath a directory it may not search
	}
	if old == nil || old.status != status {
		h.log.Error("htaccess: cannot look for an access file; refusing requests under it", "dir", dir, "err", htErrno(err))
	}
	return &htState{status: status}
}

// htErrno is err without the file name a PathError carries.
func htErrno(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// parseHtaccess parses an access file; name is used in errors.
func parseHtaccess(data, name string) *htRules {
	r := &htRules{}
	lines := strings.Split(data, "\n")
	for n := 0; n < len(lines); n++ {
		lineNo := n + 1
		line := strings.TrimRight(lines[n], "\r")
		for strings.HasSuffix(line, `\`) && n+1 < len(lines) {
			n++
			line = line[:len(line)-1] + " " + strings.TrimRight(lines[n], "\r")
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		fail := func(format string, args ...any) *htRules {
			return &htRules{err: fmt.Errorf("%s:%d: %s", name, lineNo, fmt.Sprintf(format, args...))}
		}
		dir := strings.TrimSuffix(strings.ToLower(fields[0]), ">")
		switch dir {
		case "order":
			r.access = true
			switch strings.ToLower(strings.Join(fields[1:], "")) {
			case "deny,allow":
				r.allowFirst = false
			case "allow,deny", "mutual-failure":
				r.allowFirst = true
			default:
				return fail("Order must be Deny,Allow, Allow,Deny or Mutual-failure")
			}
		case "allow", "deny":
			r.access = true
			if len(fields) < 3 || !strings.EqualFold(fields[1], "from") {
				return fail("want %s from HOST...", fields[0])
			}
			for _, host := range fields[2:] {
				ps, err := parseHtaccessHost(host)
				if err != nil {
					return fail("%s from %s: %v", fields[0], host, err)
				}
				all := strings.EqualFold(host, "all")
				if dir == "allow" {
					r.allow, r.allowAll = append(r.allow, ps...), r.allowAll || all
				} else {
					r.deny, r.denyAll = append(r.deny, ps...), r.denyAll || all
				}
			}
		case "require", "<requireall", "<requireany", "<requirenone":
			return fail("%s is not supported: use Order, Allow and Deny (and basic_auth for passwords)", strings.TrimSuffix(fields[0], ">"))
		}
	}
	return r
}

// parseHtaccessHost parses the argument of Allow from / Deny from.
func parseHtaccessHost(s string) ([]netip.Prefix, error) {
	if strings.EqualFold(s, "all") {
		return []netip.Prefix{
			netip.PrefixFrom(netip.IPv4Unspecified(), 0),
			netip.PrefixFrom(netip.IPv6Unspecified(), 0),
		}, nil
	}
	if strings.HasPrefix(strings.ToLower(s), "env=") {
		return nil, errors.New("env= is not supported")
	}
	if network, mask, ok := strings.Cut(s, "/"); ok && strings.Contains(mask, ".") {
		a, err1 := netip.ParseAddr(network)
		m, err2 := netip.ParseAddr(mask)
		if err1 != nil || err2 != nil || !a.Is4() || !m.Is4() {
			return nil, errors.New("bad network/netmask")
		}
		v := m.As4()
		bits := 0
		word := uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])
		for word&(1<<31) != 0 {
			bits++
			word <<= 1
		}
		if word != 0 {
			return nil, errors.New("netmask is not contiguous")
		}
		return []netip.Prefix{netip.PrefixFrom(a, bits).Masked()}, nil
	}
	if p, err := clientaddr.ParsePrefix(s); err == nil {
		return []netip.Prefix{p}, nil
	}
	// A partial IPv4 address: 1 to 3 leading bytes, "10.1" or "10.1.".
	parts := strings.Split(strings.TrimSuffix(s, "."), ".")
	if len(parts) <= 3 {
		var b [4]byte
		for i, part := range parts {
			n, err := strconv.ParseUint(part, 10, 8)
			if err != nil || part == "" || part[0] == '+' {
				return nil, errors.New("host names are not supported; use addresses or networks")
			}
			b[i] = byte(n)
		}
		return []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4(b), 8*len(parts))}, nil
	}
	return nil, errors.New("host names are not supported; use addresses or networks")
}
