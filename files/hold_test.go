package files

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// By default a file of 80 KiB is held in memory and leaves with its
// header in one write (one system call, where sendfile takes two), and
// one over DefaultMaxMemFile is not: each is served intact either way.
func TestDefaultHoldsSmallFiles(t *testing.T) {
	dir := t.TempDir()
	sizes := map[string]int{"/80k.bin": 80 << 10, "/limit.bin": DefaultMaxMemFile, "/over.bin": DefaultMaxMemFile + 1}
	want := map[string][]byte{}
	for name, n := range sizes {
		b := bytes.Repeat([]byte{byte(n)}, n)
		want[name] = b
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv := sluicetest.NewServer(t, s)
	for name := range sizes {
		for range 2 { // the first request loads, the second is served from what was loaded
			resp, body := sluicetest.Get(t, "http://"+srv.Addr+name)
			if resp.StatusCode != 200 || body != string(want[name]) {
				t.Fatalf("GET %s = %d, %d bytes, want 200 and %d", name, resp.StatusCode, len(body), len(want[name]))
			}
		}
		e := s.cache.getString(name)
		if e == nil {
			t.Fatalf("%s: not in the cache", name)
		}
		if held := name != "/over.bin"; e.held != held {
			t.Errorf("%s (%d bytes): held in memory %v, want %v", name, sizes[name], e.held, held)
		}
	}
}
