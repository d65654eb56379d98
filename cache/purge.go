package cache

import (
	"errors"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/sluice-server/sluice/engine"
)

// Errors of PurgeURL and BanPrefix.
var (
	ErrPurgeURL  = errors.New("cache: not an http(s) URL or an absolute path")
	ErrPurgeHost = errors.New("cache: no host, or not a host")
)

// PurgeURL removes every stored response of a URL: GET and HEAD (they
// share entries), every Vary variant, and every value of the extra key
// parts (Options.Key). target is an absolute http or https URL
// ("https://example.com/a?b=1"), or an absolute path with an optional
// query ("/a?b=1") on host (a Host field's value, "example.com:8080"), in
// which case the URL is purged for both http and https. The path is
// compared in its canonical form (as routing sees it), the query as
// written. It returns how many stored responses it removed. Safe for
// concurrent use with requests: a response being fetched for the URL
// while the purge runs is served to the requests that wait for it but
// not stored, unless its request collapsed onto no other (one that
// waited past LockTimeout).
func (x *Cache) PurgeURL(host, target string) (int, error) {
	schemes, host, path, query, err := splitTarget(host, target)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, scheme := range schemes {
		base := x.keyFor(scheme, []byte(host), path, []byte(query), nil)
		of := func(k string) bool {
			return k == base || len(k) > len(base) && k[len(base)] == 0 && strings.HasPrefix(k, base)
		}
		x.doomInflight(func(k string, _ *entry) bool { return of(k) })
		if x.disk != nil {
			n += x.diskPurgeURL(base)
			continue
		}
		if len(x.keyParts) == 0 {
			e, ok := x.store.Get(base)
			if !ok {
				continue
			}
			if x.purgeKey(base) {
				n++
			}
			if e.kind != kindVary {
				continue
			}
		}
		// The variants, under base and a NUL (as are the keys with
		// extra parts): unreachable once the marker is gone, but taking
		// memory until then.
		n += x.removeWhere(of)
	}
	atomic.AddUint64(&x.stats.Purged, uint64(n))
	return n, nil
}

// BanPrefix removes every stored response whose URL starts with prefix:
// an absolute http or https URL ("https://example.com/img/"), or a path
// ("/img/") on host, for both http and https. The prefix is compared
// with the canonical path and the query as written after it, so "/img"
// also bans "/images/a.png" and "/img?x=1". It walks the whole store
// once. It returns how many stored responses it removed.
func (x *Cache) BanPrefix(host, prefix string) (int, error) {
	schemes, host, path, query, err := splitTarget(host, prefix)
	if err != nil {
		return 0, err
	}
	var keys []string
	for _, scheme := range schemes {
		k := x.keyFor(scheme, []byte(host), path, []byte(query), nil)
		if query == "" && strings.HasSuffix(prefix, "?") {
			k += "?"
		}
		keys = append(keys, k)
	}
	match := func(k string) bool {
		for _, p := range keys {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	x.doomInflight(func(k string, _ *entry) bool { return match(k) })
	n := x.removeWhere(match) + x.diskBan(keys)
	atomic.AddUint64(&x.stats.Purged, uint64(n))
	return n, nil
}

// PurgeTag removes every stored response tagged tag by its Cache-Tag
// (a comma-separated list) or Surrogate-Key (a space-separated list)
// response fields; tags are compared exactly, case included. It returns
// how many stored responses it removed. In memory, tags are indexed; on
// a disk store it reads the head of every object (a walk of the
// directory, as a ban).
func (x *Cache) PurgeTag(tag string) int {
	x.doomInflight(func(_ string, e *entry) bool {
		m := e.meta.Load()
		return m != nil && containsString(responseTags(m), tag)
	})
	n := 0
	for _, e := range x.tags.entries(tag) {
		if cur, ok := x.store.Get(e.key); ok && cur == e && x.purgeKey(e.key) {
			n++
		}
	}
	n += x.diskPurgeTag(tag)
	atomic.AddUint64(&x.stats.Purged, uint64(n))
	return n
}

// removeWhere removes the entries whose keys match, and returns how many
// of them were responses.
func (x *Cache) removeWhere(match func(string) bool) int {
	var keys []string
	x.store.Range(func(k string, _ *entry) bool {
		if match(k) {
			keys = append(keys, k)
		}
		return true
	})
	n := 0
	for _, k := range keys {
		if x.purgeKey(k) {
			n++
		}
	}
	return n
}

// purgeKey removes the store entry under key for a purge, and marks the
// revalidation it has in flight, if any, so that the response it brings
// is not stored. It reports whether the entry was a response.
func (x *Cache) purgeKey(key string) bool {
	e, ok := x.store.Delete(key)
	if !ok {
		return false
	}
	if f := e.pending.Load(); f != nil {
		f.e.purged.Store(true)
	}
	x.dropped(e)
	return e.kind == kindResponse
}

// doomInflight marks the fetches in flight that match (by their key, or
// by their response once its header is known) so that what they bring is
// not stored: it was fetched before the purge. Called before a purge
// walks the store (see add).
func (x *Cache) doomInflight(match func(key string, e *entry) bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, e := range x.inflight {
		if match(k, e) {
			e.purged.Store(true)
		}
	}
}

// splitTarget reads a purge's target: the schemes it covers, its host,
// canonical path and query.
func splitTarget(host, target string) (schemes []string, h string, path []byte, query string, err error) {
	if strings.ContainsAny(target, "\x00\r\n\t ") {
		return nil, "", nil, "", ErrPurgeURL
	}
	u, perr := url.Parse(target)
	if perr != nil || u.Opaque != "" || u.User != nil || u.Fragment != "" {
		return nil, "", nil, "", ErrPurgeURL
	}
	switch u.Scheme {
	case "":
		if u.Host != "" || !strings.HasPrefix(target, "/") {
			return nil, "", nil, "", ErrPurgeURL
		}
		schemes = []string{"http", "https"}
		h = host
	case "http", "https":
		schemes = []string{u.Scheme}
		h = u.Host
	default:
		return nil, "", nil, "", ErrPurgeURL
	}
	if !validHost(h) {
		return nil, "", nil, "", ErrPurgeHost
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	path, perr = engine.CanonicalPath([]byte(p))
	if perr != nil {
		return nil, "", nil, "", ErrPurgeURL
	}
	return schemes, h, path, u.RawQuery, nil
}

// TargetOnHost returns the path and query of target, a path or an
// absolute http or https URL, and false when the URL names another host
// than host, compared as keys compare hosts (without case, a trailing
// dot or the scheme's default port): for a purge endpoint that reaches
// only the responses of the host it is sent to. A target that is no URL
// to purge is returned as it is, for PurgeURL or BanPrefix to refuse.
func TargetOnHost(host, target string) (string, bool) {
	schemes, h, _, _, err := splitTarget(host, target)
	if err != nil || len(schemes) != 1 {
		return target, true
	}
	if string(appendHost(nil, []byte(h), schemes[0])) != string(appendHost(nil, []byte(host), schemes[0])) {
		return "", false
	}
	u, _ := url.Parse(target) // splitTarget parsed it
	return u.RequestURI(), true
}

// validHost reports whether h can be a Host field's value: not empty,
// visible ASCII without '/', '?', '#' or '@'.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("/?#@\\", c) >= 0 {
			return false
		}
	}
	return true
}
