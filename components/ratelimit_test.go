package components

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// rlFixed makes a rate limiter with a clock the test moves by hand.
func rlFixed(t *testing.T, opts RateLimitOptions) (*rateLimiter, *atomic.Int64) {
	t.Helper()
	rl, err := newRateLimiter(opts)
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	rl.clock = now.Load
	return rl, &now
}

func TestRateLimitOverSocket(t *testing.T) {
	rl, now := rlFixed(t, RateLimitOptions{Rate: 2, Burst: 3, TrustedProxies: []string{"127.0.0.1"}})
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(rl.handle), guardText("ok")})).URL
	get := func(client string) (int, string) {
		resp, _ := sluicetest.Get(t, url+"/", "X-Forwarded-For", client)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for i := range 3 {
		if code, _ := get("192.0.2.1"); code != 200 {
			t.Fatalf("burst request %d: %d", i, code)
		}
	}
	// The bucket is empty: the next token comes in 0.5 s, announced as 1.
	if code, ra := get("192.0.2.1"); code != 429 || ra != "1" {
		t.Errorf("over the burst: %d Retry-After %q, want 429 1", code, ra)
	}
	// Another client has its own bucket.
	if code, _ := get("192.0.2.2"); code != 200 {
		t.Errorf("other client: %d", code)
	}
	now.Add(int64(500 * time.Millisecond))
	if code, _ := get("192.0.2.1"); code != 200 {
		t.Errorf("after a refill of one token: %d", code)
	}
	if code, _ := get("192.0.2.1"); code != 429 {
		t.Errorf("second request after one token: %d", code)
	}
	now.Add(int64(time.Hour)) // refills to the burst, no more
	for i := range 3 {
		if code, _ := get("192.0.2.1"); code != 200 {
			t.Errorf("after an hour, request %d: %d", i, code)
		}
	}
	if code, _ := get("192.0.2.1"); code != 429 {
		t.Errorf("the bucket held more than the burst: %d", code)
	}
}

func TestRateLimitRetryAfter(t *testing.T) {
	rl, now := rlFixed(t, RateLimitOptions{Rate: 0.1, TrustedProxies: []string{"127.0.0.1"}}) // one per 10 s, burst 1
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(rl.handle), guardText("ok")})).URL
	a := netip.MustParseAddr("192.0.2.1")
	if w := rl.take(a); w != 0 {
		t.Fatalf("first: wait %d", w)
	}
	for _, tt := range []struct {
		advance time.Duration
		want    string
	}{
		{0, "10"},
		{3 * time.Second, "7"},
		{6500 * time.Millisecond, "1"}, // 0.5 s left: rounded up
	} {
		now.Add(int64(tt.advance))
		resp, _ := sluicetest.Get(t, url+"/", "X-Forwarded-For", a.String())
		if ra := resp.Header.Get("Retry-After"); resp.StatusCode != 429 || ra != tt.want {
			t.Errorf("after +%v: %d Retry-After %q, want 429 %s", tt.advance, resp.StatusCode, ra, tt.want)
		}
	}
	now.Add(int64(500 * time.Millisecond))
	if w := rl.take(a); w != 0 {
		t.Errorf("after 10 s: wait %d", w)
	}
}

// IPv6 clients are grouped by /64 (by default).
func TestRateLimitIPv6Prefix(t *testing.T) {
	rl, _ := rlFixed(t, RateLimitOptions{Rate: 1})
	if rl.take(netip.MustParseAddr("2001:db8::1")) != 0 {
		t.Fatal("first request refused")
	}
	if rl.take(netip.MustParseAddr("2001:db8::2")) == 0 {
		t.Error("same /64 has a bucket of its own")
	}
	if rl.take(netip.MustParseAddr("2001:db8:0:1::1")) != 0 {
		t.Error("another /64 shares the bucket")
	}
	rl, _ = rlFixed(t, RateLimitOptions{Rate: 1, IPv6Prefix: 128})
	rl.take(netip.MustParseAddr("2001:db8::1"))
	if rl.take(netip.MustParseAddr("2001:db8::2")) != 0 {
		t.Error("ipv6_prefix 128: addresses share a bucket")
	}
}

// Memory stays bounded: refilled buckets are dropped, and a full table
// drops arbitrary buckets.
func TestRateLimitBoundedMemory(t *testing.T) {
	rl, now := rlFixed(t, RateLimitOptions{Rate: 1, Burst: 2, MaxClients: 640})
	for i := range 5000 {
		rl.take(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
		if n := rl.clients(); n > 640 {
			t.Fatalf("after %d clients: %d buckets held", i+1, n)
		}
	}
	// Two seconds later every bucket has refilled; a minute later the
	// periodic sweep drops them as a new client arrives in each shard.
	now.Add(int64(time.Minute))
	seen := map[int]bool{}
	for i := 0; len(seen) < rlShards; i++ {
		a := netip.AddrFrom4([4]byte{11, 0, byte(i >> 8), byte(i)})
		if s := rl.shardOf(a); !seen[s] {
			seen[s] = true
			rl.take(a)
		}
	}
	if n := rl.clients(); n != rlShards {
		t.Errorf("refilled buckets kept: %d held, want the %d new ones", n, rlShards)
	}
}

// Concurrent takes on one bucket hand out exactly the burst.
func TestRateLimitConcurrent(t *testing.T) {
	rl, _ := rlFixed(t, RateLimitOptions{Rate: 1, Burst: 100})
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if rl.take(netip.MustParseAddr("192.0.2.1")) == 0 {
					granted.Add(1)
				}
				rl.take(netip.AddrFrom4([4]byte{10, 0, byte(g), byte(i)}))
			}
		})
	}
	wg.Wait()
	if granted.Load() != 100 {
		t.Errorf("granted %d of 400, want the burst of 100", granted.Load())
	}
}

func TestRateLimitOptions(t *testing.T) {
	for _, tt := range []struct {
		opts RateLimitOptions
		err  string
	}{
		{RateLimitOptions{}, "ratelimit: rate must be a positive number"},
		{RateLimitOptions{Rate: -1}, "ratelimit: rate must be a positive number"},
		{RateLimitOptions{Rate: 1, Burst: -1}, "ratelimit: burst must not be negative"},
		{RateLimitOptions{Rate: 1, IPv6Prefix: 129}, "ratelimit: ipv6_prefix must be between 1 and 128"},
		{RateLimitOptions{Rate: 1, MaxClients: -5}, "ratelimit: max_clients must not be negative"},
		{RateLimitOptions{Rate: 1, TrustedProxies: []string{"nope"}}, "ratelimit: trusted_proxies"},
	} {
		if _, err := NewRateLimit(tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewRateLimit(%+v) = %v, want %q", tt.opts, err, tt.err)
		}
	}
	rl, _ := rlFixed(t, RateLimitOptions{Rate: 2.5})
	if rl.burst != 3 {
		t.Errorf("default burst for rate 2.5 = %v, want 3", rl.burst)
	}
}

func ExampleNewRateLimit() {
	// One request every 100 seconds, in bursts of up to 2.
	limit, err := NewRateLimit(RateLimitOptions{Rate: 0.01, Burst: 2})
	if err != nil {
		panic(err)
	}
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{limit, guardText("ok\n")}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL
	for range 3 {
		resp, _ := guardExampleGet(url)
		fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After") != "")
	}
	// Output:
	// 200 false
	// 200 false
	// 429 true
}

func BenchmarkRateLimit(b *testing.B) {
	b.Run("one-client", func(b *testing.B) {
		rl, _ := newRateLimiter(RateLimitOptions{Rate: 1e9, Burst: 1e9})
		a := netip.MustParseAddr("192.0.2.1")
		b.ReportAllocs()
		for b.Loop() {
			rl.take(a)
		}
	})
	b.Run("many-clients-parallel", func(b *testing.B) {
		rl, _ := newRateLimiter(RateLimitOptions{Rate: 10, MaxClients: 1 << 20})
		var next atomic.Uint32
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			base := next.Add(1) << 16
			i := uint32(0)
			for pb.Next() {
				v := base | i&0xffff
				rl.take(netip.AddrFrom4([4]byte{10, byte(v >> 16), byte(v >> 8), byte(v)}))
				i++
			}
		})
	})
}
