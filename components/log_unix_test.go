//go:build unix

package components

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// SIGUSR1 makes a log registered with ReopenOnSignal reopen its file.
func TestLogReopenOnSIGUSR1(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	l := logOpen(t, LogOptions{File: file, Format: "common"})
	stop := l.ReopenOnSignal()
	defer stop()
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")})).URL
	sluicetest.Get(t, url+"/before")
	l.Sync()
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	// The reopen creates the file: wait for it, bounded.
	for i := 0; ; i++ {
		if _, err := os.Stat(file); err == nil {
			break
		}
		if i == 500 {
			t.Fatal("the file was not reopened within 5 s of SIGUSR1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sluicetest.Get(t, url+"/after")
	if lines := logLines(t, l, file); len(lines) != 1 || !strings.Contains(lines[0], "GET /after ") {
		t.Errorf("new file: %q", lines)
	}
	if lines := logLines(t, l, file+".1"); len(lines) != 1 || !strings.Contains(lines[0], "GET /before ") {
		t.Errorf("rotated file: %q", lines)
	}
}

// When the disk (here a FIFO nobody reads) is slower than the requests,
// requests are still answered at once and the lines that do not fit the
// queue are dropped and counted: every line is either written or counted.
func TestLogDropsWhenFull(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "slow.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	// The FIFO's reader: opened now (so that the log can open it for
	// writing), read only once the log has dropped lines.
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	l := logOpen(t, LogOptions{File: fifo, Format: "combined", Buffer: 4})
	reader := <-opened
	defer reader.Close()
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, guardText("x")})).URL
	ua := strings.Repeat("u", 4000) // 16 lines fill the FIFO's 64 KiB
	requests := 0
	for l.Dropped() == 0 {
		if requests == 2000 {
			t.Fatal("no line dropped after 2000 requests")
		}
		if resp, _ := sluicetest.Get(t, url+"/", "User-Agent", ua); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", requests, resp.StatusCode)
		}
		requests++
	}
	for range 10 {
		sluicetest.Get(t, url+"/", "User-Agent", ua)
		requests++
	}
	read := make(chan string)
	go func() {
		data, _ := io.ReadAll(reader)
		read <- string(data)
	}()
	l.Close()
	data := <-read
	written := strings.Count(data, "\n")
	if uint64(written)+l.Dropped() != uint64(requests) {
		t.Errorf("%d requests: %d lines written + %d dropped", requests, written, l.Dropped())
	}
	t.Logf("%d requests: %d lines written, %d dropped", requests, written, l.Dropped())
}
