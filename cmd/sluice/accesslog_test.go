package main_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// The top-level access_log records the requests of every route but those
// whose route has a log of its own with replace: true (a route's log adds
// to it otherwise), in one process and with workers; it is reopened on
// SIGUSR1 and a reload applies a changed one.
func TestAccessLog(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "site.yaml")
			access, own := filepath.Join(dir, "access.log"), filepath.Join(dir, "own.log")
			conf := func(listen, format string) string {
				return fmt.Sprintf("listen: %s\nworkers: %d\naccess_log: {file: %s, format: %s}\nroutes:\n"+
					"  - match: /own\n    pipeline: [{log: %s}, {text: own}]\n"+
					"  - match: /alone\n    pipeline: [{log: {file: %[5]s, replace: true}}, {text: alone}]\n"+
					"  - match: /\n    pipeline: [{text: hi}]\n", listen, workers, access, format, own)
			}
			writeConfig(t, file, conf("127.0.0.1:0", "common"))
			s := start(t, "serve", "-c", file)
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
			}
			base := "http://" + s.addr
			for _, path := range []string{"/a", "/own", "/alone"} {
				if resp, _ := sluicetest.Get(t, base+path); resp.StatusCode != 200 {
					t.Fatalf("GET %s = %d", path, resp.StatusCode)
				}
			}

			// logrotate: move the file away, then SIGUSR1.
			if err := os.Rename(access, access+".1"); err != nil {
				t.Fatal(err)
			}
			s.cmd.Process.Signal(syscall.SIGUSR1)
			s.waitLog(t, "log files reopened", 1+workers) // the master's, and each worker's
			sluicetest.Get(t, base+"/b")

			writeConfig(t, file, conf(s.addr, "json"))
			s.cmd.Process.Signal(syscall.SIGHUP)
			s.waitLog(t, "msg=reloaded", 1)
			if workers > 0 {
				s.waitLog(t, "msg=stopped", workers) // the old workers drained
			}
			sluicetest.Get(t, base+"/c")
			sluicetest.Get(t, base+"/own")
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("exit status %d\n%s", code, s.stderr())
			}

			read := func(name string) string {
				b, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			rotated, current, ownLog := read(access+".1"), read(access), read(own)
			if n := strings.Count(rotated, "\n"); n != 2 || !strings.Contains(rotated, `"GET /a HTTP/1.1" 200 2`) ||
				!strings.Contains(rotated, `"GET /own HTTP/1.1" 200 3`) {
				t.Errorf("the rotated access log, %d lines: want GET /a and GET /own (not /alone):\n%s", n, rotated)
			}
			lines := strings.Split(strings.TrimSuffix(current, "\n"), "\n")
			if len(lines) != 3 || !strings.Contains(lines[0], `"GET /b HTTP/1.1" 200 2`) ||
				!strings.HasPrefix(lines[1], `{"time":`) || !strings.Contains(lines[1], `"uri":"/c"`) ||
				!strings.Contains(lines[2], `"uri":"/own"`) {
				t.Errorf("the access log after SIGUSR1 and the reload: want GET /b, then GET /c and /own in JSON:\n%s", current)
			}
			if n := strings.Count(ownLog, `"GET /own HTTP/1.1" 200 3`); n != 2 || strings.Count(ownLog, "\n") != 3 ||
				!strings.Contains(ownLog, `"GET /alone HTTP/1.1" 200 5`) {
				t.Errorf("the route's own log: want GET /own twice and GET /alone:\n%s", ownLog)
			}
		})
	}
}

// An access log with max_size is rotated when it reaches the size, by the
// one process serving, or with workers by the master (which they all
// write through), and the rotated files are compressed: no line is lost.
func TestAccessLogRotation(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "site.yaml")
			access := filepath.Join(dir, "logs", "access.log")
			if err := os.Mkdir(filepath.Dir(access), 0o755); err != nil {
				t.Fatal(err)
			}
			health := ""
			if workers > 0 {
				health = "health: {interval: 100ms, timeout: 1s}\n"
			}
			writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nworkers: %d\n%s"+
				"access_log: {file: %s, format: common, max_size: 4KiB, compress: true}\n"+
				"routes:\n  - match: /\n    pipeline: [{text: hi}]\n", workers, health, access))
			s := start(t, "serve", "-c", file)
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
			}
			const n = 200 // lines of about 75 bytes: 15,000 bytes
			for i := range n {
				if resp, _ := sluicetest.Get(t, fmt.Sprintf("http://%s/n/%03d", s.addr, i)); resp.StatusCode != 200 {
					t.Fatalf("GET = %d", resp.StatusCode)
				}
			}
			// Lines are written, and rotated files compressed, in the
			// server's time: wait for every line, and a compressed file.
			var lines map[string]int
			sluicetest.WaitFor(t, "every line, in access.log and compressed rotated files", func() bool {
				lines = map[string]int{}
				total, gz := 0, 0
				ents, _ := os.ReadDir(filepath.Dir(access))
				for _, e := range ents {
					data, err := os.ReadFile(filepath.Join(filepath.Dir(access), e.Name()))
					if err != nil {
						return false // being compressed
					}
					if strings.HasSuffix(e.Name(), ".gz") {
						zr, err := gzip.NewReader(bytes.NewReader(data))
						if err != nil {
							return false
						}
						if data, err = io.ReadAll(zr); err != nil {
							return false
						}
						gz++
					} else if e.Name() != "access.log" {
						return false // not compressed yet
					}
					lines[e.Name()] = strings.Count(string(data), "\n")
					total += lines[e.Name()]
				}
				return total == n && gz > 0
			})
			if workers == 0 && len(lines) < 4 {
				t.Errorf("files %v: want 3 rotations or more of 4KiB", lines)
			}
			if workers > 0 && !strings.Contains(s.stderr(), `msg="log file rotated"`) {
				t.Errorf("the master did not say it rotated the file:\n%s", s.stderr())
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("exit status %d\n%s", code, s.stderr())
			}
		})
	}
}
