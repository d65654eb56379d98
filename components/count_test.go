package components

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func ExampleNewCount() {
	stats := NewStats()
	count, err := NewCount(CountOptions{Stats: stats})
	if err != nil {
		panic(err)
	}
	hello, _ := NewText(TextOptions{Body: "hello\n"})
	missing, _ := NewText(TextOptions{Body: "no such page\n", Status: 404})
	rt, _ := pipe.NewRouter(
		pipe.Route{Match: []string{"/"}, Pipeline: hello},
		pipe.Route{Match: []string{"/missing"}, Pipeline: missing},
	)
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{count, rt}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL
	for _, path := range []string{"/", "/", "/missing"} {
		resp, _ := http.Get(url + path)
		resp.Body.Close()
	}

	s := stats.Snapshot()
	fmt.Println("requests:", s.Requests, "2xx:", s.Responses["2xx"], "4xx:", s.Responses["4xx"], "bytes:", s.Bytes)
	// Output:
	// requests: 3 2xx: 2 4xx: 1 bytes: 25
}

// fileRecorder is a filter writer that records whether content reached it
// by reference (SendFile) and passes it on.
type fileRecorder struct {
	next   pipe.Writer
	byFile *atomic.Bool
}

func (r fileRecorder) Write(p []byte) (int, error) { return r.next.Write(p) }
func (r fileRecorder) Flush() error                { return r.next.Flush() }
func (r fileRecorder) Close() error                { return nil }
func (r fileRecorder) SendFile(f *os.File, off, n int64) error {
	r.byFile.Store(true)
	return pipe.SendFile(r.next, f, off, n)
}

// A file served under count still goes out by reference (sendfile), with
// its bytes counted, whichever side of another observing filter count is.
func TestCountKeepsSendFile(t *testing.T) {
	dir := t.TempDir()
	body := bytes.Repeat([]byte("z"), 100000)
	if err := os.WriteFile(filepath.Join(dir, "f.bin"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	files := filesNew(t, FilesOptions{Root: dir})
	for _, countFirst := range []bool{true, false} {
		stats := NewStats()
		count, err := NewCount(CountOptions{Stats: stats})
		if err != nil {
			t.Fatal(err)
		}
		var byFile atomic.Bool
		record := pipe.Filter(func(c *pipe.Conn) pipe.Wrap {
			return func(next pipe.Writer) pipe.Writer { return fileRecorder{next, &byFile} }
		})
		chain := pipe.Chain{record, count, files}
		if countFirst {
			chain = pipe.Chain{count, record, files}
		}
		_, got := sluicetest.Get(t, sluicetest.NewServer(t, pipe.Handler(chain)).URL+"/f.bin")
		// The client may have the body before the server's count has
		// recorded it (that happens once sendfile returns): wait for it.
		for deadline := time.Now().Add(5 * time.Second); stats.Snapshot().Bytes == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got != string(body) || !byFile.Load() || stats.Snapshot().Bytes != uint64(len(body)) {
			t.Errorf("count first %v: body %d bytes, by reference %v, counted %d", countFirst, len(got), byFile.Load(), stats.Snapshot().Bytes)
		}
	}
}
