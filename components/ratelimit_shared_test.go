package components

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// failingStore is a RateStore that fails while down is set and else
// grants every token, counting the calls. (Package redisstore's tests run
// ratelimit against a real redis-server; this one drives the fallback's
// state by the limiter's clock, which those tests cannot reach.)
type failingStore struct {
	down  atomic.Bool
	calls atomic.Int64
}

func (s *failingStore) Take(context.Context, string) (time.Duration, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return 0, errors.New("connection refused")
	}
	return 0, nil
}

func (s *failingStore) Close() error { return nil }

// withStore makes store the Redis store of the limiters the test builds.
func withStore(t *testing.T, store RateStore) {
	old := swapRateStore("redis", func(RateLimitRedis, float64, int) (RateStore, error) { return store, nil })
	t.Cleanup(func() { swapRateStore("redis", old) })
}

// swapRateStore makes open the rate store called name (nil: none), as
// RegisterRateStore cannot, and returns the one it replaced.
func swapRateStore(name string, open OpenRedisFunc) OpenRedisFunc {
	registryMu.Lock()
	defer registryMu.Unlock()
	old := rateStores[name]
	if open == nil {
		delete(rateStores, name)
	} else {
		rateStores[name] = open
	}
	return old
}

// While the store fails, the limiter asks it again only once
// sharedRetryInterval has passed, and logs one warning and, when it
// answers again, one notice.
func TestRateLimitStoreDown(t *testing.T) {
	store := &failingStore{}
	withStore(t, store)
	logger, logs := sluicetest.Logger()
	rl, now := rlFixed(t, RateLimitOptions{Rate: 0.001, Burst: 2, TrustedProxies: []string{"127.0.0.1"}, Logger: logger,
		Redis: &RateLimitRedis{Address: "unix:/nonexistent"}})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{rl, guardText("ok")})).URL
	get := func(client string) int {
		resp, _ := sluicetest.Get(t, url+"/", "X-Forwarded-For", client)
		return resp.StatusCode
	}
	for i := range 5 { // the store grants everything
		if code := get("192.0.2.1"); code != 200 {
			t.Fatalf("store up, request %d: %d", i+1, code)
		}
	}
	store.down.Store(true)
	calls := store.calls.Load()
	// Counted locally: a burst of 2.
	for i, want := range []int{200, 200, 429, 429} {
		if code := get("192.0.2.1"); code != want {
			t.Errorf("store down, request %d: %d, want %d", i+1, code, want)
		}
	}
	if n := store.calls.Load() - calls; n != 1 {
		t.Errorf("store down: asked %d times within the retry interval, want once", n)
	}
	for range 3 {
		now.Add(sharedRetryInterval)
		calls = store.calls.Load()
		get("192.0.2.2")
		get("192.0.2.2")
		if n := store.calls.Load() - calls; n != 1 {
			t.Errorf("a retry interval later: asked %d times, want once", n)
		}
	}
	if n := strings.Count(logs.String(), "Redis cannot be reached"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logs)
	}
	store.down.Store(false)
	now.Add(sharedRetryInterval)
	for range 3 {
		if code := get("192.0.2.1"); code != 200 {
			t.Errorf("store back: %d, want what it grants", code)
		}
	}
	if n := strings.Count(logs.String(), "Redis answers again"); n != 1 {
		t.Errorf("said %d times that Redis answers again, want once:\n%s", n, logs)
	}
}

func TestRateLimitRedisOptions(t *testing.T) {
	withStore(t, &failingStore{})
	for _, tt := range []struct {
		redis RateLimitRedis
		err   string
	}{
		{RateLimitRedis{}, "ratelimit: redis: address is required"},
		{RateLimitRedis{Address: "unix:"}, "names no socket"},
		{RateLimitRedis{Address: "localhost"}, "neither unix:/path nor host:port"},
		{RateLimitRedis{Address: "localhost:6379", OnError: "maybe"}, "on_error must be local, open or closed"},
		{RateLimitRedis{Address: "localhost:6379", Timeout: -time.Second}, "timeout must not be negative"},
		{RateLimitRedis{Address: "localhost:6379", Database: -1}, "database must not be negative"},
	} {
		if _, err := NewRateLimit(RateLimitOptions{Rate: 1, Redis: &tt.redis}); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewRateLimit with redis %+v = %v, want %q", tt.redis, err, tt.err)
		}
	}
	swapRateStore("redis", nil)
	if _, err := NewRateLimit(RateLimitOptions{Rate: 1, Redis: &RateLimitRedis{Address: "localhost:6379"}}); err == nil || !strings.Contains(err.Error(), "ratelimit/redisstore") {
		t.Errorf("without a Redis store linked: %v, want an error naming the package to import", err)
	}
}

// RegisterRateStore adds a store ratelimit can open by its name, and
// refuses, as Register does, a bad name, a nil function and a second
// store of one name.
func TestRegisterRateStore(t *testing.T) {
	store := &failingStore{}
	RegisterRateStore("test_store", func(RateLimitRedis, float64, int) (RateStore, error) { return store, nil })
	if open := rateStore("test_store"); open == nil {
		t.Fatal("test_store not registered")
	} else if s, err := open(RateLimitRedis{}, 1, 1); s != store || err != nil {
		t.Errorf("test_store opened %v, %v", s, err)
	}
	if rateStore("no_such_store") != nil {
		t.Error("an unregistered store has an opener")
	}
	open := func(RateLimitRedis, float64, int) (RateStore, error) { return nil, nil }
	for _, tt := range []struct {
		name string
		open OpenRedisFunc
		want string
	}{
		{"test_store", open, `cannot register the rate store "test_store": a store of that name is already registered`},
		{"Redis", open, `cannot register the rate store "Redis": a name is a lower-case letter`},
		{"", open, `cannot register the rate store "": a name is`},
		{"nil_store", nil, `RegisterRateStore of "nil_store" with a nil open function`},
	} {
		if got := registerPanic(func() { RegisterRateStore(tt.name, tt.open) }); !strings.Contains(got, tt.want) {
			t.Errorf("RegisterRateStore(%q) panicked with %q, want %q", tt.name, got, tt.want)
		}
	}
	if rateStore("nil_store") != nil {
		t.Error("nil_store registered although RegisterRateStore panicked")
	}
}
