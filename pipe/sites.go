package pipe

import (
	"fmt"
	"net/http"
	"strings"
)

// Site is one site of a Sites: the host names it serves and the
// component that serves them, typically a Router of the site's routes
// (behind the site's ErrorPages).
type Site struct {
	// Hosts are the names the site serves: exact names ("example.com")
	// and wildcards ("*.example.com": any subdomain of example.com, at
	// any depth), compared as Route.Host compares them (ASCII
	// case-insensitive, port and a trailing dot ignored).
	Hosts []string

	// Default makes the site serve the requests whose host no site
	// names (and those without a Host). A default site may have no Hosts.
	Default bool

	// Handler serves the site's requests.
	Handler Component
}

// Sites is a Component that chooses a site by the request's host before
// anything else, as nginx chooses a server block and Caddy a site: an
// exact name first, then the longest wildcard that matches ("*.a.b.com"
// before "*.b.com"), then the default site; with no default, a request
// for a host no site names gets 404. The chosen site's Handler then runs
// alone: a request never falls through to another site's routes.
//
// The choice costs a map lookup for the exact name and one per dot of
// the host for the wildcards, however many sites and hosts there are, and
// allocates nothing for a host of up to 255 bytes. A Sites is immutable
// and safe for concurrent use.
type Sites struct {
	exact map[string]Component
	wild  map[string]Component // by suffix: ".example.com" for "*.example.com"
	def   Component
}

// NewSites builds the host lookup of sites. It refuses a site without a
// Handler, a site with neither Hosts nor Default, an empty or malformed
// name ("*." alone, a '*' anywhere but a leading "*."), a name two sites
// (or one site twice) list, and a second default site.
func NewSites(sites ...Site) (*Sites, error) {
	s := &Sites{exact: map[string]Component{}, wild: map[string]Component{}}
	owner := map[string]int{}
	for i, site := range sites {
		if site.Handler == nil {
			return nil, fmt.Errorf("site %d: no handler", i)
		}
		if len(site.Hosts) == 0 && !site.Default {
			return nil, fmt.Errorf("site %d: no hosts and not the default", i)
		}
		if site.Default {
			if s.def != nil {
				return nil, fmt.Errorf("site %d: a second default site", i)
			}
			s.def = site.Handler
		}
		for _, h := range site.Hosts {
			name := strings.TrimSuffix(strings.ToLower(h), ".")
			key, m := name, s.exact
			if rest, ok := strings.CutPrefix(name, "*."); ok {
				key, m = "."+rest, s.wild
			}
			if key == "" || key == "." || strings.Contains(key, "*") {
				return nil, fmt.Errorf("site %d: host %q: want a name such as example.com or *.example.com", i, h)
			}
			if o, ok := owner[name]; ok {
				return nil, fmt.Errorf("site %d: host %q is already site %d's", i, h, o)
			}
			owner[name] = i
			m[key] = site.Handler
		}
	}
	return s, nil
}

// Handle implements Component.
func (s *Sites) Handle(c *Conn) bool {
	if h := s.site(hostOnly(c.Request.Host)); h != nil {
		return h.Handle(c)
	}
	return c.Error(http.StatusNotFound, "no site for this host")
}

// site returns the handler of the site serving host (without its port),
// or nil.
func (s *Sites) site(host []byte) Component {
	var buf [255]byte
	if h := lowerHost(buf[:0], host); h != nil {
		host = h
	} else {
		host = []byte(strings.ToLower(string(host)))
	}
	if h, ok := s.exact[string(host)]; ok {
		return h
	}
	if len(s.wild) > 0 {
		// The longest suffix first: "*.a.b.com" before "*.b.com". A
		// wildcard needs a label before its suffix, so a host's own
		// leading dot is never one.
		for i := 1; i < len(host); i++ {
			if host[i] == '.' {
				if h, ok := s.wild[string(host[i:])]; ok {
					return h
				}
			}
		}
	}
	return s.def
}

// lowerHost returns b with its ASCII letters in lower case: b itself
// when none is upper-case, else a copy in dst's array, or nil when b is
// longer than dst's capacity.
func lowerHost(dst, b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			if len(b) > cap(dst) {
				return nil
			}
			dst = append(dst[:0], b...)
			for j := i; j < len(dst); j++ {
				if c := dst[j]; 'A' <= c && c <= 'Z' {
					dst[j] = c + 'a' - 'A'
				}
			}
			return dst
		}
	}
	return b
}
