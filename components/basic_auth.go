package components

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
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

	// Logger receives the errors of reloading the file. Nil means
	// slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// NewBasicAuth returns a Pipe that lets a request through only with
// HTTP Basic credentials (RFC 7617) matching a user of the htpasswd file,
// and answers the others 401 Unauthorized with
// `WWW-Authenticate: Basic realm="...", charset="UTF-8"`.
//
// Passwords are compared in constant time, and an unknown user costs the
// same as a wrong password — the password is checked against another
// user's hash — so the response does not tell whether a user exists.
// Credentials that matched are remembered (by a SHA-256 of user, password
// and hash, up to 1024 of them, forgotten when the file changes) so that
// a client sending them with every request does not pay bcrypt's cost
// every time.
//
// The file is read when the component is made (an unreadable or invalid
// file is an error then) and read again when its modification time or
// size changes, checked at most once a second. If a changed file fails to
// load, the last good one stays in force and the error is logged with
// the Logger. Basic credentials travel in the clear: serve them over TLS.
//
// The returned Pipe is safe for concurrent use.
func NewBasicAuth(opts BasicAuthOptions) (pipe.Component, error) {
	a, err := newBasicAuth(opts)
	if err != nil {
		return nil, err
	}
	return pipe.Pipe(a.handle), nil
}

const (
	authCacheMax     = 1024
	authCheckEvery   = int64(time.Second)
	authMaxHeaderLen = 4096
)

// basicAuth is the state of a basic_auth component.
type basicAuth struct {
	path      string
	challenge string // the WWW-Authenticate value
	log       *slog.Logger

	users     atomic.Pointer[authUsers]
	lastCheck atomic.Int64 // clock() of the last stat
	statMu    sync.Mutex   // one reloader at a time
	statSeen  authFileID   // the file last loaded or tried; under statMu

	// clock returns monotonic nanoseconds; tests replace it.
	clock func() int64
}

// authUsers is one loaded version of the file. It is immutable except
// for the cache of good credentials.
type authUsers struct {
	hashes map[string]string
	dummy  string // a hash to check unknown users against

	mu   sync.Mutex
	good map[[sha256.Size]byte]struct{}
}

type authFileID struct {
	mod  time.Time
	size int64
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
	}
	id, users, err := a.load()
	if err != nil {
		return nil, fmt.Errorf("basic_auth: %w", err)
	}
	a.statSeen = id
	a.users.Store(users)
	a.lastCheck.Store(a.clock())
	return a, nil
}

// load reads and parses the file.
func (a *basicAuth) load() (authFileID, *authUsers, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return authFileID{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return authFileID{}, nil, err
	}
	id := authFileID{fi.ModTime(), fi.Size()}
	data, err := io.ReadAll(f)
	if err != nil {
		return id, nil, err
	}
	hashes, err := htpasswdParse(data, a.path)
	if err != nil {
		return id, nil, err
	}
	u := &authUsers{hashes: hashes, good: make(map[[sha256.Size]byte]struct{})}
	// The dummy is the hash of the alphabetically first user: it has the
	// file's typical cost, and checking a password against it for an
	// unknown user costs what checking a known one does.
	first := ""
	for name, h := range hashes {
		if u.dummy == "" || name < first {
			first, u.dummy = name, h
		}
	}
	return id, u, nil
}

// current returns the users in force, reloading the file if it changed
// (checked at most once a second).
func (a *basicAuth) current() *authUsers {
	now := a.clock()
	last := a.lastCheck.Load()
	if now-last < authCheckEvery || !a.lastCheck.CompareAndSwap(last, now) {
		return a.users.Load()
	}
	a.statMu.Lock()
	defer a.statMu.Unlock()
	fi, err := os.Stat(a.path)
	if err != nil {
		if a.statSeen != (authFileID{}) {
			a.log.Error("basic_auth: htpasswd file unreadable; keeping the users last loaded", "file", a.path, "err", err)
			a.statSeen = authFileID{}
		}
		return a.users.Load()
	}
	if (authFileID{fi.ModTime(), fi.Size()}) == a.statSeen {
		return a.users.Load()
	}
	id, users, err := a.load()
	a.statSeen = id
	if err != nil {
		a.log.Error("basic_auth: htpasswd file invalid; keeping the users last loaded", "file", a.path, "err", err)
		return a.users.Load()
	}
	a.users.Store(users)
	return users
}

func (a *basicAuth) handle(c *pipe.Conn) bool {
	user, pw, ok := parseBasicAuth(c.Request.Header("Authorization"))
	if ok && a.current().check(user, pw) {
		return true
	}
	c.Header().Set("WWW-Authenticate", a.challenge)
	return c.Error(http.StatusUnauthorized, "authentication required")
}

// check reports whether pw is user's password.
func (u *authUsers) check(user, pw []byte) bool {
	hash, known := u.hashes[string(user)]
	if !known {
		if u.dummy != "" {
			htpasswdVerify(u.dummy, pw)
		}
		return false
	}
	h := sha256.New()
	h.Write(user)
	h.Write([]byte{0})
	h.Write(pw)
	h.Write([]byte{0})
	h.Write([]byte(hash))
	var key [sha256.Size]byte
	h.Sum(key[:0])
	u.mu.Lock()
	_, good := u.good[key]
	u.mu.Unlock()
	if good {
		return true
	}
	if !htpasswdVerify(hash, pw) {
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
