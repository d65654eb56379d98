package files

import (
	"net/url"
	"path"
	"strings"
)

// checkPath vets a decoded request path in one pass without allocating.
// ok is false for a path that must not be served: not starting with '/',
// containing NUL or '\\', with a ".." segment, or with a segment starting
// with '.' other than a first segment ".well-known". clean reports whether
// p is already in its canonical form (no empty or "." segment except a
// trailing slash), so that p itself is the cache key.
func checkPath(p []byte) (clean, ok bool) {
	if len(p) == 0 || p[0] != '/' {
		return false, false
	}
	clean = true
	segs := 0 // segments that survive cleaning, so far
	for i := 1; i <= len(p); {
		j := i
		for j < len(p) && p[j] != '/' {
			if p[j] == 0 || p[j] == '\\' {
				return false, false
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
			return false, false
		case segs == 0 && string(seg) == ".well-known":
			segs++
		default: // dotfile
			return false, false
		}
		i = j + 1
	}
	return clean, true
}

// cleanKey returns the canonical form of a path that checkPath accepted:
// path.Clean's result, with a trailing slash kept.
func cleanKey(p string) string {
	c := path.Clean(p)
	if c != "/" && strings.HasSuffix(p, "/") {
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
