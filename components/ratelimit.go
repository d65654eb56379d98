package components

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "ratelimit", Kind: KindPipe, Scalar: "rate", Paths: []string{"redis.password_file"}, Stops: "429",
		Example: `ratelimit: {rate: 10, burst: 20}`,
	}, func(o RateLimitOptions, _ Context) (pipe.Component, error) { return NewRateLimit(o) })
}

// RateLimitOptions configures NewRateLimit. In a config file a scalar
// argument sets Rate: `ratelimit: 10`.
type RateLimitOptions struct {
	// Rate is the sustained number of requests per second allowed to each
	// client. Fractions are allowed: 0.5 is one request every 2 seconds.
	Rate float64 `yaml:"rate"`

	// Burst is how many requests a client may make at once after being
	// idle (the bucket's size). Default: Rate rounded up, at least 1.
	Burst int `yaml:"burst"`

	// IPv6Prefix is the prefix length IPv6 clients are grouped by, since
	// one subscriber usually holds a whole /64. Default 64; 128 limits
	// each IPv6 address on its own.
	IPv6Prefix int `yaml:"ipv6_prefix"`

	// MaxClients bounds the number of clients tracked at once (the memory
	// used). When it is reached, buckets that have refilled are dropped
	// first (forgetting them changes nothing), then arbitrary ones.
	// Default 100000 (about 10 MB).
	MaxClients int `yaml:"max_clients"`

	// TrustedProxies lists the reverse proxies (CIDRs or addresses, and
	// "unix:" for any peer on a Unix socket) whose client-address header
	// is believed. Empty: the peer is the client and no header is read.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// ClientIPHeader is the header trusted proxies put the client address
	// in: "X-Forwarded-For" (the default) or "Forwarded" (RFC 7239), read
	// from the right, skipping trusted proxies.
	ClientIPHeader string `yaml:"client_ip_header"`

	// Redis, when set, keeps the buckets in a Redis server shared by every
	// Sluice instance that names it, so that a client's limit holds across
	// them all (see RateLimitRedis). Nil: each instance counts alone.
	Redis *RateLimitRedis `yaml:"redis"`

	// Logger receives the warning that the Redis server cannot be reached
	// and the notice that it can again (once each per outage). Nil means
	// slog.Default(); a config file's component gets the server's logger.
	Logger *slog.Logger `yaml:"-"`
}

// NewRateLimit returns a Pipe that limits each client to Rate requests
// per second with bursts of up to Burst, by a token bucket per client
// address. A request that finds its bucket empty is answered 429 Too Many
// Requests with Retry-After: the whole seconds until a token is available
// (rounded up, at least 1). Requests from clients without an IP address
// (Unix sockets) share one bucket.
//
// The client address is the TCP peer's, or, when the peer is one of
// TrustedProxies, the rightmost untrusted address of ClientIPHeader.
//
// With Redis set, the buckets live in Redis instead (see RateLimitRedis
// for the fallback when it cannot be reached), and the returned
// component implements io.Closer, which closes its connections to Redis.
//
// Memory is bounded by MaxClients: the buckets live in a sharded map, and
// each shard drops the buckets that have refilled (whose clients have been
// idle for at least Burst/Rate seconds) once a minute and whenever it is
// full. The returned Pipe is safe for concurrent use; each request takes
// one shard's lock briefly.
func NewRateLimit(opts RateLimitOptions) (pipe.Component, error) {
	rl, err := newRateLimiter(opts)
	if err != nil {
		return nil, err
	}
	if rl.shared == nil {
		return pipe.Pipe(rl.handle), nil
	}
	return rl, nil
}

const (
	rlShards        = 64
	rlSweepInterval = int64(time.Minute)
)

// rateLimiter holds the buckets of a ratelimit component.
type rateLimiter struct {
	client    *clientaddr.Resolver
	rate      float64 // tokens per nanosecond
	burst     float64
	v6bits    int
	perShard  int
	fullAfter int64 // ns for an empty bucket to refill
	seed      maphash.Seed
	shards    [rlShards]rlShard

	// shared is the Redis store, or nil.
	shared *sharedBuckets

	// clock returns monotonic nanoseconds; tests replace it.
	clock func() int64
}

type rlShard struct {
	mu        sync.Mutex
	buckets   map[netip.Addr]rlBucket
	lastSweep int64
	_         [40]byte // keep shards on separate cache lines
}

// rlBucket is a token bucket: tokens as of last (ns).
type rlBucket struct {
	tokens float64
	last   int64
}

func newRateLimiter(opts RateLimitOptions) (*rateLimiter, error) {
	if !(opts.Rate > 0) || math.IsInf(opts.Rate, 0) {
		return nil, fmt.Errorf("ratelimit: rate must be a positive number of requests per second, not %v", opts.Rate)
	}
	if opts.Burst < 0 {
		return nil, fmt.Errorf("ratelimit: burst must not be negative, not %d", opts.Burst)
	}
	if opts.Burst == 0 {
		opts.Burst = max(1, int(math.Ceil(opts.Rate)))
	}
	if opts.IPv6Prefix == 0 {
		opts.IPv6Prefix = 64
	}
	if opts.IPv6Prefix < 1 || opts.IPv6Prefix > 128 {
		return nil, fmt.Errorf("ratelimit: ipv6_prefix must be between 1 and 128, not %d", opts.IPv6Prefix)
	}
	if opts.MaxClients < 0 {
		return nil, fmt.Errorf("ratelimit: max_clients must not be negative, not %d", opts.MaxClients)
	}
	if opts.MaxClients == 0 {
		opts.MaxClients = 100000
	}
	ci, err := clientaddr.New(opts.TrustedProxies, opts.ClientIPHeader)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: %w", err)
	}
	start := time.Now()
	rl := &rateLimiter{
		client:   ci,
		rate:     opts.Rate / 1e9,
		burst:    float64(opts.Burst),
		v6bits:   opts.IPv6Prefix,
		perShard: max(1, (opts.MaxClients+rlShards-1)/rlShards),
		seed:     maphash.MakeSeed(),
		clock:    func() int64 { return int64(time.Since(start)) },
	}
	rl.fullAfter = int64(math.Ceil(rl.burst / rl.rate))
	for i := range rl.shards {
		rl.shards[i].buckets = make(map[netip.Addr]rlBucket)
	}
	if opts.Redis != nil {
		rl.shared, err = newSharedBuckets(*opts.Redis, opts.Rate, opts.Burst, cmp.Or(opts.Logger, slog.Default()))
		if err != nil {
			return nil, fmt.Errorf("ratelimit: redis: %w", err)
		}
	}
	return rl, nil
}

// Handle limits c's client; it makes a rateLimiter with a shared store a
// pipe.Component that is also an io.Closer.
func (rl *rateLimiter) Handle(c *pipe.Conn) bool { return rl.handle(c) }

// Close closes the connections to the shared store.
func (rl *rateLimiter) Close() error {
	if rl.shared == nil || rl.shared.closed.Swap(true) {
		return nil
	}
	return rl.shared.store.Close()
}

func (rl *rateLimiter) handle(c *pipe.Conn) bool {
	a := rl.client.Addr(c.Request)
	if a.Is6() {
		p, _ := a.Prefix(rl.v6bits)
		a = p.Addr()
	}
	var wait int64
	if rl.shared == nil {
		wait = rl.take(a)
	} else {
		var ok bool
		wait, ok = rl.shared.take(a, rl.clock)
		switch {
		case ok:
		case rl.shared.onError == OnErrorOpen:
			return true
		case rl.shared.onError == OnErrorClosed:
			return c.Error(http.StatusServiceUnavailable, "rate limit unavailable")
		default:
			wait = rl.take(a)
		}
	}
	if wait == 0 {
		return true
	}
	secs := max(1, (wait+int64(time.Second)-1)/int64(time.Second))
	c.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	return c.Error(http.StatusTooManyRequests, "rate limit exceeded")
}

// take takes a token from a's bucket. It returns 0 if there was one, else
// the nanoseconds until there will be.
func (rl *rateLimiter) take(a netip.Addr) int64 {
	if a.Is6() {
		p, _ := a.Prefix(rl.v6bits)
		a = p.Addr()
	}
	now := rl.clock()
	s := &rl.shards[rl.shardOf(a)]
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[a]
	if !ok {
		if len(s.buckets) >= rl.perShard || now-s.lastSweep >= rlSweepInterval {
			rl.sweep(s, now)
		}
		b = rlBucket{tokens: rl.burst, last: now}
	} else if now > b.last {
		b.tokens = min(rl.burst, b.tokens+float64(now-b.last)*rl.rate)
		b.last = now
	}
	var wait int64
	if b.tokens >= 1 {
		b.tokens--
	} else {
		wait = max(1, int64(math.Ceil((1-b.tokens)/rl.rate)))
	}
	s.buckets[a] = b
	return wait
}

// sweep drops s's buckets that have refilled by now, and then, if s is
// still full, arbitrary ones (Go's map iteration order is unspecified)
// to make room for one more. s.mu is held.
func (rl *rateLimiter) sweep(s *rlShard, now int64) {
	s.lastSweep = now
	for a, b := range s.buckets {
		if now-b.last >= rl.fullAfter {
			delete(s.buckets, a)
		}
	}
	for a := range s.buckets {
		if len(s.buckets) < rl.perShard {
			break
		}
		delete(s.buckets, a)
	}
}

func (rl *rateLimiter) shardOf(a netip.Addr) int {
	b := a.As16()
	return int(maphash.Bytes(rl.seed, b[:]) % rlShards)
}

// clients returns the number of buckets held (for tests).
func (rl *rateLimiter) clients() int {
	n := 0
	for i := range rl.shards {
		s := &rl.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}
