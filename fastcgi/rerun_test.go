//go:build unix

package fastcgi_test

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/fastcgi/fpmtest"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// TestNoRerunAfterWorkerDeath: a script whose PHP-FPM worker dies
// (request_terminate_timeout) after the request reached it, on a
// kept-alive connection, is not sent again: a POST without a body, and
// a GET with one, run once and get 502.
func TestNoRerunAfterWorkerDeath(t *testing.T) {
	s := newSite(t, fpmtest.Options{Children: 1, Pool: map[string]string{"request_terminate_timeout": "1s"}}, fastcgi.Options{})
	write(t, filepath.Join(s.root, "die.php"), `<?php file_put_contents(__DIR__ . '/runs', "x", FILE_APPEND); sleep(5); echo "never";`)
	for _, req := range []string{
		"POST /die.php HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		"PUT /die.php HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		"GET /die.php HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
	} {
		os.Remove(filepath.Join(s.root, "runs"))
		// A kept-alive connection to the one child, pooled.
		if resp, body := sluicetest.Get(t, s.srv.URL+"/hello.php"); resp.StatusCode != 200 || body != "hello" {
			t.Fatalf("warm-up: %d %q", resp.StatusCode, body)
		}
		resp, _ := sluicetest.RoundTrip(t, s.srv.Addr, req)
		b, _ := os.ReadFile(filepath.Join(s.root, "runs"))
		if resp.StatusCode != 502 || len(b) != 1 {
			t.Errorf("%.20q: got %d, the script ran %d times, want 502 and once; log:\n%s", req, resp.StatusCode, len(b), s.log)
		}
	}
}

// TestMaxRequestsUnderLoad: PHP-FPM's pm.max_requests closes a child's
// connection just after END_REQUEST, often after it was handed to a
// waiting request; with max_conns at the children and many clients, no
// request fails (the stale connection's request keeps its place under
// max_conns and dials again on it).
func TestMaxRequestsUnderLoad(t *testing.T) {
	s := newSite(t, fpmtest.Options{Children: 2, Pool: map[string]string{"pm.max_requests": "3"}},
		fastcgi.Options{Options: upstream.Options{MaxConns: 2}})
	var bad atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				resp, err := sluicetest.Client.Get(s.srv.URL + "/hello.php")
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Errorf("%d of 320 requests failed; log:\n%s", bad.Load(), s.log)
	}
}
