package files_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// fdsOpenTo counts this process's descriptors open on the file at path,
// also after it was deleted or renamed over ("path (deleted)").
func fdsOpenTo(t *testing.T, path string) int {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, de := range des {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", de.Name()))
		if err == nil && (target == path || target == path+" (deleted)") {
			n++
		}
	}
	return n
}

// Large files are opened once and shared by every request.
func TestOpenFilesShared(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// An hour: the file stays open however slowly the test runs.
	base := serveDir(t, dir, files.Options{OpenExpiry: time.Hour})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if resp, body := sluicetest.Get(t, base+"/big.bin"); resp.StatusCode != 200 || len(body) != 1<<20 {
					t.Errorf("GET /big.bin = %d, %d bytes", resp.StatusCode, len(body))
				}
			}
		}()
	}
	wg.Wait()
	if n := fdsOpenTo(t, big); n != 1 {
		t.Errorf("after 40 requests: %d descriptors open on the file, want 1 (shared)", n)
	}
}

// A kept file is closed once it has not been asked for during
// OpenExpiry, and opened (and closed) again on demand.
func TestOpenFilesExpire(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(big, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	base := serveDir(t, dir, files.Options{OpenExpiry: 50 * time.Millisecond})
	for i := range 2 {
		// Kept open after the request, as TestOpenFilesShared shows.
		if resp, body := sluicetest.Get(t, base+"/big.bin"); resp.StatusCode != 200 || len(body) != 1<<20 {
			t.Fatalf("GET %d = %d, %d bytes", i+1, resp.StatusCode, len(body))
		}
		sluicetest.WaitFor(t, "the idle file to be closed", func() bool { return fdsOpenTo(t, big) == 0 })
	}
}

// A client that goes away in the middle of a large file releases its
// reference: the file is closed once idle, as if the transfer had ended.
func TestDisconnectReleasesFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "huge.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(256 << 20) // sparse
	f.Close()
	base := serveDir(t, dir, files.Options{OpenExpiry: 100 * time.Millisecond})
	for range 3 {
		c, err := net.Dial("tcp", hostOf(base))
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET /huge.bin HTTP/1.1\r\nHost: a\r\n\r\n"))
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("status line %q", line)
		}
		io.CopyN(io.Discard, br, 1<<20)
		c.Close() // mid-transfer
	}
	sluicetest.WaitFor(t, "the abandoned file to be closed", func() bool { return fdsOpenTo(t, big) == 0 })
}

// A file replaced on disk gets a new open file; the old one is closed as
// soon as no transfer uses it, without waiting for OpenExpiry. Bodies are
// never torn: each is wholly one version.
func TestReplacedFileClosed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v.bin")
	write := func(c byte) {
		tmp := filepath.Join(dir, "v.tmp")
		if err := os.WriteFile(tmp, []byte(strings.Repeat(string(c), 300<<10)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	write('a')
	base := serveDir(t, dir, files.Options{Expiry: time.Millisecond, OpenExpiry: time.Hour})
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			write("bcd"[i%3])
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				resp, body := sluicetest.Get(t, base+"/v.bin")
				if resp.StatusCode != 200 || len(body) != 300<<10 || strings.Count(body, body[:1]) != len(body) {
					t.Errorf("GET /v.bin = %d, %d bytes, torn: %v", resp.StatusCode, len(body), len(body) > 0 && strings.Count(body, body[:1]) != len(body))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	writer.Wait()
	// Requests after Expiry revalidate and drop the replaced entries.
	sluicetest.WaitFor(t, "replaced files to be closed", func() bool {
		sluicetest.Get(t, base+"/v.bin")
		return fdsOpenTo(t, p) <= 1
	})
}

// Close closes the files kept open. (One still in use by a response,
// which the client may have read whole before the handler has returned,
// is closed as the response lets go of it.)
func TestCloseClosesFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.bin")
	os.WriteFile(big, make([]byte, 200<<10), 0o644)
	s, err := files.New(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + serve(t, s)
	sluicetest.Get(t, base+"/big.bin")
	if n := fdsOpenTo(t, big); n != 1 {
		t.Fatalf("%d descriptors open, want 1", n)
	}
	s.Close()
	sluicetest.WaitFor(t, "the kept file to be closed", func() bool { return fdsOpenTo(t, big) == 0 })
}
