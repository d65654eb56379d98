package engine

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// residentFile writes size random bytes to a new file and returns it
// opened, its bytes in the page cache. It skips the test on a kernel
// without cachestat(2).
func residentFile(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	path := t.TempDir() + "/f"
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var st unix.Cachestat_t
	err = unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Len: uint64(size)}, &st, 0)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		t.Skipf("cachestat(2): %v", err)
	}
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	return f, data
}

// evict drops f's pages from the page cache (they are clean: written back
// first).
func evict(t *testing.T, f *os.File) {
	t.Helper()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

func TestResidentFollowsPageCache(t *testing.T) {
	f, _ := residentFile(t, 256<<10)
	fd := int(f.Fd())
	if !resident(fd, 0, 256<<10) || !resident(fd, 4097, 10) {
		t.Fatal("a file just read is not reported resident")
	}
	if resident(fd, 0, 256<<10+1) {
		t.Error("a span past the end of the file is reported resident")
	}
	evict(t, f)
	if resident(fd, 0, 256<<10) {
		t.Skip("the kernel kept the pages after FADV_DONTNEED")
	}
	if _, err := f.ReadAt(make([]byte, 4096), 8192); err != nil {
		t.Fatal(err)
	}
	if !resident(fd, 8192, 4096) {
		t.Error("a page read back is not reported resident")
	}
	if resident(fd, 0, 256<<10) {
		t.Error("a file with one page read back is reported resident whole")
	}
}

// The kernel is asked about a file's span once per residencyTTL; a span
// outside the one remembered, or a later time, asks again.
func TestResidencyRemembersSpans(t *testing.T) {
	f, _ := residentFile(t, 64<<10)
	fd := int(f.Fd())
	var r residency
	now := time.Now().UnixNano()
	asked := func() int64 { return residencyQueries.Load() }
	q := asked()
	for i := 0; i < 3; i++ {
		if !r.check(f, fd, 0, 64<<10, now+int64(i)*int64(time.Millisecond)) {
			t.Fatal("resident file not reported resident")
		}
	}
	if got := asked() - q; got != 1 {
		t.Errorf("three checks within the TTL asked the kernel %d times, want 1", got)
	}
	if !r.check(f, fd, 4096, 8192, now) || asked()-q != 1 {
		t.Errorf("a span inside the remembered one asked the kernel (%d questions)", asked()-q)
	}
	if !r.check(f, fd, 0, 64<<10, now+residencyTTL) || asked()-q != 2 {
		t.Errorf("an expired entry was not checked again (%d questions)", asked()-q)
	}

	// Entries past the TTL are swept when another is added.
	g, _ := residentFile(t, 4096)
	r.check(g, int(g.Fd()), 0, 4096, now+3*residencyTTL)
	n := 0
	r.m.Range(func(k, _ any) bool {
		n++
		if k != g {
			t.Errorf("entry for %v survived the sweep", k)
		}
		return true
	})
	if n != 1 {
		t.Errorf("%d entries after the sweep, want 1", n)
	}

	// A file found not resident is not remembered.
	evict(t, g)
	if resident(int(g.Fd()), 0, 4096) {
		t.Skip("the kernel kept the pages after FADV_DONTNEED")
	}
	if r.check(g, int(g.Fd()), 0, 4096, now+4*residencyTTL) {
		t.Error("an evicted file is reported resident")
	}
	if _, ok := r.m.Load(g); ok {
		t.Error("an evicted file is remembered")
	}
}

// Files in and out of the page cache are sent whole, by the raw and the
// blocking sendfile alike, on the same connection.
func TestSendFileColdAndWarm(t *testing.T) {
	f, data := residentFile(t, 1<<20+12345)
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		w.(FileSender).SendFile(f, 0, int64(len(data)))
	})
	addr := startServer(t, &Server{Handler: h})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	for i, cold := range []bool{true, false, true} {
		if cold {
			evict(t, f)
		}
		fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: a\r\n\r\n", i)
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 200 || !bytes.Equal([]byte(body), data) {
			t.Fatalf("request %d (cold %v): status %d, %d bytes, want %d", i, cold, resp.StatusCode, len(body), len(data))
		}
	}
}
