// Package redisstore keeps the token buckets of Sluice's ratelimit
// component in Redis, so that every Sluice instance behind one balancer
// enforces one limit per client together.
//
// Importing the package (the sluice program does) registers it with
// package components: a config file's ratelimit entry may then set the
// redis option (components.RateLimitRedis). The Redis client
// (github.com/redis/go-redis) lives here rather than in package
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
// option says, and tries Redis again a second later. The client
// reconnects by itself when Redis is back. Importing the package silences
// go-redis's package-wide log (redis.SetLogger), which would otherwise
// write a line for every request while Redis is down; a program that
// wants that log may set its own logger after the import.
package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/sluice-server/sluice/components"
)

func init() {
	components.RegisterRedis(Open)
	// go-redis logs every failed dial through its package-wide logger:
	// a line per request while Redis is down, where ratelimit logs one
	// warning per outage.
	redis.SetLogger(&logging.VoidLogger{})
}

// gcra takes a token from the bucket KEYS[1]. ARGV[1] is the microseconds
// per token (1/rate), ARGV[2] the microseconds a full bucket's burst spans
// beyond the first token ((burst-1)/rate). It returns 0 when a token was
// taken, else the microseconds until one will be, rounded up.
//
// Numbers are Lua doubles: a microsecond clock (about 2^51 today) fits
// them exactly; the stored time is written with %.17g so that it reads
// back unchanged.
var gcra = redis.NewScript(`
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
`)

// Store is a components.RateStore in Redis. It is safe for concurrent
// use.
type Store struct {
	client         *redis.Client
	interval, span string // gcra's ARGV
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
	ro := &redis.Options{
		Network:               "tcp",
		Addr:                  opts.Address,
		Username:              opts.Username,
		DB:                    opts.Database,
		Protocol:              2, // one round trip less on connecting than RESP3's HELLO, and any Redis speaks it
		DisableIdentity:       true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           opts.Timeout,
		ReadTimeout:           opts.Timeout,
		WriteTimeout:          opts.Timeout,
		ContextTimeoutEnabled: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	}
	if path, ok := strings.CutPrefix(opts.Address, "unix:"); ok {
		ro.Network, ro.Addr = "unix", path
	}
	if opts.PasswordFile != "" {
		pw, err := readPassword(opts.PasswordFile)
		if err != nil {
			return nil, err
		}
		ro.Password = pw
	}
	perToken := 1e6 / rate // microseconds
	return &Store{
		client:   redis.NewClient(ro),
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
	us, err := gcra.Run(ctx, s.client, []string{key}, s.interval, s.span).Int64()
	if err != nil {
		return 0, err
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Close closes the Store's connections.
func (s *Store) Close() error { return s.client.Close() }
