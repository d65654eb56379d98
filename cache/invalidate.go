package cache

import (
	"net/url"

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
	x.invalidate(x.primaryKey(r))
	for _, name := range [...]string{"Location", "Content-Location"} {
		if v := h.Get(name); v != "" {
			if pk, ok := x.sameOriginKey(r, v); ok {
				x.invalidate(pk)
			}
		}
	}
	return nil
}

// sameOriginKey returns the primary key of the URI reference ref,
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
	return x.keyFor(scheme, r.Host, path, []byte(abs.RawQuery), r), true
}
