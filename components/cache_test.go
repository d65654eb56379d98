package components

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true}, {"64MB", 64 << 20, true}, {"64M", 64 << 20, true}, {"64MiB", 64 << 20, true},
		{"8 MB", 8 << 20, true}, {"512K", 512 << 10, true}, {"512kb", 512 << 10, true}, {"2G", 2 << 30, true},
		{"0", 0, true}, {"", 0, false}, {"-1", 0, false}, {"1.5MB", 0, false}, {"10TB", 0, false},
		{"MB", 0, false}, {"99999999999G", 0, false}, {"1X", 0, false},
	}
	for _, tt := range tests {
		var b ByteSize
		err := b.UnmarshalText([]byte(tt.in))
		if (err == nil) != tt.ok || tt.ok && int64(b) != tt.want {
			t.Errorf("ByteSize(%q) = %d, %v; want %d, ok %v", tt.in, b, err, tt.want, tt.ok)
		}
	}
}

// Bad options are errors that name the option.
func TestCacheOptionsErrors(t *testing.T) {
	tests := []struct {
		o    CacheOptions
		want string
	}{
		{CacheOptions{Name: "two words"}, "name"},
		{CacheOptions{Size: 1 << 20, MaxObjectSize: 2 << 20}, "max_object_size"},
		{CacheOptions{MaxKeys: -1}, "max_keys"},
		{CacheOptions{HeuristicFraction: 2}, "heuristic_fraction"},
		{CacheOptions{HeuristicMax: -time.Second}, "heuristic_max"},
		{CacheOptions{LockTimeout: -time.Second}, "lock_timeout"},
		{CacheOptions{StaleIfError: -time.Second}, "stale_if_error"},
		{CacheOptions{Key: []string{"query:x"}}, "key"},
		{CacheOptions{Key: []string{"header:"}}, "key"},
		{CacheOptions{Sync: true}, "sync"},
	}
	for _, tt := range tests {
		_, err := NewCache(tt.o)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewCache(%+v) = %v, want an error naming %s", tt.o, err, tt.want)
		}
	}
}

// The cache pipe stores what the components after it produce.
func TestCachePipe(t *testing.T) {
	c, err := NewCache(CacheOptions{Size: 1 << 20})
	c = builtinComp(t, c, err)
	h, err := NewHeaders(HeadersOptions{Set: map[string]string{"Cache-Control": "max-age=60"}})
	h = builtinComp(t, h, err)
	var n atomic.Int32
	counter := pipe.Pipe(func(conn *pipe.Conn) bool { n.Add(1); return true })
	text, err := NewText(TextOptions{Body: "stored"})
	text = builtinComp(t, text, err)
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{c, counter, h, text})).URL
	for i := range 3 {
		resp, body := builtinDo(t, "GET", url+"/", nil)
		if string(body) != "stored" || resp.Header.Get("Cache-Status") == "" || resp.Header.Get("Age") == "" {
			t.Errorf("request %d: %q, Cache-Status %q", i, body, resp.Header.Get("Cache-Status"))
		}
	}
	if n.Load() != 1 {
		t.Errorf("the components after the cache ran %d times, want 1", n.Load())
	}
}

// ByteSize never panics, and what it accepts is a non-negative size that
// prints back to an accepted value.
func FuzzByteSize(f *testing.F) {
	for _, s := range []string{"64MB", "1", "8 KiB", "-1", "99999999999999999999G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b ByteSize
		if err := b.UnmarshalText([]byte(s)); err != nil {
			return
		}
		if b < 0 {
			t.Fatalf("ByteSize(%q) = %d", s, b)
		}
		var again ByteSize
		if err := again.UnmarshalText([]byte(strconv.FormatInt(int64(b), 10))); err != nil || again != b {
			t.Fatalf("ByteSize(%q) = %d does not read back: %d, %v", s, b, again, err)
		}
	})
}

// With path the cache pipe keeps responses on disk, and closes its
// store with Close.
func TestCachePipeOnDisk(t *testing.T) {
	dir := t.TempDir()
	c, err := NewCache(CacheOptions{Path: dir, Size: 1 << 20})
	c = builtinComp(t, c, err)
	t.Cleanup(func() {
		if err := c.(io.Closer).Close(); err != nil {
			t.Error(err)
		}
	})
	h, err := NewHeaders(HeadersOptions{Set: map[string]string{"Cache-Control": "max-age=60"}})
	h = builtinComp(t, h, err)
	var n atomic.Int32
	counter := pipe.Pipe(func(conn *pipe.Conn) bool { n.Add(1); return true })
	text, err := NewText(TextOptions{Body: "stored"})
	text = builtinComp(t, text, err)
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{c, counter, h, text})).URL
	for i := range 3 {
		resp, body := builtinDo(t, "GET", url+"/", nil)
		if string(body) != "stored" || resp.Header.Get("Cache-Status") == "" {
			t.Errorf("request %d: %q, Cache-Status %q", i, body, resp.Header.Get("Cache-Status"))
		}
	}
	if n.Load() != 1 {
		t.Errorf("the components after the cache ran %d times, want 1", n.Load())
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && len(d.Name()) == 32 {
			files++
		}
		return nil
	})
	if files != 1 {
		t.Errorf("%d object files under the path, want 1", files)
	}
}
