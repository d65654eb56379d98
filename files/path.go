package files

import (
	"net/url"
	"path"
	"strings"
)

// Verdicts of checkPath.
const (
	pathOK      = iota // may be served
	pathRefused        // never served: 404
	pathDotfile        // has a dotfile segment: Options.Dotfiles decides
)

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
