package components

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// RateLimitRedis is ratelimit's redis option: where the token buckets
// that several Sluice instances share are kept, and what to do when that
// store cannot answer.
type RateLimitRedis struct {
	// Address is the Redis server's: "unix:/run/redis/redis.sock" for a
	// Unix socket, or "host:port" for TCP. Required.
	Address string `yaml:"address"`

	// PasswordFile names a file holding the password Redis requires
	// (AUTH; the first line, without its line ending). Empty: none.
	PasswordFile string `yaml:"password_file"`

	// Username is the Redis ACL user the password is for. Empty: the
	// default user.
	Username string `yaml:"username"`

	// Database is the Redis database number (SELECT). Default 0.
	Database int `yaml:"database"`

	// Prefix starts the name of every key the limiter writes; the client
	// address ends it. Default "sluice:ratelimit:RATE:BURST:", so that
	// limits of different rates never share buckets; two ratelimit
	// entries with the same rate and burst share their clients' buckets
	// unless they are given prefixes of their own.
	Prefix string `yaml:"prefix"`

	// Timeout bounds each call to Redis, connecting included. A call that
	// takes longer counts as Redis being unreachable. Default 50ms.
	Timeout time.Duration `yaml:"timeout"`

	// OnError says how requests are answered while Redis cannot be
	// reached: "local" (the default) counts each client in this instance
	// alone, as without Redis; "open" lets every request through;
	// "closed" refuses every request with 503 Service Unavailable.
	OnError string `yaml:"on_error"`
}

// What ratelimit does while its shared store cannot answer
// (RateLimitRedis.OnError).
const (
	OnErrorLocal  = "local"
	OnErrorOpen   = "open"
	OnErrorClosed = "closed"
)

// DefaultRedisTimeout is RateLimitRedis.Timeout's default.
const DefaultRedisTimeout = 50 * time.Millisecond

// A RateStore keeps token buckets outside the process, where every
// instance that opens it with the same options shares them. Each bucket
// holds up to the burst it was opened with and refills at its rate.
// A RateStore is safe for concurrent use.
type RateStore interface {
	// Take takes a token from the bucket named key, created full if it
	// does not exist. It returns 0 when there was a token, or else how
	// long until there will be one. It returns an error when the store
	// did not answer, or not before ctx was done; a token may or may not
	// have been taken then.
	Take(ctx context.Context, key string) (time.Duration, error)

	// Close releases the store's connections. Take must not be called
	// after it.
	Close() error
}

// OpenRedisFunc opens the RateStore for ratelimit's redis option, with
// buckets of rate tokens per second holding up to burst; see
// RegisterRateStore. It gets opts
// with their defaults applied; it should not wait for Redis to answer,
// since Redis being down must not stop the server from starting.
type OpenRedisFunc func(opts RateLimitRedis, rate float64, burst int) (RateStore, error)

// sharedRetryInterval is how long the limiter counts on its fallback once
// the shared store has failed before it tries the store again (with one
// request; the others keep to the fallback meanwhile).
const sharedRetryInterval = int64(time.Second)

// sharedBuckets is a rateLimiter's shared store and the state of its
// connection.
type sharedBuckets struct {
	store   RateStore
	prefix  string
	timeout time.Duration
	onError string
	log     *slog.Logger

	closed  atomic.Bool  // store closed: requests still in flight use the fallback, unlogged
	down    atomic.Bool  // the last call failed
	nextTry atomic.Int64 // while down: the clock reading from which the store is tried again
}

func newSharedBuckets(opts RateLimitRedis, rate float64, burst int, log *slog.Logger) (*sharedBuckets, error) {
	if err := checkRedisAddress(opts.Address); err != nil {
		return nil, err
	}
	if opts.Database < 0 {
		return nil, fmt.Errorf("database must not be negative, not %d", opts.Database)
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("timeout must not be negative, not %v", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultRedisTimeout
	}
	switch opts.OnError {
	case "":
		opts.OnError = OnErrorLocal
	case OnErrorLocal, OnErrorOpen, OnErrorClosed:
	default:
		return nil, fmt.Errorf("on_error must be local, open or closed, not %q", opts.OnError)
	}
	if opts.Prefix == "" {
		opts.Prefix = "sluice:ratelimit:" + strconv.FormatFloat(rate, 'g', -1, 64) + ":" + strconv.Itoa(burst) + ":"
	}
	open := rateStore("redis")
	if open == nil {
		return nil, errors.New("this program has no Redis client: import github.com/sluice-server/sluice/ratelimit/redisstore to link it")
	}
	store, err := open(opts, rate, burst)
	if err != nil {
		return nil, err
	}
	return &sharedBuckets{store: store, prefix: opts.Prefix, timeout: opts.Timeout, onError: opts.OnError, log: log}, nil
}

// checkRedisAddress reports what makes addr not a Redis address.
func checkRedisAddress(addr string) error {
	if addr == "" {
		return errors.New("address is required: unix:/path/to/redis.sock or host:port")
	}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return fmt.Errorf("address %q names no socket", addr)
		}
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("address %q is neither unix:/path nor host:port", addr)
	}
	return nil
}

// take takes a token from a's shared bucket. It returns the nanoseconds
// until there is one (0: there was), and ok false when the store did not
// answer, or was not asked because it failed less than
// sharedRetryInterval ago by clock. It logs a warning when the store
// starts failing and a notice when it answers again, once each.
func (s *sharedBuckets) take(a netip.Addr, clock func() int64) (wait int64, ok bool) {
	if s.closed.Load() {
		return 0, false
	}
	if s.down.Load() {
		next, now := s.nextTry.Load(), clock()
		if now < next || !s.nextTry.CompareAndSwap(next, now+sharedRetryInterval) {
			return 0, false
		}
	}
	key := "unix"
	if a.IsValid() {
		key = a.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	w, err := s.store.Take(ctx, s.prefix+key)
	cancel()
	if err != nil {
		if !s.down.Swap(true) {
			s.nextTry.Store(clock() + sharedRetryInterval)
			s.log.Warn("ratelimit: Redis cannot be reached; until it can, "+s.fallback(), "err", err)
		}
		return 0, false
	}
	if s.down.Swap(false) {
		s.log.Info("ratelimit: Redis answers again; counting in Redis")
	}
	return max(0, int64(w)), true
}

// fallback describes what the limiter does while the store fails.
func (s *sharedBuckets) fallback() string {
	switch s.onError {
	case OnErrorOpen:
		return "letting every request through (on_error: open)"
	case OnErrorClosed:
		return "refusing every request with 503 (on_error: closed)"
	}
	return "counting each client in this instance alone (on_error: local)"
}
