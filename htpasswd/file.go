package htpasswd

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxPassword is the longest password Check verifies, in bytes; a longer
// one is refused without being hashed. SHA-crypt and MD5 crypt cost
// work in proportion to the password's length (SHA-crypt's P sequence
// more: H(P repeated len(P) times)), so without a bound a client sending
// 3,000 bytes made every check cost 16 times a short password's. Apache's
// htpasswd refuses passwords longer than this, password managers
// generate 128 characters at most, and bcrypt reads only the first 72
// bytes: no real password is refused, and the dearest check costs about
// 4 times a one-byte password's.
const MaxPassword = 255

const (
	cacheMax      = 1024               // remembered good credentials per version
	checkEvery    = int64(time.Second) // how often Users looks at the file
	maxLoggedLine = 10                 // problem lines logged per version
)

// A File is an htpasswd file, read when it is opened and again when it
// changes (see the package doc). It is safe for concurrent use.
type File struct {
	path   string
	log    *slog.Logger
	prefix string // Options.LogPrefix

	users     atomic.Pointer[version]
	lastCheck atomic.Int64 // clock() of the last stat
	loadMu    sync.Mutex   // one reloader at a time
	loaded    os.FileInfo  // the version of the file in force; nil if none; under loadMu

	// clock returns monotonic nanoseconds; verify checks a password
	// against a hash. Tests replace them.
	clock  func() int64
	verify func(hash string, pw []byte) bool
}

// version is what the file holds at one time: its users, or why it
// cannot be read.
type version struct {
	users *Users
	err   error // the file cannot be read; users is nil
	gone  bool  // err says the file does not exist
}

// Users is one version of an htpasswd file: who may log in, with which
// password. It is immutable but for the credentials it remembers, and
// safe for concurrent use.
type Users struct {
	file    *File
	users   map[string]user
	dummies []string // one hash of each class in the file

	mu   sync.Mutex
	good map[[sha256.Size]byte]struct{}
}

// user is a user's hash and the index of its class in dummies; a locked
// user has class -1.
type user struct {
	hash  string
	class int
}

// Options are the optional settings of Open.
type Options struct {
	// Logger receives the file's problems: the lines that lock their
	// users (at Warn), the file becoming unreadable (Error) and readable
	// again (Info), each once. Nil means slog.Default().
	Logger *slog.Logger

	// LogPrefix starts every message logged, naming who uses the file
	// ("basic_auth: ").
	LogPrefix string
}

// Open reads the htpasswd file at path and returns it, or the error that
// kept it from being read (as os.Open and io.ReadAll give it). Lines that
// lock their users are not errors: they are logged, as later problems
// with the file are.
func Open(path string, opts Options) (*File, error) {
	start := time.Now()
	f := &File{
		path:   path,
		log:    cmp.Or(opts.Logger, slog.Default()),
		prefix: opts.LogPrefix,
		clock:  func() int64 { return int64(time.Since(start)) },
		verify: verifyHash,
	}
	fi, users, err := f.load()
	if err != nil {
		return nil, err
	}
	f.loaded = fi
	f.users.Store(&version{users: users})
	f.lastCheck.Store(f.clock())
	return f, nil
}

// load reads and parses the file, logging the lines that lock users.
func (f *File) load() (os.FileInfo, *Users, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(file)
	if err != nil {
		return nil, nil, err
	}
	parsed, problems := parse(data, f.path)
	if len(problems) > 0 {
		more := ""
		if len(problems) > maxLoggedLine {
			more = fmt.Sprintf("; and %d more", len(problems)-maxLoggedLine)
			problems = problems[:maxLoggedLine]
		}
		f.log.Warn(f.prefix+"htpasswd lines without a hash Sluice verifies: their users are locked",
			"file", f.path, "lines", strings.Join(problems, "; ")+more)
	}
	u := &Users{file: f, users: make(map[string]user, len(parsed)), good: make(map[[sha256.Size]byte]struct{})}
	// Each class's dummy is the hash of its alphabetically first user.
	names := slices.Sorted(maps.Keys(parsed))
	classes := map[string]int{}
	for _, name := range names {
		p := parsed[name]
		if p.hash == "" {
			u.users[name] = user{class: -1}
			continue
		}
		c, ok := classes[p.class]
		if !ok {
			c = len(u.dummies)
			classes[p.class] = c
			u.dummies = append(u.dummies, p.hash)
		}
		u.users[name] = user{hash: p.hash, class: c}
	}
	return fi, u, nil
}

// Users returns the users in force, reading the file again if it changed
// (checked at most once a second). While the file cannot be read it
// returns nil and the error, which wraps fs.ErrNotExist when the file is
// gone: the caller refuses every request (basic_auth answers 403 for a
// deleted file, 500 for one it cannot read).
func (f *File) Users() (*Users, error) {
	v := f.current()
	return v.users, v.err
}

func (f *File) current() *version {
	now := f.clock()
	last := f.lastCheck.Load()
	if now-last < checkEvery || !f.lastCheck.CompareAndSwap(last, now) {
		return f.users.Load()
	}
	f.loadMu.Lock()
	defer f.loadMu.Unlock()
	old := f.users.Load()
	if fi, err := os.Stat(f.path); err == nil && f.loaded != nil && sameVersion(fi, f.loaded) {
		return old
	}
	fi, users, err := f.load()
	var v *version
	if err != nil {
		gone := errors.Is(err, fs.ErrNotExist)
		f.loaded = nil
		if old.err != nil && old.gone == gone {
			return old
		}
		f.log.Error(f.prefix+"cannot read the htpasswd file; refusing every request", "file", f.path, "err", errno(err))
		v = &version{err: err, gone: gone}
	} else {
		if old.err != nil {
			f.log.Info(f.prefix+"htpasswd file readable again", "file", f.path)
		}
		f.loaded = fi
		v = &version{users: users}
	}
	f.users.Store(v)
	return v
}

// sameVersion reports whether two stats of the file show the same
// version of it.
func sameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// errno strips the path from a *fs.PathError: the log names the file.
func errno(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// Check reports whether pw is the password of the user called name.
// Whatever the user, it verifies pw once against a hash of each class in
// the file (see the package doc), unless the credentials matched before;
// a password longer than MaxPassword is refused, for every user alike,
// without being hashed.
func (u *Users) Check(name, pw []byte) bool {
	if len(pw) > MaxPassword {
		return false
	}
	e, known := u.users[string(name)]
	if !known {
		e.class = -1
	}
	// The remembered credentials are looked up for every user alike.
	var key [sha256.Size]byte
	h := sha256.New()
	h.Write(name)
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
			ok = u.file.verify(e.hash, pw)
		} else {
			u.file.verify(dummy, pw)
		}
	}
	if !ok {
		return false
	}
	u.mu.Lock()
	if len(u.good) >= cacheMax {
		clear(u.good)
	}
	u.good[key] = struct{}{}
	u.mu.Unlock()
	return true
}
