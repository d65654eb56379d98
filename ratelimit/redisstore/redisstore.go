// Package redisstore keeps the token buckets of Sluice's ratelimit
// component in Redis, so that every Sluice instance behind one balancer
// enforces one limit per client together.
//
// Importing the package (the sluice program does) registers it with
// package components: a config file's ratelimit entry may then set the
// redis option (components.RateLimitRedis). The Redis client
// (github.com/gomodule/redigo) lives here rather than in package
// components so that a program embedding Sluice's components links it
// only when it imports this package.
//
// # The algorithm
//
// Each client's bucket is one Redis string: its theoretical arrival time
// (the generic cell rate algorithm, GCRA), which says as much as a token
// count and the time it was taken. A Lua script run with EVALSHA checks
// and updates it in one round trip, atomically, on Redis's own clock
// (TIME), so instances whose clocks disagree still agree on the limit.
// A request is let through when the bucket holds a token, exactly as the
// local token bucket decides with the same rate and burst; a refusal
// returns the time until the next token, for Retry-After, and changes
// nothing. Every key expires once its bucket would be full again, since a
// missing key means a full bucket: Redis holds a key only for the clients
// seen within the last Burst/Rate seconds.
//
// # Failures
//
// Each call is bounded by the option's timeout, dialling included, and is
// not retried: the ratelimit component then falls back as its on_error
// option says, and tries Redis again a second later. The store keeps a
// small pool of connections; one that Redis has closed while it was idle
// (a restart) is noticed before it is used and replaced, so the client
// reconnects by itself when Redis is back.
//
// # The client
//
// The Redis client is github.com/gomodule/redigo, which sends commands by
// name (Do("EVALSHA", …)) rather than through a method per command: its
// few hundred kilobytes replaced go-redis's eleven megabytes in the
// sluice binary (docs/size.md).
package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/sluice-server/sluice/components"
)

func init() {
	components.RegisterRateStore("redis", Open)
}

// gcra takes a token from the bucket KEYS[1]. ARGV[1] is the microseconds
// per token (1/rate), ARGV[2] the microseconds a full bucket's burst spans
// beyond the first token ((burst-1)/rate). It returns 0 when a token was
// taken, else the microseconds until one will be, rounded up.
//
// Numbers are Lua doubles: a microsecond clock (about 2^51 today) fits
// them exactly; the stored time is written with %.17g so that it reads
// back unchanged.
const gcraSource = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local span = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local wait = tat - now - span
if wait > 0 then return math.ceil(wait) end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX', math.ceil((tat - now) / 1000))
return 0
`

// gcra is the script as EVALSHA names it (Take calls EVAL when Redis does
// not know it yet).
var gcra = redis.NewScript(1, gcraSource)

// Store is a components.RateStore in Redis. It is safe for concurrent
// use.
type Store struct {
	pool           *redis.Pool
	timeout        time.Duration // bounds each call; 0: ctx alone does
	interval, span string        // gcra's ARGV
}

var _ components.RateStore = (*Store)(nil)

// Open returns a Store of buckets refilling at rate tokens per second and
// holding up to burst, in the Redis server opts names, with opts.Prefix
// and opts.OnError left to the caller. It reads opts.PasswordFile, but
// does not connect: the first Take does, so that a Redis that is down
// does not stop a server from starting. opts.Timeout (if not 0) bounds
// each call, dialling included; calls are not retried.
func Open(opts components.RateLimitRedis, rate float64, burst int) (components.RateStore, error) {
	if !(rate > 0) || burst < 1 {
		return nil, fmt.Errorf("rate %v and burst %d: want a positive rate and a burst of at least 1", rate, burst)
	}
	network, addr := "tcp", opts.Address
	if path, ok := strings.CutPrefix(opts.Address, "unix:"); ok {
		network, addr = "unix", path
	}
	dialOpts := []redis.DialOption{
		redis.DialReadTimeout(opts.Timeout),
		redis.DialWriteTimeout(opts.Timeout),
		redis.DialDatabase(opts.Database),
	}
	if opts.PasswordFile != "" {
		pw, err := readPassword(opts.PasswordFile)
		if err != nil {
			return nil, err
		}
		dialOpts = append(dialOpts, redis.DialPassword(pw), redis.DialUsername(opts.Username))
	}
	size := 10 * runtime.GOMAXPROCS(0)
	perToken := 1e6 / rate // microseconds
	return &Store{
		pool: &redis.Pool{
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return dial(ctx, network, addr, dialOpts)
			},
			TestOnBorrow: func(c redis.Conn, _ time.Time) error {
				if !c.(*conn).alive() {
					return errClosed
				}
				return nil
			},
			MaxIdle:     size,
			MaxActive:   size,
			Wait:        true, // for at most the call's timeout
			IdleTimeout: 30 * time.Minute,
		},
		timeout:  opts.Timeout,
		interval: strconv.FormatFloat(perToken, 'g', -1, 64),
		span:     strconv.FormatFloat(perToken*float64(burst-1), 'g', -1, 64),
	}, nil
}

// readPassword returns the first line of file.
func readPassword(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("password_file: %w", err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	pw := string(bytes.TrimSuffix(line, []byte("\r")))
	if pw == "" {
		return "", fmt.Errorf("password_file %s: the first line is empty", file)
	}
	return pw, nil
}

// Take takes a token from the bucket key; see components.RateStore.
func (s *Store) Take(ctx context.Context, key string) (time.Duration, error) {
	// ratelimit gives a ctx with the timeout already: no second one then.
	if dl, ok := ctx.Deadline(); s.timeout > 0 && (!ok || time.Until(dl) > s.timeout) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	c, err := s.pool.GetContext(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	us, err := s.eval(ctx, c, "EVALSHA", gcra.Hash(), key)
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT ") {
		us, err = s.eval(ctx, c, "EVAL", gcraSource, key)
	}
	if err != nil {
		return 0, err
	}
	return time.Duration(us) * time.Microsecond, nil
}

// eval runs the script, named by cmd (EVAL or EVALSHA) and script, on
// the bucket key over c. It waits for the reply until ctx's deadline,
// with a read deadline rather than the goroutine redigo's DoContext
// would start for ctx.
func (s *Store) eval(ctx context.Context, c redis.Conn, cmd, script, key string) (int64, error) {
	var wait time.Duration // 0: no limit
	if deadline, ok := ctx.Deadline(); ok {
		if wait = time.Until(deadline); wait <= 0 {
			return 0, context.DeadlineExceeded
		}
	}
	return redis.Int64(redis.DoWithTimeout(c, wait, cmd, script, 1, key, s.interval, s.span))
}

// Close closes the Store's connections.
func (s *Store) Close() error { return s.pool.Close() }

// errClosed reports an idle connection that Redis has closed.
var errClosed = errors.New("redisstore: connection closed by Redis while idle")

// conn is a pooled connection with its socket, which alive checks before
// the pool lends the connection again.
type conn struct {
	redis.Conn
	nc net.Conn
}

var _ redis.ConnWithTimeout = (*conn)(nil)

// DoWithTimeout sends a command and waits at most timeout for its reply
// (0: no limit).
func (c *conn) DoWithTimeout(timeout time.Duration, cmd string, args ...any) (any, error) {
	return redis.DoWithTimeout(c.Conn, timeout, cmd, args...)
}

// ReceiveWithTimeout waits at most timeout for a reply (0: no limit).
func (c *conn) ReceiveWithTimeout(timeout time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, timeout)
}

// alive reports whether c's socket is still open with nothing to read, as
// an idle connection's is.
func (c *conn) alive() bool { return alive(c.nc) }

// dial connects to Redis, authenticating and selecting the database as
// opts say; ctx bounds it all.
func dial(ctx context.Context, network, addr string, opts []redis.DialOption) (redis.Conn, error) {
	var nc net.Conn
	var d net.Dialer
	rc, err := redis.DialContext(ctx, network, addr, append(opts, redis.DialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		var err error
		nc, err = d.DialContext(ctx, network, addr)
		return nc, err
	}))...)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: rc, nc: nc}, nil
}
