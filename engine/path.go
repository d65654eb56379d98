package engine

import (
	"bytes"
	"errors"

	"github.com/sluice-server/sluice/httpgrammar"
)

// The canonical path (RFC 3986 §6.2.2) is decided here, once, before any
// handler runs: every component — the router first — sees the same
// spelling of a path, so no two spellings of it can take different routes
// to the same bytes. docs/security.md describes the rules for users.

// needsCanonical reports whether the raw path p (starting with '/') might
// differ from its canonical form: it holds a '%', an empty segment ("//"),
// or a "." or ".." segment. It is the fast path's one scan: a path without
// any of these is its own canonical form and is not copied.
func needsCanonical(p []byte) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			return true
		case '/':
			if i+1 == len(p) {
				return false
			}
			switch p[i+1] {
			case '/':
				return true
			case '.':
				j := i + 2
				if j < len(p) && p[j] == '.' {
					j++
				}
				if j == len(p) || p[j] == '/' {
					return true
				}
			}
		}
	}
	return false
}

// canonicalPath appends to dst the canonical form of p, a raw path as
// received (origin-form, starting with '/'), and returns the extended
// slice. Segment by segment, it
//
//  1. percent-decodes the segment (RFC 3986 §2.1), refusing a malformed
//     escape (errPathEncoding), an encoded '/' (errPathSlash: "a%2Fb" is
//     one segment to its sender but would be two to the file system) and
//     a decoded NUL (errPathNUL);
//  2. drops an empty segment, so repeated slashes are merged;
//  3. drops a "." segment, and for ".." also the segment before it
//     (RFC 3986 §5.2.4) — after decoding, so "%2e%2E" is ".." too —
//     refusing a ".." with nothing left to remove (errPathAboveRoot).
//
// A path whose last segment is empty, "." or ".." ends in '/', as in
// §5.2.4 ("/a/b/.." is "/a/"), and the canonical form of "/" is "/". The
// result never contains "//", "/./" or "/../", nor ends in "/." or "/..",
// and canonicalPath is idempotent on it once re-encoded. On error, the
// contents of dst past its original length are unspecified.
func canonicalPath(dst, p []byte) ([]byte, error) {
	start := len(dst)
	trailing := false // the last segment was empty, "." or ".."
	for i := 0; i < len(p); {
		end := i + 1 + segmentLen(p[i+1:])
		mark := len(dst)
		dst = append(dst, '/')
		var err error
		if dst, err = appendDecoded(dst, p[i+1:end]); err != nil {
			return dst, err
		}
		i = end
		switch seg := dst[mark+1:]; {
		case len(seg) == 0 || string(seg) == ".":
			dst, trailing = dst[:mark], true
		case string(seg) == "..":
			if mark == start {
				return dst, errPathAboveRoot
			}
			dst, trailing = dst[:start+bytes.LastIndexByte(dst[start:mark], '/')], true
		default:
			trailing = false
		}
	}
	if trailing || len(dst) == start {
		dst = append(dst, '/')
	}
	return dst, nil
}

// segmentLen returns the length of the path segment at the start of p: up
// to the next '/' or the end.
func segmentLen(p []byte) int {
	if n := bytes.IndexByte(p, '/'); n >= 0 {
		return n
	}
	return len(p)
}

// appendDecoded appends the percent-decoding of the path segment s to dst.
// It refuses a malformed escape, an encoded '/' and a decoded NUL.
func appendDecoded(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) {
				return dst, errPathEncoding
			}
			hi, ok1 := httpgrammar.Unhex(s[i+1])
			lo, ok2 := httpgrammar.Unhex(s[i+2])
			if !ok1 || !ok2 {
				return dst, errPathEncoding
			}
			switch c = hi<<4 | lo; c {
			case 0:
				return dst, errPathNUL
			case '/':
				return dst, errPathSlash
			}
			i += 2
		}
		dst = append(dst, c)
	}
	return dst, nil
}

// CanonicalPath returns the canonical form of raw, a percent-encoded
// absolute path (no query), by the rules Request.Path follows: decoded,
// "//" merged, "." and ".." removed; an encoded '/', a decoded NUL or a
// ".." above the root is an error. It is for a path that did not come
// from the request line, such as a CGI program's local redirect
// (RFC 3875 §6.2.2), that must be held to the same rules. The result is
// a new slice.
func CanonicalPath(raw []byte) ([]byte, error) {
	if len(raw) == 0 || raw[0] != '/' {
		return nil, errors.New("not an absolute path")
	}
	return canonicalPath(nil, raw)
}
