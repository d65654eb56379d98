package redisstore_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/ratelimit/redisstore"
	"github.com/sluice-server/sluice/sluicetest"
)

// instance is one Sluice server built from a config file, as each
// instance behind a balancer is, with the log its components write.
type instance struct {
	url string
	log *sluicetest.Buffer
}

// startInstance serves a config of one route limited by ratelimit with
// Redis at sock: rate 0.001 (a token every 1000 s, so none comes back
// during the test) and burst 3, X-Forwarded-For trusted from loopback.
func startInstance(t *testing.T, sock, onError string) *instance {
	t.Helper()
	yaml := fmt.Sprintf(`routes:
  - match: /
    pipeline:
      - ratelimit:
          rate: 0.001
          burst: 3
          trusted_proxies: [127.0.0.1]
          redis: {address: "unix:%s", on_error: %s}
      - text: ok
`, sock, onError)
	logger, buf := sluicetest.Logger()
	cfg, err := (&config.Loader{Context: components.Context{Logger: logger}}).Parse("sluice.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	return &instance{url: sluicetest.NewServer(t, cfg.Handler()).URL, log: buf}
}

// get requests / as client and returns the status and Retry-After.
func (in *instance) get(t *testing.T, client string) (int, string) {
	t.Helper()
	resp, _ := sluicetest.Get(t, in.url+"/", "X-Forwarded-For", client)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// want fails the test unless client's next request to in is answered
// with code.
func (in *instance) want(t *testing.T, name, client string, code int) {
	t.Helper()
	if got, _ := in.get(t, client); got != code {
		t.Errorf("%s: %s got %d, want %d", name, client, got, code)
	}
}

// Two instances sharing one Redis enforce one limit: a client's burst
// spent partly on each is spent, and the client is refused by both.
func TestSharedLimit(t *testing.T) {
	r := startRedis(t)
	a, b := startInstance(t, r.Sock, "local"), startInstance(t, r.Sock, "local")
	a.want(t, "A", "192.0.2.1", 200)
	b.want(t, "B", "192.0.2.1", 200)
	a.want(t, "A", "192.0.2.1", 200)
	for _, in := range []*instance{b, a} {
		code, ra := in.get(t, "192.0.2.1")
		// The next token is 1000 s after the first request, less the
		// time since: at most 1000 s.
		if secs, err := strconv.Atoi(ra); code != 429 || err != nil || secs < 1 || secs > 1000 {
			t.Errorf("over the shared burst: %d Retry-After %q, want 429 and at most 1000", code, ra)
		}
	}
	// Another client has a bucket of its own, and IPv6 clients are
	// grouped by /64 in Redis as locally.
	b.want(t, "B", "192.0.2.2", 200)
	for i := range 3 {
		a.want(t, "A", fmt.Sprintf("2001:db8::%d", i+1), 200)
	}
	b.want(t, "B", "2001:db8::99", 429)

	// Each key expires once its bucket would be full again (3 tokens at
	// 0.001/s: 3000 s), so Redis forgets idle clients.
	rc, err := redis.Dial("unix", r.Sock)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	keys, err := redis.Strings(rc.Do("KEYS", "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"sluice:ratelimit:0.001:3:192.0.2.1": true, "sluice:ratelimit:0.001:3:192.0.2.2": true, "sluice:ratelimit:0.001:3:2001:db8::": true}
	if len(keys) != len(want) {
		t.Errorf("keys %q, want %d keys", keys, len(want))
	}
	for _, k := range keys {
		ms, err := redis.Int64(rc.Do("PTTL", k))
		ttl := time.Duration(ms) * time.Millisecond
		if !want[k] || err != nil || ttl <= 0 || ttl > 3000*time.Second {
			t.Errorf("key %q expires in %v (%v), want a key of the limit expiring within 3000 s", k, ttl, err)
		}
	}
}

// When Redis goes away each instance counts its clients alone and warns
// once; when Redis is back they share again, and say so once.
func TestRedisDownLocal(t *testing.T) {
	r := startRedis(t)
	a, b := startInstance(t, r.Sock, "local"), startInstance(t, r.Sock, "local")
	for _, in := range []*instance{a, b, a} {
		in.want(t, "shared", "192.0.2.1", 200)
	}
	a.want(t, "shared, over the burst", "192.0.2.1", 429)

	r.Stop()
	// A has not counted 192.0.2.1 alone: it has its whole burst there,
	// and no more.
	for i := range 3 {
		a.want(t, fmt.Sprintf("Redis down, request %d", i+1), "192.0.2.1", 200)
	}
	a.want(t, "Redis down, over the local burst", "192.0.2.1", 429)
	b.want(t, "Redis down, on B", "192.0.2.1", 200)
	for _, in := range []*instance{a, b} {
		if n := strings.Count(in.log.String(), "Redis cannot be reached"); n != 1 {
			t.Errorf("warned %d times that Redis cannot be reached, want once; log:\n%s", n, in.log)
		}
		if !strings.Contains(in.log.String(), "on_error: local") {
			t.Errorf("the warning does not say what the instance does instead:\n%s", in.log)
		}
	}

	r.Start()
	// Each instance tries Redis again a second after it failed; a
	// client of its own keeps asking until it has.
	for _, in := range []*instance{a, b} {
		sluicetest.WaitFor(t, "the instance to use Redis again", func() bool {
			in.get(t, "198.51.100.1")
			return strings.Contains(in.log.String(), "Redis answers again")
		})
	}
	for _, in := range []*instance{b, a, b} {
		in.want(t, "shared again", "192.0.2.3", 200)
	}
	a.want(t, "shared again, over the burst", "192.0.2.3", 429)
	for _, in := range []*instance{a, b} {
		if n := strings.Count(in.log.String(), "Redis answers again"); n != 1 {
			t.Errorf("said %d times that Redis answers again, want once; log:\n%s", n, in.log)
		}
	}
}

// on_error: closed refuses every request while Redis cannot be reached;
// on_error: open lets every one through.
func TestRedisDownClosedOpen(t *testing.T) {
	r := startRedis(t)
	closed, open := startInstance(t, r.Sock, "closed"), startInstance(t, r.Sock, "open")
	closed.want(t, "closed, Redis up", "192.0.2.1", 200)
	open.want(t, "open, Redis up", "192.0.2.2", 200)
	r.Stop()
	for i := range 5 {
		closed.want(t, fmt.Sprintf("closed, Redis down, request %d", i+1), "192.0.2.1", 503)
		open.want(t, fmt.Sprintf("open, Redis down, request %d", i+1), "192.0.2.1", 200)
	}
}

// A Redis that accepts connections but never answers costs each call at
// most the timeout: the request is then answered by the fallback.
func TestRedisSilent(t *testing.T) {
	sock := t.TempDir() + "/silent.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // accepted and never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	store, err := redisstore.Open(components.RateLimitRedis{Address: "unix:" + sock, Timeout: 20 * time.Millisecond}, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Take(context.Background(), "k"); err == nil {
		t.Fatal("Take from a silent server succeeded")
	}
	in := startInstance(t, sock, "local")
	in.want(t, "silent Redis", "192.0.2.1", 200)
}

// The store's answers match the token bucket's: burst tokens at once,
// then a wait of 1/rate less the time since the first. The wait is
// checked against the bucket's state in Redis and Redis's own clock,
// read just before and just after each call, not against how long the
// test took: tat - span - (Redis's time during the call), which those
// two readings bracket however slow the machine is.
func TestStoreTake(t *testing.T) {
	r := startRedis(t)
	const interval, span = 100e6, 100e6 // µs: rate 0.01, burst 2
	store, err := redisstore.Open(components.RateLimitRedis{Address: "unix:" + r.Sock, Timeout: time.Second}, 0.01, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := redis.Dial("unix", r.Sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clock := func() float64 { // Redis's TIME, in µs
		t.Helper()
		v, err := redis.Int64s(c.Do("TIME"))
		if err != nil || len(v) != 2 {
			t.Fatalf("TIME: %v, %v", v, err)
		}
		return float64(v[0])*1e6 + float64(v[1])
	}
	tat := func() float64 { // the bucket's theoretical arrival time, in µs
		t.Helper()
		v, err := redis.Float64(c.Do("GET", "k"))
		if err != nil {
			t.Fatalf("GET k: %v", err)
		}
		return v
	}
	ctx := context.Background()
	first := clock()
	for i := range 2 {
		if w, err := store.Take(ctx, "k"); w != 0 || err != nil {
			t.Fatalf("take %d: %v, %v", i+1, w, err)
		}
	}
	last := clock()
	// Each taken token moves tat one interval on from the first call's time.
	if got := tat(); got < first+2*interval || got > last+2*interval {
		t.Fatalf("after the burst: tat %.0f µs, want the first take's time (in [%.0f, %.0f]) + %.0f", got, first, last, 2*interval)
	}
	for i := range 2 {
		before, at := clock(), tat()
		w, err := store.Take(ctx, "k")
		after := clock()
		if err != nil {
			t.Fatalf("over the burst, take %d: %v", i+1, err)
		}
		// Take answers ceil(tat - now - span) µs for a now in [before, after].
		us := float64(w / time.Microsecond)
		if lo, hi := at-span-after, math.Ceil(at-span-before); us < lo || us > hi {
			t.Errorf("over the burst, take %d: wait %.0f µs, want tat - span - now in [%.0f, %.0f]", i+1, us, lo, hi)
		}
		if got := tat(); got != at {
			t.Errorf("over the burst, take %d: tat moved from %.0f to %.0f, want a refusal to take nothing", i+1, at, got)
		}
	}
	if _, err := redisstore.Open(components.RateLimitRedis{Address: "unix:" + r.Sock, PasswordFile: t.TempDir() + "/none"}, 1, 1); err == nil {
		t.Error("Open with a missing password file succeeded")
	}
}

// A connection Redis closed while it was idle (Redis restarted between
// two requests) is replaced before it is used: the next call succeeds.
func TestRedisRestartIdle(t *testing.T) {
	r := startRedis(t)
	store, err := redisstore.Open(components.RateLimitRedis{Address: "unix:" + r.Sock, Timeout: time.Second}, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.Take(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	r.Start()
	if _, err := store.Take(ctx, "k"); err != nil {
		t.Errorf("first call after a restart: %v, want a new connection", err)
	}
}

// password_file, relative to the config file's directory, gives the
// password Redis requires: the limit is shared, not counted locally.
func TestPasswordFile(t *testing.T) {
	r := startRedis(t, "--requirepass", "s3cret")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "redis.pw"), "s3cret\n")
	file := filepath.Join(dir, "sluice.yaml")
	writeFile(t, file, fmt.Sprintf(`routes:
  - match: /
    pipeline:
      - ratelimit: {rate: 0.001, burst: 1, redis: {address: "unix:%s", password_file: redis.pw, on_error: closed}}
      - text: ok
`, r.Sock))
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg.Close() })
	in := &instance{url: sluicetest.NewServer(t, cfg.Handler()).URL}
	in.want(t, "with the password", "", 200) // closed: a 503 if Redis refused the password
	in.want(t, "with the password, over the burst", "", 429)

	writeFile(t, filepath.Join(dir, "redis.pw"), "wrong\n")
	cfg2, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cfg2.Close() })
	in2 := &instance{url: sluicetest.NewServer(t, cfg2.Handler()).URL}
	in2.want(t, "with a wrong password", "", 503)
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
