package components

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluice-server/sluice/cache"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "cache_purge", Kind: KindPipe, Scalar: "cache", Stops: "200, 400, 403, 405",
		Example: `cache_purge: {path: /.purge, allow: [10.0.0.0/8]}`,
	}, func(o CachePurgeOptions, x Context) (pipe.Component, error) {
		if o.Caches == nil {
			o.Caches = x.Caches
		}
		return NewCachePurge(o)
	})
}

// CachePurgeMethods are the request methods cache_purge answers wherever
// it is placed: PURGE (a URL, or tags) and BAN (a prefix). A config with
// a cache_purge lets them reach the routes (config.Config.ExtraMethods).
var CachePurgeMethods = []string{"PURGE", "BAN"}

// CachePurgeOptions configures NewCachePurge. A config scalar sets Cache.
type CachePurgeOptions struct {
	// Cache names the caches purged (their name option); empty: every
	// cache of the config. A POST may narrow it with "cache".
	Cache string `yaml:"cache"`

	// Path, if set, is a request path at which POST with a JSON body
	// purges ({"urls": [...], "tags": [...], "prefixes": [...]}); other
	// methods there get 405. Empty: no such endpoint, only PURGE and
	// BAN.
	Path string `yaml:"path"`

	// Allow lists the clients allowed to purge: CIDRs or addresses, as
	// ipfilter's allow. Empty: loopback only (127.0.0.0/8, ::1).
	Allow []string `yaml:"allow"`

	// TrustedProxies lists the reverse proxies whose client-address
	// header is believed, as ipfilter's option of that name. Empty: the
	// TCP peer is the client.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// ClientIPHeader is the header trusted proxies put the client
	// address in: "X-Forwarded-For" (the default) or "Forwarded".
	ClientIPHeader string `yaml:"client_ip_header"`

	// Caches is the set the caches are looked up in at each purge
	// (components.Context.Caches in a config file): its relay, when set,
	// takes each purge to the master's other workers. (Not settable
	// from a config file.)
	Caches *Caches `yaml:"-"`

	// Logger receives the purges that not every worker confirmed; nil
	// means the config's (slog.Default outside one). (Not settable from
	// a config file.)
	Logger *slog.Logger `yaml:"-"`
}

// MaxPurgeBody bounds a POST's JSON body, and maxPurgeItems the URLs,
// tags and prefixes of one purge.
const (
	MaxPurgeBody  = 1 << 20
	maxPurgeItems = 10000
)

// MaxPurgeItem bounds the length of a URL or prefix of a purge: longer
// than any request target the engine accepts by default (8 KiB), so
// that no stored response is out of reach.
const MaxPurgeItem = 8 << 10

// NewCachePurge returns the cache_purge Pipe: the control endpoint of
// the caches of a config. It lets every request through but these,
// which it answers when the client is allowed (403 otherwise):
//
//   - PURGE /path?query removes every stored response of that URL on
//     the request's host (http and https, every variant); with
//     Cache-Tag (comma-separated) or Surrogate-Key (space-separated)
//     request fields, it removes the responses tagged so instead;
//   - BAN /prefix removes the stored responses whose path (and query)
//     starts with the prefix on the request's host;
//   - POST at Path with a JSON object {"cache": "NAME", "urls": [...],
//     "tags": [...], "prefixes": [...]}: urls and prefixes absolute
//     (http or https) or paths on the request's host.
//
// Each is answered 200 with {"purged": N, "processes": P}, the stored
// responses removed and the processes whose caches were purged, and
// Cache-Control: no-store; a bad target is a 400 naming which. With a
// relay on opts.Caches (a master's workers), the purge reaches every
// worker's caches before the answer; when not every worker confirmed
// it, the answer is 503 with "error" beside what was purged. The
// caches purged are those called Cache (every one when empty) among
// opts.Caches at the time of the request. Clients are allowed as
// ipfilter allows them, by Allow (loopback only when empty). Place it
// before the cache in the site's routes, where PURGE and BAN of the
// site's paths arrive; Path adds the JSON endpoint on such a route. The
// Pipe is safe for concurrent use.
func NewCachePurge(opts CachePurgeOptions) (pipe.Component, error) {
	if opts.Cache != "" && !cache.ValidName(opts.Cache) {
		return nil, fmt.Errorf("cache_purge: cache %q is not a cache name (a Structured Field token, as the cache's name option)", opts.Cache)
	}
	if opts.Path != "" && opts.Path[0] != '/' {
		return nil, fmt.Errorf("cache_purge: path %q must start with /", opts.Path)
	}
	allow := opts.Allow
	if len(allow) == 0 {
		allow = []string{"127.0.0.0/8", "::1"}
	}
	f, err := newIPFilter(IPFilterOptions{Allow: allow, TrustedProxies: opts.TrustedProxies, ClientIPHeader: opts.ClientIPHeader})
	if err != nil {
		return nil, errors.New("cache_purge" + strings.TrimPrefix(err.Error(), "ipfilter"))
	}
	p := &cachePurge{opts: opts, filter: f, logger: opts.Logger}
	if p.logger == nil {
		p.logger = slog.Default()
	}
	return pipe.Pipe(p.handle), nil
}

type cachePurge struct {
	opts   CachePurgeOptions
	filter *ipFilter
	logger *slog.Logger
}

// RefuseCachePurge answers PURGE and BAN 405, and lets other requests
// through: a config with a cache_purge places it first on the routes
// without one, which the methods then reach, so that they are never
// passed on (a proxy would send them to an upstream that may trust this
// server's address).
var RefuseCachePurge pipe.Component = pipe.Pipe(func(c *pipe.Conn) bool {
	if c.Request.IsMethod("PURGE") || c.Request.IsMethod("BAN") {
		return c.Error(http.StatusMethodNotAllowed, "no cache_purge on this route")
	}
	return true
})

// PurgeBody is the JSON body of a purge POST (cache_purge's, and the
// admin API's): the cache purged (every one when empty), and the URLs,
// tags and prefixes of its stored responses to remove.
type PurgeBody struct {
	Cache    string   `json:"cache"`
	URLs     []string `json:"urls"`
	Tags     []string `json:"tags"`
	Prefixes []string `json:"prefixes"`
}

// Purge checks b and returns the Purge it asks for on host: URLs and
// prefixes absolute (http or https, for host) or paths, made paths. When
// b is not one, it returns the status to answer (400, 403 or 413) and
// why, with a zero Purge. It does not modify b.
func (b PurgeBody) Purge(host string) (p Purge, status int, msg string) {
	if len(b.URLs)+len(b.Tags)+len(b.Prefixes) > maxPurgeItems {
		return Purge{}, http.StatusRequestEntityTooLarge, "over 10000 urls, tags and prefixes"
	}
	for i, t := range b.Tags {
		if !cache.ValidTag(t) {
			return Purge{}, http.StatusBadRequest, "tags[" + strconv.Itoa(i) + "] is not a tag"
		}
	}
	p = Purge{Cache: b.Cache, Host: host, Tags: b.Tags}
	for j, list := range [][]string{b.URLs, b.Prefixes} {
		var out []string
		for i, u := range list {
			if len(u) > MaxPurgeItem {
				return Purge{}, http.StatusBadRequest, []string{"urls", "prefixes"}[j] + "[" + strconv.Itoa(i) + "] is over 8 KiB"
			}
			path, ok := cache.TargetOnHost(host, u)
			if !ok {
				return Purge{}, http.StatusForbidden, "a purge reaches only this host's responses"
			}
			out = append(out, path)
		}
		if j == 0 {
			p.URLs = out
		} else {
			p.Prefixes = out
		}
	}
	return p, 0, ""
}

func (p *cachePurge) handle(c *pipe.Conn) bool {
	r := c.Request
	atPath := p.opts.Path != "" && string(r.Path) == p.opts.Path
	purge, ban := r.IsMethod("PURGE"), r.IsMethod("BAN")
	if !purge && !ban && !atPath {
		return true
	}
	if !p.filter.allowed(p.filter.client.Addr(r)) {
		return c.Error(http.StatusForbidden, "purging is not allowed from this address")
	}
	if len(p.opts.Allow) == 0 && len(p.opts.TrustedProxies) == 0 && forwarded(r) {
		// Loopback only, by default: a proxy on this host would make
		// every client look local.
		return c.Error(http.StatusForbidden, "purging through a proxy needs allow or trusted_proxies")
	}
	host := string(r.Host)
	var req PurgeBody
	switch {
	case purge:
		if tags := requestTags(c); tags != nil {
			req.Tags = tags
		} else {
			req.URLs = []string{string(r.Target)}
		}
	case ban:
		req.Prefixes = []string{string(r.Target)}
	case !r.IsMethod("POST"):
		c.Header().Set("Allow", "POST")
		return c.Error(http.StatusMethodNotAllowed, "purge with POST and a JSON body")
	default:
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxPurgeBody+1))
		if err != nil {
			return c.Error(http.StatusBadRequest, "cannot read the body")
		}
		if len(body) > MaxPurgeBody {
			return c.Error(http.StatusRequestEntityTooLarge, "the purge body is over 1 MB")
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return c.Error(http.StatusBadRequest, "want a JSON object of urls, tags and prefixes")
		}
		if len(req.URLs)+len(req.Tags)+len(req.Prefixes) > maxPurgeItems {
			return c.Error(http.StatusRequestEntityTooLarge, "over 10000 urls, tags and prefixes")
		}
		if req.Cache != "" && p.opts.Cache != "" && req.Cache != p.opts.Cache {
			return c.Error(http.StatusForbidden, "this endpoint purges another cache")
		}
	}
	name := p.opts.Cache
	if req.Cache != "" {
		name = req.Cache
	}
	if len(p.opts.Caches.Named(name)) == 0 {
		return c.Error(http.StatusNotFound, "no such cache")
	}
	req.Cache = name
	purgeReq, status, msg := req.Purge(host)
	if status != 0 {
		return c.Error(status, msg)
	}
	n, processes, err := p.opts.Caches.Purge(purgeReq)
	var ie *PurgeItemError
	if errors.As(err, &ie) {
		return c.Error(http.StatusBadRequest, ie.Error())
	}
	status = http.StatusOK
	out := []byte(`{"purged":` + strconv.Itoa(n) + `,"processes":` + strconv.Itoa(processes) + "}\n")
	if err != nil {
		// Purged here and in the processes that answered; a worker
		// that did not may still serve what was purged.
		p.logger.Error("cache_purge: not every worker confirmed the purge", "error", err)
		status = http.StatusServiceUnavailable
		out = []byte(`{"purged":` + strconv.Itoa(n) + `,"processes":` + strconv.Itoa(processes) + `,"error":"not every worker confirmed the purge"}` + "\n")
	}
	h := c.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.SetContentLength(int64(len(out)))
	c.SetStatus(status)
	c.SetContent(func(w pipe.Writer) error {
		_, err := w.Write(out)
		return err
	})
	return false
}

// requestTags returns the tags a PURGE names in its Cache-Tag
// (comma-separated) and Surrogate-Key (space-separated) fields, read as
// the cache reads a response's, or nil when it has neither field.
func requestTags(c *pipe.Conn) []string {
	var tags []string
	seen := false
	for _, f := range c.Request.Fields {
		var is bool
		tags, is = cache.AppendFieldTags(tags, f.Name, f.Value)
		seen = seen || is
	}
	if seen && tags == nil {
		tags = []string{}
	}
	return tags
}

// forwarded reports whether r came through a proxy that says so: an
// X-Forwarded-For, Forwarded or X-Real-IP field.
func forwarded(r *engine.Request) bool {
	for _, name := range [...]string{"X-Forwarded-For", "Forwarded", "X-Real-IP"} {
		if r.Header(name) != nil {
			return true
		}
	}
	return false
}
