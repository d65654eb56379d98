package sock

import (
	"crypto/rand"
	"errors"
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

// isResident is resident's answer, failing the test when the kernel
// gives none.
func isResident(t *testing.T, fd int, off, n int64) bool {
	t.Helper()
	in, known := resident(fd, off, n)
	if !known {
		t.Fatalf("cachestat gave no answer for fd %d", fd)
	}
	return in
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
	if !isResident(t, fd, 0, 256<<10) || !isResident(t, fd, 4097, 10) {
		t.Fatal("a file just read is not reported resident")
	}
	if isResident(t, fd, 0, 256<<10+1) {
		t.Error("a span past the end of the file is reported resident")
	}
	evict(t, f)
	if isResident(t, fd, 0, 256<<10) {
		t.Skip("the kernel kept the pages after FADV_DONTNEED")
	}
	if _, err := f.ReadAt(make([]byte, 4096), 8192); err != nil {
		t.Fatal(err)
	}
	if !isResident(t, fd, 8192, 4096) {
		t.Error("a page read back is not reported resident")
	}
	if isResident(t, fd, 0, 256<<10) {
		t.Error("a file with one page read back is reported resident whole")
	}
}

// The kernel is asked about a file's span once per residencyTTL; a span
// outside the one remembered, or a later time, asks again; adjoining spans
// are remembered as one.
func TestResidencyRemembersSpans(t *testing.T) {
	f, _ := residentFile(t, 64<<10)
	fd := int(f.Fd())
	if !localFS(fd) {
		t.Skip("the temporary directory is not on a local file system this package knows")
	}
	var r residency
	now := time.Now().UnixNano()
	for i := 0; i < 3; i++ {
		if !r.check(f, fd, 0, 32<<10, now+int64(i)*int64(time.Millisecond)) {
			t.Fatal("resident file not reported resident")
		}
	}
	if got := r.queries.Load(); got != 1 {
		t.Errorf("three checks within the TTL asked the kernel %d times, want 1", got)
	}
	if !r.check(f, fd, 4096, 8192, now) || r.queries.Load() != 1 {
		t.Errorf("a span inside the remembered one asked the kernel (%d questions)", r.queries.Load())
	}
	if !r.check(f, fd, 32<<10, 32<<10, now) || r.queries.Load() != 2 {
		t.Errorf("the next span did not ask the kernel (%d questions)", r.queries.Load())
	}
	if !r.check(f, fd, 0, 64<<10, now) || r.queries.Load() != 2 {
		t.Errorf("the union of two remembered spans asked again (%d questions)", r.queries.Load())
	}
	if !r.check(f, fd, 0, 64<<10, now+residencyTTL) || r.queries.Load() != 3 {
		t.Errorf("an expired entry was not checked again (%d questions)", r.queries.Load())
	}

	// Entries past the TTL are swept.
	g, _ := residentFile(t, 4096)
	r.check(g, int(g.Fd()), 0, 4096, now+3*residencyTTL)
	r.sweep(now + 3*residencyTTL)
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
	if in, _ := resident(int(g.Fd()), 0, 4096); in {
		t.Skip("the kernel kept the pages after FADV_DONTNEED")
	}
	if r.check(g, int(g.Fd()), 0, 4096, now+4*residencyTTL) {
		t.Error("an evicted file is reported resident")
	}
	if _, ok := r.m.Load(g); ok {
		t.Error("an evicted file is remembered")
	}
}

// A file on a file system this package does not know as local (procfs
// here) is never sent raw, and that is remembered.
func TestResidencyRefusesOtherFileSystems(t *testing.T) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var r residency
	now := time.Now().UnixNano()
	for i := 0; i < 2; i++ {
		if r.check(f, int(f.Fd()), 0, 100, now) {
			t.Errorf("check %d: a procfs file may be sent raw", i+1)
		}
	}
	if r.queries.Load() != 1 {
		t.Errorf("asked %d times, want once", r.queries.Load())
	}
}
