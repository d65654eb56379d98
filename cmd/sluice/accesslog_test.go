package main_test

import (
	"fmt"
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
