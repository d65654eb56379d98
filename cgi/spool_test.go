//go:build unix

package cgi

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// spoolFiles counts this process's open descriptors of CGI spool or
// output files (unlinked temporary files named sluice-cgi-*).
func spoolFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil &&
			strings.Contains(target, "sluice-cgi-") {
			n++
		}
	}
	return n
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Chunked uploads that never finish hold little memory each (the body
// goes to an unlinked temporary file past 64 KiB), and memory and files
// are released when their clients go away. 100 such uploads of 8 MiB
// grew the server by 1.2 GB, which stayed after the clients left.
func TestChunkedBodySpooled(t *testing.T) {
	script := cgiScript(t, t.TempDir(), "ok.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nok'\n")
	g, _ := newGateway(t, Options{Script: script})
	addr := sluicetest.NewServer(t, pipe.Handler(g)).Addr

	const clients, size = 16, 4 << 20 // within MaxBody, never finished
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat("x", 64<<10))
	before := heapInUse()
	conns := make([]net.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		go func() {
			c.SetDeadline(time.Now().Add(60 * time.Second))
			if _, err := c.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")); err != nil {
				return
			}
			for range size / (64 << 10) {
				if _, err := c.Write([]byte(chunk)); err != nil {
					return
				}
			}
		}()
	}
	received := cgiPoll(func() bool { return spoolStats.disk.Load() == clients*size })
	if grown := heapInUse() - before; grown > clients<<20 {
		t.Errorf("the server holds %d MiB more for %d pending uploads of %d MiB", grown>>20, clients, size>>20)
	}
	if !received {
		t.Fatalf("the server spooled %d bytes, want %d", spoolStats.disk.Load(), clients*size)
	}
	if n := spoolFiles(t); n != clients {
		t.Errorf("%d spool files open, want %d", n, clients)
	}
	if m := spoolStats.mem.Load(); m != 0 {
		t.Errorf("%d bytes held in memory with every body in a file", m)
	}

	for _, c := range conns {
		c.Close()
	}
	if !cgiPoll(func() bool {
		return spoolFiles(t) == 0 && spoolStats.disk.Load() == 0 && spoolStats.mem.Load() == 0
	}) {
		t.Errorf("after the clients left: %d spool files, %d bytes on disk, %d in memory",
			spoolFiles(t), spoolStats.disk.Load(), spoolStats.mem.Load())
	}
}

// TestReadBody: the body a gateway sends, by how the request framed it.
func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		length int64
		body   string
		limit  int64
		want   string
		spool  bool
		tooBig bool
	}{
		{0, "", 100, "", false, false},
		{5, "hello", 100, "hello", false, false},
		{-1, "chunked body", 100, "chunked body", true, false},
		{-1, "", 100, "", false, false},
		{-1, "too large", 4, "", false, true},
	} {
		r := &engine.Request{ContentLength: tc.length, Body: strings.NewReader(tc.body)}
		body, n, spool, err := ReadBody(r, tc.limit)
		if tc.tooBig {
			if !BodyTooLarge(err) {
				t.Errorf("%+v: err %v, want too large", tc, err)
			}
			continue
		}
		if err != nil || (spool != nil) != tc.spool || n != int64(len(tc.want)) || (body == nil) != (tc.want == "") {
			t.Errorf("%+v: got %v %d %v %v", tc, body, n, spool, err)
			continue
		}
		if body != nil {
			b, _ := io.ReadAll(io.LimitReader(body, n))
			if string(b) != tc.want {
				t.Errorf("%+v: read %q", tc, b)
			}
		}
		if spool != nil {
			spool.Close()
		}
	}
}
