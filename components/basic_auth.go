package components

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/htpasswd"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "basic_auth", Kind: KindPipe, Scalar: "htpasswd", Paths: []string{"htpasswd"}, Stops: "401",
		Example: `basic_auth: {realm: private, htpasswd: ./users.htpasswd}`,
	}, func(o BasicAuthOptions, _ Context) (pipe.Component, error) { return NewBasicAuth(o) })
}

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
// file as it is counts, and it fails closed (package htpasswd):
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

// authMaxHeaderLen bounds the Authorization field decoded.
const authMaxHeaderLen = 4096

// basicAuth is the state of a basic_auth component.
type basicAuth struct {
	file      *htpasswd.File
	challenge string // the WWW-Authenticate value
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
	f, err := htpasswd.Open(opts.Htpasswd, htpasswd.Options{Logger: opts.Logger, LogPrefix: "basic_auth: "})
	if err != nil {
		return nil, fmt.Errorf("basic_auth: %w", err)
	}
	return &basicAuth{file: f, challenge: `Basic realm="` + quoted + `", charset="UTF-8"`}, nil
}

func (a *basicAuth) handle(c *pipe.Conn) bool {
	users, err := a.file.Users()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c.Error(http.StatusForbidden, "access denied")
	case err != nil:
		return c.Error(http.StatusInternalServerError, "user list unavailable")
	}
	user, pw, ok := parseBasicAuth(c.Request.Header("Authorization"))
	if ok && users.Check(user, pw) {
		c.SetValue("user", string(user)) // for cgi's REMOTE_USER
		return true
	}
	c.Header().Set("WWW-Authenticate", a.challenge)
	return c.Error(http.StatusUnauthorized, "authentication required")
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
