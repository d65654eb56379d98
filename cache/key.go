package cache

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// keyPart is an extra part of the primary key (Options.Key): the value of
// a request header field, or of one cookie.
type keyPart struct {
	cookie bool
	name   string
}

// parseKeyPart reads "header:NAME" or "cookie:NAME".
func parseKeyPart(s string) (keyPart, bool) {
	kind, name, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return keyPart{}, false
	}
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "header":
		return keyPart{name: name}, httpgrammar.IsToken(name)
	case "cookie":
		return keyPart{cookie: true, name: name}, httpgrammar.IsToken(name)
	}
	return keyPart{}, false
}

// primaryKey is the key of a request's stored responses (RFC 9111 §2):
// the method class (GET and HEAD share GET's responses), the scheme, the
// host in lower case without the scheme's default port, the canonical
// path (the one routing used), the query as sent, and the configured
// extra parts. Parts are separated by bytes no field value, path or
// query holds unescaped in that position (NUL and 0x01).
func (x *Cache) primaryKey(r *engine.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return x.keyFor(scheme, r.Host, r.Path, r.Query, r)
}

// keyFor builds the primary key of a URI; r, when not nil, gives the
// extra key parts.
func (x *Cache) keyFor(scheme string, host, path, query []byte, r *engine.Request) string {
	bp := keyBufs.Get().(*[]byte)
	b := append((*bp)[:0], 'G', 0)
	b = append(b, scheme...)
	b = append(b, "://"...)
	b = appendHost(b, host, scheme)
	b = appendKeyPath(b, path)
	if len(query) > 0 {
		b = append(b, '?')
		b = append(b, query...)
	}
	if r != nil {
		for _, p := range x.keyParts {
			b = append(b, 0)
			var v []byte
			var ok bool
			if p.cookie {
				v, ok = cookieValue(r, p.name)
			} else {
				v, ok = r.HeaderList(p.name), r.Header(p.name) != nil
			}
			if ok {
				b = append(b, '=')
				b = append(b, v...)
			}
		}
	}
	key := string(b)
	if cap(b) <= 4<<10 {
		*bp = b
		keyBufs.Put(bp)
	}
	return key
}

// appendKeyPath appends the canonical (decoded) path to a key with '%',
// '?' and NUL escaped, so that a path holding a '?' (sent as %3F) and a
// path with a query ("/a%3Fb" and "/a?b") never share a key, nor a path
// and the NUL that starts a key's extra parts.
func appendKeyPath(b, path []byte) []byte {
	for {
		i := bytes.IndexAny(path, "%?\x00")
		if i < 0 {
			return append(b, path...)
		}
		b = append(b, path[:i]...)
		switch path[i] {
		case '%':
			b = append(b, "%25"...)
		case '?':
			b = append(b, "%3F"...)
		default:
			b = append(b, "%00"...)
		}
		path = path[i+1:]
	}
}

// keyBufs holds the buffers keys are built in, so that a key costs one
// allocation, its string.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendHost appends host in lower case, without a trailing dot and
// without the scheme's default port.
func appendHost(b, host []byte, scheme string) []byte {
	h, port := host, []byte(nil)
	if i := lastColon(host); i >= 0 {
		h, port = host[:i], host[i:]
	}
	if p := string(port); p == ":" || scheme == "http" && p == ":80" || scheme == "https" && p == ":443" {
		port = nil
	}
	for _, c := range trimDot(h) {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return append(b, port...)
}

// lastColon returns the index of a port's colon in host, or -1 (an IPv6
// literal's colons are inside brackets).
func lastColon(host []byte) int {
	for i := len(host) - 1; i >= 0; i-- {
		switch host[i] {
		case ':':
			return i
		case ']':
			return -1
		}
	}
	return -1
}

func trimDot(h []byte) []byte {
	if len(h) > 1 && h[len(h)-1] == '.' {
		return h[:len(h)-1]
	}
	return h
}

// cookieValue returns the value of the cookie name in r's Cookie fields.
func cookieValue(r *engine.Request, name string) (value []byte, found bool) {
	for _, f := range r.Fields {
		if httpgrammar.EqualFold(f.Name, "Cookie") {
			cookiePairs(f.Value, func(n, v, _ []byte) bool {
				if string(n) == name {
					value, found = v, true
				}
				return !found
			})
			if found {
				return value, true
			}
		}
	}
	return nil, false
}

// cookiePairs calls fn with the name, value and whole pair of each
// name=value pair of a Cookie field value (pairs without '=' are
// skipped), until fn returns false.
func cookiePairs(v []byte, fn func(name, value, pair []byte) bool) {
	for len(v) > 0 {
		var pair []byte
		if i := bytes.IndexByte(v, ';'); i >= 0 {
			pair, v = v[:i], v[i+1:]
		} else {
			pair, v = v, nil
		}
		pair = httpgrammar.TrimOWS(pair)
		if i := bytes.IndexByte(pair, '='); i >= 0 && !fn(pair[:i], pair[i+1:], pair) {
			return
		}
	}
}

// codings are the content codings Accept-Encoding is normalised to in a
// secondary key, in the order that breaks ties.
var codings = []string{"zstd", "br", "gzip", "deflate", "identity"}

// varyNames returns the field names a Vary value lists, in lower case,
// sorted and without repeats, and whether it holds "*".
func varyNames(v string) (names []string, star bool) {
	for elem, rest := httpgrammar.NextElement(v); len(elem) > 0; elem, rest = httpgrammar.NextElement(rest) {
		if elem == "*" {
			return nil, true
		}
		names = append(names, strings.ToLower(elem))
	}
	slices.Sort(names)
	return slices.Compact(names), false
}

// secondaryKey is the part of the key that a stored response's Vary
// selects (RFC 9111 §4.1): the request's values of the fields it names,
// each list normalised (elements trimmed, joined by ","; Accept-Language
// in lower case), and Accept-Encoding reduced to the coding it rates best among codings, so
// that the spellings of one preference share a variant.
func secondaryKey(r *engine.Request, names []string) string {
	var b []byte
	for _, name := range names {
		b = append(b, 1)
		v := r.HeaderList(name)
		if v == nil {
			b = append(b, '-')
			continue
		}
		b = append(b, '=')
		if name == "accept-encoding" {
			if i := httpgrammar.Negotiate(v, codings); i >= 0 {
				b = append(b, codings[i]...)
			} else {
				b = append(b, '!')
			}
			continue
		}
		// Language tags compare without case (RFC 4647 §2).
		fold := name == "accept-language"
		first := true
		for elem, rest := httpgrammar.NextElement(v); len(elem) > 0; elem, rest = httpgrammar.NextElement(rest) {
			if !first {
				b = append(b, ',')
			}
			first = false
			for _, c := range elem {
				if fold && 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				b = append(b, c)
			}
		}
	}
	return string(b)
}

// encodingAcceptable reports whether r accepts the coding of m, a
// response that varies on Accept-Encoding; a response that does not
// vary on it is served as it is, as the origin said it may be.
func encodingAcceptable(r *engine.Request, m *meta) bool {
	if m.encoding == "" || !slices.Contains(m.vary, "accept-encoding") {
		return true
	}
	return acceptsCoding(r, m.encoding)
}

// acceptsCoding reports whether r accepts a response with the
// Content-Encoding ce: a variant keyed by the best coding may have been
// stored from a request that rated another as high.
func acceptsCoding(r *engine.Request, ce string) bool {
	if ce == "" {
		ce = "identity"
	}
	return httpgrammar.Negotiate(r.HeaderList("Accept-Encoding"), []string{ce}) == 0
}

// poisonFields are request fields that origins read to build links and
// routes although they are no part of the key: a cache that let them
// through would store, for everyone, what one client's field made. They
// are removed from a request the cache may store the answer to, unless
// the key includes them.
var poisonFields = []string{
	"X-Forwarded-Host", "X-Host", "X-Forwarded-Server", "X-Original-URL",
	"X-Rewrite-URL", "X-Original-Host", "X-HTTP-Method-Override",
	"X-HTTP-Method", "X-Method-Override", "Forwarded",
	"X-Forwarded-Proto", "X-Forwarded-Scheme", "X-Forwarded-Port", "X-Forwarded-Prefix",
}

// isPoisonField reports whether a request field must not reach the rest
// of the pipeline on a cacheable request.
func (x *Cache) isPoisonField(name []byte) bool {
	if len(name) == 0 || !x.poisonFirst[name[0]|0x20] {
		// Most fields start with a letter no poison field starts with.
		return false
	}
	for _, p := range x.poison {
		if httpgrammar.EqualFold(name, p) {
			return true
		}
	}
	return false
}

// stripUnkeyed removes the poison fields from r, and, when the key holds
// cookies, every cookie but those from its Cookie fields, so that
// nothing outside the key reaches the rest of the pipeline. It reports
// whether r still has a Cookie field the key does not cover.
func (x *Cache) stripUnkeyed(r *engine.Request) (unkeyedCookie bool) {
	fields := r.Fields[:0]
	changed := false
	for _, f := range r.Fields {
		if x.isPoisonField(f.Name) {
			changed = true
			continue
		}
		if httpgrammar.EqualFold(f.Name, "Cookie") {
			if x.cookieParts == 0 {
				unkeyedCookie = true
			} else {
				v := x.keyedCookies(f.Value)
				if len(v) == 0 {
					changed = true
					continue
				}
				f.Value = v
			}
		}
		fields = append(fields, f)
	}
	if changed {
		clear(r.Fields[len(fields):])
		r.Fields = fields
	}
	return unkeyedCookie
}

// keyedCookies returns the pairs of a Cookie value whose names are key
// parts, joined by "; " (a new slice), or nil.
func (x *Cache) keyedCookies(v []byte) []byte {
	var out []byte
	cookiePairs(v, func(name, _, pair []byte) bool {
		for _, p := range x.keyParts {
			if p.cookie && p.name == string(name) {
				if len(out) > 0 {
					out = append(out, "; "...)
				}
				out = append(out, pair...)
				break
			}
		}
		return true
	})
	return out
}
