package cache

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/cache/disk"
	"github.com/sluice-server/sluice/evict"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/tracing"
)

// Options configures a Cache. The zero value is a sound configuration: a
// 64 MB store named "Sluice", objects up to 8 MB.
type Options struct {
	// Name is the cache's name in Cache-Status (RFC 9211), an RFC 8941
	// sf-token: a letter or '*', then letters, digits, ':', '/' or
	// other token characters.
	// Default "Sluice".
	Name string

	// Size is the memory budget in bytes: the stored header fields and
	// bodies together, with a charge per entry for what it takes besides
	// (about 1.4 KB). Bodies are kept in an arena of this size and an
	// eighth, outside the Go heap where the platform allows. Entries are
	// evicted to stay under it by package evict's policy (S3-FIFO: keys
	// read once go first). Default 64 MB. With Path, it is the disk
	// store's budget instead (disk.Options.Size; default 1 GB).
	Size int64

	// Path, when set, keeps responses on disk in this directory (package
	// cache/disk: one file per response, kept across restarts, shared by
	// every process that opens the directory, bodies sent with sendfile)
	// instead of in memory. MaxKeys bounds the objects there
	// (disk.Options.MaxObjects). Close the Cache to close the store.
	Path string

	// Sync makes the disk store fsync each response before it is
	// published (disk.Options.Sync). Only with Path.
	Sync bool

	// MaxObjectSize is the largest body stored, in bytes; a longer one
	// (known from Content-Length, or found while it streams) passes
	// through unstored. Default 8 MB.
	MaxObjectSize int64

	// MaxHeaderSize is the largest stored header section, in bytes.
	// Default 64 KB.
	MaxHeaderSize int64

	// MaxKeys bounds the number of stored entries: each is charged at
	// least Size/MaxKeys bytes. 0: no bound but Size.
	MaxKeys int

	// HeuristicFraction is the fraction of the time since Last-Modified
	// that a response without explicit freshness stays fresh, where RFC
	// 9111 §4.2.2 allows a heuristic. Default 0.1; negative: no
	// heuristic freshness.
	HeuristicFraction float64

	// HeuristicMax caps heuristic freshness. Default 24 h.
	HeuristicMax time.Duration

	// Key adds parts to every primary key: "header:NAME" (the request
	// field's value) or "cookie:NAME" (one cookie's value). With cookie
	// parts, the rest of the pipeline sees only the keyed cookies.
	Key []string

	// StoreSetCookie stores responses that carry Set-Cookie (and hands
	// the cookie to everyone who gets the stored response). Default
	// false: such responses pass through unstored.
	StoreSetCookie bool

	// LockTimeout bounds how long a request waits for another request's
	// fetch of the same key (request collapsing) to bring a response
	// header before it goes to the origin itself. Default 5 s.
	LockTimeout time.Duration

	// StaleIfError is a grace: how long past its freshness a stored
	// response may still be served when the rest of the pipeline fails
	// (a 5xx or no answer), for responses that do not forbid it
	// (must-revalidate, proxy-revalidate, s-maxage). 0: only as a
	// response's own stale-if-error allows.
	StaleIfError time.Duration

	// Logger receives the cache's errors (a revalidation that panicked).
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultSize          = 64 << 20
	DefaultMaxObjectSize = 8 << 20
	DefaultMaxHeaderSize = 64 << 10
	DefaultLockTimeout   = 5 * time.Second
	DefaultHeuristicMax  = 24 * time.Hour
)

// passTTL is how long a hit-for-pass marker stops collapsing on a key
// whose response could not be stored.
const passTTL = 10 * time.Second

// entryOverhead is charged per stored response besides its fields, key
// and body: what its entry, meta, store node and the strings of its
// hits take on the Go heap, about 1.4 KB on 64-bit platforms (measured
// at a churn of 4 KB responses with three fields), so that Size bounds
// memory rather than a part of it. markerOverhead is a Vary or
// hit-for-pass marker's.
const (
	entryOverhead  = 1408
	markerOverhead = 512
)

// Cache is an HTTP cache (RFC 9111) in a pipeline: a pipe.Wrapper that
// answers a request from its store or runs the rest of the pipeline and
// stores what it produces. Make one with New; it is safe for concurrent
// use by every request of its route.
type Cache struct {
	name              string
	store             *evict.Map[string, *entry]
	mu                sync.Mutex
	memoMu            sync.Mutex // held while a disk object's entry is made (diskEntry)
	inflight          map[string]*entry
	maxObject         int64
	maxHeader         int64
	minCharge         int64
	heuristicFraction float64
	heuristicMax      time.Duration
	keyParts          []keyPart
	cookieParts       int
	poison            []string
	poisonFirst       [256]bool // the first letters of poison, lower case
	storeSetCookie    bool
	lockTimeout       time.Duration
	staleIfError      time.Duration
	logger            *slog.Logger
	now               func() time.Time
	gen               atomic.Uint64
	disk              *disk.Store    // Options.Path's store, or nil
	arena             *arena         // the memory store's body memory, or nil (on disk)
	fetches           sync.WaitGroup // revalidations running on their own goroutines

	statusMethod string // Cache-Status of a request whose method is not cached
	statusBody   string // Cache-Status of a GET or HEAD with a body
	unsafeFilter pipe.Filter
	methodFilter pipe.Filter
	bodyFilter   pipe.Filter

	date       atomic.Pointer[dateString] // httpDate's
	lastDate   atomic.Pointer[parsedDate] // parseDate's
	lastCC     atomic.Pointer[parsedCC]   // parseCacheControl's
	missStatus statusStrings              // the Cache-Status values of misses
	stats      Stats
	objects    atomic.Int64 // response entries in the store
	tags       tagIndex
}

// Stats counts what a Cache did; read it with Cache.Stats (see stats.go
// for what each counts).
type Stats struct {
	Hits, Misses, Stale, Revalidated, Passes, Collapsed, Stored uint64

	// BytesServed counts the body bytes answered from the store; Purged
	// the stored responses removed by purges and bans.
	BytesServed, Purged uint64

	// Evictions, Objects and Bytes are filled in by Cache.Stats: the
	// entries the budget pushed out, the responses stored now, and the
	// bytes charged to the budget now.
	Evictions, Objects uint64
	Bytes              int64
}

// New returns a Cache configured by opts, or an error naming the option
// that is wrong.
func New(opts Options) (*Cache, error) {
	x := &Cache{
		name: opts.Name, maxObject: opts.MaxObjectSize, maxHeader: opts.MaxHeaderSize,
		heuristicFraction: opts.HeuristicFraction, heuristicMax: opts.HeuristicMax,
		storeSetCookie: opts.StoreSetCookie, lockTimeout: opts.LockTimeout,
		staleIfError: opts.StaleIfError, logger: opts.Logger, now: time.Now,
		inflight: make(map[string]*entry),
	}
	if x.name == "" {
		x.name = "Sluice"
	}
	if !isSFToken(x.name) {
		return nil, fmt.Errorf("cache: name %q is not a Structured Field token", x.name)
	}
	size := opts.Size
	switch {
	case size == 0 && opts.Path != "":
		size = disk.DefaultSize
	case size == 0:
		size = DefaultSize
	case size < 0:
		return nil, errors.New("cache: size must not be negative")
	}
	switch {
	case x.maxObject == 0:
		x.maxObject = min(DefaultMaxObjectSize, size/2)
	case x.maxObject < 0:
		return nil, errors.New("cache: max_object_size must not be negative")
	case x.maxObject > size:
		return nil, fmt.Errorf("cache: max_object_size %d is over size %d", x.maxObject, size)
	}
	switch {
	case x.maxHeader == 0:
		x.maxHeader = DefaultMaxHeaderSize
	case x.maxHeader < 0:
		return nil, errors.New("cache: max_header_size must not be negative")
	}
	switch {
	case opts.MaxKeys < 0:
		return nil, errors.New("cache: max_keys must not be negative")
	case opts.MaxKeys > 0:
		x.minCharge = size / int64(opts.MaxKeys)
	}
	switch {
	case x.heuristicFraction == 0:
		x.heuristicFraction = 0.1
	case x.heuristicFraction < 0:
		x.heuristicFraction = 0
	case x.heuristicFraction > 1:
		return nil, errors.New("cache: heuristic_fraction must be at most 1")
	}
	switch {
	case x.heuristicMax == 0:
		x.heuristicMax = DefaultHeuristicMax
	case x.heuristicMax < 0:
		return nil, errors.New("cache: heuristic_max must not be negative")
	}
	switch {
	case x.lockTimeout == 0:
		x.lockTimeout = DefaultLockTimeout
	case x.lockTimeout < 0:
		return nil, errors.New("cache: lock_timeout must not be negative")
	}
	if x.staleIfError < 0 {
		return nil, errors.New("cache: stale_if_error must not be negative")
	}
	if x.logger == nil {
		x.logger = slog.Default()
	}
	for _, k := range opts.Key {
		p, ok := parseKeyPart(k)
		if !ok {
			return nil, fmt.Errorf("cache: key %q is not header:NAME or cookie:NAME", k)
		}
		x.keyParts = append(x.keyParts, p)
		if p.cookie {
			x.cookieParts++
		}
	}
	for _, f := range poisonFields {
		keyed := false
		for _, p := range x.keyParts {
			keyed = keyed || !p.cookie && httpgrammar.EqualFold(p.name, f)
		}
		if !keyed {
			x.poison = append(x.poison, f)
			x.poisonFirst[f[0]|0x20] = true
		}
	}
	if opts.Sync && opts.Path == "" {
		return nil, errors.New("cache: sync needs a path")
	}
	if opts.Path != "" {
		// In memory only hit-for-pass markers.
		x.store = evict.New(DefaultSize, x.diskEvicted)
		x.minCharge = 0
		d, err := disk.Open(opts.Path, disk.Options{Size: size, MaxObjects: opts.MaxKeys, Sync: opts.Sync})
		if err != nil {
			return nil, fmt.Errorf("cache: path: %w", err)
		}
		x.disk = d
	} else {
		x.store = evict.New(size, x.evicted)
		x.arena = newArena(size)
	}
	x.statusMethod = x.name + "; fwd=method"
	x.statusBody = x.name + "; fwd=request; detail=request-body"
	x.bodyFilter = func(c *pipe.Conn) pipe.Wrap {
		c.Header().Add("Cache-Status", x.statusBody)
		return nil
	}
	x.unsafeFilter = x.invalidateAfter
	x.methodFilter = func(c *pipe.Conn) pipe.Wrap {
		c.Header().Add("Cache-Status", x.statusMethod)
		return nil
	}
	return x, nil
}

// Len returns the number of entries in the store (responses and the
// markers of Vary and hit-for-pass).
func (x *Cache) Len() int { return x.store.Len() }

// Size returns the bytes charged to the store's budget.
func (x *Cache) Size() int64 {
	if x.disk != nil {
		return x.diskStats().Bytes
	}
	return x.store.Size()
}

// Handle runs the cache with nothing after it: every request is answered
// from the store or, on a miss, by the pipeline's response set up so far.
func (x *Cache) Handle(c *pipe.Conn) bool { return x.HandleRest(c, pipe.Chain(nil)) }

// HandleRest answers c from the store, or runs rest (the components after
// the cache) and stores what they produce; see the package doc.
func (x *Cache) HandleRest(c *pipe.Conn, rest pipe.Component) bool {
	if span := tracing.StartCache(c); span != nil {
		// The lookup's span, and on a miss the setup of the rest.
		defer func() { span.EndCache(c.Value(StatusKey)) }()
	}
	if rest == nil {
		rest = pipe.Chain(nil)
	}
	r := c.Request
	get := r.IsMethod("GET")
	if !get && !r.IsMethod("HEAD") {
		return x.passMethod(c, rest)
	}
	if r.ContentLength != 0 || r.Header("Transfer-Encoding") != nil {
		// A body is no part of the key: what the rest makes of it must
		// not be stored, nor shared with requests collapsed onto it.
		x.count(c, outPass)
		mark := c.FilterMark()
		ok := rest.Handle(c)
		c.NestFilters(mark, x.bodyFilter)
		return ok
	}
	ri := readRequest(r)
	ri.cookie = x.stripUnkeyed(r)
	now := x.now()
	ri.received = now
	pk := x.primaryKey(r)
	found, ck, fwd := x.lookup(pk, r)
	if found != nil && !found.body.ref() {
		// Evicted since the lookup, and its memory let go of already.
		found, fwd = nil, "uri-miss"
		if ck != pk {
			fwd = "vary-miss"
		}
	}
	if found != nil {
		// Held while the request is answered from it (serve takes a hold
		// of its own for the content).
		var ok, done bool
		ok, done, fwd = x.answerStored(c, rest, found, &ri, pk, now)
		found.body.unref()
		if done {
			return ok
		}
	} else if ri.cc.Has(httpgrammar.CCOnlyIfCached) {
		return x.onlyIfCached(c, fwd)
	}
	var leader *entry
	if fwd != "pass" && !ri.ranged && !ri.noStore {
		// HEAD joins a GET's fetch but never leads one: its response has
		// no body to store.
		e, lead := x.join(ck, !ri.head)
		if lead {
			leader = e
		} else if e != nil && x.waitCollapsed(c, e, &ri) {
			return true
		}
	}
	if fwd == "pass" {
		fwd = "miss"
	}
	x.count(c, outMiss)
	return x.miss(c, rest, &ri, pk, ck, leader, fwd, now)
}

// answerStored answers the request from the stored response found, or
// revalidates it, and reports done; not done (a Range request for a
// response that must be validated), the request goes on as a miss, fwd.
func (x *Cache) answerStored(c *pipe.Conn, rest pipe.Component, found *entry, ri *reqInfo, pk string, now time.Time) (ok, done bool, fwd string) {
	for judged := 1; ; judged++ {
		ok, done, fwd, again := x.answerMeta(c, rest, found, found.meta.Load(), ri, pk, now, judged < 3)
		if !again {
			return ok, done, fwd
		}
		// A revalidation finished between the judgement and the
		// request's own: judge what it stored (at most twice more,
		// then revalidate whatever is stored).
		now = x.now()
	}
}

// answerMeta is answerStored for the stored response found with meta m;
// with recheck it reports again when found changed before a revalidation
// started (see revalidation).
func (x *Cache) answerMeta(c *pipe.Conn, rest pipe.Component, found *entry, m *meta, ri *reqInfo, pk string, now time.Time, recheck bool) (ok, done bool, fwd string, again bool) {
	switch x.judge(m, ri, now) {
	case useFresh:
		x.count(c, outHit)
		return x.serve(c, found, m, ri, now, found.strings(x, m, now).status), true, "", false
	case useStale:
		x.count(c, outStale)
		return x.serve(c, found, m, ri, now, x.name+"; hit; ttl="+ttl(m, now)+"; detail=max-stale"), true, "", false
	case useStaleRevalidate:
		x.count(c, outStale)
		x.background(rest, c, found, m, pk, ri)
		return x.serve(c, found, m, ri, now, x.name+"; hit; ttl="+ttl(m, now)+"; detail=stale-while-revalidate"), true, "", false
	}
	fwd = "stale"
	if ri.noCache || ri.cc.MaxAge >= 0 && m.currentAge(now) > time.Duration(ri.cc.MaxAge)*time.Second {
		fwd = "request"
	}
	if ri.cc.Has(httpgrammar.CCOnlyIfCached) {
		return x.onlyIfCached(c, fwd), true, "", false
	}
	if !ri.ranged {
		// Revalidate with the stored validators, or fetch anew with
		// the stale response at hand for stale-if-error.
		ok, again = x.revalidate(c, rest, found, m, ri, pk, fwd, recheck)
		return ok, !again, fwd, again
	}
	return false, false, fwd, false
}

func (x *Cache) onlyIfCached(c *pipe.Conn, fwd string) bool {
	x.count(c, outMiss)
	c.Header().Set("Cache-Status", x.name+"; fwd="+fwd+"; detail=only-if-cached")
	return c.Error(http.StatusGatewayTimeout, "not in the cache (only-if-cached)")
}

// passMethod runs rest for a method the cache does not answer; after an
// unsafe one it invalidates what the response says changed (§4.4).
func (x *Cache) passMethod(c *pipe.Conn, rest pipe.Component) bool {
	x.count(c, outPass)
	mark := c.FilterMark()
	ok := rest.Handle(c)
	switch string(c.Request.Method) {
	case "OPTIONS", "TRACE", "CONNECT", "PRI":
		c.NestFilters(mark, x.methodFilter)
	default:
		c.NestFilters(mark, x.unsafeFilter)
	}
	return ok
}

// use is what judge decides a stored response is good for.
type use uint8

const (
	useNone            use = iota // forward: validate or fetch
	useFresh                      // fresh: serve
	useStale                      // stale, but the request allows it (max-stale)
	useStaleRevalidate            // stale within stale-while-revalidate: serve, revalidate behind
)

// judge decides whether m may answer the request at now (RFC 9111 §4,
// §4.2.4, §5.2.1; RFC 5861 §3).
func (x *Cache) judge(m *meta, ri *reqInfo, now time.Time) use {
	if ri.noCache || m.mustValidate() {
		return useNone
	}
	age := m.currentAge(now)
	if ri.cc.MaxAge >= 0 && age > time.Duration(ri.cc.MaxAge)*time.Second {
		return useNone
	}
	left := m.lifetime - age
	if ri.cc.MinFresh >= 0 && left < time.Duration(ri.cc.MinFresh)*time.Second {
		return useNone
	}
	if left > 0 {
		return useFresh
	}
	if m.noStaleServing() {
		return useNone
	}
	stale := -left
	if ri.cc.MaxStale >= 0 && stale <= time.Duration(ri.cc.MaxStale)*time.Second {
		return useStale
	}
	if m.cc.StaleWhileRevalidate >= 0 && stale <= time.Duration(m.cc.StaleWhileRevalidate)*time.Second {
		return useStaleRevalidate
	}
	return useNone
}

// staleOnError reports whether m may answer at now although the rest of
// the pipeline failed: the response's or the request's stale-if-error
// (RFC 5861 §4), or the configured grace where the response allows
// serving stale at all (§4.2.4).
func (x *Cache) staleOnError(m *meta, ri *reqInfo, now time.Time) bool {
	stale := m.currentAge(now) - m.lifetime
	if m.cc.StaleIfError >= 0 && stale <= time.Duration(m.cc.StaleIfError)*time.Second {
		return true
	}
	if ri.cc.StaleIfError >= 0 && stale <= time.Duration(ri.cc.StaleIfError)*time.Second {
		return true
	}
	return x.staleIfError > 0 && !m.noStaleServing() && stale <= x.staleIfError
}
