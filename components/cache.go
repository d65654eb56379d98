package components

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/cache"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "cache", Kind: KindPipe,
		Example: `cache: {size: 256MB, max_object_size: 8MB}`,
	}, func(o CacheOptions, x Context) (pipe.Component, error) {
		c, err := NewCache(o)
		if err == nil {
			x.Caches.Add(c.(*cache.Cache))
		}
		return c, err
	})
}

// ByteSize is a number of bytes in a config file: an integer, or one with
// a binary unit, K, KB or KiB (1024), M, MB or MiB, G, GB or GiB
// ("256MB" is 268435456).
type ByteSize int64

// UnmarshalText reads a ByteSize.
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	num := strings.TrimRight(s, "KMGiBkb")
	unit := strings.ToUpper(strings.TrimSpace(s[len(num):]))
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return errors.New("want a number of bytes (64MB, 1048576)")
	}
	shift := 0
	switch strings.TrimSuffix(strings.TrimSuffix(unit, "IB"), "B") {
	case "":
	case "K":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	default:
		return errors.New("want a unit of K, M or G (64MB)")
	}
	if n > (1<<62)>>shift {
		return errors.New("too large")
	}
	*b = ByteSize(n << shift)
	return nil
}

// CacheOptions configures the cache pipe; see cache.Options, which it
// fills. Every option may be left out.
type CacheOptions struct {
	// Name is the cache's name in the Cache-Status field, a Structured Field
	// token: a letter or '*', then token characters, ':' or '/' (default "Sluice").
	Name string `yaml:"name"`

	// Size is the memory budget in bytes, or with a unit (256MB; see
	// ByteSize), header fields and bodies counted (default 64MB); with
	// path, the disk budget, files counted in 4 KB blocks (default 1GB).
	Size ByteSize `yaml:"size"`

	// Path keeps the responses on disk, one file each under this
	// directory (made if need be), instead of in memory: they survive a
	// restart, are shared by every process (worker) that names the same
	// path, and hits are sent with sendfile. Default: in memory.
	Path string `yaml:"path"`

	// Sync has each response stored on disk fsynced before it is
	// published, so that a power failure cannot leave a torn one
	// (default false; only with path).
	Sync bool `yaml:"sync"`

	// MaxObjectSize is the largest body stored, in bytes or with a unit;
	// longer ones pass through unstored (default 8MB, at most size).
	MaxObjectSize ByteSize `yaml:"max_object_size"`

	// MaxHeaderSize is the largest header section stored, in bytes or
	// with a unit (default 64KB).
	MaxHeaderSize ByteSize `yaml:"max_header_size"`

	// MaxKeys bounds the number of stored entries (0: only size does;
	// with path, default 1048576 files).
	MaxKeys int `yaml:"max_keys"`

	// HeuristicFraction is the fraction of the time since Last-Modified
	// a response without explicit freshness stays fresh, where RFC 9111
	// allows it (default 0.1; negative: never).
	HeuristicFraction float64 `yaml:"heuristic_fraction"`

	// HeuristicMax caps heuristic freshness (default 24h).
	HeuristicMax time.Duration `yaml:"heuristic_max"`

	// Key adds parts to every cache key: "header:NAME" or "cookie:NAME".
	// With cookie parts only the keyed cookies reach the components after
	// the cache.
	Key []string `yaml:"key"`

	// StoreSetCookie stores responses that set cookies, and so hands the
	// cookie to everyone served the stored response (default false).
	StoreSetCookie bool `yaml:"store_set_cookie"`

	// LockTimeout bounds how long a request waits for another request's
	// fetch of the same response (request collapsing) before it goes on
	// alone (default 5s).
	LockTimeout time.Duration `yaml:"lock_timeout"`

	// StaleIfError is how long past its freshness a stored response may
	// be served when the components after the cache fail (a 5xx or no
	// answer), unless the response forbids serving it stale (default 0:
	// only as the response's own stale-if-error allows).
	StaleIfError time.Duration `yaml:"stale_if_error"`

	// Logger receives the cache's errors; nil means the config's.
	Logger *slog.Logger `yaml:"-"`
}

// NewCache returns the cache pipe, a *cache.Cache: an HTTP cache (RFC
// 9111) that answers from its store (in memory, or on disk with path)
// what it may, and otherwise runs the components after it and stores
// what they produce, their filters' work included (a compress after the
// cache is stored once per coding). Components before it run on every request, hits included.
// Concurrent misses for one response make one request down the
// pipeline; stale responses are revalidated with their validators;
// stale-while-revalidate and stale-if-error are honoured. Every answer
// has Age and Cache-Status. See docs/cache.md and package cache.
func NewCache(o CacheOptions) (pipe.Component, error) {
	return cache.New(cache.Options{
		Name: o.Name, Size: int64(o.Size), MaxObjectSize: int64(o.MaxObjectSize),
		MaxHeaderSize: int64(o.MaxHeaderSize), MaxKeys: o.MaxKeys,
		HeuristicFraction: o.HeuristicFraction, HeuristicMax: o.HeuristicMax,
		Key: o.Key, StoreSetCookie: o.StoreSetCookie, LockTimeout: o.LockTimeout,
		StaleIfError: o.StaleIfError, Logger: o.Logger, Path: o.Path, Sync: o.Sync,
	})
}
