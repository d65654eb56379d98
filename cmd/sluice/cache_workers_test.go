package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// getOnce sends GET path on a connection of its own (each new connection
// may reach another worker) and returns the body.
func getOnce(t *testing.T, addr, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Close = true
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// With workers, each has its own cache in memory; a purge sent to one
// reaches them all (the master relays it) before it is answered, so no
// worker serves the purged response after. On a disk store (path), the
// workers share the stored responses: what one stores is a hit in the
// other, and a purge removes it for both.
func TestCacheWithWorkers(t *testing.T) {
	needWorkers(t)
	for _, disk := range []bool{false, true} {
		name := "memory"
		if disk {
			name = "disk"
		}
		t.Run(name, func(t *testing.T) { testCacheWithWorkers(t, disk) })
	}
}

func testCacheWithWorkers(t *testing.T, disk bool) {
	var version atomic.Value
	version.Store("v1")
	var seen atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, version.Load().(string))
	}))
	defer origin.Close()
	dir := t.TempDir()
	opts := "{}"
	if disk {
		opts = fmt.Sprintf("{path: %s}", filepath.Join(dir, "store"))
	}
	file := filepath.Join(dir, "w.yaml")
	writeConfig(t, file, fmt.Sprintf(`listen: 127.0.0.1:0
workers: 2
health: {interval: 100ms, timeout: 1s}
routes:
  - match: /
    pipeline:
      - cache_purge: {}
      - cache: %s
      - proxy: %s
`, opts, origin.URL))
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)

	// In memory, until both workers have stored v1 (each misses once);
	// on disk, the first miss stores it for both.
	misses := int64(2)
	if disk {
		misses = 1
	}
	for i := 0; seen.Load() < misses || i < 50; i++ {
		if i == 2000 {
			t.Fatalf("after 2000 connections the origin saw %d requests: the second worker took none", seen.Load())
		}
		if _, body := getOnce(t, s.addr, "GET", "/p"); body != "v1" {
			t.Fatalf("got %q, want v1", body)
		}
	}
	if n := seen.Load(); n != misses {
		t.Fatalf("the origin saw %d requests, want %d", n, misses)
	}
	version.Store("v2")
	code, body := getOnce(t, s.addr, "PURGE", "/p")
	var out struct{ Purged, Processes int }
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != 200 || out.Purged != int(misses) || out.Processes != 2 {
		t.Fatalf("PURGE: %d %q, want 200 with %d purged in 2 processes", code, body, misses)
	}
	for range 100 {
		if _, body := getOnce(t, s.addr, "GET", "/p"); body != "v2" {
			t.Fatalf("after the purge a worker answered %q, want v2", strings.TrimSpace(body))
		}
	}
	if n := seen.Load(); n > 2*misses {
		t.Errorf("the origin saw %d requests, want %d at most (the misses before and after)", n, 2*misses)
	}
}
