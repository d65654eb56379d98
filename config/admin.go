package config

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Admin is the file's admin section: where the admin API listens and who
// may call it (see package admin). A config without the section has no
// admin API.
type Admin struct {
	// Socket is the path of the Unix socket the API listens on (mode
	// 0600); "" when Listen is set. Without either key it is
	// "admin.sock" in the config file's directory.
	Socket string

	// Listen is a loopback TCP address (127.0.0.1:2019, [::1]:2019,
	// localhost:2019) the API listens on instead, where every request
	// needs one of Tokens as its bearer token.
	Listen string

	// Tokens are the bearer tokens a caller on Listen may present, by
	// name: the name is what the log says made a change. From the
	// tokens key, then the token_file's lines.
	Tokens map[string]string

	// State is the file the server's state is saved in (the running
	// config's text and the upstream changes made through the API),
	// which sluice serve --resume starts from. Without the key,
	// DefaultAdminState.
	State string

	// Line and Col are where the section starts in the file.
	Line, Col int
}

// AdminKeys are the keys of the admin section.
var AdminKeys = []string{"socket", "listen", "tokens", "token_file", "state"}

// MinTokenLength bounds an admin token from below: 16 bytes of a random
// token are beyond guessing through a loopback socket.
const MinTokenLength = 16

// DefaultAdminState returns the state file of an admin section that
// names none, for the config file named file: a file in "admin" under
// the service's state directory when systemd gives it one
// ($STATE_DIRECTORY), "sluice/admin" under the user's cache directory
// otherwise, named after the config file's base name and a hash of its
// absolute path, so that two servers do not share one.
func DefaultAdminState(file string) (string, error) {
	dir, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":")
	if filepath.IsAbs(dir) {
		dir = filepath.Join(dir, "admin")
	} else {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "sluice", "admin")
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	sum := sha256.Sum256([]byte(abs))
	base := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	return filepath.Join(dir, base+"-"+hex.EncodeToString(sum[:4])+".json"), nil
}

// admin reads the admin section.
func (p *parser) admin(key, n *yaml.Node) {
	a := &Admin{Line: key.Line, Col: key.Column}
	pairs, ok := p.mapping(n, "admin key", AdminKeys)
	if !ok {
		return
	}
	var listen, socket, tokens *yaml.Node
	for _, kv := range pairs {
		switch kv.key.Value {
		case "socket":
			socket = kv.val
			if s, ok := p.scalar(kv.val, "admin.socket", "a socket path"); ok {
				if s == "" {
					p.errorf(kv.val, "admin.socket: want the path of a Unix socket, e.g. socket: /run/sluice/admin.sock")
					continue
				}
				path := p.path(strings.TrimPrefix(s, "unix:"))
				if msg := badSocketPath(path); msg != "" {
					p.errorf(kv.val, "admin.socket: %s", msg)
					continue
				}
				a.Socket = path
			}
		case "listen":
			listen = kv.val
			if s, ok := p.scalar(kv.val, "admin.listen", "a loopback address"); ok {
				if msg := badAdminListen(s); msg != "" {
					p.errorf(kv.val, "admin.listen: %s", msg)
					continue
				}
				a.Listen = s
			}
		case "tokens":
			tokens = kv.val
			tp, _ := p.mapping(kv.val, "token name", nil)
			for _, t := range tp {
				s, ok := p.scalar(t.val, "admin.tokens."+t.key.Value, "a token")
				if !ok {
					continue
				}
				p.addToken(a, t.val, t.key.Value, s, p.file)
			}
		case "token_file":
			tokens = kv.val
			if s, ok := p.scalar(kv.val, "admin.token_file", "a file path"); ok {
				p.tokenFile(a, kv.val, p.path(s))
			}
		case "state":
			if s, ok := p.scalar(kv.val, "admin.state", "a file path"); ok {
				if s == "" {
					p.errorf(kv.val, "admin.state: want a file path, e.g. state: /var/lib/sluice/admin.json")
					continue
				}
				a.State = p.path(s)
			}
		}
	}
	switch {
	case listen != nil && socket != nil:
		p.errorf(listen, "admin: socket and listen both set: the API listens on one; keep socket (a Unix socket only this user reaches) or listen with tokens")
	case listen != nil && a.Listen != "" && len(a.Tokens) == 0:
		p.errorf(listen, "admin.listen: a TCP address needs bearer tokens, which any local user would otherwise get past: add tokens: {NAME: TOKEN} or token_file: FILE, or use socket: PATH instead")
	case socket != nil && tokens != nil:
		p.errorf(tokens, "admin: tokens are for listen: the Unix socket is reached only by its owner (mode 0600), and callers are told apart by their user; remove them, or use listen")
	}
	if listen == nil && socket == nil {
		a.Socket = p.path("admin.sock")
		if msg := badSocketPath(a.Socket); msg != "" {
			p.errorf(key, "admin: the default socket %s: %s; give one, socket: PATH", a.Socket, msg)
		}
	}
	if a.State == "" {
		if s, err := DefaultAdminState(p.file); err == nil {
			a.State = s
		} else {
			p.errorf(key, "admin: no directory to keep its state in (%v): give one, state: FILE", err)
		}
	}
	p.cfg.Admin = a
}

// maxSocketPath bounds a Unix socket's path: sun_path holds 108 bytes
// on Linux, with its NUL.
const maxSocketPath = 107

// badSocketPath says why the admin socket cannot be made at path, or
// returns "".
func badSocketPath(path string) string {
	if len(path) > maxSocketPath {
		return fmt.Sprintf("the path is %d bytes, over the %d a Unix socket's address holds: give a shorter one, e.g. /run/sluice/admin.sock", len(path), maxSocketPath)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return "directory " + filepath.Dir(path) + " does not exist: create it (writable by the server's user), or give another path"
	}
	return ""
}

// badAdminListen says why s cannot be the admin API's address, or
// returns "".
func badAdminListen(s string) string {
	addr, err := ParseAddress(s)
	if err != nil {
		return err.Error()
	}
	if addr.Network != "tcp" {
		return "a Unix socket is written socket: /path (without unix:)"
	}
	host, _, _ := net.SplitHostPort(s)
	if host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	if host == "" {
		return "address " + s + " listens on every interface: the admin API listens on loopback only, e.g. 127.0.0.1" + s
	}
	return "address " + s + " is not a loopback address: the admin API listens on loopback only (127.0.0.1, ::1 or localhost); reach it from elsewhere through an SSH tunnel"
}

// addToken adds one named token, reporting at at a bad name or token.
func (p *parser) addToken(a *Admin, at *yaml.Node, name, token, file string) {
	report := func(msg string) {
		p.errs = append(p.errs, &Error{File: file, Line: at.Line, Col: at.Column, Msg: msg})
	}
	switch {
	case name == "" || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r > '~' }):
		report("admin token name " + quote(name) + ": want a name of printable characters without spaces (it is logged as who made a change)")
	case len(token) < MinTokenLength:
		report("admin token " + quote(name) + ": want at least 16 characters (e.g. the output of: openssl rand -hex 32)")
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }):
		report("admin token " + quote(name) + ": want printable characters without spaces (a bearer token goes in an Authorization field)")
	case a.Tokens[name] != "":
		report("admin token " + quote(name) + " is named twice: give each token its own name")
	default:
		for other, t := range a.Tokens {
			if t == token {
				report("admin token " + quote(name) + " is the same as " + quote(other) + "'s: each name needs its own token, or the log cannot tell who made a change")
				return
			}
		}
		if a.Tokens == nil {
			a.Tokens = map[string]string{}
		}
		a.Tokens[name] = token
	}
}

// tokenFile reads the tokens of a token_file: one "NAME TOKEN" a line;
// blank lines and lines starting with # are skipped.
func (p *parser) tokenFile(a *Admin, n *yaml.Node, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		p.errorf(n, "admin.token_file: %v: %s", err, FileFix(err))
		return
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		p.errorf(n, "admin.token_file: %s is readable by others (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	found := false
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		at := &yaml.Node{Line: line, Column: 1}
		name, token, ok := strings.Cut(text, " ")
		if !ok {
			p.errs = append(p.errs, &Error{File: path, Line: line, Col: 1, Msg: "want NAME TOKEN on each line (a name, a space, the token)"})
			continue
		}
		found = true
		p.addToken(a, at, name, strings.TrimSpace(token), path)
	}
	if !found {
		p.errorf(n, "admin.token_file: %s lists no token: write one NAME TOKEN a line", path)
	}
}

// quote quotes s for a message.
func quote(s string) string { return `"` + s + `"` }
