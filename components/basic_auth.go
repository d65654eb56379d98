package components

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// BasicAuthOptions configures NewBasicAuth. In a config file a scalar
// argument sets Htpasswd: `basic_auth: ./users.htpasswd`.
type BasicAuthOptions struct {
	// Realm names the protected area in the browser's prompt. Default
	// "Restricted".
	Realm string `yaml:"realm"`

	// Htpasswd is the path of an htpasswd file: "user:hash" lines with
	// bcrypt ($2y$, $2a$, $2b$), SHA-crypt ($5$, $6$), Apache MD5 ($apr1$),
	// MD5 crypt ($1$) or {SHA} hashes. {SHA} is unsalted SHA-1 and easy
	// to crack: accepted for old files only. Required.
	Htpasswd string `yaml:"htpasswd"`

	// Logger receives the file's problems: lines that lock their users,
	// a file that cannot be read. Nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// NewBasicAuth returns a Pipe that lets a request through only with
// HTTP Basic credentials (RFC 7617) matching a user of the htpasswd file,
// and answers the others 401 Unauthorized with
// `WWW-Authenticate: Basic realm="...", charset="UTF-8"`.
//
// # The file
//
// The file is read when the component is made (a file that cannot be
// read is an error then) and read again when it changes (another
// modification time, size or inode), checked at most once a second. The
// file as it is counts, and it fails closed:
//
//   - A line whose hash is not one Sluice verifies — a locked user
//     ("bob:!"), a plain-text password, DES crypt, garbage — locks that
//     user: no password matches. So does a user listed twice. Such lines
//     are logged once per version of the file, naming the line and the
//     user (escaped), never the hash.
//   - A file that is deleted refuses every request with 403 Forbidden,
//     as nginx does: no credentials can help, so none are asked for. A
//     file that exists but cannot be read (permissions, I/O) refuses
//     every request with 500 Internal Server Error: the server is at
//     fault, not the client. Either is logged once, and the file is
//     used again as soon as it can be read.
//
// # Timing
//
// Passwords are compared in constant time, and the work of a check does
// not depend on the user: every check verifies the password once against
// each class of hash the file holds — a scheme with its cost parameter,
// such as bcrypt at cost 10 or SHA-512 crypt at 5000 rounds — the user's
// own hash for its class and a hash of another user for every other
// class; an unknown or locked user gets one of another user's for all.
// So neither the time of a refusal nor that of an acceptance tells
// whether a user exists or which scheme their hash uses; a file mixing
// schemes costs the sum of its classes per check. Credentials that
// matched are remembered (by a SHA-256 of user, password and hash, up to
// 1024 of them, forgotten when the file changes) so that a client
// sending them with every request does not pay bcrypt's cost every time.
//
// Basic credentials travel in the clear: serve them over TLS. The
// returned Pipe is safe for concurrent use.
func NewBasicAuth(opts BasicAuthOptions) (pipe.Component, error) {
	a, err := newBasicAuth(opts)
	if err != nil {
		return nil, err
	}
	return pipe.Pipe(a.handle), nil
}

const (
	authCacheMax      = 1024
	authCheckEvery    = int64(time.Second)
	authMaxHeaderLen  = 4096
	authMaxLoggedLine = 10 // problem lines logged per file version
)

// basicAuth is the state of a basic_auth component.
type basicAuth struct {
	path      string
	challenge string // the WWW-Authenticate value
	log       *slog.Logger

	users     atomic.Pointer[authUsers]
	lastCheck atomic.Int64 // clock() of the last stat
	loadMu    sync.Mutex   // one reloader at a time
	loaded    os.FileInfo  // the version of the file in force; nil if none; under loadMu

	// clock returns monotonic nanoseconds; verify checks a password
	// against a hash. Tests replace them.
	clock  func() int64
	verify func(hash string, pw []byte) bool
}

// authUsers is one loaded version of the file, or the refusal of every
// request when the file cannot be read. It is immutable except for the
// cache of good credentials.
type authUsers struct {
	users   map[string]authUser
	dummies []string // one hash of each class in the file
	status  int      // non-zero: the file cannot be read; refuse with this

	mu   sync.Mutex
	good map[[sha256.Size]byte]struct{}
}

// authUser is a user's hash and the index of its class in dummies; a
// locked user has class -1.
type authUser struct {
	hash  string
	class int
}

func newBasicAuth(opts BasicAuthOptions) (*basicAuth, error) {
	if opts.Htpasswd == "" {
		return nil, fmt.Errorf("basic_auth: htpasswd file not set")
	}
	realm := opts.Realm
	if realm == "" {
		realm = "Restricted"
	}
	for _, r := range realm {
		if r < ' ' || r == 0x7f {
			return nil, fmt.Errorf("basic_auth: realm %q contains a control character", realm)
		}
	}
	quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(realm)
	start := time.Now()
	a := &basicAuth{
		path:      opts.Htpasswd,
		challenge: `Basic realm="` + quoted + `", charset="UTF-8"`,
		log:       cmp.Or(opts.Logger, slog.Default()),
		clock:     func() int64 { return int64(time.Since(start)) },
		verify:    htpasswdVerify,
	}
	fi, users, err := a.load()
	if err != nil {
		return nil, fmt.Errorf("basic_auth: %w", err)
	}
	a.loaded = fi
	a.users.Store(users)
	a.lastCheck.Store(a.clock())
	return a, nil
}

// load reads and parses the file, logging the lines that lock users.
func (a *basicAuth) load() (os.FileInfo, *authUsers, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, err
	}
	parsed, problems := htpasswdParse(data, a.path)
	if len(problems) > 0 {
		more := ""
		if len(problems) > authMaxLoggedLine {
			more = fmt.Sprintf("; and %d more", len(problems)-authMaxLoggedLine)
			problems = problems[:authMaxLoggedLine]
		}
		a.log.Warn("basic_auth: htpasswd lines without a hash Sluice verifies: their users are locked",
			"file", a.path, "lines", strings.Join(problems, "; ")+more)
	}
	u := &authUsers{users: make(map[string]authUser, len(parsed)), good: make(map[[sha256.Size]byte]struct{})}
	// Each class's dummy is the hash of its alphabetically first user.
	names := slices.Sorted(maps.Keys(parsed))
	classes := map[string]int{}
	for _, name := range names {
		p := parsed[name]
		if p.hash == "" {
			u.users[name] = authUser{class: -1}
			continue
		}
		c, ok := classes[p.class]
		if !ok {
			c = len(u.dummies)
			classes[p.class] = c
			u.dummies = append(u.dummies, p.hash)
		}
		u.users[name] = authUser{hash: p.hash, class: c}
	}
	return fi, u, nil
}

// current returns the users in force, reloading the file if it changed
// (checked at most once a second).
func (a *basicAuth) current() *authUsers {
	now := a.clock()
	last := a.lastCheck.Load()
	if now-last < authCheckEvery || !a.lastCheck.CompareAndSwap(last, now) {
		return a.users.Load()
	}
	a.loadMu.Lock()
	defer a.loadMu.Unlock()
	old := a.users.Load()
	if fi, err := os.Stat(a.path); err == nil && a.loaded != nil && authSameVersion(fi, a.loaded) {
		return old
	}
	fi, users, err := a.load()
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, fs.ErrNotExist) {
			status = http.StatusForbidden
		}
		a.loaded = nil
		if old.status == status {
			return old
		}
		a.log.Error("basic_auth: cannot read the htpasswd file; refusing every request", "file", a.path, "err", htErrno(err), "status", status)
		users = &authUsers{status: status}
	} else {
		if old.status != 0 {
			a.log.Info("basic_auth: htpasswd file readable again", "file", a.path)
		}
		a.loaded = fi
	}
	a.users.Store(users)
	return users
}

// authSameVersion reports whether two stats of the file show the same
// version of it.
func authSameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

func (a *basicAuth) handle(c *pipe.Conn) bool {
	u := a.current()
	switch u.status {
	case http.StatusForbidden:
		return c.Error(http.StatusForbidden, "access denied")
	case http.StatusInternalServerError:
		return c.Error(http.StatusInternalServerError, "user list unavailable")
	}
	user, pw, ok := parseBasicAuth(c.Request.Header("Authorization"))
	if ok && a.check(u, user, pw) {
		c.SetValue("user", string(user)) // for cgi's REMOTE_USER
		return true
	}
	c.Header().Set("WWW-Authenticate", a.challenge)
	return c.Error(http.StatusUnauthorized, "authentication required")
}

// check reports whether pw is user's password in u. Whatever the user,
// it verifies pw once against a hash of each class in u (see
// NewBasicAuth), unless the credentials matched before.
func (a *basicAuth) check(u *authUsers, user, pw []byte) bool {
	e, known := u.users[string(user)]
	if !known {
		e.class = -1
	}
	// The remembered credentials are looked up for every user alike.
	var key [sha256.Size]byte
	h := sha256.New()
	h.Write(user)
	h.Write([]byte{0})
	h.Write(pw)
	h.Write([]byte{0})
	h.Write([]byte(e.hash))
	h.Sum(key[:0])
	u.mu.Lock()
	_, good := u.good[key]
	u.mu.Unlock()
	if good && e.class >= 0 {
		return true
	}
	ok := false
	for c, dummy := range u.dummies {
		if c == e.class {
			ok = a.verify(e.hash, pw)
		} else {
			a.verify(dummy, pw)
		}
	}
	if !ok {
		return false
	}
	u.mu.Lock()
	if len(u.good) >= authCacheMax {
		clear(u.good)
	}
	u.good[key] = struct{}{}
	u.mu.Unlock()
	return true
}

// parseBasicAuth decodes `Basic base64(user:password)`. The returned
// slices are fresh memory.
func parseBasicAuth(v []byte) (user, pw []byte, ok bool) {
	const scheme = "basic "
	if len(v) <= len(scheme) || len(v) > authMaxHeaderLen || !bytes.EqualFold(v[:len(scheme)], []byte(scheme)) {
		return nil, nil, false
	}
	enc := bytes.TrimLeft(v[len(scheme):], " ")
	dec := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Decode(dec, enc)
	if err != nil {
		return nil, nil, false
	}
	user, pw, ok = bytes.Cut(dec[:n], []byte(":"))
	return user, pw, ok
}
