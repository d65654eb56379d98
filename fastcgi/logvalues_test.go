//go:build unix

package fastcgi_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/fastcgi/fpmtest"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// An access log before fastcgi names the PHP-FPM that answered
// (upstream_addr, unix:/path as nginx writes it) and how long it took.
func TestLogUpstreamValues(t *testing.T) {
	s := newSite(t, fpmtest.Options{Children: 1}, fastcgi.Options{Options: upstreamOpts(1)})
	file := filepath.Join(t.TempDir(), "access.log")
	l, err := components.NewLog(components.LogOptions{File: file, Format: "{upstream_addr} {upstream_time_ms}"})
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{l, s.cl}))
	if _, body := sluicetest.Get(t, srv.URL+"/hello.php"); body != "hello" {
		t.Fatalf("body %q", body)
	}
	var line string
	sluicetest.WaitFor(t, "the line", func() bool {
		l.(interface{ Sync() }).Sync()
		data, _ := os.ReadFile(file)
		line = strings.TrimSuffix(string(data), "\n")
		return line != ""
	})
	l.(interface{ Close() error }).Close()
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != s.fpm.Addr() {
		t.Fatalf("line %q: want %s and a time", line, s.fpm.Addr())
	}
	if ms, err := strconv.ParseFloat(f[1], 64); err != nil || ms <= 0 {
		t.Errorf("upstream_time_ms %q: want milliseconds", f[1])
	}
}
