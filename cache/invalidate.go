package cache

import (
	"net/url"
	"strings"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// invalidateAfter is the filter of a request with an unsafe method: when
// its response is not an error it invalidates what is stored for the
// target URI, and for the Location and Content-Location URIs on the
// same host (RFC 9111 §4.4).
func (x *Cache) invalidateAfter(c *pipe.Conn) pipe.Wrap {
	h := c.Header()
	h.Add("Cache-Status", x.statusMethod)
	if s := c.Status(); s < 200 || s >= 400 {
		return nil
	}
	r := c.Request
	x.invalidateURI(x.uriKey(r))
	for _, name := range [...]string{"Location", "Content-Location"} {
		if v := h.Get(name); v != "" {
			if uk, ok := x.sameOriginKey(r, v); ok {
				x.invalidateURI(uk)
			}
		}
	}
	return nil
}

// uriKey is the primary key of r's URI without the extra key parts.
func (x *Cache) uriKey(r *engine.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return x.keyFor(scheme, r.Host, r.Path, r.Query, nil)
}

// invalidateURI removes what is stored for the URI whose key without
// extra parts is uk: with extra key parts (Options.Key), the responses
// stored under every value of them.
func (x *Cache) invalidateURI(uk string) {
	if len(x.keyParts) == 0 {
		x.invalidate(uk)
		return
	}
	// Keys with parts are uk, NUL, the parts: no path or query holds a
	// NUL, so the prefix picks this URI's keys only.
	prefix := uk + "\x00"
	var keys []string
	x.store.Range(func(k string, _ *entry) bool {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
		return true
	})
	for _, k := range keys {
		x.invalidate(k)
	}
	x.diskPurgePrefix(prefix)
}

// sameOriginKey returns the key without extra parts (see uriKey) of the
// URI reference ref,
// resolved against r's target, when it is on r's scheme and host.
func (x *Cache) sameOriginKey(r *engine.Request, ref string) (string, bool) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := &url.URL{Scheme: scheme, Host: string(r.Host), Path: string(r.Path)}
	abs := base.ResolveReference(u)
	if abs.Scheme != scheme {
		return "", false
	}
	own := string(appendHost(nil, r.Host, scheme))
	if string(appendHost(nil, []byte(abs.Host), scheme)) != own {
		return "", false
	}
	path, err := engine.CanonicalPath([]byte(abs.EscapedPath()))
	if err != nil {
		return "", false
	}
	return x.keyFor(scheme, r.Host, path, []byte(abs.RawQuery), nil), true
}
