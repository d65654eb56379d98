package files_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-server/sluice/files"
)

// procStatusKB reads a "Vm…:  N kB" line of /proc/self/status.
func procStatusKB(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			v = bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// A 1 GiB file streams in constant memory: the peak resident set of this
// process (server and client both) grows by far less than the file while
// the whole file is read by a client that discards it. This bounds a
// resource, not a time.
func TestLargeFileBoundedRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GiB")
	}
	const size = 1 << 30
	const bound = 64 << 20
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // a sparse file: no disk used
		t.Fatal(err)
	}
	f.Close()
	base := serveDir(t, dir, files.Options{})

	runtime.GC()
	debug.FreeOSMemory()
	// Reset the peak (VmHWM) to the current RSS where the kernel allows,
	// so the peak during the transfer is measured, not just the end.
	peakField := "VmRSS"
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil {
		peakField = "VmHWM"
	}
	before := procStatusKB(t, "VmRSS") << 10

	c, err := net.Dial("tcp", hostOf(base))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Minute))
	io.WriteString(c, "GET /sparse.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.ContentLength != size {
		t.Fatalf("GET /sparse.bin = %d, Content-Length %d", resp.StatusCode, resp.ContentLength)
	}
	n, err := io.CopyBuffer(io.Discard, resp.Body, make([]byte, 256<<10))
	if err != nil || n != size {
		t.Fatalf("read %d bytes, %v; want %d", n, err, size)
	}
	peak := procStatusKB(t, peakField) << 10
	t.Logf("%s before %d MiB, %s after streaming 1 GiB %d MiB", "VmRSS", before>>20, peakField, peak>>20)
	if growth := peak - before; growth > bound {
		t.Errorf("resident memory grew by %d MiB while streaming 1 GiB, want < %d MiB", growth>>20, bound>>20)
	}
}
