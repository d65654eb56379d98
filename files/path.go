package files

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/sluice-server/sluice/engine"
)

// PathMap is the mapping from request paths to the names beneath a
// document root that they name: the one a Server uses, exported so that
// a component looking at the file a request lands on (the htaccess
// component's walk for access files) sees the request land where the
// Server would serve it. Its zero value maps "/a/b" to "a/b"; a PathMap
// is a value, immutable and safe for concurrent use.
type PathMap struct {
	stripPrefix string
}

// NewPathMap returns the mapping of a Server whose Options.StripPrefix is
// stripPrefix. It fails, as Options.Validate does, for a prefix that does
// not start with "/" or ends with "/"; its error names strip_prefix and
// leaves the caller to say whose option it is.
func NewPathMap(stripPrefix string) (PathMap, error) {
	if err := checkStripPrefix(stripPrefix); err != nil {
		return PathMap{}, err
	}
	return PathMap{stripPrefix: stripPrefix}, nil
}

// StripPrefix returns the prefix the mapping removes, or "".
func (m PathMap) StripPrefix() string { return m.stripPrefix }

// Map returns the name beneath the root that r's path names, as an
// fs.FS name ("." for the root, "a/b.txt"; see fs.ValidPath): StripPrefix
// removed, then repeated slashes and "." segments, and a trailing slash.
// The path that is StripPrefix itself, which a Server redirects to
// StripPrefix + "/", maps to ".".
//
// ok is false for the paths a Server answers 404 whatever the file system
// holds: a path outside StripPrefix, one not starting with "/", one with
// a ".." segment, a NUL or a backslash (decoded from %2e%2e, %00 and %5c
// alike), and one whose raw form has an encoded slash ("%2f"). A name Map
// accepts may still be refused by the Server for its dotfile segments
// (Options.Dotfiles) or not exist.
func (m PathMap) Map(r *engine.Request) (name string, ok bool) {
	p, _, v := m.split(r.RawPath, r.Path)
	switch v {
	case pathRefused:
		return "", false
	case pathPrefix:
		return ".", true
	}
	return fsName(cleanKey(string(p))), true
}

// Verdicts of checkPath and PathMap.split.
const (
	pathOK      = iota // may be served
	pathRefused        // never served: 404
	pathDotfile        // has a dotfile segment: Options.Dotfiles decides
	pathPrefix         // the StripPrefix itself: redirected to it with "/"
)

// split is the mapping in the form the Server's cache uses: the path
// beneath the root (a request path still, starting with '/'), whether it
// is already clean (see checkPath), and its verdict. It reads raw and p
// only while it runs; the returned path is a subslice of p.
func (m PathMap) split(raw, p []byte) (rest []byte, clean bool, verdict int) {
	if hasEncodedSlash(raw) {
		return nil, false, pathRefused
	}
	if m.stripPrefix != "" {
		var ok bool
		if p, ok = stripPrefix(p, m.stripPrefix); !ok {
			return nil, false, pathRefused
		}
		if len(p) == 0 {
			return nil, false, pathPrefix
		}
	}
	clean, verdict = checkPath(p)
	return p, clean, verdict
}

// checkStripPrefix reports whether s is a valid Options.StripPrefix.
func checkStripPrefix(s string) error {
	if s != "" && (s[0] != '/' || strings.HasSuffix(s, "/")) {
		return fmt.Errorf("strip_prefix %q must start with / and not end with /", s)
	}
	return nil
}

// checkPath vets a decoded request path in one pass without allocating.
// It refuses a path not starting with '/', containing NUL or '\\', or with
// a ".." segment; it flags a path with a segment starting with '.' other
// than a first segment ".well-known" as pathDotfile. clean reports whether
// p is already in its canonical form (no empty or "." segment except a
// trailing slash), so that p itself is the cache key.
func checkPath(p []byte) (clean bool, verdict int) {
	if len(p) == 0 || p[0] != '/' {
		return false, pathRefused
	}
	clean, verdict = true, pathOK
	segs := 0 // segments that survive cleaning, so far
	for i := 1; i <= len(p); {
		j := i
		for j < len(p) && p[j] != '/' {
			if p[j] == 0 || p[j] == '\\' {
				return false, pathRefused
			}
			j++
		}
		seg := p[i:j]
		switch {
		case len(seg) == 0:
			if j < len(p) { // "//"
				clean = false
			}
		case seg[0] != '.':
			segs++
		case len(seg) == 1: // "."
			clean = false
		case string(seg) == "..":
			return false, pathRefused
		case segs == 0 && string(seg) == ".well-known":
			segs++
		default: // dotfile
			segs++
			verdict = pathDotfile
		}
		i = j + 1
	}
	return clean, verdict
}

// isDotName reports whether a directory entry name is hidden by the
// dotfile rule at the given cache key of its directory.
func isDotName(dirKey, name string) bool {
	return name[0] == '.' && !(dirKey == "/" && name == ".well-known")
}

// stripPrefix removes prefix (no trailing slash) from p, which must then
// be empty (the prefix itself, to be redirected to prefix + "/") or
// continue with '/'. ok is false for a path outside prefix.
func stripPrefix(p []byte, prefix string) (rest []byte, ok bool) {
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return nil, false
	}
	rest = p[len(prefix):]
	return rest, len(rest) == 0 || rest[0] == '/'
}

// cleanKey returns the canonical form of a path that checkPath accepted:
// path.Clean's result, with a trailing slash kept. A final "." segment
// leaves a trailing slash, as RFC 3986 §5.2.4 removes dot segments:
// "/a.txt/." is "/a.txt/", not the file.
func cleanKey(p string) string {
	c := path.Clean(p)
	if c != "/" && (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.")) {
		c += "/"
	}
	return c
}

// fsName turns a cache key into a name for fs.FS: "/" is ".", otherwise
// the key without its leading and trailing slash.
func fsName(key string) string {
	name := strings.TrimSuffix(key[1:], "/")
	if name == "" {
		return "."
	}
	return name
}

// hasEncodedSlash reports whether a raw path contains "%2f" or "%2F".
func hasEncodedSlash(raw []byte) bool {
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] == '%' && raw[i+1] == '2' && raw[i+2]|0x20 == 'f' {
			return true
		}
	}
	return false
}

// escapePath percent-encodes a cleaned path for a Location field.
func escapePath(p string) string {
	return (&url.URL{Path: p}).EscapedPath()
}
